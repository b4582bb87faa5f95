"""What is known of a student's stage files before any of them runs: which tracks they have
started (grader.grading.request chooses from it), and whether a file is graded at all
(missing, not started, or screened out by the static check of grader.sandbox.screening)."""

from __future__ import annotations

from pathlib import Path

from grader.course import Stage
from grader.course.todos import TodoState, todo_state
from grader.results import Status
from grader.sandbox.screening import describe as describe_findings
from grader.sandbox.screening import Endless, SourceUnreadable, screen
from grader.tracks import TRACKS


def started_stages(stages: list[Stage] | tuple[Stage, ...], folder: Path) -> dict[str, list[str]]:
    """Per track, the ids of the stages whose file in `folder` (laid out like exercises/)
    has a TODO filled in."""
    return {track: [stage.id for stage in stages if _is_started(folder / stage.modules[track])]
            for track in TRACKS}


def _is_started(path: Path) -> bool:
    try:
        return path.is_file() and not todo_state(path.read_text(encoding="utf-8")).not_started
    except (OSError, UnicodeDecodeError):  # unreadable: `grade` reports it when it grades
        return False


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
    source = _source(path, shown)
    todos = todo_state(source)
    unstarted = not_started(todos, shown)
    if unstarted is not None:
        raise unstarted
    try:
        findings = screen(source, path.name, rules)
    except SourceUnreadable as exc:
        raise NotRun(Status.ERROR, f"not graded: {exc}") from None
    except Endless as exc:
        raise NotRun(Status.FAIL, str(exc)) from None
    if findings:
        raise NotRun(Status.ERROR, describe_findings(findings))
    return todos


def not_started(todos: TodoState, shown: str) -> NotRun | None:
    """A stage file (`shown` as messages name it) whose every TODO still holds its
    placeholder: NOT STARTED, and what to fill in. None: it is started."""
    if not todos.not_started:
        return None
    numbers = ", ".join(str(n) for n in todos.todos)
    return NotRun(Status.NOT_STARTED, f"fill in TODO {numbers} in {shown}")


def _source(path: Path, shown: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise NotRun(Status.ERROR, f"{shown} is not UTF-8 text (at byte {exc.start}); save it "
                     "as UTF-8, the encoding Python expects.") from None
    except OSError as exc:
        raise NotRun(Status.ERROR, f"{shown} cannot be read: {exc.strerror}.") from None
