"""`grade calibrate`: speed thresholds derived from the reference solutions on this GPU.

Each reference is timed on every speed case of its stage; the suggested threshold is the
slowest case's figure times a margin (default 0.8: a student kernel within 20% of the
reference earns the speed points), rounded down to 0.05. The figures hold for the GPU's
architecture only (`thresholds.sm_90.triton`): with --write, that architecture's lines of
course.toml are rewritten in place (the rest of the file, comments included, is left as it
is) after a backup; a line copied from another architecture (`copied_from`) becomes this
one's own measurement.

The edit is by lines, checked by reading the result back with tomllib: it must equal the old
file with the calibrated values set, or nothing is written. A format-preserving TOML library
was tried and not kept: tomlkit 0.15.2, adding `thresholds.cutile` next to an existing dotted
`thresholds.triton` line (this course's own layout), wrote `thresholds.cutile = { ... }cases
= [...]` on one line, which is not TOML, and appended new keys after the comments that
introduce the next table.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.backends.selection import Selection, gpu_arch
from grader.course import Course, Stage, Threshold
from grader.errors import GradeError
from grader.instructor.backups import backup
from grader.results import SpeedCase
from grader.sandbox import ChildProcess
from grader.sandbox.submission import SubmissionError
from grader.speed.check import SpeedCheck

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


@dataclass
class Calibration:
    stage: str
    backend: str
    cases: list[SpeedCase]
    suggested: Threshold
    arch: str  # the GPU architecture it was measured on: sm_90

    @property
    def key(self) -> str:
        return f"thresholds.{self.arch}.{self.backend}"


def _floor(value: float, step: float = 0.05) -> float:
    return round(math.floor(value / step) * step, 2)


def calibrate_stage(course: Course, stage: Stage, selection: Selection, margin: float) -> Calibration:
    reference = course.module_path(stage, selection.backend.track, solutions=True)
    if not reference.is_file():
        raise GradeError(f"{reference} is missing: `grade calibrate` times the reference "
                         "solutions, which only the instructor's copy of the course has.")
    selection.backend.prepare()
    child = ChildProcess(reference, stage.problem.function, selection.backend.device,
                    hidden=course.private_paths, rules=course.rules,
                    track=selection.backend.track)
    try:
        child.load()
        # timed against the baseline this architecture's thresholds name, if any
        known = stage.speed.threshold(gpu_arch(), selection.backend.name)
        check = SpeedCheck(stage, selection, child,
                           threshold=Threshold(baseline=known.baseline if known else None))
        cases = [check.time(case).case for case in stage.speed.cases]
    except SubmissionError as exc:
        raise GradeError(f"the {stage.id} reference {reference} could not be loaded, so it "
                         f"cannot be timed: {exc}") from None
    finally:
        child.close()
    wrong = [c.summary for c in cases if not c.passed]
    if wrong:
        raise GradeError(f"the {stage.id} reference ({reference}) is wrong on a speed case, so "
                         f"no threshold can be derived from it; fix the reference first "
                         f"(`grade {stage.id} --solutions --backend {selection.backend.name}` shows the failure): {wrong[0]}")
    suggested = Threshold(min_speedup=_floor(margin * min(c.speedup for c in cases)))
    return Calibration(stage.id, selection.backend.name, cases, suggested, gpu_arch())


def write_thresholds(path: Path, found: list[Calibration]) -> Path:
    """Set min_speedup in `thresholds.<arch>.<backend>` of each stage's speed table; returns
    the backup.

    Only the number changes on an existing line (its other keys and comments stay, but
    `copied_from` goes: the figure is now this architecture's own); an architecture and
    backend without a line get one at the end of the table. Nothing is written unless the
    result, read back as TOML, differs from the file in those values only.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    for cal in found:
        start, end = _speed_table(lines, cal.stage, path)
        _set_threshold(lines, start, end, cal)
    updated = "".join(lines)
    _check_only_thresholds_changed(path, text, updated, found)
    kept = backup(path)
    path.write_text(updated, encoding="utf-8")
    return kept


# A table header, `[name]` or `[[name]]`, with an optional comment.
_HEADER = re.compile(r"^\s*(\[\[|\[)\s*([A-Za-z0-9_.\-\"' ]+?)\s*(?:\]\]|\])\s*(?:#.*)?$")


def _headers(lines: list[str]) -> list[tuple[int, str, str]]:
    """(line index, "[[" or "[", table name without spaces) of each table header."""
    found = []
    for i, line in enumerate(lines):
        if m := _HEADER.match(line):
            found.append((i, m.group(1), re.sub(r"\s+", "", m.group(2))))
    return found


def _speed_table(lines: list[str], stage_id: str, path: Path | str = "course.toml") -> tuple[int, int]:
    """Line range of the [stages.speed] table that belongs to `stage_id`; raises GradeError.

    The search stays inside the stage's own block: from its `[[stages]]` header to the next
    header that is not one of its sub-tables (`[stages.…]`).
    """
    ident = re.compile(rf"""^\s*id\s*=\s*(["']){re.escape(stage_id)}\1\s*(?:#.*)?$""")
    headers = _headers(lines)
    for k, (begin, kind, name) in enumerate(headers):
        if (kind, name) != ("[[", "stages"):
            continue
        after = headers[k + 1:]
        block_end = next((i for i, kd, nm in after if kd != "[" or not nm.startswith("stages.")),
                         len(lines))
        own = [(i, nm) for i, _, nm in after if i < block_end]  # its sub-tables
        body_end = own[0][0] if own else block_end
        if not any(ident.match(lines[i]) for i in range(begin + 1, body_end)):
            continue
        speed = next((i for i, nm in own if nm == "stages.speed"), None)
        if speed is None:
            raise GradeError(f"{path}: the {stage_id} stage has no [stages.speed] table of its "
                             "own to write the thresholds into; add one under that stage (see "
                             "the other stages), or set the thresholds by hand.")
        start = speed + 1
        end = next((i for i, _ in own if i > speed), block_end)
        # New lines go before the blank lines and comments that end the table.
        while end > start and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1
        return start, end
    raise GradeError(f"{path}: no [[stages]] entry has id = \"{stage_id}\", so its thresholds "
                     "cannot be written; was the file changed while the references were timed?")


def _number(value: float) -> str:
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def _set_threshold(lines: list[str], start: int, end: int, cal: Calibration) -> None:
    """Set min_speedup on the architecture and backend's thresholds line in lines[start:end],
    or add the line."""
    value = _number(cal.suggested.min_speedup)
    line_of = re.compile(rf"^\s*thresholds\s*\.\s*{re.escape(cal.arch)}\s*\.\s*"
                         rf"{re.escape(cal.backend)}\s*=")
    for i in range(start, end):
        if line_of.match(lines[i]):
            line, n = re.subn(r"(\bmin_speedup\s*=\s*)[^,}\s#]+",
                              lambda m: m.group(1) + value, lines[i], count=1)
            if not n:  # min_fraction only: min_speedup joins it
                line = re.sub(r"=\s*\{\s*", lambda m: f"= {{ min_speedup = {value}, ", line,
                              count=1)
            lines[i] = _COPIED_FROM.sub("", line)
            return
    if end > 0 and not lines[end - 1].endswith("\n"):
        lines[end - 1] += "\n"
    lines.insert(end, f"{cal.key} = {{ min_speedup = {value} }}\n")


# `, copied_from = "sm_90"` (or the same as the first key) inside an inline table.
_COPIED_FROM = re.compile(r"""\s*,\s*copied_from\s*=\s*(["'])[^"']*\1|copied_from\s*=\s*(["'])[^"']*\2\s*,\s*""")


def _check_only_thresholds_changed(path: Path, before: str, after: str,
                                   found: list[Calibration]) -> None:
    """Raise GradeError unless `after` is `before` with only the calibrated values changed."""
    try:
        expected = tomllib.loads(before)
        for cal in found:
            stage = next(s for s in expected["stages"] if s.get("id") == cal.stage)
            per_arch = stage["speed"].setdefault("thresholds", {}).setdefault(cal.arch, {})
            threshold = per_arch.setdefault(cal.backend, {})
            threshold["min_speedup"] = float(_number(cal.suggested.min_speedup))
            threshold.pop("copied_from", None)
        same = tomllib.loads(after) == expected
    except (tomllib.TOMLDecodeError, KeyError, StopIteration, TypeError, AttributeError):
        same = False
    if not same:
        wanted = "\n".join(f"  {cal.stage}: {cal.key} = {{ min_speedup = "
                           f"{_number(cal.suggested.min_speedup)} }}" for cal in found)
        raise GradeError(f"{path} is laid out in a way that `grade calibrate --write` cannot "
                         "edit safely, so it was left as it is. Set these in each stage's "
                         f"[stages.speed] table by hand:\n{wanted}")
