"""Which submissions of a class `grade batch` grades on this run, and what is kept of one
that ran out of time.

A submission is graded when it has no result yet, when its files changed since its result
(a digest of the stage files taken from it is kept in NAME.intake.json beside the result: a
resubmission is noticed, an untouched one is not graded twice, nor is every one after a
change to the handout), when --only names it, or everyone with
--force. Under a resubmission limit ([policy] max_submissions), a changed submission whose
earlier versions already reached it is not graded again: its last result stands, and the
gradebook says so. (A Gradescope bulk export counts its own history instead; there the
limit is only reported, since the export holds no earlier files to grade.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from grader.course import Course, Stage
from grader.errors import GradeError
from grader.instructor.gradebook import read_intake, write_intake
from grader.instructor.submissions import Entry, comparable, current_digest
from grader.results import Report, StageResult, Status, write_file


@dataclass
class RegradePlan:
    todo: list[Entry] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # graded again: their files changed
    held: list[str] = field(default_factory=list)  # changed past the resubmission limit
    # changed past the limit, and graded all the same (--only or --force named them)
    past_limit: list[str] = field(default_factory=list)
    unchanged: int = 0  # results kept as they are


def only(found: list[Entry], names: tuple[str, ...]) -> list[Entry]:
    """The submissions --only names (all of them without --only)."""
    if not names:
        return found
    known = {e.name for e in found}
    missing = [n for n in names if n not in known]
    if missing:
        shown = ", ".join(sorted(known)[:10]) + (" ..." if len(known) > 10 else "")
        raise GradeError(f"--only {' '.join(missing)}: no submission of that name among the "
                         f"{len(found)} listed ({shown}); name one as the gradebook's "
                         "`student` column does.")
    return [e for e in found if e.name in names]


def plan(course: Course, found: list[Entry], out: Path, force: bool) -> RegradePlan:
    """What to grade of `found` on this run (everything with `force`). A change held back by
    the resubmission limit is noted in the submission's intake, for the gradebook."""
    result = RegradePlan()
    limit = course.policy.max_submissions
    for entry in found:
        if not (out / "students" / f"{entry.name}.json").is_file():
            result.todo.append(entry)
            continue
        intake = read_intake(out, entry.name)
        if force:
            result.todo.append(entry)
            if _past_limit(entry, intake, limit, course):
                result.past_limit.append(entry.name)
            continue
        if intake.digest and intake.digest == current_digest(entry, course):
            result.unchanged += 1
            continue
        if _past_limit(entry, intake, limit, course):
            result.held.append(entry.name)
            intake.not_graded_later = f"changed after {versions(intake.versions)}; not graded again"
            write_intake(out, entry.name, intake)
            continue
        result.changed.append(entry.name)
        result.todo.append(entry)
    return result


def _past_limit(entry: Entry, intake, limit: int | None, course: Course) -> bool:
    """Whether grading `entry` would count a version past the resubmission limit: its files
    changed after the limit's number of graded versions (a bulk export counts its own)."""
    exported = entry.meta is not None and entry.meta.submissions is not None
    return bool(limit and comparable(intake.digest) and intake.versions >= limit
                and not exported and intake.digest != current_digest(entry, course))


def past_limit_note(name: str, limit: int) -> str:
    return (f"{name}: changed after {versions(limit)} (the resubmission limit), and graded "
            "all the same, as --only or --force asked: this version's result now stands")


def versions(count: int) -> str:
    return f"{count} graded version{'' if count == 1 else 's'}"


def held_note(name: str, limit: int) -> str:
    return (f"{name}: changed after {versions(limit)} (the resubmission limit); not graded "
            "again, the last result stands")


def keep_graded_stages(so_far: Path, result: Path, stages: tuple[Stage, ...], track: str,
                       limit: float) -> bool:
    """After a submission ran out of --limit: its result is the stages it finished, each
    other stage an ERROR that says why, in the course's order. Whether there was any stage
    to keep."""
    try:
        data = json.loads(so_far.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or not data.get("stages"):
        return False
    done = {s["id"] for s in data["stages"]}
    missing = [StageResult(
        number=s.number, id=s.id, title=s.title, backend=data.get("backend", ""),
        module=f"exercises/{s.modules.get(track, '')}", max_points=s.points,
        status=Status.ERROR, message=f"not graded: the submission's time ran out (--limit "
        f"{limit:g} s) before this stage finished; grade it again with a larger --limit")
        for s in stages if s.id not in done]
    extra = Report("", "", "", "", {}, "", stages=missing).to_json()["stages"]
    # On a GPU a stage finishes once its speed is timed, after every stage's cases: the
    # stages kept need not come first.
    order = {s.id: index for index, s in enumerate(stages)}
    data["stages"] = sorted(data["stages"] + extra,
                            key=lambda s: order.get(s.get("id"), len(order)))
    data["points"] = round(sum(s["total_points"] for s in data["stages"]), 2)
    data["max_points"] = round(sum(s["total_max_points"] for s in data["stages"]), 2)
    data["passed"] = data["passed"] and not extra
    write_file(result, json.dumps(data, indent=2) + "\n")
    return True
