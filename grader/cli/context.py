"""What every `grade` command shares: the course the group was given, and the exit codes."""

from __future__ import annotations

import click

from grader.course import Course, find_course_file, load_course

# 0 every graded stage passes, 1 a stage fails (or is not started), 2 a usage or
# configuration error (the message says what to fix), 130 interrupted (Ctrl-C).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def course_of(ctx: click.Context) -> Course:
    """The course named with `grade --course`, else the nearest course.toml."""
    root = ctx.find_root()
    return load_course(root.obj or find_course_file())
