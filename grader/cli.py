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

Exit codes: 0 every graded stage passes, 1 a stage fails (or is not started), 2 a usage or
configuration error (the message says what to fix), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from grader import __version__, batch_command, doctor, grading, intake
from grader.backends import selection as backends
from grader.commandline import GradeGroup, GradingCommand, StageCommand, grading_options
from grader.course import TRACKS, Course, Stage, find_course_file, load_course
from grader.errors import GradeError
from grader.instructor import calibrate as calibration
from grader.instructor import release, skeletons
from grader.languages.cutile import compile_check, toolchain
from grader.quoting import visible
from grader.report import annotations, gradescope, junit, markdown, picture_html
from grader.report.progress import stage_progress
from grader.report.results import Report
from grader.report.scorecard import make_console, render, render_calibration, render_compile

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


@click.group(cls=GradeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--course", "course_path", type=click.Path(dir_okay=False, path_type=Path),
              help="course.toml to use (default: the nearest one at or above this folder).")
@click.version_option(__version__, prog_name="grade")
@click.pass_context
def cli(ctx: click.Context, course_path: Path | None) -> None:
    """Grade tilecourse stages against PyTorch and print a scorecard."""
    ctx.obj = course_path


def _course(ctx: click.Context) -> Course:
    return load_course(ctx.obj or find_course_file())


@cli.command("stage", cls=StageCommand, hidden=True)
@click.argument("selectors", nargs=-1, required=True)
@grading_options
@click.pass_context
def stage_command(ctx, selectors, **options) -> int:
    """Grade the named stages."""
    course = _course(ctx)
    stages = course.named(selectors)
    return _grade(course, stages, **options)


@cli.command("all", cls=GradingCommand)
@grading_options
@click.pass_context
def all_command(ctx, **options) -> int:
    """Grade every stage."""
    course = _course(ctx)
    return _grade(course, list(course.stages), **options)


def _grade(course: Course, stages: list[Stage], backend: str, track: str | None, solutions: bool,
           submission: Path | None, json_path: Path | None, junit_path: Path | None,
           gradescope_path: Path | None, markdown_path: Path | None, verbose: bool,
           picture_dir: Path | None, benchmark_json: Path | None, seed: int | None, timeout: float | None,
           keep_going: bool) -> int:
    console = make_console()
    selection = backends.select(backend, track)
    if backend == backends.AUTO and track is None and not solutions:
        started = intake.started_track(course, stages, submission)
        if started and started != selection.backend.track:
            selection = backends.select(backend, started)
            selection = backends.Selection(selection.backend, f"{selection.reason}; the "
                                           f"{started} track, the one whose exercises are started")
    try:
        report = grading.grade(course, stages, selection, solutions,
                               submission, seed, timeout, benchmark_json,
                               lambda label, cases: stage_progress(console, label, cases),
                               keep_going)
    except grading.Interrupted as stop:
        if stop.report.stages:
            render(stop.report, console, verbose)
        written = [p for p in (json_path, junit_path, gradescope_path, markdown_path,
                               benchmark_json) if p]
        console.print(f"interrupted (Ctrl-C) while grading {escape(visible(stop.stage))}: "
                      f"{len(stop.report.stages)} of {len(stages)} stages graded"
                      + ("; no result files were written" if written else ""), soft_wrap=True)
        return EXIT_INTERRUPTED
    written = _write_results(report, json_path, junit_path, gradescope_path, markdown_path)
    if picture_dir:
        written.append(picture_html.write_picture(report, picture_dir))
    render(report, console, verbose)
    if annotations.enabled():  # GitHub Actions: each failing stage marked on its file
        for line in annotations.annotations(report):
            click.echo(line)
    for path in written:
        console.print(f"wrote {path}", markup=False)
    return EXIT_OK if report.passed else EXIT_FAILED


def _write_results(report: Report, json_path: Path | None, junit_path: Path | None,
                   gradescope_path: Path | None, markdown_path: Path | None) -> list[Path]:
    """Write the result files asked for, before anything is shown: whatever a submission's
    text does to the display, its results are kept."""
    writers = [(json_path, lambda r, p: r.write_json(p)), (junit_path, junit.write_junit),
               (gradescope_path, gradescope.write_gradescope),
               (markdown_path, markdown.write_markdown)]
    for path, write in writers:
        if path:
            write(report, path)
    return [path for path, _ in writers if path]


@cli.command("list")
@click.pass_context
def list_command(ctx) -> int:
    """List the stages of the course."""
    course = _course(ctx)
    table = Table(title=course.title, title_justify="left")
    tracks = list(TRACKS)
    for column in ("#", "Stage", "Title", "Cases", "Points", *(f"exercises/{t}/" for t in tracks)):
        table.add_column(column)
    for s in course.stages:
        table.add_row(s.name, s.id, s.title, str(len(s.cases)), f"{s.points:g}",
                      *(Path(s.modules[t]).name for t in tracks))
    make_console().print(table)
    return EXIT_OK


@cli.command("doctor")
def doctor_command() -> int:
    """Show what this machine can grade: versions, GPU, and each backend with its fix."""
    diagnosis = doctor.diagnose()
    doctor.render(diagnosis, make_console())
    return EXIT_OK if diagnosis.can_grade else EXIT_FAILED


@cli.command("compile")
@click.argument("selectors", nargs=-1)
@click.option("--solutions", is_flag=True, help="Compile the reference solutions (instructors, CI).")
@click.option("--arch", "archs", multiple=True, default=compile_check.ARCHS, show_default=True,
              help="Target architecture; repeat for several.")
@click.pass_context
def compile_command(ctx, selectors, solutions: bool, archs: tuple[str, ...]) -> int:
    """Compile the cuTile stages to cubins (needs cuda-tile and tileiras, not a GPU).

    Name stages like `grade compile 3 softmax`, or `all` (the default). A stage that compiles
    is reported as COMPILED: that is a build check, not a correctness pass.
    """
    course = _course(ctx)
    if not toolchain.cuda_tile_version():
        raise GradeError(f"`grade compile` needs cuda-tile. Install it with: {toolchain.INSTALL_FIX}")
    stages = course.named(selectors)
    console = make_console()
    results = []
    for stage in stages:
        console.print(f"compiling {stage.name} {stage.id} for {', '.join(archs)} ...", markup=False)
        results.append(compile_check.compile_stage(course, stage, solutions, tuple(archs)))
    render_compile(results, archs, console)
    return EXIT_OK if all(r.status == "COMPILED" for r in results) else EXIT_FAILED


@cli.command("calibrate")
@click.argument("selectors", nargs=-1)
@click.option("--backend", "backend_names", multiple=True,
              type=click.Choice([n for n, b in backends.BACKENDS.items() if b.device == "cuda"]),
              help="GPU backend to calibrate (repeatable; default: every one that runs here).")
@click.option("--margin", type=click.FloatRange(0.05, 1.0), default=0.8, show_default=True,
              help="Threshold = margin x the reference's slowest speed-up.")
@click.option("--write", is_flag=True, help="Write the thresholds into course.toml (after a backup).")
@click.pass_context
def calibrate_command(ctx, selectors, backend_names, margin: float, write: bool) -> int:
    """Time the reference solutions on this GPU and suggest speed thresholds (instructors)."""
    course = _course(ctx)
    if not (course.root / "solutions").is_dir():
        raise GradeError(f"{course.root} has no solutions/ folder (a student handout?): "
                         "`grade calibrate` times the reference solutions, so it needs the "
                         "instructor's copy of the course.")
    stages = [s for s in course.named(selectors) if s.speed]
    names = backend_names or [n for n, b in backends.BACKENDS.items()
                              if b.device == "cuda" and b.probe() is None]
    if not names:
        raise GradeError("`grade calibrate` needs a GPU backend that runs here; "
                         "`grade doctor` says what is missing.")
    console = make_console()
    found = []
    for name in names:
        selection = backends.select(name)
        for stage in stages:
            console.print(f"timing the {stage.id} reference on {name} ...", markup=False)
            found.append(calibration.calibrate_stage(course, stage, selection, margin))
    render_calibration(found, margin, console)
    if write:
        kept = calibration.write_thresholds(course.path, found)
        console.print(f"wrote the thresholds into {course.path} (the old file is {kept.name})")
    return EXIT_OK


@cli.command("release")
@click.argument("outdir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Write into OUTDIR even if it is not empty.")
@click.pass_context
def release_command(ctx, outdir: Path, force: bool) -> int:
    """Build the student handout in OUTDIR: no solutions/, no hidden cases (instructors)."""
    course = _course(ctx)
    written = release.release(course, outdir, force)
    console = make_console()
    console.print(f"wrote the handout to {outdir}: {len(written)} files, no solutions/, "
                  f"no hidden cases; checked for reference code: none found")
    console.print(f"students start with: cd {outdir} && python3 -m venv .venv && "
                  ".venv/bin/python -m grader.install && .venv/bin/grade list", soft_wrap=True)
    return EXIT_OK


@cli.command("autograder")
@click.argument("zip_path", metavar="ZIP", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace ZIP if it exists.")
@click.pass_context
def autograder_command(ctx, zip_path: Path, force: bool) -> int:
    """Build the Gradescope autograder zip: the handout, the hidden cases, setup.sh and
    run_autograder (instructors)."""
    course = _course(ctx)
    names = release.autograder(course, zip_path, force)
    hidden = "with the hidden cases" if course.hidden_file else "no hidden cases (no course.hidden.toml)"
    make_console().print(f"wrote the Gradescope autograder to {zip_path}: {len(names)} files, "
                         f"{hidden}, no solutions/; upload it as the assignment's autograder",
                         markup=False)
    return EXIT_OK


@cli.command("skeletons")
@click.option("--check", is_flag=True, help="Only report exercises that are out of date (exit 1).")
@click.option("--force", is_flag=True,
              help="Also replace exercises whose TODOs were filled in (the old file is kept as .bak).")
@click.pass_context
def skeletons_command(ctx, check: bool, force: bool) -> int:
    """Regenerate exercises/ from the solution markers in solutions/ (instructors)."""
    course = _course(ctx)
    console = make_console()
    stale, refused = skeletons.update_exercises(course, check, force,
                                                lambda line: console.print(line, markup=False))
    if check:
        console.print("exercises are up to date" if not stale else f"{stale} exercises out of date")
        return EXIT_FAILED if stale else EXIT_OK
    return EXIT_FAILED if refused else EXIT_OK


cli.add_command(batch_command.batch_command)
cli.add_command(batch_command.slurm_task_command)


def main(args: list[str] | None = None) -> int:
    """Entry point: run the CLI and turn errors into messages and exit codes."""
    if threading.current_thread() is threading.main_thread():
        # Python leaves SIGINT ignored when it starts with it ignored (a background job of
        # a non-interactive shell, some CI runners and wrappers), and Ctrl-C would then do
        # nothing; grading must stop on it wherever it was started from.
        signal.signal(signal.SIGINT, signal.default_int_handler)
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
