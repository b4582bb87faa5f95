"""`grade calibrate`: speed thresholds derived from the reference solutions on this GPU.

Each reference is timed on every speed case of its stage; the suggested threshold is the
slowest case's figure times a margin (default 0.8: a student kernel within 20% of the
reference earns the speed points), rounded down to 0.05. With --write, the thresholds
lines of course.toml are rewritten in place (the rest of the file, comments included, is
left as it is) after a backup.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from grader.backends import Selection
from grader.backups import backup
from grader.course import Course, Stage, Threshold
from grader.results import SpeedCase
from grader.runner import Runner
from grader.speed import SpeedCheck


@dataclass
class Calibration:
    stage: str
    backend: str
    cases: list[SpeedCase]
    suggested: Threshold


def _floor(value: float, step: float = 0.05) -> float:
    return round(math.floor(value / step) * step, 2)


def calibrate_stage(course: Course, stage: Stage, selection: Selection, margin: float) -> Calibration:
    selection.backend.prepare()
    runner = Runner(course.module_path(stage, selection.backend.track, solutions=True),
                    stage.problem.function, selection.backend.device)
    runner.load()
    try:
        check = SpeedCheck(stage, selection, runner, threshold=Threshold())
        cases = [check.time(case).case for case in stage.speed.cases]
    finally:
        runner.close()
    wrong = [c.summary for c in cases if not c.passed]
    if wrong:
        raise RuntimeError(f"the {stage.id} reference is wrong on a speed case: {wrong[0]}")
    suggested = Threshold(min_speedup=_floor(margin * min(c.speedup for c in cases)))
    return Calibration(stage.id, selection.backend.name, cases, suggested)


def write_thresholds(path: Path, found: list[Calibration]) -> Path:
    """Rewrite `thresholds.<backend> = {...}` in each stage's speed table; returns the backup."""
    lines = Path(path).read_text(encoding="utf-8").splitlines(keepends=True)
    for cal in found:
        start, end = _speed_table(lines, cal.stage)
        wanted = f"thresholds.{cal.backend} = {{ min_speedup = {cal.suggested.min_speedup:g} }}\n"
        pattern = re.compile(rf"^thresholds\.{re.escape(cal.backend)}\s*=")
        for i in range(start, end):
            if pattern.match(lines[i]):
                lines[i] = wanted
                break
        else:
            lines.insert(end, wanted)
    kept = backup(Path(path))
    Path(path).write_text("".join(lines), encoding="utf-8")
    return kept


def _speed_table(lines: list[str], stage_id: str) -> tuple[int, int]:
    """Line range of the [stages.speed] table that belongs to `stage_id`."""
    ident = re.compile(rf'^id\s*=\s*"{re.escape(stage_id)}"')
    begin = next(i for i, line in enumerate(lines) if ident.match(line))
    start = next(i for i in range(begin, len(lines)) if lines[i].strip() == "[stages.speed]") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].lstrip().startswith("[")),
               len(lines))
    while end > start and not lines[end - 1].strip():
        end -= 1  # insert new lines before the blank lines that end the table
    return start, end
