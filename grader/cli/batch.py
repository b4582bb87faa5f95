"""The `grade batch` command (one host, or a Slurm cluster with --slurm) and the hidden
`grade slurm-task` that each task of a Slurm array runs."""

from __future__ import annotations

import os
from pathlib import Path

import click

from grader import sandbox
from grader.backends import selection as backends
from grader.cli.context import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, course_of, interruption
from grader.errors import GradeError
from grader.grading.request import GradingRequest, Limits
from grader.instructor import batch, regrade, roster, slurm
from grader.instructor.class_report import write_report
from grader.instructor.gradebook import no_result
from grader.instructor.submissions import usable_names
from grader.quoting import single_line
from grader.report.progress import batch_progress, slurm_progress
from grader.report.console import make_console
from grader.report.scorecard import sandbox_line
from grader.tracks import TRACKS



# The options that only go with --slurm (grader.instructor.slurm.Options).
SLURM_ONLY = ("partition", "gres", "minutes", "per_task", "extra", "allow_mixed_gpus")


@click.command("batch")
@click.argument("submissions", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("grade-results"), show_default=True,
              help="Folder for students/*.json, logs/ and gradebook.csv.")
@click.option("--backend", type=click.Choice(backends.CHOICES), default=backends.AUTO,
              show_default=True,
              help="auto: each student on their own track (the one whose stage files they "
                   "filled in), with the best backend for it here; a backend's name grades "
                   "everyone on its track.")
@click.option("--track", type=click.Choice(TRACKS),
              help="Grade every student on this track (default: each student's own).")
@click.option("--jobs", type=click.IntRange(1), default=1, show_default=True,
              help="Submissions graded at once on a CPU host (on a GPU host: one per GPU).")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1),
              help="One seed for the whole class (default: the one OUT/class.json recorded, "
                   "else a fresh one, printed).")
@click.option("--timeout", type=click.FloatRange(1),
              help="Seconds one call of a submission may take (default: each stage's "
                   "time_limit in course.toml).")
@click.option("--limit", type=click.FloatRange(1), default=1800, show_default=True,
              help="Seconds one whole submission may take.")
@click.option("--force", is_flag=True,
              help="Grade again every submission, even those whose files did not change "
                   "since their result.")
@click.option("--only", multiple=True, metavar="NAME",
              help="Grade only this submission (repeatable), again even if unchanged; the "
                   "gradebook keeps every other row.")
@click.option("--keep-going", is_flag=True,
              help="Run every case of a stage even after one timed out (each may cost the "
                   "whole --timeout).")
@click.option("--roster", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The class list, a CSV with a column named student, sid or email (and "
                   "name): every student on it gets a gradebook row, a 0 for one who handed "
                   "nothing in.")
@click.option("--allow-weak-sandbox", is_flag=True,
              help="Grade even where the sandbox cannot hide the other submissions and results "
                   "from a submission, or end every process it starts (see `grade doctor`).")
@click.option("--slurm", "use_slurm", is_flag=True,
              help="Grade on a Slurm cluster, as a job array of one GPU per task (run this "
                   "on the login node; OUT, the course and the submissions on a shared "
                   "filesystem).")
@click.option("--partition", help="With --slurm: the partition to run in.")
@click.option("--gres", help="With --slurm: the GPU to ask for (default gpu:1 for a GPU "
                             "backend; name a type, gpu:a100:1, where a partition mixes kinds).")
@click.option("--time", "minutes", type=click.IntRange(1),
              help="With --slurm: minutes one task may run (default: its students' --limit, "
                   "plus 10).")
@click.option("--per-task", type=click.IntRange(1), default=1, show_default=True,
              help="With --slurm: submissions one task grades, one after another.")
@click.option("--sbatch", "extra", multiple=True,
              help="With --slurm: another sbatch option, as sbatch takes it (repeatable): "
                   "--sbatch=--account=cs101 --sbatch=--constraint=h100.")
@click.option("--allow-mixed-gpus", is_flag=True,
              help="With --slurm: take results graded on another GPU kind than the class's "
                   "(speed thresholds are per GPU kind, so the grades may not compare).")
@click.option("--poll", type=click.FloatRange(0.1), default=15, hidden=True,
              help="Seconds between two looks at the array's state.")
@click.pass_context
def batch_command(ctx, submissions, **options) -> int:
    """Grade many submissions (folders or zips), each isolated; write a gradebook (instructors)."""
    course = course_of(ctx)
    console = make_console()
    cluster = {k: options.pop(k) for k in SLURM_ONLY}
    # Absolute from here on: each student is graded by a process whose working folder is a
    # scratch folder of its own, and a Slurm task runs wherever the node starts it.
    out = Path(os.path.abspath(options["out"]))
    force, limit = options["force"], options["limit"]
    if not options["use_slurm"]:
        flags = {p.name: p.opts[0] for p in ctx.command.params}
        given = [flags[k] for k, v in cluster.items()
                 if v not in (None, False, ()) and not (k == "per_task" and v == 1)]
        if given:
            verb = "goes" if len(given) == 1 else "go"
            raise GradeError(f"{', '.join(given)} only {verb} with --slurm; add --slurm to grade "
                             "on the cluster, or leave them out to grade on this host.")
        # fail early, with the fix, where the backend cannot run here
        selection = backends.select(options["backend"], options["track"])
        protections = sandbox.probe()
        batch.require_a_safe_sandbox(protections, options["allow_weak_sandbox"])
        console.print(sandbox_line(protections), markup=False)
    else:
        slurm.require_slurm()  # the login node needs no GPU: the backend runs on the nodes
    found = batch.entries(course, list(submissions))
    if not found:
        raise GradeError("No submissions found: name folders or .zip files, a folder of them, "
                         "or a Gradescope bulk export (its folder with submission_metadata.yml).")
    found, renamed = usable_names(found)
    for note in renamed:
        console.print(single_line(note, 600), markup=False, soft_wrap=True)
    chosen = regrade.only(found, options["only"])
    roster.update_roster(out, found)
    if options["roster"]:
        added = roster.import_roster(out, options["roster"])
        many = "student" if len(added) == 1 else "students"
        console.print(f"class list {options['roster']}: {len(added)} {many} with no submission "
                      "listed here, each given a row", markup=False, soft_wrap=True)
    # The class's one request: each student's submission fills it in (grader.instructor.batch).
    request = GradingRequest(course, tuple(course.stages), options["backend"], options["track"],
                             seed=batch.class_seed(out, options["seed"], force),
                             limits=Limits(options["timeout"], options["keep_going"]))
    plan = regrade.plan(course, chosen, out, force or bool(options["only"]))
    for name in plan.held:
        console.print(single_line(regrade.held_note(name, course.policy.max_submissions), 600),
                      markup=False, soft_wrap=True)
    for name in plan.past_limit:
        console.print(single_line(regrade.past_limit_note(name, course.policy.max_submissions),
                                  600), markup=False, soft_wrap=True)
    if options["use_slurm"]:
        settings = slurm.Options(**cluster, poll=options["poll"],
                                 allow_weak_sandbox=options["allow_weak_sandbox"])
        return _on_slurm(found, plan, request, out, limit, force, settings, console)
    gpus = []
    if selection.backend.device == "cuda":
        import torch

        gpus = [str(i) for i in range(torch.cuda.device_count())]
    jobs = options["jobs"]
    workers = f"{len(gpus)} GPU workers" if gpus else f"{jobs} CPU workers"
    tracks = (f"every student with {selection.backend.name}"
              if request.backend != backends.AUTO or request.track
              else "each student on their own track")
    changed = f" ({len(plan.changed)} changed since their result)" if plan.changed else ""
    console.print(f"grading {len(plan.todo)} of {len(found)} submissions{changed}, {tracks}, "
                  f"seed {request.seed}, {workers}; results in {out}", markup=False)
    graded: list[batch.Graded] = []  # as each ends: what an interrupted batch has graded
    try:
        with batch_progress(console, len(plan.todo)) as shown:
            def done(one: batch.Graded) -> None:
                graded.append(one)
                shown(one)

            batch.run(plan.todo, out, request, jobs, gpus, limit, done)
    except KeyboardInterrupt:
        _write_class_files(course, out, found)
        console.print(f"interrupted ({interruption()}) after {len(graded)} of "
                      f"{len(plan.todo)} submissions; what was graded is kept, and the same "
                      "command grades the rest", markup=False)
        return EXIT_INTERRUPTED
    return _finish(course, out, found, graded, console)


def _on_slurm(found, plan: regrade.RegradePlan, request: GradingRequest, out: Path, limit: float,
              force: bool, options: slurm.Options, console) -> int:
    backend, course = request.backend, request.course
    on_cpu = backend in backends.BACKENDS and backends.BACKENDS[backend].device != "cuda"
    if options.gres is None and not on_cpu:  # (auto picks a GPU backend on a GPU node)
        options.gres = "gpu:1"
    runs = slurm.open_runs(course, out)
    if runs and force:
        raise GradeError(f"{slurm.cancel_hint(runs)}; --force grades everyone again, so "
                         "cancel it first.")
    busy = {e.name for r in runs for t in r.tasks for e in t}
    todo = [e for e in plan.todo if e.name not in busy]
    (out / "students").mkdir(parents=True, exist_ok=True)
    if runs:
        console.print(f"following Slurm job {', '.join(r.job for r in runs)}, submitted "
                      f"earlier: {len(busy)} submissions", markup=False)
    if todo:
        slurm.require_one_gpu_kind(options)
        runs.append(slurm.submit(todo, out, request, limit, options))
        console.print(f"submitted {len(todo)} submissions to Slurm as job {runs[-1].job} "
                      f"({len(runs[-1].tasks)} tasks, {options.gres or 'no GPU'}, "
                      f"{slurm.task_minutes(options, limit)} min each), backend {backend}, "
                      f"seed {request.seed}; results in {out}", markup=False)
    graded: list[batch.Graded] = []
    try:
        with slurm_progress(console, len(todo) + len(busy)) as on_update:
            graded = slurm.watch(course, runs, out, request.seed, options, on_update)
    except KeyboardInterrupt:
        _write_class_files(course, out, found)
        console.print(f"interrupted ({interruption()}): {slurm.cancel_hint(runs)}", markup=False)
        return EXIT_INTERRUPTED
    return _finish(course, out, found, graded, console)


def _write_class_files(course, out, found) -> tuple[Path, Path]:
    """What a class's grading leaves for people, rebuilt from every result in OUT (not only
    this run's): the gradebook, each student's feedback and the class report."""
    gradebook = batch.write_gradebook(course, out, found)
    batch.write_feedback_files(out, found, course.policy.hidden_cases)
    return gradebook, write_report(out, course, listed=found)


def _finish(course, out, found, graded, console) -> int:
    """Write the class's files and say what this run did; the exit code: EXIT_FAILED where a
    student got no result (a script that runs the batch must not take it for done)."""
    gradebook, report = _write_class_files(course, out, found)
    for g in graded:
        if g.error:
            console.print(single_line(f"{g.name}: {g.error}", 600), markup=False, soft_wrap=True)
        if g.note:
            console.print(single_line(g.note, 600), markup=False, soft_wrap=True)
    console.print(f"graded {len(graded)} now ({len(found) - len(graded)} already had results); "
                  f"gradebook: {gradebook}; class report: {report}; "
                  f"each student's feedback: {out / 'students'}/NAME.md",
                  markup=False)
    missing = [g.name for g in graded if no_result(g.error)]
    if not missing:
        return EXIT_OK
    console.print(f"{len(missing)} of them got no result ({', '.join(missing[:5])}"
                  f"{', ...' if len(missing) > 5 else ''}): the reasons are above, and the "
                  "same command grades them again", markup=False, soft_wrap=True)
    return EXIT_FAILED


@click.command("slurm-task", hidden=True)
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
def slurm_task_command(folder: Path) -> int:
    """One task of a `grade batch --slurm` array (Slurm runs it; not for people)."""
    index = os.environ.get("SLURM_ARRAY_TASK_ID")
    if index is None:
        raise GradeError("`grade slurm-task` is what a task of `grade batch --slurm` runs, "
                         "under Slurm (SLURM_ARRAY_TASK_ID is not set).")
    slurm.run_task(folder, int(index))
    return EXIT_OK
