"""The wording every report shares: numbers, versions, a case's text, hidden cases.

Hidden cases (instructor-only inputs) show only their id, pass or fail, and a generic text
in every format: never their summary, details, parameters or seed, which would reveal them.
Control characters and ANSI colour codes from a student's prints are taken out of the files
(XML 1.0 does not allow the former at all); on a terminal, `visible` spells them out instead.
"""

from __future__ import annotations

import re

from grader.report.results import CaseResult, CheckResult, SpeedCase, StageResult, Status

HIDDEN_FAILED = "hidden case failed: wrong result"
HIDDEN_PASSED = "passed"
MESSAGE_CHARS = 300  # JUnit's message attribute is a one-line headline; the body has it all

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# What can move a terminal's cursor, recolour, erase or reorder what it shows: C0 (ESC, which
# starts every ANSI sequence, and carriage return among them), DEL, C1 (CSI 0x9b starts a
# sequence by itself), the Unicode line separators and the bidirectional overrides that make
# text read in another order than it is stored.
_UNSAFE = r"\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE_IN_LINES = re.compile(f"[{_UNSAFE}]")
_UNSAFE_IN_LINE = re.compile(rf"[\t\n{_UNSAFE}]")


def visible(text: object, lines: bool = True) -> str:
    """Any string from a submission (an exception's text, a type's name, what it printed),
    safe to show on a terminal: every control character spelled out as its escape (ESC as
    `\\x1b`, a bidi override as `\\u202e`), newlines and tabs kept only with `lines`. The
    result is still not markup: show it as rich Text, or printed with markup off."""
    unsafe = _UNSAFE_IN_LINES if lines else _UNSAFE_IN_LINE
    return unsafe.sub(_spelled_out, str(text))


def _spelled_out(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


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
    line = next((part for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= MESSAGE_CHARS else line[:MESSAGE_CHARS - 3] + "..."


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
        # Everything but the kind of failure is withheld ("hidden case failed: timed out").
        return f"hidden case failed: {case.failure.value}" if case.failure else HIDDEN_FAILED
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
