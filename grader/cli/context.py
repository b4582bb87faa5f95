"""What every `grade` command shares: the course the group was given, and the exit codes."""

from __future__ import annotations

import click

from grader.course import Course, find_course_file, load_course

# 0 every graded stage passes, 1 a stage fails (or is not started; `--fail-on` chooses), 2 a
# usage or configuration error (the message says what to fix), 130 interrupted (Ctrl-C).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# The same, as `grade --help` and `grade all --help` end.
EXIT_CODES_HELP = (
    "Exit codes: 0 every stage graded passes; 1 a stage short of a full pass, NOT STARTED "
    "stages included (with --fail-on failure, as CI runs it: only a started stage that fails, "
    "errors or is too slow; with --fail-on never: never); 2 a mistake on the command line or in "
    "course.toml (the message says what to fix); 130 interrupted (Ctrl-C).")


def course_of(ctx: click.Context) -> Course:
    """The course named with `grade --course`, else the nearest course.toml."""
    root = ctx.find_root()
    return load_course(root.obj or find_course_file())
