"""What is known of a student's stage files before any of them runs: which track they have
started, and whether a file is graded at all (missing, not started, or screened out by the
static check of grader.sandbox.screening)."""

from __future__ import annotations

from pathlib import Path

from grader.course import TRACKS, Course, Stage
from grader.course.todos import TodoState, todo_state
from grader.report.results import Status
from grader.sandbox.screening import describe as describe_findings
from grader.sandbox.screening import screen


def started_track(course: Course, stages: list[Stage], submission: Path | None = None) -> str | None:
    """The track whose exercises the student has started (a TODO filled in), when only one
    has been: `auto` grades that one, so a Triton student on a machine where cuTile runs is
    not told that every stage is NOT STARTED."""
    if submission and (submission / "exercises").is_dir():
        submission = submission / "exercises"
    started = set()
    for track in TRACKS:
        for stage in stages:
            path = (submission / stage.modules[track] if submission
                    else course.module_path(stage, track, solutions=False))
            if path.is_file() and not todo_state(path.read_text(encoding="utf-8")).not_started:
                started.add(track)
                break
    return started.pop() if len(started) == 1 else None


class NotRun(Exception):
    """A stage file that is judged without running it: missing, not started, or screened out."""

    def __init__(self, status: Status, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def misplaced(path: Path) -> str | None:
    """Where a missing stage file `path` (<folder>/<track>/<file>) is when it sits in the
    wrong folder: uploads such as Gradescope's arrive flat, every file at the folder's root.
    None when it is nowhere near."""
    if len(path.parts) < 3:
        return None
    graded = path.parents[1]  # the folder laid out like exercises/
    top = graded.parent if graded.name == "exercises" else graded
    goes = path.relative_to(top).as_posix()
    if top == graded and not any((top / track).is_dir() for track in TRACKS):
        goes = f"exercises/{goes}"  # a flat upload: the layout of the course's own folder
    for folder in dict.fromkeys((top, graded)):
        if (folder / path.name).is_file():
            where = ("at the folder's root" if folder == top
                     else f"in {folder.relative_to(top).as_posix()}/")
            return f"{path.name} is {where}; move it to {goes}"
    return None


def read_submission(path: Path, shown: str, rules) -> TodoState:
    """What is known of a stage's file before it runs (its TODOs); raises NotRun."""
    if not path.is_file():
        raise NotRun(Status.ERROR, misplaced(path) or
                     f"{shown} is missing; restore it from the course handout.")
    source = path.read_text(encoding="utf-8")
    todos = todo_state(source)
    if todos.not_started:
        numbers = ", ".join(str(n) for n in todos.todos)
        raise NotRun(Status.NOT_STARTED, f"fill in TODO {numbers} in {shown}")
    findings = screen(source, path.name, rules)
    if findings:
        raise NotRun(Status.ERROR, describe_findings(findings))
    return todos
