"""JUnit XML: the test-report format that Jenkins, GitLab CI and GitHub test-reporter actions
render as a list of passed, failed, errored and skipped tests. One <testsuite> per stage; one
<testcase> per correctness case, speed case and stage-wide check. What was not graded
(speed without a GPU, checks that did not run) is marked skipped, never passed; so is a stage
not started: it is work not begun, not a failure, and a student's CI stays green until a stage
they started fails."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

from grader.results import (CaseResult, CheckResult, Failure, Report, StageResult, Status,
                                   write_file)
from grader.report.text import (case_text, clean, first_line, is_hidden, not_graded, number, ran,
                                speed_text, stage_name)


def write_junit(report: Report, path: Path) -> None:
    """JUnit XML: one <testsuite> per stage, for CI test reporters."""
    suites = [_junit_suite(report, stage) for stage in report.stages]
    root = ET.Element("testsuites", name=clean(report.course))
    _set_counts(root, [case for suite in suites for case in suite.iter("testcase")],
                report.seconds)
    root.extend(suites)
    ET.indent(root)
    write_file(path, ET.tostring(root, encoding="utf-8", xml_declaration=True))


def _junit_suite(report: Report, stage: StageResult) -> ET.Element:
    suite = ET.Element("testsuite", name=f"{stage_name(stage)} [{stage.backend}]")
    timestamp = _timestamp(report.started_at)
    if timestamp:
        suite.set("timestamp", timestamp)
    cases = _junit_cases(stage)
    _set_counts(suite, cases, stage.seconds)
    suite.append(_junit_properties(report, stage))
    suite.extend(cases)
    if stage.message and ran(stage):  # NOT STARTED / ERROR carry it in their testcase
        ET.SubElement(suite, "system-out").text = clean(stage.message)
    return suite


def _junit_properties(report: Report, stage: StageResult) -> ET.Element:
    props = ET.Element("properties")
    values = {"backend": stage.backend, "seed": report.seed, "points": number(stage.total_points),
              "max_points": number(stage.total_max_points), "status": stage.status.value,
              "module": stage.module,
              **{k: v for k, v in report.machine.items() if v}}
    for name, value in values.items():
        ET.SubElement(props, "property", name=name, value=clean(value))
    return props


def _junit_cases(stage: StageResult) -> list[ET.Element]:
    classname = f"tilecourse.{stage.id}"
    if stage.status is Status.NOT_STARTED:  # skipped, its 0 points in the properties
        case = _testcase(classname, stage.id, 0.0)
        _outcome(case, "skipped", f"not started: {stage.message}")
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
    if case.failure is Failure.NOT_GRADED:
        _outcome(element, "skipped", case.summary)
    elif not case.passed:
        kind = "HiddenCaseFailed" if is_hidden(case) else "WrongResult"
        _outcome(element, "failure", case_text(case), kind)
    return element


def _junit_check(classname: str, check: CheckResult) -> ET.Element:
    element = _testcase(classname, check.name, 0.0)
    if not check.graded:
        _outcome(element, "skipped", not_graded(check.message))
    elif not check.passed:
        _outcome(element, "failure", f"{check.name}: {check.message}", "CheckFailed")
    return element


def _junit_speed(classname: str, stage: StageResult) -> list[ET.Element]:
    speed = stage.speed
    if not speed.graded:
        element = _testcase(classname, "speed", 0.0)
        _outcome(element, "skipped", not_graded(speed.reason))
        return [element]
    if not speed.cases:  # graded, but the timing broke before any case was timed
        element = _testcase(classname, "speed", 0.0)
        _outcome(element, "failure", speed.reason or "no speed case was timed", "SpeedFailed")
        return [element]
    elements = []
    for case in speed.cases:
        # The wall time of a speed case is not recorded; its median is the closest figure.
        element = _testcase(classname, f"speed {case.id}", case.ms / 1e3)
        if case.failure is Failure.NOT_GRADED:
            _outcome(element, "skipped", case.summary)
        elif not case.passed:
            _outcome(element, "failure", speed_text(case), "TooSlow")
        elements.append(element)
    return elements


def _testcase(classname: str, name: str, seconds: float) -> ET.Element:
    return ET.Element("testcase", classname=clean(classname), name=clean(name),
                      time=_seconds(seconds))


def _outcome(testcase: ET.Element, tag: str, text: str, kind: str | None = None) -> None:
    """A <failure>, <error> or <skipped>: the headline in `message`, all of it as text."""
    text = clean(text)
    element = ET.SubElement(testcase, tag, message=first_line(text))
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
