"""The GPU studies that grade the project's corpus (scripts/gpu_corpus.py, the bad
submissions only a GPU can grade; scripts/fidelity.py, every corpus file on the GPU and on
the CPU), run here on the CPU: whatever a GPU's grading returns, each entry is judged
without breaking the run, and the fidelity study, given the CPU backend for its GPU side,
grades, compares and tells its verdicts as it will on a GPU.
"""

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import ROOT

from grader.backends import selection as backends
from grader.errors import BackendUnavailable
from grader.results import (CaseResult, CheckResult, Failure, SpeedCase, SpeedResult,
                            StageResult, Status)
from grader.sandbox.privileges import Protection
from scripts import fidelity
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


def verdict(status: str, *cases: str, **kw) -> fidelity.Verdict:
    return fidelity.Verdict(status, {f"case{i}": v for i, v in enumerate(cases)}, **kw)


def test_fidelity_tells_each_case_that_disagrees_and_never_takes_not_graded_for_agreement():
    same = verdict("FAIL", "pass", "wrong result")
    assert fidelity.outcome(same, verdict("FAIL", "pass", "wrong result")) == "agree"
    # the kind of failure counts, and a case one side lacks
    other = verdict("FAIL", "pass", "crashed", "pass")
    assert fidelity.disagreements(same, other) == ["`case1`: wrong result vs crashed",
                                                   "`case2`: absent vs pass"]
    # every case agrees, the stage does not: a check failed on one side
    checked = verdict("FAIL", "pass", failed_checks=["memory growth"])
    assert fidelity.disagreements(verdict("PASS", "pass"), checked) == [
        "status: PASS vs FAIL (failed: memory growth)"]
    assert fidelity.outcome(same, fidelity.Verdict(not_graded="no GPU")) == "not graded"
    assert fidelity.outcome(fidelity.Verdict(not_graded="died"), same) == "not graded"


def test_fidelity_exits_1_on_a_disagreement_and_writes_its_table(tmp_path, monkeypatch, capsys):
    """A disagreement is a row naming the case, the summary counts it, the exit code is 1;
    the table goes to $OUT/fidelity.md too."""
    def graded(files, jobs, seed, deadline=None):
        return {(f.name, side): verdict("FAIL", "pass", "wrong result" if side == "cpu" or
                                        "mask" not in f.name else "read out of bounds")
                for f in files for side in ("cpu", "gpu")}

    monkeypatch.setattr(fidelity, "grade_all", graded)
    monkeypatch.setenv("OUT", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["fidelity", "--track", "triton", "--only",
                                      "stage1_load_without_mask", "--only", "stage1_autotuned"])
    assert fidelity.main() == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "stage1_load_without_mask" in line)
    assert row.endswith("| `case1`: wrong result vs read out of bounds |"), row
    assert "fidelity: 2 files, 1 agree, 1 disagree, 0 not graded" in out
    assert "  - `case1`, CPU: wrong result\n  - `case1`, GPU: read out of bounds\n" in out
    assert (tmp_path / "fidelity.md").read_text() == out


def run_study(*args: str, out) -> subprocess.CompletedProcess:
    """`python -m scripts fidelity ARGS` in a process of its own (it starts its workers
    afresh, as on the GPU), $OUT set."""
    return subprocess.run([sys.executable, "-m", "scripts", "fidelity", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OUT": str(out)})


def test_fidelity_on_the_cpu_agrees_with_itself(tmp_path):
    """The study with Triton's interpreter for the GPU side too: a fault and an honest file
    of stage 1 graded twice, every verdict the same, exit code 0, the table in
    $OUT/fidelity.md."""
    run = run_study("--track", "triton", "--gpu-backend", "triton-interpret", "--jobs", "2",
                    "--only", "stage1_mask_off_by_one", "--only", "stage1_autotuned",
                    out=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    table = (tmp_path / "fidelity.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ") and "/" in line]
    assert [row.split(" | ")[0] for row in rows] == ["| faults/triton/stage1_mask_off_by_one.py",
                                                     "| honest/triton/stage1_autotuned.py"]
    assert "| FAIL (1/9 cases) (triton-interpret) | FAIL (1/9 cases) (triton-interpret) |  |" \
        in rows[0]
    assert "| PASS (1/1 cases) (triton-interpret) | PASS (1/1 cases) (triton-interpret) |  |" \
        in rows[1]
    assert "fidelity: 2 files, 2 agree, 0 disagree, 0 not graded" in table
    assert table.strip() in run.stdout


def test_fidelity_past_its_deadline_writes_the_table_of_what_it_graded(tmp_path):
    """--deadline: a machine lent for a limited time still gets the table; what was not
    reached is not graded, never taken for agreement (exit code 1)."""
    run = run_study("--track", "triton", "--gpu-backend", "triton-interpret", "--jobs", "1",
                    "--only", "stage1_autotuned", "--deadline", "0.01", out=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    table = (tmp_path / "fidelity.md").read_text()
    assert "not graded: not reached within --deadline 0.01 s" in table
    assert "fidelity: 1 files, 0 agree, 0 disagree, 1 not graded" in table


def test_fidelity_says_a_backend_that_cannot_run_here_graded_nothing(tmp_path):
    """cuTile's GPU backend on a machine without it: the row is not graded, with the reason,
    and the exit code 1 (never counted as agreeing)."""
    try:
        backends.select("cutile")
        pytest.skip("cuTile's GPU backend runs here")
    except BackendUnavailable:
        pass
    run = run_study("--track", "cutile", "--only", "stage1_kernel_calls_pytorch", out=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "not graded: Backend 'cutile' cannot run here" in run.stdout
    assert "fidelity: 1 files, 0 agree, 0 disagree, 1 not graded" in run.stdout
