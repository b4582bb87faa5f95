"""What `grade STAGE...` and `grade all` ask for: their options as one GradingRequest, the
exit code its report makes, and the answer given without grading to a request whose every
stage is NOT STARTED where a CPU backend grades it (grader.grading.unstarted).

That answer is the one grader.cli.run gives (the progress, the scorecard, the annotations,
the exit code), without what grading loads: PyTorch, pytest, pydantic, the judge.
"""

from __future__ import annotations

import click

from grader import shown_clock
from grader.cli.context import EXIT_FAILED, EXIT_OK, outline_of
from grader.errors import GradeError
from grader.grading.request import GradingRequest, Limits, Outputs
from grader.grading.unstarted import unstarted_report
from grader.report import annotations
from grader.report.progress import stage_progress
from grader.report.console import make_console
from grader.report.scorecard import render
from grader.results import Report, StageResult, Status

# What asks for more than the scorecard (result files, a picture, the versions and
# protections, where the time went) or grades other files than exercises/: always graded.
BEYOND_THE_SCORECARD = ("solutions", "submission", "json_path", "junit_path", "gradescope_path",
                        "gradescope_metadata", "markdown_path", "summary_path", "picture_dir",
                        "profile", "verbose", "so_far_path", "benchmark_json")


def request(course, stages: list, options: dict) -> GradingRequest:
    """The grading options, as click read them, in one request."""
    return GradingRequest(
        course, tuple(stages), options["backend"], options["track"], options["solutions"],
        options["submission"], seed=options["seed"],
        limits=Limits(options["timeout"], options["keep_going"]),
        outputs=Outputs(options["json_path"], options["junit_path"], options["gradescope_path"],
                        options["gradescope_metadata"], options["markdown_path"],
                        options["picture_dir"],
                        options["benchmark_json"], options["verbose"],
                        summary=options["summary_path"], so_far=options["so_far_path"],
                        profile=options["profile"]))


def unstarted(ctx: click.Context, selectors, options: dict) -> int | None:
    """The answer to a request whose every stage is NOT STARTED where a CPU backend grades
    it, from the course's outline and the stage files alone; None where it is graded (and
    nothing was shown)."""
    if any(options[name] for name in BEYOND_THE_SCORECARD):
        return None
    course = outline_of(ctx)
    if course is None:
        return None
    stages = course.named(selectors)  # none such: the error the grading would give
    try:
        resolved = request(course, stages, options).resolve()
    except GradeError:  # a backend that cannot run here: the grading says so, as ever
        return None
    console = make_console()
    report = unstarted_report(resolved, lambda label, cases: stage_progress(
        console, label, cases, shown_clock.now))
    if report is None:
        return None
    render(report, console)
    if annotations.enabled():  # GitHub Actions: each failing stage marked on its file
        for line in annotations.annotations(report):
            click.echo(line)
    return exit_code(report, options["fail_on"])


def exit_code(report: Report, fail_on: str) -> int:
    """EXIT_FAILED where `--fail-on` counts the report as failed, else EXIT_OK."""
    if fail_on == "never":
        return EXIT_OK
    if fail_on == "failure":
        return EXIT_FAILED if any(_started_and_failing(s) for s in report.stages) else EXIT_OK
    return EXIT_OK if report.passed else EXIT_FAILED


def _started_and_failing(stage: StageResult) -> bool:
    """A stage the student started that fails: a wrong case or check (FAIL), a file that does
    not import or could not be graded (ERROR), or, where speed was graded, too slow. NOT
    STARTED is work not begun; PARTLY GRADED passed every case this machine could run."""
    if stage.status in (Status.FAIL, Status.ERROR):
        return True
    return stage.speed.graded and stage.speed.points < stage.speed.max_points
