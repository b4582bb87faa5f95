"""One stage of a submission, opened for checking: the one driver behind `grade`
(grader.grading.stages) and plain pytest (`pytest --pyargs grader.checks`,
grader.checks.plugin).

A session reads the stage's file (its TODOs, the static check), sets the backend up, starts
and loads the submission's processes, makes the stage's correctness check, and decides, once
the correctness results are in, whether speed is timed. Both front ends run the check
modules through pytest over a session; neither starts a process or decides on speed itself,
so the two cannot disagree on either.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator

import torch

from grader import shown_clock
from grader.course import Stage
from grader.course.todos import TodoState
from grader.grading.request import Grading, StageFile
from grader.intake import read_submission
from grader.judge.stage import StageCheck
from grader.results import READIED, CaseResult, CheckResult, Failure
from grader.sandbox import ChildProcess
from grader.speed import scope
from grader.speed.check import SpeedCheck

NEEDS_CORRECTNESS = "needs all correctness cases to pass first"
START = "start processes, load"  # the phase of starting a stage's processes (grade --profile)


def readied_beside(device: str) -> bool:
    """Whether the later stages are opened beside the one graded (StageSession.ready_beside):
    on a GPU, where their kernels compile meanwhile, with cores to spare for them (four or
    more: Colab's T4 has two). On a CPU there is nothing to compile ahead, and the stage
    graded would share its cores with them."""
    return device != "cpu" and (os.cpu_count() or 1) >= 4


@contextmanager
def grader_threads(device: str) -> Iterator[None]:
    """On a GPU, the grader's own CPU tensor work (judging outputs too small for the GPU,
    drawing a case's inputs) on one thread while the block runs. Builders compile beside it
    on the cores (grader.sandbox.ahead), and PyTorch spreads an operator over a thread per
    core: threads that wait for a core a builder holds spin at the operator's end. On the
    H200's host judging softmax's outputs took 2.7 s, most of it five outputs of 33,000 to
    40,000 elements (PyTorch spreads from 32,768), where a two-core CPU machine judges each
    in a millisecond; there, with both cores busy, one such judgment took 42 ms on two
    threads and 1.1 ms on one. A CPU backend builds nothing beside the grader: its threads
    are left as they are."""
    if device == "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass
class StageSession:
    """`stage` of the resolved request `grading`, from its file."""

    grading: Grading
    stage: Stage
    child: ChildProcess | None = field(default=None, init=False)
    check: StageCheck | None = field(default=None, init=False)
    # Opened beside an earlier stage (`ready_beside`): the thread, then what it came to.
    readying: threading.Thread | None = field(default=None, init=False)
    readied: TodoState | BaseException | None = field(default=None, init=False)
    closing: bool = field(default=False, init=False)  # closed while it was being readied
    # Where the readying's seconds went (grade --profile), its whole under READIED, apart
    # from the stage's own: it ran while an earlier stage was graded. Complete once opened.
    beside: dict[str, float] = field(default_factory=dict, init=False)

    @property
    def file(self) -> StageFile:
        return self.grading.file(self.stage)

    @cached_property
    def no_speed(self) -> str | None:
        """Why this stage's speed cannot be graded on this backend at all (None: it can)."""
        return scope.not_graded_reason(self.stage, self.grading.selection)

    def open(self) -> TodoState:
        """Read the file and load it in its processes; its TODOs. Raises grader.intake.NotRun
        (not gradable as it is: missing, not started, refused by the static check) or
        grader.sandbox.submission.SubmissionError (it did not load). A stage readied beside
        an earlier one is taken as it came to be."""
        if self.readying is not None:
            self.readying.join()
            self.readying = None
        if self.readied is None:
            return self._start(self._read())
        if isinstance(self.readied, BaseException):
            raise self.readied
        return self.readied

    def ready_beside(self) -> None:
        """On a GPU, open the stage now, while an earlier stage judges its correctness cases,
        and record the calls it will replay so that their kernels compile meanwhile
        (StageCheck.build_ahead): its cases then find their binaries built. Then its child
        is ended: the student's wrapper must not run while an earlier stage is timed (a
        call not recorded here starts it again, in this stage's own turn). Once only: a
        stage readied, or opened, is left as it is."""
        if self.readying is not None or self.readied is not None or self.child is not None:
            return
        if not readied_beside(self.grading.selection.backend.device):
            return
        # Read here, not in the thread: the file is parsed, and a parse beside another
        # thread's (pytest's, wording an earlier stage's failed case) can fail (grader.syntax).
        try:
            todos = self._read()
        except Exception as exc:  # noqa: BLE001 - raised in the stage's own turn
            self.readied = exc
            return
        self.readying = threading.Thread(target=self._ready, args=(todos,), daemon=True,
                                         name="tilecourse-later-stage")
        self.readying.start()

    def _ready(self, todos: TodoState) -> None:
        start = shown_clock.now()
        try:
            with shown_clock.phase(self.beside, START):
                self.readied = self._start(todos)
            if not self.closing:
                self.check.build_ahead(self.beside)
        except BaseException as exc:  # noqa: BLE001 - raised in the stage's own turn
            self.readied = exc
        finally:
            if self.child is not None:
                self.child.end()
            shown_clock.add_seconds(self.beside, READIED, shown_clock.now() - start)

    def settle(self) -> None:
        """Return once nothing of this stage runs: its readying over (readied beside an
        earlier stage), its child ended, its builders done (they draw inputs on the GPU),
        only its replay left, idle. A stage's speed is timed only once every stage settled;
        the child starts again when the stage's own speed records its calls."""
        if self.readying is not None:
            self.readying.join()
        if self.child is not None:
            self.child.end()
            self.child.replay_process.settle_builds()

    def _read(self) -> TodoState:
        return read_submission(self.file.path, self.file.shown, self.grading.course.rules)

    def _start(self, todos: TodoState) -> TodoState:
        course, selection = self.grading.course, self.grading.selection
        backend = selection.backend
        backend.prepare()  # before the processes start: they inherit the environment
        timeout = self.grading.limits.timeout or self.stage.time_limit.seconds(backend.device)
        self.child = ChildProcess(self.file.path, self.stage.problem.function, backend.device, timeout,
                             hidden=course.private_paths, rules=course.rules,
                             track=backend.track)
        self.child.load()
        self.check = StageCheck(self.stage, selection, self.child, self.grading.seed,
                                self.grading.limits.keep_going)
        return todos

    def not_timed(self, cases: list[CaseResult], checks: list[CheckResult] = ()) -> str | None:
        """Why speed is not timed after these correctness results and checks (None: it is).
        Cases that cannot run on this GPU (bf16 on a T4) do not hold it back; a case that
        ran and failed, one that did not run, or a failed check does."""
        if self.no_speed:
            return self.no_speed
        ran = [c for c in cases if c.failure is not Failure.NOT_GRADED]
        if (len(cases) < len(self.stage.cases) or not ran or not all(c.passed for c in ran)
                or any(c.graded and not c.passed for c in checks)):
            return NEEDS_CORRECTNESS
        return None

    def speed_check(self) -> SpeedCheck:
        """The stage's speed cases, timed in processes that never saw a hidden case."""
        self.check.forget_hidden()
        return SpeedCheck(self.stage, self.grading.selection, self.child,
                          run_seed=self.grading.seed)

    def close(self) -> None:
        """End every process of the submission (before any result is kept); one readied
        beside an earlier stage once the readying is over. Those given a hidden case are
        ended as its time (StageCheck.forget_hidden), wherever grading stopped."""
        if self.check is not None:
            self.check.forget_hidden()
        if self.readying is not None:
            self.closing = True
            if self.child is not None:
                self.child.close()  # a load under way fails at once
            self.readying.join()
            self.readying = None
        if self.child is not None:
            self.child.close()
