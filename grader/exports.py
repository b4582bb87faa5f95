"""Exports: a grading Report written in the formats that other tools read.

- JUnit XML (`write_junit`): the test-report format that Jenkins, GitLab CI and GitHub
  test-reporter actions render as a list of passed, failed, errored and skipped tests. One
  <testsuite> per stage; one <testcase> per correctness case, speed case and stage-wide check.
- Gradescope results.json (`write_gradescope`): what a Gradescope autograder leaves in
  /autograder/results/ (https://gradescope-autograders.readthedocs.io/en/latest/specs/).
  One test per case, speed case and graded check, carrying its share of the points, so
  that the tests add up to the grader's own total.
- Markdown (`write_markdown`): a short summary for a CI job page, such as GitHub's
  $GITHUB_STEP_SUMMARY: the scorecard table and what failed.

Hidden cases (instructor-only inputs) show only their id, pass or fail, and a generic text
in every format: never their summary, details, parameters or seed, which would reveal them.
Things that were not graded (speed without a GPU, checks that did not run) are never shown
as passed: JUnit marks them skipped; Gradescope leaves them out of the scoring and names
them in the submission's output text.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grader.results import (
    CaseResult,
    CheckResult,
    Report,
    SpeedCase,
    StageResult,
    Status,
    write_file,
)
from grader.scorecard import _num, _versions

HIDDEN_FAILED = "hidden case failed: wrong result"
HIDDEN_PASSED = "passed"
SUMMARIES_SHOWN = 3  # failing items listed per stage in the Markdown summary
MESSAGE_CHARS = 300  # JUnit's message attribute is a one-line headline; the body has it all

# Control characters are not allowed in XML 1.0 at all (a file with one does not parse), and
# ANSI colour codes from a student's prints are noise in every format.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


# ----------------------------------------------------------------------------- shared


def is_hidden(case: CaseResult | SpeedCase) -> bool:
    """An instructor-only case: its inputs must not appear in any export."""
    return bool(getattr(case, "hidden", False))


def _clean(text: object) -> str:
    return _NOT_XML.sub("", _ANSI.sub("", str(text)))


def _first_line(text: str) -> str:
    line = next((part for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= MESSAGE_CHARS else line[:MESSAGE_CHARS - 3] + "..."


def _stage_name(stage: StageResult) -> str:
    return f"stage{stage.number} {stage.id}"


def _not_graded(message: str) -> str:
    # Check messages already begin with "not graded: ..."; speed reasons do not.
    if message.startswith("not graded"):
        return message
    return f"not graded: {message}" if message else "not graded"


def _case_text(case: CaseResult) -> str:
    """Everything about a case that a student needs to reproduce it; generic when hidden."""
    if is_hidden(case):
        if case.passed:
            return HIDDEN_PASSED
        # The grader withholds everything but the kind of failure ("hidden case failed:
        # timed out"); anything else is replaced by the generic text.
        kind = case.summary if case.summary.startswith("hidden case failed: ") else HIDDEN_FAILED
        return _clean(kind.splitlines()[0])
    inputs = [f"dtype {case.dtype}", *(f"{k}={v}" for k, v in case.params.items()),
              f"seed {case.seed}"]
    lines = [case.summary, *case.details, "inputs: " + ", ".join(inputs)]
    return _clean("\n".join(line for line in lines if line))


def _speed_text(case: SpeedCase) -> str:
    if is_hidden(case):
        return HIDDEN_PASSED if case.passed else "hidden case failed: too slow or wrong"
    return _clean(case.summary or ("fast enough" if case.passed else "too slow"))


def _zeroed_by(stage: StageResult) -> CheckResult | None:
    """The graded check that failed and so took the stage's correctness points, if any."""
    return next((c for c in stage.checks if c.graded and not c.passed), None)


def _ran(stage: StageResult) -> bool:
    return stage.status in (Status.PASS, Status.FAIL)




# ----------------------------------------------------------------------------- JUnit


def write_junit(report: Report, path: Path) -> None:
    """JUnit XML: one <testsuite> per stage, for CI test reporters."""
    suites = [_junit_suite(report, stage) for stage in report.stages]
    root = ET.Element("testsuites", name=_clean(report.course))
    _set_counts(root, [case for suite in suites for case in suite.iter("testcase")],
                report.seconds)
    root.extend(suites)
    ET.indent(root)
    write_file(path, ET.tostring(root, encoding="utf-8", xml_declaration=True))


def _junit_suite(report: Report, stage: StageResult) -> ET.Element:
    suite = ET.Element("testsuite", name=f"{_stage_name(stage)} [{stage.backend}]")
    timestamp = _timestamp(report.started_at)
    if timestamp:
        suite.set("timestamp", timestamp)
    cases = _junit_cases(stage)
    _set_counts(suite, cases, stage.seconds)
    suite.append(_junit_properties(report, stage))
    suite.extend(cases)
    if stage.message and _ran(stage):  # NOT STARTED / ERROR carry it in their testcase
        ET.SubElement(suite, "system-out").text = _clean(stage.message)
    return suite


def _junit_properties(report: Report, stage: StageResult) -> ET.Element:
    props = ET.Element("properties")
    values = {"backend": stage.backend, "seed": report.seed, "points": _num(stage.total_points),
              "max_points": _num(stage.total_max_points), "status": stage.status.value,
              "module": stage.module,
              **{k: v for k, v in report.machine.items() if v}}
    for name, value in values.items():
        ET.SubElement(props, "property", name=name, value=_clean(value))
    return props


def _junit_cases(stage: StageResult) -> list[ET.Element]:
    classname = f"tilecourse.{stage.id}"
    if stage.status is Status.NOT_STARTED:
        case = _testcase(classname, stage.id, 0.0)
        _outcome(case, "failure", f"not started: {stage.message}", "NotStarted")
        return [case]
    if stage.status is Status.ERROR:
        case = _testcase(classname, stage.id, stage.seconds)
        _outcome(case, "error", stage.message or "the stage could not be graded", "GraderError")
        return [case]
    cases = [_junit_case(classname, c) for c in stage.cases]
    cases += [_junit_check(classname, c) for c in stage.checks]
    return cases + _junit_speed(classname, stage)


def _junit_case(classname: str, case: CaseResult) -> ET.Element:
    element = _testcase(classname, case.id, case.seconds)
    if not case.passed:
        kind = "HiddenCaseFailed" if is_hidden(case) else "WrongResult"
        _outcome(element, "failure", _case_text(case), kind)
    return element


def _junit_check(classname: str, check: CheckResult) -> ET.Element:
    element = _testcase(classname, check.name, 0.0)
    if not check.graded:
        _outcome(element, "skipped", _not_graded(check.message))
    elif not check.passed:
        _outcome(element, "failure", f"{check.name}: {check.message}", "CheckFailed")
    return element


def _junit_speed(classname: str, stage: StageResult) -> list[ET.Element]:
    speed = stage.speed
    if not speed.graded:
        element = _testcase(classname, "speed", 0.0)
        _outcome(element, "skipped", _not_graded(speed.reason))
        return [element]
    if not speed.cases:  # graded, but the timing broke before any case was timed
        element = _testcase(classname, "speed", 0.0)
        _outcome(element, "failure", speed.reason or "no speed case was timed", "SpeedFailed")
        return [element]
    elements = []
    for case in speed.cases:
        # The wall time of a speed case is not recorded; its median is the closest figure.
        element = _testcase(classname, f"speed {case.id}", case.ms / 1e3)
        if not case.passed:
            _outcome(element, "failure", _speed_text(case), "TooSlow")
        elements.append(element)
    return elements


def _testcase(classname: str, name: str, seconds: float) -> ET.Element:
    return ET.Element("testcase", classname=_clean(classname), name=_clean(name),
                      time=_seconds(seconds))


def _outcome(testcase: ET.Element, tag: str, text: str, kind: str | None = None) -> None:
    """A <failure>, <error> or <skipped>: the headline in `message`, all of it as text."""
    text = _clean(text)
    element = ET.SubElement(testcase, tag, message=_first_line(text))
    if kind:
        element.set("type", kind)
    if tag != "skipped":
        element.text = text


def _set_counts(element: ET.Element, testcases: list[ET.Element], seconds: float) -> None:
    """tests/failures/errors/skipped as the testcases under it say, so they always agree."""
    def count(tag: str) -> str:
        return str(sum(case.find(tag) is not None for case in testcases))

    element.set("tests", str(len(testcases)))
    element.set("failures", count("failure"))
    element.set("errors", count("error"))
    element.set("skipped", count("skipped"))
    element.set("time", _seconds(seconds))


def _seconds(value: float) -> str:
    return f"{max(value, 0.0) if math.isfinite(value) else 0.0:.3f}"


def _timestamp(started_at: str) -> str | None:
    """The JUnit schema's timestamp has no zone: the start time in UTC, or None."""
    try:
        moment = datetime.fromisoformat(started_at)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment.isoformat(timespec="seconds")


# ----------------------------------------------------------------------------- Gradescope


def write_gradescope(report: Report, path: Path) -> None:
    """Gradescope's results.json: the tests carry the points and add up to `score`."""
    tests = []
    for stage in report.stages:
        stage_tests = _gradescope_stage(stage)
        for index, test in enumerate(stage_tests, 1):
            test["number"] = f"{stage.number}.{index}"
        tests += stage_tests
    results = {
        "score": report.points,
        "execution_time": round(report.seconds),
        "output": _gradescope_output(report),
        # The grader's console output lists failing cases in full, hidden ones included:
        # instructors see it, students only see what the tests' output fields say.
        "stdout_visibility": "hidden",
        "extra_data": {"backend": report.backend, "seed": report.seed,
                       "max_points": report.max_points, "machine": report.machine},
        "tests": tests,
    }
    # allow_nan=False: NaN is not JSON, and Gradescope would reject the whole file.
    write_file(path, json.dumps(results, indent=2, allow_nan=False) + "\n")


def _gradescope_stage(stage: StageResult) -> list[dict[str, Any]]:
    name = _stage_name(stage)
    tags = [f"stage{stage.number}", stage.id, stage.backend]
    if not _ran(stage):
        label = "not started" if stage.status is Status.NOT_STARTED else "error"
        # total_points is 0 for these stages; using it keeps the tests' sum equal to score.
        return [_test(name, stage.total_points, stage.total_max_points, False,
                      _clean(f"{label}: {stage.message}"), tags)]
    cases = _correctness_tests(stage, name, tags)
    checks = [_check_test(check, name, tags) for check in stage.checks if check.graded]
    return cases + checks + _speed_tests(stage, name, tags)


def _correctness_tests(stage: StageResult, name: str, tags: list[str]) -> list[dict[str, Any]]:
    """A test per case, with an equal share of the stage's correctness points."""
    share = stage.max_points / len(stage.cases) if stage.cases else 0.0
    zeroed = _zeroed_by(stage)
    tests = []
    for case in stage.cases:
        output = _case_text(case)
        if zeroed and case.passed:
            output += f"\n(no points: the stage failed its {zeroed.name} check)"
        hidden = is_hidden(case)
        earned = share if case.passed and not zeroed else 0.0
        tests.append(_test(f"{name}: {case.id}", earned, share, case.passed, output,
                           [*tags, "correctness", *(["hidden"] if hidden else [])],
                           "after_published" if hidden else "visible"))
    return _settle(tests, stage.points, stage.max_points)


def _check_test(check: CheckResult, name: str, tags: list[str]) -> dict[str, Any]:
    """A graded stage-wide check is worth no points of its own: failing it zeroes the stage."""
    output = _clean(check.message)
    if not check.passed:
        output += "\n(failing this check takes the stage's correctness points)"
    return _test(f"{name}: {check.name}", 0.0, 0.0, check.passed, output, [*tags, "check"])


def _speed_tests(stage: StageResult, name: str, tags: list[str]) -> list[dict[str, Any]]:
    speed = stage.speed
    if not speed.graded:
        return []  # listed in the submission's output instead
    tags = [*tags, "speed"]
    if not speed.cases:
        return [_test(f"{name}: speed", speed.points, speed.max_points, False,
                      _clean(speed.reason or "no speed case was timed"), tags)]
    share = speed.max_points / len(speed.cases)
    tests = [_test(f"{name}: speed {c.id}", share if c.passed else 0.0, share, c.passed,
                   _speed_text(c), tags, "after_published" if is_hidden(c) else "visible")
             for c in speed.cases]
    return _settle(tests, speed.points, speed.max_points)


def _test(name: str, score: float, max_score: float, passed: bool, output: str,
          tags: list[str], visibility: str = "visible") -> dict[str, Any]:
    return {"name": _clean(name), "score": round(score, 4), "max_score": round(max_score, 4),
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
    lines = [f"{report.course}: {_num(report.points)}/{_num(report.max_points)} points ({verdict})",
             (f"backend {report.backend} ({report.backend_reason}); seed {report.seed}; "
             f"{_versions(report.machine)}")]
    for stage in report.stages:
        if stage.message and _ran(stage):
            lines.append(f"{_stage_name(stage)}: {stage.message}")
    skipped = [f"- {_stage_name(s)}: speed: {_not_graded(s.speed.reason)}"
               for s in report.stages if _ran(s) and not s.speed.graded]
    skipped += [f"- {_stage_name(s)}: {c.name}: {_not_graded(c.message)}"
                for s in report.stages for c in s.checks if not c.graded]
    if skipped:
        lines += ["", "Not graded here (no points either way):", *skipped]
    return _clean("\n".join(lines))


# ----------------------------------------------------------------------------- Markdown


def write_markdown(report: Report, path: Path) -> None:
    """A scorecard for a CI job page: the table, what failed, and how it was graded."""
    verdict = "PASS" if report.passed else "FAIL"
    lines = [(f"## {_cell(report.course)}: {_num(report.points)}/{_num(report.max_points)} "
             f"points, {verdict}"), "", *_markdown_table(report)]
    for stage in report.stages:
        if _needs_explaining(stage):
            lines += ["", *_markdown_failures(stage)]
    lines += ["", (f"Graded {_cell(report.target)}/ with backend `{report.backend}` "
                  f"({_cell(report.backend_reason)}) and seed {report.seed} "
                  f"(`--seed {report.seed}` reproduces the inputs); "
                  f"{_cell(_versions(report.machine))}.")]
    write_file(path, _clean("\n".join(lines)) + "\n")


def _markdown_table(report: Report) -> list[str]:
    rows = ["| # | Stage | Backend | Cases | Speed | Points | Status |",
            "|--:|---|---|--:|---|--:|---|"]
    for s in report.stages:
        cases = f"{s.cases_passed}/{len(s.cases)}" if _ran(s) else "-"
        rows.append(f"| {s.number} | {_cell(s.id)} | {_cell(s.backend)} | {cases} | "
                    f"{_cell(_speed_cell(s))} | {_num(s.total_points)}/{_num(s.total_max_points)} "
                    f"| {s.status.value} |")
    verdict = "PASS" if report.passed else "FAIL"
    rows.append(f"| | **total** | | | | **{_num(report.points)}/{_num(report.max_points)}** "
                f"| **{verdict}** |")
    return rows


def _speed_cell(s: StageResult) -> str:
    if not _ran(s):  # nothing was timed, nor could it be
        return "-"
    if not s.speed.graded:
        return _not_graded(s.speed.reason)
    return f"{_num(s.speed.points)}/{_num(s.speed.max_points)}"


def _needs_explaining(stage: StageResult) -> bool:
    return stage.status is not Status.PASS or any(not c.passed for c in stage.speed.cases)


def _markdown_failures(stage: StageResult) -> list[str]:
    lines = [f"**{_stage_name(stage)}: {stage.status.value}** (`{_cell(stage.module)}`)", ""]
    if stage.message:  # an ERROR's message can be a whole traceback: its headline here
        lines.append(f"- {_cell(_first_line(_clean(stage.message)))}")
    failing = [f"case `{c.id}`: {_cell(_first_line(_case_text(c)))}"
               for c in stage.cases if not c.passed]
    failing += [f"{_cell(c.name)}: {_cell(c.message)}" for c in stage.checks
                if c.graded and not c.passed]
    failing += [f"speed `{c.id}`: {_cell(_speed_text(c))}" for c in stage.speed.cases
                if not c.passed]
    lines += [f"- {item}" for item in failing[:SUMMARIES_SHOWN]]
    if len(failing) > SUMMARIES_SHOWN:
        lines.append(f"- ... and {len(failing) - SUMMARIES_SHOWN} more (`grade --verbose` "
                     "shows all)")
    return lines


def _cell(text: object) -> str:
    """One line of Markdown that cannot break a table row or open an HTML tag."""
    line = " ".join(_clean(text).split())
    return line.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
