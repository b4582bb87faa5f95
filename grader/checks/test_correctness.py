"""Correctness of one stage: each case of course.toml against the PyTorch reference.

`grade` runs this module through pytest with a plugin (grader.grading) that parametrizes
`case` and provides `grading`; the inputs are drawn and the outputs judged by the grader,
only the call itself goes into the submission.
"""


def test_case(grading, case):
    verdict = grading.check(case)
    assert verdict.passed, verdict.report
