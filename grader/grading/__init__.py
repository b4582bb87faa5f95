"""Grading a course's stages: one request, resolved once, then each stage through pytest.

    request.py     what was asked (GradingRequest) and what resolve() decides (Grading):
                   the track and backend, the file each stage reads, the seed
    session.py     one stage opened for checking: the driver `grade` and plain pytest share
    pytest_run.py  the check modules (grader/checks) run through pytest, isolated
    stages.py      the stages one after another into a Report
"""
