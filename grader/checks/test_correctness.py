"""Correctness of one stage: each case of course.toml against the PyTorch reference.

PYTEST_DONT_REWRITE: the assertion's message is the verdict, shown as the grader wrote it.

`grade` runs this module through pytest with a plugin (grader.grading.pytest_run) that
parametrizes `case` and provides `grading` (`pytest --pyargs grader.checks --stage N` does the
same through grader.checks.plugin); the inputs are drawn and the outputs judged by the
grader, only the call itself goes into the submission. The check keeps each case's result;
`grade` reads them from it.
"""


def test_case(grading, case):
    verdict = grading.judge(case)
    assert verdict.passed, verdict.report
