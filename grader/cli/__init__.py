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

    lazy.py        commands imported when used: `grade --help` lists them from COMMANDS
    parsing.py     how the line is read: stage names as commands, grading options anywhere
    grade.py       grade STAGE..., grade all, grade list (and the answers that need no grading)
    run.py         one grading: resolved, graded, its result files written, its scorecard shown
    machine.py     grade doctor, grade compile
    instructor.py  grade calibrate, release, autograder, skeletons, report, canvas
    batch.py       grade batch (one host or --slurm), and the Slurm task's hidden command

A command's module is imported when the command runs or its help is asked for: `grade
--help`, `grade list` and a NOT STARTED stage import neither PyTorch nor pytest nor pydantic
(tests/grading/test_light_start.py holds them to it).
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import click

from grader import __version__
from grader.cli.context import (EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE,
                                 stop_on_sigterm)
from grader.cli.lazy import Lazy
from grader.errors import GradeError

try:  # the grading options name the backends, so the tile languages are found here
    from grader.cli.parsing import GradeGroup
except GradeError as exc:  # an installation that declares none: said, not a traceback
    click.echo(f"error: {exc}", err=True)
    raise SystemExit(exc.exit_code) from None

# Each command: where it is, and its short help as `grade --help` lists it (the first
# sentence of its docstring; tests/grading/test_light_start.py checks they agree). None: hidden.
COMMANDS = {
    "stage": Lazy("grader.cli.grade:stage_command", None),  # `grade 3`, `grade softmax`
    "all": Lazy("grader.cli.grade:all_command", "Grade every stage."),
    "list": Lazy("grader.cli.grade:list_command", "List the stages of the course."),
    "doctor": Lazy("grader.cli.machine:doctor_command",
                   "Show what this machine can grade: versions, GPU, and each backend with its "
                   "fix."),
    "compile": Lazy("grader.cli.machine:compile_command",
                    "Compile the cuTile stages to cubins (needs cuda-tile and tileiras, not a "
                    "GPU)."),
    "calibrate": Lazy("grader.cli.instructor:calibrate_command",
                      "Time the reference solutions on this GPU and suggest speed thresholds "
                      "(instructors)."),
    "release": Lazy("grader.cli.instructor:release_command",
                    "Build the student handout in OUTDIR: no solutions/, no hidden cases "
                    "(instructors)."),
    "autograder": Lazy("grader.cli.instructor:autograder_command",
                       "Build the Gradescope autograder zip: the handout, the hidden cases, "
                       "setup.sh and run_autograder (instructors)."),
    "skeletons": Lazy("grader.cli.instructor:skeletons_command",
                      "Regenerate exercises/ from the solution markers in solutions/ "
                      "(instructors)."),
    "report": Lazy("grader.cli.instructor:report_command",
                   "Write OUT/report.html again from the results of `grade batch --out OUT`: "
                   "the class report, one page that needs no network (instructors)."),
    "canvas": Lazy("grader.cli.instructor:canvas_command",
                   "Write OUT/canvas.csv for Canvas's gradebook import: the students of "
                   "CANVAS_EXPORT (Canvas's own gradebook export), each with their final score "
                   "from `grade batch --out OUT` (instructors)."),
    "batch": Lazy("grader.cli.batch:batch_command",
                  "Grade many submissions (folders or zips), each isolated; write a gradebook "
                  "(instructors)."),
    "slurm-task": Lazy("grader.cli.batch:slurm_task_command", None),  # what Slurm runs
}


@click.group(cls=GradeGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EXIT_CODES_HELP, lazy=COMMANDS)
@click.option("--course", "course_path", type=click.Path(dir_okay=False, path_type=Path),
              help="course.toml to use (default: the nearest one at or above this folder).")
@click.version_option(__version__, prog_name="grade")
@click.pass_context
def cli(ctx: click.Context, course_path: Path | None) -> None:
    """Grade tilecourse stages against PyTorch and print a scorecard."""
    ctx.obj = course_path


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
        _say_error(exc)
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


def _say_error(exc: GradeError) -> None:
    # rich's console, imported when there is something to say: `grade --help` needs none
    from rich.markup import escape

    from grader.quoting import visible
    from grader.report.console import make_console

    make_console(stderr=True).print(f"[bold red]error:[/] {escape(visible(str(exc)))}",
                                    soft_wrap=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
