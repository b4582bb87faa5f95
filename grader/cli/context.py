"""What every `grade` command shares: the course the group was given, and the exit codes.

Read for every line (`grade --help` ends with the exit codes): the course's checked
dataclasses are imported by the check, when a command asks for the course.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import click

from grader.course.naming import find_course_file
from grader.course.outline import CourseOutline, kept, load_and_keep

if TYPE_CHECKING:
    from grader.course import Course

# 0 every graded stage passes, 1 a stage fails (or is not started; `--fail-on` chooses), 2 a
# usage or configuration error (the message says what to fix), 130 interrupted (Ctrl-C or SIGTERM).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# The same, as `grade --help` and `grade all --help` end.
EXIT_CODES_HELP = (
    "Exit codes: 0 every stage graded passes; 1 a stage short of a full pass, NOT STARTED "
    "stages included (with --fail-on failure, as CI runs it: only a started stage that fails, "
    "errors or is too slow; with --fail-on never: never); 2 a mistake on the command line or in "
    "course.toml (the message says what to fix); 130 interrupted (Ctrl-C or SIGTERM).")


def stop_on_sigterm():
    """SIGTERM (Slurm's scancel and time limit, `timeout`, a CI job cancelled) stops grading
    as Ctrl-C does: every process ended, every scratch folder removed. Left to its default it
    ended the process at once, and a Slurm task cancelled or out of time left its students'
    copies in the node's /tmp. Called from the main thread; returns the handler it replaced."""
    pid = os.getpid()
    _received.clear()  # of this command only (a process may call main() more than once)

    def interrupt(signum, frame):
        if os.getpid() != pid:  # a fork that has not replaced its program: never go on here
            os._exit(128 + signum)
        _received.append(signum)
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


_received: list[int] = []  # the stop signals received (stop_on_sigterm)


def interruption() -> str:
    """What interrupted this process, as the message that says so names it."""
    return "SIGTERM" if _received else "Ctrl-C"


def course_file(ctx: click.Context) -> Path:
    """The course.toml named with `grade --course`, else the nearest one."""
    return ctx.find_root().obj or find_course_file()


def course_of(ctx: click.Context) -> Course:
    """The course, checked (its outline kept for `outline_of`)."""
    return load_and_keep(course_file(ctx))


def outline_of(ctx: click.Context) -> CourseOutline | None:
    """The course's outline, kept from its last check on this machine where nothing it
    depends on changed since (grader.course.outline); None: `course_of` checks it."""
    return kept(course_file(ctx))
