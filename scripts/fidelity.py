"""Whether a CPU verdict is the GPU's: the project's corpus graded on both, case by case; one
table.

Every file of the corpus (the beginner faults of tests/faults/<track>/, the attacks of
tests/attacks/<track>/, the honest submissions of tests/honest/<track>/) is graded as its
stage on its track's GPU backend and on its CPU backend (Triton's interpreter, the cuTile
simulator), both sides on the course the CPU tests grade it on (scripts/corpus_files.py: a
fault on the course's own cases, an attack or honest file of stage 1 on one case, each
with the rules, hidden cases and memory ceiling its header names) and with one seed. The
verdict of every correctness case is compared: passed or failed, and the kind of failure
(grader.results.Failure). Speed is left out (the stages are graded without their speed
cases): a CPU has none to compare. Where every case agrees but the stage's status does not
(a stage-wide check, memory growth, failed on one side), that is a disagreement too.

The table has a row per file: the CPU's and the GPU's verdict (the stage's status, the
cases passed) and each case whose verdict differs (CPU vs GPU); a summary line follows. A
file whose backend cannot run on this machine (cuTile without its toolchain), or that the
grader could not grade there, is "not graded", with the reason: never counted as agreeing.

Each backend grades in worker processes of its own (Triton's interpreter mode is set once
per process), --jobs of them, the later stages (the longest) first; a file's two sides
grade at once.

Exit code 1 if a file's verdicts disagree or a file was not graded on a side; 0 when every
file agrees. The gradings share the machine: a case that times out on one side only may
have waited on the others; grade that file again alone (--only) before believing it.

Usage:  python -m scripts fidelity [--track T] [--only WORD ...] [--jobs N] [--seed S]
            [--gpu-backend NAME ...] [--markdown FILE] [--deadline SECONDS]
        --only: the files whose name holds a WORD; --markdown: the table also in FILE
        (default: $OUT/fidelity.md where OUT is set); --gpu-backend triton-interpret (or
        cutile-sim): that backend in place of its track's GPU one, so that the study runs on
        a CPU (tests/test_corpus_studies.py: both sides the same backend must agree).
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from grader import sandbox
from grader.backends import selection as backends
from grader.course import Course, Stage, load_course
from grader.errors import BackendUnavailable
from grader.grading.request import GradingRequest
from grader.grading.stages import grade_stage
from grader.results import StageResult
from grader.sandbox import memory_ceiling
from grader.tracks import TRACKS
from scripts import common, corpus_files
from scripts.common import ROOT

PASSED = "pass"
STAGE = "the stage"  # where a verdict's `said` keeps the stage's message


@dataclass(frozen=True)
class CorpusFile:
    """A file of the corpus and the two backends that grade it."""

    path: Path
    stage: int
    cpu: str
    gpu: str

    @property
    def name(self) -> str:  # faults/triton/stage1_mask_off_by_one.py
        return self.path.relative_to(ROOT / "tests").as_posix()

    @property
    def track(self) -> str:
        return self.path.parent.name


@dataclass
class Verdict:
    """One side's verdict on a file: the stage's status, each case's (PASSED or its kind of
    failure), the stage-wide checks that failed; or why it was not graded."""

    status: str = ""
    cases: dict[str, str] = field(default_factory=dict)
    failed_checks: list[str] = field(default_factory=list)
    not_graded: str = ""
    seconds: float = 0.0
    # What the grader said of each failed case (its summary) and of the stage (its message,
    # under STAGE): shown below the table where the two sides disagree.
    said: dict[str, str] = field(default_factory=dict)

    def shown(self) -> str:
        if self.not_graded:
            return f"not graded: {self.not_graded}"
        passed = sum(v == PASSED for v in self.cases.values())
        return f"{self.status} ({passed}/{len(self.cases)} cases)"


def corpus(tracks: list[str], words: list[str], gpu_for: dict[str, str]) -> list[CorpusFile]:
    """The corpus files of `tracks` whose name holds one of `words` (all, without any),
    each with its CPU backend (its header's, or its track's) and its GPU backend (its
    track's, or the one `gpu_for` puts in its place)."""
    found = []
    for path in corpus_files.files():
        track = path.parent.name
        if track not in tracks or (words and not any(w in path.name for w in words)):
            continue
        header = corpus_files.read_attack(path) if not is_fault(path) else None
        cpu = (header and header.backend) or TRACKS[track].cpu_backend
        found.append(CorpusFile(path, corpus_files.stage_number(path), cpu,
                                gpu_for.get(track, TRACKS[track].gpu_backend)))
    return found


def is_fault(path: Path) -> bool:
    return path.is_relative_to(corpus_files.FAULTS)


# --- one grading, in a worker process ---------------------------------------------------

def course_of(path: Path, folder: Path) -> tuple[Course, Stage, str]:
    """The course a corpus file is graded on, written into `folder` where it is one of its
    own, without speed cases; the file's stage in it; its memory ceiling (MiB, or "")."""
    if is_fault(path):  # the course's own cases, as tests/test_fault_files.py grades
        course, number, ceiling = common.course(), corpus_files.stage_number(path), ""
    else:
        header = corpus_files.read_attack(path)
        course = load_course(corpus_files.write_course(header, folder))
        number, ceiling = header.stage, header.memory
    course = dataclasses.replace(course, stages=tuple(
        dataclasses.replace(s, speed=None) for s in course.stages))
    return course, next(s for s in course.stages if s.number == number), ceiling


@contextmanager
def ceiling_of(mib: str) -> Iterator[None]:
    """The ceiling a file's header names, in this worker for one grading."""
    kept = memory_ceiling.LIMIT
    memory_ceiling.LIMIT = int(mib) << 20 if mib else kept
    try:
        yield
    finally:
        memory_ceiling.LIMIT = kept


def grade_file(path: Path, backend: str, seed: int) -> StageResult:
    """Grade a corpus file as its stage on `backend`, as a student's folder holding it."""
    with tempfile.TemporaryDirectory() as tmp:
        course, stage, ceiling = course_of(path, Path(tmp) / "course")
        folder = corpus_files.write_submission(path, stage.modules[path.parent.name],
                                               Path(tmp) / "student")
        request = GradingRequest(course, (stage,), backend, submission=folder, seed=seed)
        with ceiling_of(ceiling):
            return grade_stage(request.resolve(), stage)


def verdict_of(result: StageResult) -> Verdict:
    failed = [c for c in result.cases if not c.passed]
    return Verdict(result.status.value,
                   {c.id: PASSED if c.passed else (c.failure.value if c.failure else "failed")
                    for c in result.cases},
                   [c.name for c in result.checks if c.graded and not c.passed],
                   said={STAGE: result.message, **{c.id: _said(c) for c in failed}})


def _said(case) -> str:
    """A failed case's summary, and where it ends in a colon the line it introduces (the
    exception or the compiler's words, quoted): what the two sides said must be comparable."""
    if case.summary.endswith(":") and case.details:
        return f"{case.summary} {case.details[0].strip()}"
    return case.summary


def grade_job(path: Path, backend: str, seed: int) -> Verdict:
    """A worker's grading of one file: its verdict, or why it could not be graded."""
    start = time.perf_counter()
    try:
        verdict = verdict_of(grade_file(path, backend, seed))
    except Exception as exc:  # noqa: BLE001 - said in the table, never taken for agreement
        verdict = Verdict(not_graded=f"{type(exc).__name__}: {exc}"[:300])
    verdict.seconds = round(time.perf_counter() - start, 1)
    return verdict


def start_worker() -> None:
    """Gradings follow one another in a worker: each one's processes are forks of a template
    that imported PyTorch once (grader.sandbox.spares)."""
    sandbox.keep_warm()


# --- the comparison ------------------------------------------------------------------

def disagreements(cpu: Verdict, gpu: Verdict) -> list[str]:
    """Each case whose verdicts differ, `case`: CPU vs GPU; the stage's status where every
    case agrees but it does not."""
    ids = list(cpu.cases) + [c for c in gpu.cases if c not in cpu.cases]
    differ = [f"`{c}`: {cpu.cases.get(c, 'absent')} vs {gpu.cases.get(c, 'absent')}"
              for c in ids if cpu.cases.get(c) != gpu.cases.get(c)]
    if not differ and cpu.status != gpu.status:
        checks = ", ".join(cpu.failed_checks + gpu.failed_checks)
        differ.append(f"status: {cpu.status} vs {gpu.status}"
                      + (f" (failed: {checks})" if checks else ""))
    return differ


def outcome(cpu: Verdict, gpu: Verdict) -> str:
    if cpu.not_graded or gpu.not_graded:
        return "not graded"
    return "disagree" if disagreements(cpu, gpu) else "agree"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(files: list[CorpusFile], verdicts: dict[tuple[str, str], Verdict]) -> list[str]:
    """The Markdown table: a row per file."""
    lines = ["| file | CPU verdict | GPU verdict | cases that disagree (CPU vs GPU) |",
             "|---|---|---|---|"]
    for f in files:
        cpu, gpu = verdicts[f.name, "cpu"], verdicts[f.name, "gpu"]
        differ = "; ".join(disagreements(cpu, gpu)) if outcome(cpu, gpu) != "not graded" else ""
        lines.append(f"| {f.name} | {cell(cpu.shown())} ({f.cpu}) | {cell(gpu.shown())} "
                     f"({f.gpu}) | {cell(differ)} |")
    return lines


def details(files: list[CorpusFile], verdicts: dict[tuple[str, str], Verdict]) -> list[str]:
    """Below the table, for each file whose sides disagree: what each side said of the
    cases (and the stage) in question, so that one run on a GPU tells why."""
    lines = []
    for f in files:
        cpu, gpu = verdicts[f.name, "cpu"], verdicts[f.name, "gpu"]
        if outcome(cpu, gpu) != "disagree":
            continue
        lines.append(f"- {f.name}:")
        ids = [c for c in dict.fromkeys([*cpu.cases, *gpu.cases])
               if cpu.cases.get(c) != gpu.cases.get(c)]
        for case in ids + ([STAGE] if cpu.status != gpu.status else []):
            for side, verdict in (("CPU", cpu), ("GPU", gpu)):
                shown = verdict.status if case == STAGE else verdict.cases.get(case, "absent")
                lines.append(f"  - `{case}`, {side}: {cell(verdict.said.get(case) or shown)[:300]}")
    return ["", "Where the sides disagree, what each said:", "", *lines] if lines else []


def summary(files: list[CorpusFile], verdicts: dict[tuple[str, str], Verdict],
            seconds: float, jobs: int) -> str:
    counts = {kind: 0 for kind in ("agree", "disagree", "not graded")}
    for f in files:
        counts[outcome(verdicts[f.name, "cpu"], verdicts[f.name, "gpu"])] += 1
    said = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    return (f"fidelity: {len(files)} files, {said}; {seconds:.0f} s, {jobs} workers per "
            "backend")


# --- the run ------------------------------------------------------------------------

def unavailable(names: set[str]) -> dict[str, str]:
    """Why each of these backends cannot grade on this machine (those that can: absent)."""
    why = {}
    for name in names:
        try:
            backends.select(name)
        except BackendUnavailable as exc:
            why[name] = str(exc)
    return why


def grade_all(files: list[CorpusFile], jobs: int, seed: int,
              deadline: float | None = None) -> dict[tuple[str, str], Verdict]:
    """Both sides of every file, each backend in worker processes of its own, the later
    (longer) stages first; a line as each file's two verdicts are in. What is not graded
    `deadline` seconds from now is "not graded" (a GPU machine lent for a limited time
    still gets the table of what was)."""
    sides = [(f, side, backend) for f in sorted(files, key=lambda f: -f.stage)
             for side, backend in (("cpu", f.cpu), ("gpu", f.gpu))]
    why_not = unavailable({backend for _, _, backend in sides})
    # A file one of whose backends cannot run here is not graded on either side: its CPU
    # side alone compares with nothing (and the CPU tests grade it).
    verdicts = {(f.name, side): Verdict(not_graded=why_not.get(b, "its other side cannot run"))
                for f, side, b in sides if {f.cpu, f.gpu} & why_not.keys()}
    wanted = [(f, side, b) for f, side, b in sides if (f.name, side) not in verdicts]
    context = multiprocessing.get_context("spawn")  # fresh processes: nothing imported yet
    pools = {b: ProcessPoolExecutor(jobs, context, initializer=start_worker)
             for b in {b for _, _, b in wanted}}
    try:
        futures: dict[Future, tuple[CorpusFile, str]] = {
            pools[b].submit(grade_job, f.path, b, seed): (f, side) for f, side, b in wanted}
        try:
            for future in as_completed(futures, timeout=deadline):
                f, side = futures[future]
                verdicts[f.name, side] = verdict_or_crash(future)
                if (f.name, "cpu") in verdicts and (f.name, "gpu") in verdicts:
                    print(progress(f, verdicts), flush=True)
        except TimeoutError:
            for f, side in futures.values():
                verdicts.setdefault((f.name, side), Verdict(
                    not_graded=f"not reached within --deadline {deadline:g} s"))
            for pool in pools.values():  # the gradings under way are not waited for
                for worker in list(getattr(pool, "_processes", {}).values()):
                    worker.terminate()
    finally:
        for pool in pools.values():
            pool.shutdown(cancel_futures=True)
    return verdicts


def verdict_or_crash(future: Future) -> Verdict:
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - a worker died: said, never taken for agreement
        return Verdict(not_graded=f"the grading process ended: {type(exc).__name__}: {exc}")


def progress(f: CorpusFile, verdicts: dict[tuple[str, str], Verdict]) -> str:
    cpu, gpu = verdicts[f.name, "cpu"], verdicts[f.name, "gpu"]
    return (f"fidelity: {f.name}: {outcome(cpu, gpu)} ({cpu.seconds:g} s on {f.cpu}, "
            f"{gpu.seconds:g} s on {f.gpu})")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--track", choices=list(TRACKS), help="this track's files only")
    parser.add_argument("--only", action="append", default=[], metavar="WORD",
                        help="the files whose name holds WORD (repeat it for more)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1) // 4),
                        help="worker processes per backend (default: a quarter of the cores)")
    parser.add_argument("--seed", type=int, default=corpus_files.RUN_SEED,
                        help="the run's seed, both sides (default: the attack tests')")
    parser.add_argument("--gpu-backend", action="append", default=[], metavar="NAME",
                        choices=list(backends.BACKENDS),
                        help="grade the GPU side of its track on NAME instead (a CPU "
                             "backend: the study on a CPU)")
    parser.add_argument("--deadline", type=float, metavar="SECONDS",
                        help="stop grading after this long; what is left is not graded")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file "
                        "(default: $OUT/fidelity.md where OUT is set)")
    return parser.parse_args(argv)


def main() -> int:
    args = parse(sys.argv[1:])
    gpu_for = {backends.BACKENDS[name].track: name for name in args.gpu_backend}
    files = corpus([args.track] if args.track else list(TRACKS), args.only, gpu_for)
    if not files:
        print("fidelity: no corpus file matches", file=sys.stderr)
        return 2
    start = time.perf_counter()
    verdicts = grade_all(files, args.jobs, args.seed, args.deadline)
    text = "\n".join([*table(files, verdicts), *details(files, verdicts), "",
                      summary(files, verdicts, time.perf_counter() - start, args.jobs)])
    print(text)
    markdown = args.markdown or (Path(os.environ["OUT"]) / "fidelity.md" if os.environ.get("OUT")
                                 else None)
    if markdown:
        markdown.write_text(text + "\n", encoding="utf-8")
    everything_agrees = all(outcome(verdicts[f.name, "cpu"], verdicts[f.name, "gpu"]) == "agree"
                            for f in files)
    return 0 if everything_agrees else 1


if __name__ == "__main__":
    sys.exit(main())
