"""Where a stage's binaries come from, on a GPU (grader.sandbox.replayer.ReplayProcess).

Built ahead: the calls a stage will replay are recorded before its cases
(grader.judge.stage.StageCheck.build_ahead), and their proposals compiled side by side by
up to AHEAD_BUILDERS builders (compiling is CPU work, a core a builder), while the cases
are judged one by one; each case's replay takes its binaries from here rather than wait
for one builder to compile case after case. The proposals wait in one queue, in the order
their cases come, and a builder takes the next one once it is loaded and free: a share
fixed in advance left builders idle while the next case waited behind a slow compile on
another (cuTile's matmul: compiles of 1.5 to 3 s). A build that failed here is built again
when its case comes, by the stage's own builder: a compile that timed out among others is
not held against the submission. Every builder is confined like any process of the
submission, and ended, with its thread, when the replay is closed.

Several stages build at once (grader.grading.session readies every later stage beside the
one graded), so builders are counted across them: each holds one of CORES while it lives,
taken in the order asked, so that the stage graded first is built first.

Kept: a build is data, kept for a later replay process of the stage (after a restart, or
for the speed cases), except one made once a hidden case's inputs were given: its
binaries could carry them.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING, Callable, NamedTuple

from grader.replay.binaries import proposal_key
from grader.sandbox.confined import STARTUP_SECONDS

if TYPE_CHECKING:
    from grader import protocol
    from grader.sandbox.builder import BuilderProcess

# Side by side, a core each. Ten on the H200's host (16 cores), started with the stage's
# processes rather than with the builds, made a grading slower (49.3 s against 42.8 s for
# Triton's references): the forks and loads at once slowed the processes the stage waits
# for, and the first case still waited for its build (BENCHMARKS.md). With the next stage
# readied beside the one before (grader.grading.session), ten made the stage before wait
# longer for the next one's builds (9.0 / 15.3 s against 7.2 / 13.0 s, Triton / cuTile):
# more compiles at once, each slower.
AHEAD_BUILDERS = max(1, min(6, (os.cpu_count() or 2) // 2))
# Builders ahead alive at once, of every stage: the cores but four (the grader, the stage's
# replay and child, and the later stages' processes starting). On the H200's host (16
# cores) the CPU stayed more than half idle with one stage's six at a time.
SIDE_BY_SIDE = max(1, (os.cpu_count() or 2) - 4)


class Cores:
    """The builders ahead that may live at once, in this process, whichever stage they
    serve: a builder takes one before it starts and gives it back once ended. Taken in the
    order asked: builds queued first (the stage graded next) are built first."""

    def __init__(self, count: int):
        self.free = count
        self.waiting: deque[object] = deque()
        self.changed = threading.Condition()

    def take(self, given_up: threading.Event) -> bool:
        """One core, once every taker before this one has had its own; False if `given_up`
        is set first (its stage stopped)."""
        ticket = object()
        with self.changed:
            self.waiting.append(ticket)
            try:
                while not (self.free and self.waiting[0] is ticket):
                    if given_up.is_set():
                        return False
                    self.changed.wait(0.05)
                self.free -= 1
                return True
            finally:
                self.waiting.remove(ticket)
                self.changed.notify_all()

    def take_now(self) -> bool:
        """One core if one is free and nobody waits for it."""
        with self.changed:
            if self.free and not self.waiting:
                self.free -= 1
                return True
            return False

    def give(self) -> None:
        with self.changed:
            self.free += 1
            self.changed.notify_all()


CORES = Cores(SIDE_BY_SIDE)


class Build(NamedTuple):
    """One proposal to compile: its case's problem, parameters, dtype and seed (which lay out
    the buffers it is compiled on), and the proposal."""

    problem_id: str
    params: dict
    dtype: str
    seed: int
    proposal: dict


class StageBuilds:
    """The builds of one replay's proposals, by proposal key, and the builders that make
    them: the replay's own (`builder`, for a call not built ahead) and those ahead;
    `new_builder` makes a builder process (not started)."""

    def __init__(self, new_builder: Callable[[], "BuilderProcess"]):
        self.new_builder = new_builder
        self.own: "BuilderProcess | None" = None
        self.kept: dict[str, "protocol.Message"] = {}
        self.hidden_given = False  # a hidden case's inputs were given: nothing more is kept
        self.builds: dict[str, Future] = {}  # proposal key -> its build begun ahead
        self.queue: deque[tuple[str, Build]] = deque()  # builds no builder took yet, in order
        self.lock = threading.RLock()  # the queue, and how many builders serve it
        self.serving = 0  # builders whose thread has not left
        self.printed: list[str] = []  # what the builders printed
        self.builders: list["BuilderProcess"] = []
        self.threads: list[threading.Thread] = []
        self.stopped = threading.Event()
        # The first builder ahead, started with the stage's processes: it loads while the
        # child loads and records the stage's calls, and builds the first case's binaries.
        self.first: "BuilderProcess | None" = None

    @property
    def builder(self) -> "BuilderProcess":
        """The replay's own builder (made when first wanted)."""
        if self.own is None:
            self.own = self.new_builder()
            if self.hidden_given:
                self.own.withhold_output()
        return self.own

    def spawn(self) -> None:
        """Start the first builder ahead with the stage's first processes (if a core is
        free), or later (a process started again) the replay's own builder; without waiting
        for it. (The own builder starts when first wanted: a call not built ahead.)"""
        if not self.builds and self.first is None:
            if CORES.take_now():
                self.first = self.new_builder()
                self.first.spawn()
        elif self.builds and not self.builder.running:
            self.builder.spawn()

    def withhold_output(self) -> None:
        """A hidden case's inputs are about to be given: until the processes end, nothing
        built is kept, and what the builder prints is withheld."""
        self.hidden_given = True
        if self.own is not None:
            self.own.withhold_output()

    def start(self, builds: list[Build]) -> None:
        """Queue the builds of these proposals not begun already, in order, and start
        builders for them: as many as there are builds queued, up to AHEAD_BUILDERS."""
        with self.lock:
            for build in builds:
                key = proposal_key(build.proposal)
                if key not in self.builds:
                    self.builds[key] = Future()
                    self.queue.append((key, build))
            self.stopped.clear()
            wanted = min(len(self.queue), AHEAD_BUILDERS - self.serving)
            self.serving += max(0, wanted)
        for _ in range(wanted):
            builder, self.first = self.first, None  # started already, and holds a core
            if builder is not None:
                self.builders.append(builder)
            thread = threading.Thread(target=self._serve, args=(builder,), daemon=True,
                                      name="tilecourse-build-ahead")
            self.threads.append(thread)
            thread.start()

    def _serve(self, builder: "BuilderProcess | None") -> None:
        """One builder's thread: a builder (`builder`, or one started once a core is free),
        loaded, then the next build queued, until none is left."""
        if builder is None:
            builder = self._started()
        if builder is None:
            self._leave()
            return
        try:
            try:
                builder.load()  # ready before it takes a build: a loaded one may be free first
            except Exception:  # noqa: BLE001 - its builds go to the others, or to their cases
                self._leave()
                return
            while (taken := self._next()) is not None:
                key, build = taken
                future = self.builds[key]
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(builder.build(*build))
                except Exception as exc:  # noqa: BLE001 - its case builds it again itself
                    future.set_exception(exc)
        finally:
            try:
                self.printed.append(builder.output())
                builder.close()
            finally:
                CORES.give()  # whatever happened: a core lost would be lost to every stage

    def _started(self) -> "BuilderProcess | None":
        """A new builder, once a core is free for it; None if no build is left for it by
        then (the others took them, or the builds were stopped)."""
        if not CORES.take(self.stopped):
            return None
        with self.lock:
            if self.queue and not self.stopped.is_set():
                builder = self.new_builder()
                self.builders.append(builder)
                return builder
        CORES.give()
        return None

    def _next(self) -> "tuple[str, Build] | None":
        """The next build queued, or None (nothing left, or stopped): the builder leaves."""
        with self.lock:  # no build queued meanwhile is left behind by a builder leaving
            if self.queue and not self.stopped.is_set():
                return self.queue.popleft()
            self._leave()
        return None

    def _leave(self) -> None:
        """A builder left: the last one to leave cancels what is still queued (its cases
        build it themselves, rather than wait for a build nobody will make)."""
        with self.lock:
            self.serving -= 1
            if not self.serving:
                for key, _ in self.queue:
                    self.builds[key].cancel()
                self.queue.clear()

    def get(self, key: str, build_now: Callable[[], "protocol.Message"],
            timeout: float) -> "protocol.Message":
        """The build of proposal `key`: kept, begun ahead (waiting for it as long as two
        requests of `timeout` seconds may take), or else `build_now`'s."""
        wait = 2 * max(timeout, STARTUP_SECONDS)
        built = self.kept.get(key) or self.ahead(key, wait) or build_now()
        if not self.hidden_given:
            self.kept[key] = built
        return built

    def ahead(self, key: str, timeout: float) -> "protocol.Message | None":
        """The build of proposal `key` begun ahead (waiting for it), if there is one that
        did not fail."""
        build = self.builds.get(key)
        if build is None or build.cancelled():
            return None
        try:
            return build.result(timeout=timeout)
        except Exception:  # noqa: BLE001 - failed or late here: its case builds it itself
            return None

    def settle(self, timeout: float) -> None:
        """Return once no builder ahead runs: each build done, or, after `timeout` seconds,
        stopped (`stop`: their cases build them in their turn), and a builder started with
        the processes but never given a build ended. What runs beside a stage's timing must
        not use the GPU (a builder draws inputs there)."""
        self._end_first()
        wait(list(self.builds.values()), timeout=timeout)
        if not all(build.done() for build in self.builds.values()):
            self.stop()
        for thread in self.threads:
            thread.join()

    def stop(self) -> None:
        """Every builder ended, and its thread: the stage's processes are all gone once the
        replay is closed. Builds not begun are cancelled; those done stay, and the next
        processes start without a hidden case."""
        if self.own is not None:
            self.own.close()
        self._end_first()
        with self.lock:
            self.stopped.set()
            self.queue.clear()
        for build in self.builds.values():
            build.cancel()
        for builder in self.builders:
            builder.retire()
        for thread in self.threads:
            thread.join()
        self.builders, self.threads = [], []
        self.hidden_given = False

    def _end_first(self) -> None:
        """The builder started with the processes and never given a build ended, its core
        given back."""
        if self.first is not None:
            first, self.first = self.first, None
            try:
                first.close()
            finally:
                CORES.give()

    def output(self) -> str:
        """What the builders printed: those ahead, then the replay's own."""
        return "".join(self.printed) + (self.own.output() if self.own is not None else "")
