"""The `grade` command.

    grade stage3            grade one stage (also `grade 3`, `grade softmax`, `grade 1 3`)
    grade all               grade every stage
    grade list              list the stages
    grade doctor            what this machine can grade, and how to fix what it cannot
    grade compile all       compile the cuTile stages for sm_80/90/100/120 (no GPU needed)
    grade calibrate         suggest speed thresholds from the references on this GPU (instructors)
    grade release OUTDIR    build the student handout (instructors)
    grade autograder ZIP    build the Gradescope autograder zip (instructors)
    grade batch SUBMISSIONS grade a class, each submission isolated; write a gradebook
    grade skeletons         regenerate exercises/ from solutions/ (instructors)
    grade report OUT        write OUT/report.html again from a batch's results (instructors)
    grade canvas OUT CSV    OUT/canvas.csv, the final scores for Canvas's gradebook import

Exit codes: 0 every graded stage passes, 1 a stage fails (or is not started: `--fail-on
failure`, as CI runs it, counts only a started stage that fails), 2 a usage or configuration
error (the message says what to fix), 130 interrupted (Ctrl-C, or SIGTERM: Slurm's scancel
and time limit, `timeout`, a CI job cancelled).

    parsing.py     how the line is read: stage names as commands, grading options anywhere
    grade.py       grade STAGE..., grade all, grade list
    machine.py     grade doctor, grade compile
    instructor.py  grade calibrate, release, autograder, skeletons, report, canvas
    batch.py       grade batch (one host or --slurm), and the Slurm task's hidden command
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import click
from rich.markup import escape

from grader import __version__
from grader.cli import batch, grade, instructor, machine
from grader.cli.context import (EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE,
                                 stop_on_sigterm)
from grader.cli.parsing import GradeGroup
from grader.errors import GradeError
from grader.quoting import visible
from grader.report.scorecard import make_console


@click.group(cls=GradeGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EXIT_CODES_HELP)
@click.option("--course", "course_path", type=click.Path(dir_okay=False, path_type=Path),
              help="course.toml to use (default: the nearest one at or above this folder).")
@click.version_option(__version__, prog_name="grade")
@click.pass_context
def cli(ctx: click.Context, course_path: Path | None) -> None:
    """Grade tilecourse stages against PyTorch and print a scorecard."""
    ctx.obj = course_path


for command in (grade.stage_command, grade.all_command, grade.list_command,
                machine.doctor_command, machine.compile_command, instructor.calibrate_command,
                instructor.release_command, instructor.autograder_command,
                instructor.skeletons_command, instructor.report_command,
                instructor.canvas_command, batch.batch_command,
                batch.slurm_task_command):
    cli.add_command(command)


def main(args: list[str] | None = None) -> int:
    """Entry point: run the CLI and turn errors into messages and exit codes."""
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        # Python leaves SIGINT ignored when it starts with it ignored (a background job of
        # a non-interactive shell, some CI runners and wrappers), and Ctrl-C would then do
        # nothing; grading must stop on it wherever it was started from.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # SIGTERM stops grading as Ctrl-C does, for this command only (a process that calls
    # main() keeps its own handler afterwards).
    previous = stop_on_sigterm() if main_thread else None
    try:
        return _run(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(args: list[str] | None) -> int:
    try:
        code = cli.main(args=args, prog_name="grade", standalone_mode=False)
    except GradeError as exc:
        make_console(stderr=True).print(f"[bold red]error:[/] {escape(visible(str(exc)))}",
                                        soft_wrap=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:  # --help, --version
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE
    except click.Abort:  # Ctrl-C outside grading
        click.echo("aborted", err=True)
        return EXIT_INTERRUPTED
    return code if isinstance(code, int) else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
