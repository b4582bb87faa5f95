"""Speed on the GPU, timed by the grader's rules.

    trial.py     one speed case: fresh inputs per call, the baseline in the grader, the
                 grader's clock around every batch, outputs fetched and checked
    check.py     the speed points of a stage and their verdicts; pytest-benchmark records
    scope.py     whether a stage's speed is graded on a backend at all
    ceilings.py  the GPU's measured bandwidth and FLOP rates, for "% of the limit"

The timed loop itself is grader.timing, run by both sides of the trust boundary.
"""
