"""Gradescope results.json: what a Gradescope autograder leaves in /autograder/results/
(https://gradescope-autograders.readthedocs.io/en/latest/specs/). One test per case, speed
case and graded check, carrying its share of the points, so that the tests add up to the
grader's own total. What was not graded is left out of the scoring and named in the
submission's output text. Hidden cases' results are shown to students when the class's
policy says ([policy] hidden_cases in course.toml: after_due_date, after_published, hidden);
the grader passes it in, as a report reads no course."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from grader.results import CheckResult, Report, Standing, StageResult, Status, write_file
from grader.report.text import (case_text, clean, is_hidden, not_graded, number, ran, speed_text,
                                stage_name, versions, zeroed_by)


def write_gradescope(report: Report, path: Path, hidden: str,
                     notes: list[str] | tuple[str, ...] = (),
                     standing: Standing | None = None, leaderboard: bool = False) -> None:
    """Gradescope's results.json: the tests carry the points and add up to the grader's
    total; the tests of hidden cases have the visibility `hidden`, the class's policy (its
    [policy] hidden_cases, passed in by the caller). `notes` say how the submission was read
    (a file graded under another name, what was not taken). A `standing` that came late
    takes its penalty off the score (the tests keep their points), said first in the
    output. With `leaderboard` (the class's opt-in), each stage whose speed was timed is an
    entry of Gradescope's leaderboard: its speed-up over PyTorch."""
    tests = []
    for stage in report.stages:
        stage_tests = _gradescope_stage(stage, hidden)
        for index, test in enumerate(stage_tests, 1):
            test["number"] = f"{stage.number}.{index}"
        tests += stage_tests
    kept = standing.after(report) if standing else report.points
    late = _late_text(report, standing, kept) if kept < report.points else ""
    results = {
        "score": kept if late else report.points,
        "execution_time": round(report.seconds),
        "output": late + _gradescope_output(report) + _notes_text(notes),
        # The grader's console output (the scorecard, what the submission printed) is for
        # instructors; students see what the tests' output fields say.
        "stdout_visibility": "hidden",
        "extra_data": {"backend": report.backend, "seed": report.seed,
                       "max_points": report.max_points, "machine": report.machine},
        "tests": tests,
    }
    if leaderboard and (entries := _leaderboard(report)):
        results["leaderboard"] = entries
    # allow_nan=False: NaN is not JSON, and Gradescope would reject the whole file.
    write_file(path, json.dumps(results, indent=2, allow_nan=False) + "\n")


def _leaderboard(report: Report) -> list[dict[str, Any]]:
    """A stage's speed-up over PyTorch, the geometric mean over its shown speed cases (a
    hidden case's figure would tell its size), highest first; stages not timed have none."""
    entries = []
    for stage in report.stages:
        ups = [c.speedup for c in stage.speed.cases if c.speedup > 0 and not is_hidden(c)]
        if stage.speed.graded and ups:
            entries.append({"name": f"{stage_name(stage)} speed-up",
                            "value": round(math.prod(ups) ** (1 / len(ups)), 3),
                            "order": "desc"})
    return entries


def _late_text(report: Report, standing: Standing, kept: float) -> str:
    days = f"{standing.days_late} day" + ("s" if standing.days_late != 1 else "")
    percent = round(100 * (1 - kept / report.points), 2)
    return (f"Submitted {days} late: the class's policy takes {number(percent)}% off, so "
            f"{number(kept)} of the {number(report.points)} points earned count.\n\n")


def write_held(path: Path, standing: Standing) -> None:
    """results.json for a submission past the class's resubmission limit, not graded: the
    result of the last submission counted stands, said first in its output."""
    results = dict(standing.held or {})
    said = (f"This is your submission {standing.number}, and the class counts at most "
            f"{standing.allowed}: it was not graded, and the result of submission "
            f"{standing.allowed} stands.")
    results["output"] = said + ("\n\n" + str(results["output"]) if results.get("output") else "")
    results.setdefault("score", 0.0)
    results.setdefault("tests", [])
    write_file(path, json.dumps(results, indent=2, allow_nan=False) + "\n")


def write_not_graded(path: Path, message: str, notes: list[str] | tuple[str, ...] = ()) -> None:
    """results.json for a submission that could not be graded at all: no points, and why,
    in words for the student (Gradescope shows a failed autograder run without one)."""
    results = {"score": 0.0, "output": clean(f"Not graded: {message}") + _notes_text(notes),
               "stdout_visibility": "hidden", "tests": []}
    write_file(path, json.dumps(results, indent=2, allow_nan=False) + "\n")


def _notes_text(notes: list[str] | tuple[str, ...]) -> str:
    """The notes on how the submission was read, as a block of the output text."""
    if not notes:
        return ""
    return clean("\n\nHow your submission was read:" + "".join(f"\n- {n}" for n in notes))


def _gradescope_stage(stage: StageResult, hidden: str) -> list[dict[str, Any]]:
    name = stage_name(stage)
    tags = [f"stage{stage.number}", stage.id, stage.backend]
    if not ran(stage):
        label = "not started" if stage.status is Status.NOT_STARTED else "error"
        # total_points is 0 for these stages; using it keeps the tests' sum equal to score.
        return [_test(name, stage.total_points, stage.total_max_points, False,
                      clean(f"{label}: {stage.message}"), tags)]
    cases = _correctness_tests(stage, name, tags, hidden)
    checks = [_check_test(check, name, tags) for check in stage.checks if check.graded]
    return cases + checks + _speed_tests(stage, name, tags, hidden)


def _correctness_tests(stage: StageResult, name: str, tags: list[str],
                       visibility: str) -> list[dict[str, Any]]:
    """A test per case, with an equal share of the stage's correctness points."""
    share = stage.max_points / len(stage.cases) if stage.cases else 0.0
    zeroed = zeroed_by(stage)
    tests = []
    for case in stage.cases:
        output = case_text(case)
        if zeroed and case.passed:
            output += f"\n(no points: the stage failed its {zeroed.name} check)"
        hidden = is_hidden(case)
        if not case.passed and not hidden:
            output += "".join(f"\nhint: {hint}" for hint in stage.hints)
        earned = share if case.passed and not zeroed else 0.0
        tests.append(_test(f"{name}: {case.id}", earned, share, case.passed, output,
                           [*tags, "correctness", *(["hidden"] if hidden else [])],
                           visibility if hidden else "visible"))
    return _settle(tests, stage.points, stage.max_points)


def _check_test(check: CheckResult, name: str, tags: list[str]) -> dict[str, Any]:
    """A graded stage-wide check is worth no points of its own: failing it zeroes the stage."""
    output = clean(check.message)
    if not check.passed:
        output += "\n(failing this check takes the stage's correctness points)"
    return _test(f"{name}: {check.name}", 0.0, 0.0, check.passed, output, [*tags, "check"])


def _speed_tests(stage: StageResult, name: str, tags: list[str],
                 visibility: str) -> list[dict[str, Any]]:
    speed = stage.speed
    if not speed.graded:
        return []  # listed in the submission's output instead
    tags = [*tags, "speed"]
    if not speed.cases:
        return [_test(f"{name}: speed", speed.points, speed.max_points, False,
                      clean(speed.reason or "no speed case was timed"), tags)]
    share = speed.max_points / len(speed.cases)
    tests = [_test(f"{name}: speed {c.id}", share if c.passed else 0.0, share, c.passed,
                   speed_text(c), tags, visibility if is_hidden(c) else "visible")
             for c in speed.cases]
    return _settle(tests, speed.points, speed.max_points)


def _test(name: str, score: float, max_score: float, passed: bool, output: str,
          tags: list[str], visibility: str = "visible") -> dict[str, Any]:
    return {"name": clean(name), "score": round(score, 4), "max_score": round(max_score, 4),
            "status": "passed" if passed else "failed", "output": output,
            "visibility": visibility, "tags": tags}


def _settle(tests: list[dict[str, Any]], points: float, max_points: float) -> list[dict[str, Any]]:
    """Make the tests' scores add up to `points` and their max_scores to `max_points`.

    Shares rounded to 4 decimals, and the stage's points rounded to 2, leave a remainder
    (2 of 3 cases of 1 point: 0.6667 earned, 0.67 given). It goes on the last tests that
    earned something, raising their max_score if need be, and the max_scores then give it
    back from the last tests with room: no score turns negative or exceeds its max_score,
    no failed test scores, and the stage's sums come out exact.
    """
    earners = [t for t in tests if t["score"] > 0] or tests[-1:]
    _spread(earners, "score", points - sum(t["score"] for t in tests), low=lambda t: 0.0)
    for test in tests:
        test["max_score"] = max(test["max_score"], test["score"])
    _spread(tests, "max_score", max_points - sum(t["max_score"] for t in tests),
            low=lambda t: t["score"])
    return tests


def _spread(tests: list[dict[str, Any]], key: str, amount: float, low) -> None:
    """Add `amount` to tests[...][key], last test first, never going below low(test)."""
    left = round(amount, 4)
    for test in reversed(tests):
        if not left:
            return
        moved = max(test[key] + left, low(test)) - test[key]
        test[key] = round(test[key] + moved, 4)
        left = round(left - moved, 4)


def _gradescope_output(report: Report) -> str:
    """The submission-wide text: total, how it was graded, and what was not graded."""
    verdict = "PASS" if report.passed else "FAIL"
    lines = [f"{report.course}: {number(report.points)}/{number(report.max_points)} points ({verdict})",
             (f"backend {report.backend} ({report.backend_reason}); seed {report.seed}; "
             f"{versions(report.machine)}")]
    for stage in report.stages:
        if stage.message and ran(stage):
            lines.append(f"{stage_name(stage)}: {stage.message}")
    skipped = [f"- {stage_name(s)}: speed: {not_graded(s.speed.reason)}"
               for s in report.stages if ran(s) and not s.speed.graded]
    skipped += [f"- {stage_name(s)}: {c.name}: {not_graded(c.message)}"
                for s in report.stages for c in s.checks if not c.graded]
    if skipped:
        lines += ["", "Not graded here (no points either way):", *skipped]
    return clean("\n".join(lines))
