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
from grader.sandbox.process import STARTUP_SECONDS

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
        """Start the first builder ahead with the stage's first processes, or later (a
        process started again) the replay's own builder; without waiting for it. (The own
        builder starts when first wanted: a call not built ahead.)"""
        if not self.builds and self.first is None:
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
            builder, self.first = self.first or self.new_builder(), None
            if not builder.running:
                builder.spawn()  # all of them start at once; each thread waits for its own
            thread = threading.Thread(target=self._serve, args=(builder,), daemon=True,
                                      name="tilecourse-build-ahead")
            self.builders.append(builder)
            self.threads.append(thread)
            thread.start()

    def _serve(self, builder: "BuilderProcess") -> None:
        """One builder's thread: once the builder is loaded, the next build queued, until
        none is left."""
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
            self.printed.append(builder.output())
            builder.close()

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
        if self.first is not None:  # started with the processes, never given a build
            self.first.close()
            self.first = None
        wait(list(self.builds.values()), timeout=timeout)
        if not all(build.done() for build in self.builds.values()):
            self.stop()
        for thread in self.threads:
            thread.join()

    def stop(self) -> None:
        """Every builder ended, and its thread: the stage's processes are all gone once the
        replay is closed. Builds not begun are cancelled; those done stay, and the next
        processes start without a hidden case."""
        for idle in (self.own, self.first):
            if idle is not None:
                idle.close()
        self.first = None
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

    def output(self) -> str:
        """What the builders printed: those ahead, then the replay's own."""
        return "".join(self.printed) + (self.own.output() if self.own is not None else "")
