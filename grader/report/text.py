"""The wording every report shares: numbers, versions, a case's text, hidden cases.

Hidden cases (instructor-only inputs) show only their id, pass or fail, and a generic text
in every format: never their summary, details, parameters, seed or kind of failure, which
would reveal them.
Text from a submission reaches a report already quoted (grader.quoting: a block whose lines
begin with a gutter, or one escaped value inside the grader's sentence). What remains of
control characters and ANSI colour codes is taken out of the files (XML 1.0 does not allow
the former at all); on a terminal, `visible` spells them out instead.
"""

from __future__ import annotations

import re

from grader.quoting import headline
from grader.results import (HIDDEN_FAILED, HIDDEN_NOT_GRADED, CaseResult, CheckResult, Failure,
                            SpeedCase, StageResult, Status)

HIDDEN_PASSED = "passed"
MESSAGE_CHARS = 300  # JUnit's message attribute is a one-line headline; the body has it all

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def number(value: float) -> str:
    return f"{value:g}"


def versions(machine: dict) -> str:
    shown = [f"{k} {v}" for k, v in machine.items() if v and k != "gpu"]
    gpu = machine.get("gpu")
    return ", ".join(shown) + (f", GPU {gpu}" if gpu else ", no GPU")


def speed_points(s: StageResult, slowest: bool = False) -> str:
    """The stage's speed points, or why they were not graded; with `slowest`, the case
    furthest behind its baseline too."""
    if not s.speed.graded:
        return not_graded(s.speed.reason)
    worst = min(s.speed.cases, key=lambda c: c.speedup, default=None) if slowest else None
    shown = f" (down to {worst.speedup:.2f}x {worst.baseline})" if worst else ""
    return f"{number(s.speed.points)}/{number(s.speed.max_points)}{shown}"


def is_hidden(case: CaseResult | SpeedCase) -> bool:
    """An instructor-only case: its inputs must not appear in any export."""
    return bool(getattr(case, "hidden", False))


def clean(text: object) -> str:
    return _NOT_XML.sub("", _ANSI.sub("", str(text)))


def first_line(text: str) -> str:
    """A message's headline: its first line, with the first quoted line it introduces."""
    return headline(text, MESSAGE_CHARS)


def stage_name(stage: StageResult) -> str:
    return f"stage{stage.number} {stage.id}"


def not_graded(message: str) -> str:
    # Check messages already begin with "not graded: ..."; speed reasons do not.
    if message.startswith("not graded"):
        return message
    return f"not graded: {message}" if message else "not graded"


def case_text(case: CaseResult) -> str:
    """Everything about a case that a student needs to reproduce it; generic when hidden."""
    if is_hidden(case):
        if case.passed:
            return HIDDEN_PASSED
        # Not the kind of failure either: the submission chooses it (grader.judge.hidden).
        return HIDDEN_NOT_GRADED if case.failure is Failure.NOT_GRADED else HIDDEN_FAILED
    inputs = [f"dtype {case.dtype}", *(f"{k}={v}" for k, v in case.params.items()),
              f"seed {case.seed}"]
    lines = [case.summary, *case.details, "inputs: " + ", ".join(inputs)]
    return clean("\n".join(line for line in lines if line))


def speed_text(case: SpeedCase) -> str:
    if is_hidden(case):
        return HIDDEN_PASSED if case.passed else "hidden case failed: too slow or wrong"
    return clean(case.summary or ("fast enough" if case.passed else "too slow"))


def zeroed_by(stage: StageResult) -> CheckResult | None:
    """The graded check that failed and so took the stage's correctness points, if any."""
    return next((c for c in stage.checks if c.graded and not c.passed), None)


def ran(stage: StageResult) -> bool:
    return stage.status in (Status.PASS, Status.FAIL, Status.PARTLY_GRADED)
