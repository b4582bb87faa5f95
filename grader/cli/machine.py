"""`grade doctor` and `grade compile`: what this machine can grade, and the cuTile build
check that needs no GPU."""

from __future__ import annotations

import click

from grader import doctor
from grader.cli.context import EXIT_FAILED, EXIT_OK, course_of
from grader.cli.parsing import FAIL_ON
from grader.errors import GradeError
from grader.languages.cutile import toolchain
from grader.report.console import make_console
from grader.report.scorecard import render_compile


@click.command("doctor")
def doctor_command() -> int:
    """Show what this machine can grade: versions, GPU, and each backend with its fix."""
    diagnosis = doctor.diagnose()
    doctor.render(diagnosis, make_console())
    return EXIT_OK if diagnosis.can_grade else EXIT_FAILED


@click.command("compile")
@click.argument("selectors", nargs=-1)
@click.option("--solutions", is_flag=True, help="Compile the reference solutions (instructors, CI).")
@click.option("--arch", "archs", multiple=True, default=toolchain.ARCHS, show_default=True,
              help="Target architecture; repeat for several.")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="unfinished", show_default=True,
              help="What makes the exit code 1. unfinished: a stage not COMPILED, NOT STARTED "
                   "ones included. failure: a started stage that fails to build or cannot be "
                   "built (for CI). never: 0 whenever the check ran.")
@click.pass_context
def compile_command(ctx, selectors, solutions: bool, archs: tuple[str, ...], fail_on: str) -> int:
    """Compile the cuTile stages to cubins (needs cuda-tile and tileiras, not a GPU).

    Name stages like `grade compile 3 softmax`, or `all` (the default). A stage that compiles
    is reported as COMPILED: that is a build check, not a correctness pass.
    """
    from grader.languages.cutile import compile_check  # the sandbox's child: PyTorch

    course = course_of(ctx)
    if not toolchain.cuda_tile_version():
        raise GradeError(f"`grade compile` needs cuda-tile. Install it with: {toolchain.INSTALL_FIX}")
    stages = course.named(selectors)
    console = make_console()
    results = []
    for stage in stages:
        console.print(f"compiling {stage.name} {stage.id} for {', '.join(archs)} ...", markup=False)
        results.append(compile_check.compile_stage(course, stage, solutions, tuple(archs)))
    render_compile(results, archs, console)
    counted = {"unfinished": [r for r in results if r.status != "COMPILED"],
               "failure": [r for r in results if r.status not in ("COMPILED", "NOT STARTED")],
               "never": []}[fail_on]
    return EXIT_FAILED if counted else EXIT_OK
