"""The instructors' commands: `grade calibrate`, `grade release`, `grade autograder`,
`grade skeletons` and `grade report`."""

from __future__ import annotations

from pathlib import Path

import click

from grader.backends import selection as backends
from grader.cli.context import EXIT_FAILED, EXIT_OK, course_of
from grader.errors import GradeError
from grader.instructor import calibrate as calibration
from grader.instructor import release, skeletons
from grader.instructor.canvas import write_canvas
from grader.instructor.class_report import write_report
from grader.quoting import single_line
from grader.report.console import make_console
from grader.report.scorecard import render_calibration


@click.command("calibrate")
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
    course = course_of(ctx)
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


@click.command("release")
@click.argument("outdir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Write into OUTDIR even if it is not empty.")
@click.pass_context
def release_command(ctx, outdir: Path, force: bool) -> int:
    """Build the student handout in OUTDIR: no solutions/, no hidden cases (instructors)."""
    course = course_of(ctx)
    written = release.release(course, outdir, force)
    console = make_console()
    console.print(f"wrote the handout to {outdir}: {len(written)} files, no solutions/, "
                  f"no hidden cases; checked for reference code: none found")
    console.print(f"students start with: cd {outdir} && python3 -m venv .venv && "
                  ".venv/bin/python -m grader.install && .venv/bin/grade list", soft_wrap=True)
    return EXIT_OK


@click.command("autograder")
@click.argument("zip_path", metavar="ZIP", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace ZIP if it exists.")
@click.pass_context
def autograder_command(ctx, zip_path: Path, force: bool) -> int:
    """Build the Gradescope autograder zip: the handout, the hidden cases, setup.sh and
    run_autograder (instructors)."""
    course = course_of(ctx)
    names = release.autograder(course, zip_path, force)
    hidden = "with the hidden cases" if course.hidden_file else "no hidden cases (no course.hidden.toml)"
    make_console().print(f"wrote the Gradescope autograder to {zip_path}: {len(names)} files, "
                         f"{hidden}, no solutions/; upload it as the autograder of a Programming "
                         "Assignment on Gradescope's Ubuntu base image (docs/instructors.md, "
                         "Gradescope)",
                         markup=False)
    return EXIT_OK


@click.command("skeletons")
@click.option("--check", is_flag=True, help="Only report exercises that are out of date (exit 1).")
@click.option("--force", is_flag=True,
              help="Also replace exercises whose TODOs were filled in (the old file is kept as .bak).")
@click.pass_context
def skeletons_command(ctx, check: bool, force: bool) -> int:
    """Regenerate exercises/ from the solution markers in solutions/ (instructors)."""
    course = course_of(ctx)
    console = make_console()
    stale, refused = skeletons.update_exercises(course, check, force,
                                                lambda line: console.print(line, markup=False))
    if check:
        console.print("exercises are up to date" if not stale else f"{stale} exercises out of date")
        return EXIT_FAILED if stale else EXIT_OK
    return EXIT_FAILED if refused else EXIT_OK


@click.command("report")
@click.argument("out", metavar="OUT", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.pass_context
def report_command(ctx, out: Path) -> int:
    """Write OUT/report.html again from the results of `grade batch --out OUT`: the class
    report, one page that needs no network (instructors)."""
    path = write_report(out, course_of(ctx))
    make_console().print(f"class report: {path}", markup=False, soft_wrap=True)
    return EXIT_OK


@click.command("canvas")
@click.argument("out", metavar="OUT", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("export", metavar="CANVAS_EXPORT",
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--column", required=True, metavar="'NAME (ID)'",
              help="The assignment's column as Canvas heads it in its export, with its id: "
                   "'Tile course (12345)'.")
@click.pass_context
def canvas_command(ctx, out: Path, export: Path, column: str) -> int:
    """Write OUT/canvas.csv for Canvas's gradebook import: the students of CANVAS_EXPORT
    (Canvas's own gradebook export), each with their final score from `grade batch --out
    OUT` (instructors)."""
    written = write_canvas(course_of(ctx), out, export, column)
    console = make_console()
    console.print(f"wrote {written.path}: {written.matched} students scored in {column!r}",
                  markup=False, soft_wrap=True)
    for what, names in (("in Canvas, with no row in the gradebook (left empty)", written.unmatched),
                        ("in the gradebook, not in Canvas's export", written.unlisted)):
        if names:
            console.print(single_line(f"{len(names)} {what}: {', '.join(names[:20])}"
                                      + (" ..." if len(names) > 20 else ""), 600),
                          markup=False, soft_wrap=True)
    return EXIT_OK
