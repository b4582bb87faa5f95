"""`grade STAGE...`, `grade all` and `grade list`: the commands.

This module is read for every line (the hidden `stage` command holds the grading options
that `grade --help` lists and that may stand before a stage), so each command imports what
it runs when it runs: grader.cli.requested (the request; NOT STARTED answered without
grading), grader.cli.run (the grading: PyTorch, pytest, the judge, the sandbox), and for
`grade list` rich's table. The list is the course's outline (grader.course.outline).
"""

from __future__ import annotations

from pathlib import Path

import click

from grader.cli.context import EXIT_CODES_HELP, EXIT_OK, course_of, outline_of
from grader.cli.parsing import GradingCommand, StageCommand, grading_options
from grader.course.outline import outline
from grader.tracks import TRACKS


@click.command("stage", cls=StageCommand, hidden=True, epilog=EXIT_CODES_HELP)
@click.argument("selectors", nargs=-1, required=True)
@grading_options
@click.pass_context
def stage_command(ctx, selectors, **options) -> int:
    """Grade the named stages."""
    return _graded(ctx, selectors, options)


@click.command("all", cls=GradingCommand, epilog=EXIT_CODES_HELP)
@grading_options
@click.pass_context
def all_command(ctx, **options) -> int:
    """Grade every stage."""
    return _graded(ctx, (), options)


def _graded(ctx: click.Context, selectors, options: dict) -> int:
    """Grade the stages named (none named: every stage)."""
    from grader.cli import requested

    answer = requested.unstarted(ctx, selectors, options)
    if answer is not None:
        return answer
    from grader.cli import run

    course = course_of(ctx)
    return run.grade(requested.request(course, course.named(selectors), options),
                     options["fail_on"])


@click.command("list")
@click.pass_context
def list_command(ctx) -> int:
    """List the stages of the course."""
    from rich.table import Table

    from grader.report.console import make_console

    course = outline_of(ctx) or outline(course_of(ctx))
    table = Table(title=course.title, title_justify="left")
    tracks = list(TRACKS)
    for column in ("#", "Stage", "Title", "Cases", "Points", *(f"exercises/{t}/" for t in tracks)):
        table.add_column(column)
    for s in course.stages:
        table.add_row(s.name, s.id, s.title, str(s.case_count), f"{s.points:g}",
                      *(Path(s.modules[t]).name for t in tracks))
    make_console().print(table)
    return EXIT_OK
