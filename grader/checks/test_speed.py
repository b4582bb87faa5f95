"""Speed of one stage on the GPU: each speed case of course.toml timed against PyTorch.

PYTEST_DONT_REWRITE: the assertion's message is the verdict, shown as the grader wrote it.

`grade` runs this module through pytest with pytest-benchmark and a plugin
(grader.grading.pytest_run) that parametrizes `case` and provides `speed`, which keeps each
case's verdict. The timing happens in grader.timing (CUDA events, L2 flushed, interleaved
with the baseline); pytest-benchmark receives the recorded samples through its timer (the
marker below) and keeps, summarises and compares them (--benchmark-json).
"""

import pytest

from grader.timing import SampleClock

CLOCK = SampleClock()


# The CUDA-event samples the trial measured are what pytest-benchmark keeps: its timer plays
# them back.
@pytest.mark.benchmark(timer=CLOCK)
def test_speed(speed, case, benchmark):
    timed = speed.time(case)
    assert timed.samples_ms, timed.case.summary  # the timed calls failed: nothing to record
    CLOCK.play(timed.samples_ms)
    benchmark.group = speed.stage.id
    benchmark.extra_info.update(
        baseline=timed.case.baseline, baseline_ms=timed.case.baseline_ms,
        speedup=timed.case.speedup, achieved=timed.case.achieved, unit=timed.case.unit,
        fraction_of_limit=timed.case.fraction, spread=timed.case.spread,
    )
    benchmark.pedantic(CLOCK.advance, rounds=len(timed.samples_ms), iterations=1, warmup_rounds=0)
    assert timed.case.passed, timed.case.summary
