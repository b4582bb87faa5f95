"""Correctness of one stage: each case of course.toml against the PyTorch reference.

PYTEST_DONT_REWRITE: the assertion's message is the verdict, shown as the grader wrote it.

`grade` runs this module through pytest with a plugin (grader.grading) that parametrizes
`case` and provides `grading` (`pytest --pyargs grader.checks --stage N` does the same through
grader.checks.plugin); the inputs are drawn and the outputs judged by the grader,
only the call itself goes into the submission.
"""


def test_case(grading, case, record_property):
    verdict = grading.check(case)
    record_property("result", grading.results[case.id])  # what grade collects from the report
    assert verdict.passed, verdict.report
