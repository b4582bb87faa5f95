"""One grading from the command line: `grade STAGE...` and `grade all` once their request
is built (grader.cli.grade). What it resolves to is graded, the result files asked for are
written before anything is shown (whatever a submission's text does to the display, its
results are kept), then the scorecard.

Imported when a stage is graded, not to read the command line: it imports the grading, and
with it PyTorch, pytest, the judge and the sandbox.
"""

from __future__ import annotations

import os
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path, PurePosixPath

import click
from rich.markup import escape

from grader import shown_clock
from grader.cli.context import EXIT_INTERRUPTED, EXIT_OK, interruption
from grader.cli.requested import exit_code
from grader.course import Course, Policy
from grader.errors import GradeError
from grader.grading import stages as grading
from grader.grading.request import GradingRequest, Outputs
from grader.instructor.submissions import listed
from grader.intake import gradescope_metadata
from grader.intake.overlay import Unpacked, as_submitted, laid_out
from grader.intake.upload import NotASubmission, UploadError
from grader.quoting import visible
from grader.report import annotations, gradescope, junit, markdown, picture_html
from grader.report.profile import CommandSeconds, profile_table
from grader.report.progress import stage_progress
from grader.report.console import make_console
from grader.report.scorecard import render
from grader.results import Report, Standing


def grade(request: GradingRequest, fail_on: str = "unfinished") -> int:
    """Grade the request; a submission is first read by the one rule of what a submission
    gives (grader.intake.upload), into a scratch folder laid out like exercises/. A
    Gradescope submission past the class's resubmission limit is not graded: the result of
    the last one counted stands."""
    standing = _standing(request)
    if standing is not None and standing.over_limit:
        gradescope.write_held(request.outputs.gradescope, standing)
        click.echo(f"submission {standing.number}, past the class's limit of {standing.allowed}: "
                   f"not graded; the result of submission {standing.allowed} stands "
                   f"(wrote {request.outputs.gradescope})")
        return EXIT_OK
    if request.submission is None:
        return _grade_resolved(request, fail_on, standing=standing)
    with ExitStack() as stack:
        # Only the reading of the submission is caught here: a GradeError of grading it (a
        # backend that cannot run here) is answered by _grade_resolved, with the notes.
        try:
            unpacked = stack.enter_context(laid_out(request.course, request.submission))
        except NotASubmission as exc:
            _not_graded(request.outputs, f"{exc}. {how_to_submit(request.course)}", exc.ignored)
            raise
        except UploadError as exc:  # a corrupt zip: the submission could not be read
            _not_graded(request.outputs, str(exc))
            raise
        return _grade_resolved(replace(request, submission=unpacked.exercises), fail_on,
                               unpacked, request.submission.name, standing)


def _standing(request: GradingRequest) -> Standing | None:
    """Where a Gradescope submission stands in the class's policy (None: not said). Its
    metadata unreadable, results.json says so before the error is raised."""
    path = request.outputs.gradescope_metadata
    if path is None or request.outputs.gradescope is None:
        return None
    try:
        return gradescope_metadata.standing(request.course.policy, gradescope_metadata.read(path),
                                            [s.id for s in request.course.stages])
    except GradeError as exc:
        _not_graded(request.outputs, str(exc))
        raise


def how_to_submit(course: Course) -> str:
    """What a student reads where nothing of their submission could be graded: the course's
    first stage file names what a stage file is."""
    first = PurePosixPath(next(iter(course.stages[0].modules.values()))).name
    return (f"Submit your stage files ({first}, ...) as they are, or the exercises/ folder "
            "that holds them, or a zip of it.")


def _not_graded(outputs: Outputs, message: str, notes: list[str] | None = None) -> None:
    """Gradescope's results.json is written whenever it is asked for: without a result the
    student would see only that the autograder failed."""
    if outputs.gradescope:
        gradescope.write_not_graded(outputs.gradescope, message, listed(notes or []))


def _grade_resolved(request: GradingRequest, fail_on: str, unpacked: Unpacked | None = None,
                    name: str = "", standing: Standing | None = None) -> int:
    console = make_console()
    notes = listed(unpacked.notes()) if unpacked else []
    try:
        resolved = request.resolve()
    except GradeError as exc:  # the backend cannot run here, say: nothing was graded
        _not_graded(request.outputs, str(exc), unpacked.notes() if unpacked else [])
        raise
    outputs = request.outputs
    before_run = process_seconds()
    try:
        report = grading.grade(resolved, lambda label, n: stage_progress(console, label, n,
                                                                         shown_clock.now))
    except grading.Interrupted as stop:
        if stop.report.stages:
            render(stop.report, console, outputs.verbose)
        console.print(f"interrupted ({interruption()}) while grading "
                      f"{escape(visible(stop.stage))}: {len(stop.report.stages)} of "
                      f"{len(request.stages)} stages graded"
                      + ("; no result files were written" if outputs.files() else ""),
                      soft_wrap=True)
        return EXIT_INTERRUPTED
    if unpacked is not None:
        report = as_submitted(report, unpacked, name)
    written = write_results(report, outputs, request.course.policy, notes, standing)
    if outputs.picture:
        written.append(picture_html.write_picture(report, outputs.picture))
    if notes:
        console.print("How the submission was read:", markup=False)
        for note in notes:
            console.print(f"  - {visible(note)}", markup=False, soft_wrap=True)
    render(report, console, outputs.verbose)
    if outputs.profile:
        so_far = process_seconds()
        console.print(profile_table(report, None if before_run is None or so_far is None
                                    else CommandSeconds(before_run, so_far)))
    if annotations.enabled():  # GitHub Actions: each failing stage marked on its file
        for line in annotations.annotations(report):
            click.echo(line)
    for path in written:
        console.print(f"wrote {path}", markup=False)
    return exit_code(report, fail_on)


def process_seconds() -> float | None:
    """Seconds since this process started, by the kernel's record of it (Linux: its start in
    /proc/self/stat against the boot clock, to 10 ms), less those the grading withheld (work
    with a hidden case's inputs: grader.shown_clock); None where there is none. What the
    grading's own clock cannot see: starting Python, imports, choosing the backend (the CUDA
    context), reading the course."""
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()  # the name may hold spaces
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started
                   - shown_clock.withheld_seconds())
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def write_results(report: Report, outputs: Outputs, policy: Policy = Policy(),
                  notes: list[str] | None = None, standing: Standing | None = None) -> list[Path]:
    """Write the result files asked for, before anything is shown: whatever a submission's
    text does to the display, its results are kept. The class's `policy` says when Gradescope
    shows students the hidden cases' results and whether it has a speed leaderboard; `notes`
    (how the submission was read) go into Gradescope's output, which is all a student sees
    there; `standing` (Gradescope's metadata read against the policy) its late penalty."""
    def to_gradescope(r: Report, p: Path) -> None:
        gradescope.write_gradescope(r, p, policy.hidden_cases, notes or [], standing,
                                    policy.leaderboard)

    writers = [(outputs.json, lambda r, p: r.write_json(p)), (outputs.junit, junit.write_junit),
               (outputs.gradescope, to_gradescope), (outputs.markdown, markdown.write_markdown),
               (outputs.summary, markdown.append_markdown)]
    for path, write in writers:
        if path:
            write(report, path)
    return [path for path, _ in writers if path]
