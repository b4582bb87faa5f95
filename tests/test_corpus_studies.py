"""The GPU studies that grade the project's corpus (scripts/gpu_corpus.py, the bad
submissions only a GPU can grade), run here on the CPU: whatever a GPU's grading returns,
each entry is judged without breaking the run.
"""

from types import SimpleNamespace

from grader.results import (CaseResult, CheckResult, Failure, SpeedCase, SpeedResult,
                            StageResult, Status)
from grader.sandbox.privileges import Protection
from scripts import gpu_corpus as corpus


def graded_as(status: Status, said: str = "", cases: int = 2, speed_points: float = 0.0,
              speedup: float = 1.0) -> StageResult:
    """A stage result such as a GPU's grading could return, saying `said` everywhere the
    grader speaks (a case's summary and details, a check, a speed case, the message)."""
    passed = status is Status.PASS
    return StageResult(
        1, "vector_add", "Vector add", "triton", "triton/stage1_vector_add.py", 10,
        status=status, points=10.0 if passed else 0.0, message=said,
        cases=[CaseResult(f"n={n}-float32", "float32", {"n": n}, 0, passed, said, [said],
                          failure=None if passed else Failure.WRONG_RESULT)
               for n in (1000, 5)[:cases]],
        speed=SpeedResult(bool(cases), said, speed_points, 1.0,
                          [SpeedCase("n=16777216-float32", "float32", {}, passed, said,
                                     speedup=speedup)] if cases else []),
        checks=[CheckResult("memory growth", True, passed, said)],
        sandbox=[Protection("filesystem", True, "")])


def test_every_gpu_corpus_entry_is_judged_whatever_its_result():
    """Each entry of scripts/gpu_corpus.py, its expectation a text, a tuple of texts or a
    verdict of its own, judged against a pass, a failure saying its words and a grading
    that broke (no case, no speed case): a verdict every time, never an exception (an
    expectation given as a tuple once reached a string's method on the GPU)."""
    entries = corpus.submissions()
    assert {type(expected) for *_, expected in entries} == {str, tuple}
    twin = graded_as(Status.PASS)
    graded = {name: twin for name, *_ in entries}
    for name, _, _, expected in entries:
        words = expected if isinstance(expected, str) else expected[-1]
        for result in (graded_as(Status.PASS), graded_as(Status.FAIL, words),
                       graded_as(Status.ERROR, cases=0)):
            ok, got = corpus.judge(name, expected, result, graded, lambda _: twin)
            assert isinstance(ok, bool) and isinstance(got, str), (name, result.status)


def test_an_entry_with_two_verdicts_is_met_by_either_and_no_speed_point():
    """The patched CUDA timer (20x the work): too slow, or its timing rejected; either is
    met only where it earned no speed point."""
    name, _, _, expected = next(e for e in corpus.submissions() if isinstance(e[3], tuple)
                                and not e[0].startswith("GPU work left running"))
    for words in expected:
        assert corpus.judge(name, expected, graded_as(Status.FAIL, words), {}, None)[0]
        assert not corpus.judge(name, expected, graded_as(Status.FAIL, words, speed_points=1),
                                {}, None)[0]
    assert not corpus.judge(name, expected, graded_as(Status.FAIL, "all match"), {}, None)[0]


def test_the_gpu_corpus_takes_any_of_an_entrys_verdicts():
    """scripts/gpu_corpus.py: an entry that allows two verdicts (the patched timer: too slow,
    or its timing rejected) is matched by either, one that names a verdict by that one only."""
    texts = ["all 1000 elements match", "", "timing rejected: the grader's clock saw more"]
    assert corpus.said(texts, ("too slow", "timing rejected")) == [texts[2]]
    assert corpus.said(texts, "too slow") == []
    assert corpus.said(texts, "elements match") == [texts[0]]


def test_the_gpu_corpus_judges_a_forgery_against_its_honest_twin():
    """scripts/gpu_corpus.py: a forgery earns what its honest twin earns, each speed-up
    within the allowed spread; one by a route left in the child earns exactly its points."""

    def graded(points, *speedups):
        cases = [SimpleNamespace(speedup=s, passed=s >= 1.0) for s in speedups]
        return SimpleNamespace(speed=SimpleNamespace(points=points, cases=cases))

    honest = graded(2, 1.20, 0.90)
    assert corpus.like_twin(graded(2, 1.23, 0.92), honest, exactly=False)[0]
    assert not corpus.like_twin(graded(2, 1.23, 0.92), honest, exactly=True)[0]  # 2.5% off
    assert corpus.like_twin(graded(2, 1.21, 0.90), honest, exactly=True)[0]
    assert not corpus.like_twin(graded(2, 1.20, 1.00), graded(2, 1.20, 0.99),
                                exactly=False)[0]  # a verdict more, within the spread
    assert not corpus.like_twin(graded(4, 1.21, 0.90), honest, exactly=True)[0]  # points
    ok, got = corpus.like_twin(graded(2, 1.2, 0.9), None, exactly=True)
    assert not ok and "not graded in this run" in got
