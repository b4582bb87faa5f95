"""The replay, both ends: the confined process that runs a submission's kernels.

Started and confined like the child (grader.sandbox.child), it never imports the submission's
module. On a CPU it rebuilds the file's kernels from source (grader.replay.kernels); on a GPU
it builds nothing: builder processes compile each proposal's launches (grader.sandbox.builder,
grader.sandbox.ahead) and the replay is given the binaries (`install`, grader.replay.binaries),
so that no compile-time Python ever runs in the process that keeps the clock. It runs the
proposals the child recorded, on inputs it draws from the grader's seeds: one graded call
(`call`), untimed warm-up calls (`warm`), timed batches (`time_batch`, `fetch`), the peak
memory of a call (`memory`). Its outputs and times are the only ones grading uses.

`ReplayWorker` is the replay's side of each request, `ReplayProcess` the grader's; the
shape of each reply sits between them."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from grader import protocol, shown_clock
from grader.quoting import inline
from grader.replay.binaries import proposal_key
from grader.replay.execute import LaunchRecord
from grader.replay.order import in_case_order
from grader.replay.variants import Replay
from grader.sandbox.ahead import Build, StageBuilds
from grader.sandbox.builder import BuilderProcess
from grader.sandbox.outcomes import (CALL_REPLY, RETURNED, TIMING_REPLY, WARM_REPLY, Batch,
                                     Outcome, TimingFailed, call_outcome)
from grader.sandbox.confined import STARTUP_SECONDS, Failed, Process, failed_call
from grader.sandbox.roles import KernelWorker, describe_output
from grader.sandbox.submission import SubmissionError


class ReplayWorker(KernelWorker):
    """In the replay: the proposals the grader sends, run on inputs drawn here."""

    role = "replay"

    def __init__(self, track: str):
        super().__init__(track)
        self.executor = None  # grader.replay.execute.Executor of the kernels built from source
        self.binaries = None  # grader.replay.binaries.Binaries, installed by the grader (a GPU)
        self.kept = []  # the outputs of the last timed batch
        self.between = None  # the L2 flush and the spacers between timed calls (_between)

    def load(self, path: str, function: str, device: str, rules: dict):
        self.device = device
        if device != "cpu":
            from grader.replay.binaries import Binaries

            self.binaries = Binaries(Path(tempfile.mkdtemp(prefix="binaries-")))
            return True, {}
        from grader.replay import execute, source

        self.load_kernels(path, device)
        self.executor = execute.Executor(source.SourceKernels(self.file), device)
        return True, {}

    def install(self, key: str, value: dict, tensors: dict | None = None):
        """Keep the builder's binaries of proposal `key`, for the requests that carry it."""
        self.binaries.install(key, value, tensors or {})
        return True, {}

    @in_case_order  # its launches run their programs in the case's order, as a GPU may
    def call(self, problem_id: str, params: dict, dtype: str, seed: int, proposal: dict,
             configuration: int | None = None):
        """One graded call; `configuration`: grader.replay.variants."""
        from grader.replay import variants
        from grader.replay.proposal import ProposalError

        _, inputs, guards, names = self.guarded_inputs(problem_id, params, dtype, seed)
        watch = None
        if self.device == "cpu":  # the CPU backends run each memory operation in Python
            from grader.replay.watch import Watch

            watch = Watch(self.file.path, dict(zip(inputs, names)))
        try:
            parsed = variants.variant(self.parsed(proposal, inputs), configuration)
            executed = self._executor(proposal, inputs).run(parsed, inputs, watch)
        except ProposalError as exc:
            raise SubmissionError(f"its launches cannot be replayed: {exc}") from None
        self._synchronize()
        tensors = dict(inputs)
        returned = self.parsed(proposal, inputs).returned  # a type's name: data, shown escaped
        described = (describe_output(executed.output) if executed.output is not None
                     else {"type": returned or "nothing"})
        if executed.output is not None:
            tensors["output"] = executed.output
        value = {
            "error": executed.error,
            "launches": [vars(launch) for launch in executed.launches],
            "host": [],
            "compile_errors": executed.compile_errors,
            "unchecked": executed.unchecked,
            "overruns": [g.describe() for g in guards + executed.allocations if g.overrun()],
            "output": described,
            "traffic": watch.traffic.to_json() if watch else [],
            "writer_launch": None,
        }
        if watch and executed.output is not None:
            maps, value["writer_launch"] = watch.traffic.maps(executed.output.shape)
            tensors.update(maps)
        return value, tensors

    def memory(self, problem_id: str, params: dict, dtype: str, seed: int, proposal: dict):
        """Peak bytes allocated during one replayed call, above what the inputs hold."""
        import torch

        _, inputs, _, _ = self.guarded_inputs(problem_id, params, dtype, seed)
        run = self._executor(proposal, inputs).timed(self.parsed(proposal, inputs))
        run(inputs)  # warm-up: loading the kernels allocates too
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        run(inputs)
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before, {}

    def warm(self, problem_id: str, params: dict, dtype: str, seed: int, calls: int,
             proposal: dict):
        """Untimed calls at the timed size (compiling, autotuning); the first checked."""
        from grader.problems import PROBLEMS

        inputs = self.drawn(PROBLEMS[problem_id], params, dtype, seed)
        parsed = self.parsed(proposal, inputs)
        executor = self._executor(proposal, inputs)
        executed = executor.run(parsed, inputs)
        if not executed.error:
            run = executor.timed(parsed)
            for _ in range(calls - 1):
                run(inputs)
        self._synchronize()
        return {"error": executed.error, "launches": [vars(la) for la in executed.launches],
                "host": [], "compile_errors": executed.compile_errors}, {}

    def time_batch(self, problem_id: str, params: dict, dtype: str, seeds: list, key: int,
                   proposal: dict, move: bool = False):
        """One batch of timed calls, each on fresh inputs drawn from its seed (`move`: after a
        move of the memory, grader.placement); the outputs stay until the grader `fetch`es."""
        from grader import timing
        from grader.problems import PROBLEMS

        self.kept = []  # the last batch's outputs go first, as in the grader's own batches
        if move:
            self._between()[1].move()
        run = None

        def prepare(i):
            nonlocal run
            inputs = self.drawn(PROBLEMS[problem_id], params, dtype, seeds[i])
            if run is None:
                run = self._executor(proposal, inputs).timed(self.parsed(proposal, inputs))
            return inputs

        with timing.collector_paused():  # as the grader's own batches
            times, outputs = timing.run_batch(prepare, lambda inputs: run(inputs), len(seeds),
                                              *self._between())
            self.kept = outputs
            described = [describe_output(o) for o in outputs]
            digests = [timing.digest(o, key) if "device" in d else None
                       for o, d in zip(outputs, described)]
        return {"times": times, "digests": digests, "outputs": described}, {}

    def fetch(self, index: int):
        """The output of one call of the last batch."""
        described = describe_output(self.kept[index])
        return described, ({"output": self.kept[index]} if "device" in described else {})

    def _executor(self, data: dict, inputs: dict):
        """What runs `data`'s launches here: the kernels built from source (a CPU), or the
        binaries installed for it (a GPU)."""
        if self.binaries is None:
            return self.executor
        from grader.replay.execute import Executor

        kernels = self.binaries.kernels(proposal_key(data), self.parsed(data, inputs))
        return Executor(kernels, self.device)

    def _synchronize(self):
        import torch

        if self.device == "cuda":
            torch.cuda.synchronize()  # surface asynchronous kernel faults here

    def _between(self):
        """Before each timed call, as in the grader's batches: the L2 flush and a spacer."""
        from grader import placement, timing

        if self.between is None:
            self.between = timing.L2Flush(self.device), placement.Placements(self.device)
        return self.between


class ReplayProcess(Process):
    """The grader's side of one submission's replay process (and, on a GPU, its builders)."""

    role = ReplayWorker.role
    on_device = True  # fetched outputs may come in GPU memory (until that fails once)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._installed: set[str] = set()  # the proposals whose binaries the process holds
        self._installed_in = None  # ... that process
        # seconds spent waiting for builds and installing them, on the clock a student sees
        self.installing = 0.0
        self._builds = StageBuilds(lambda: BuilderProcess(  # its own, kept, compiled ahead
            self.path, self.function, self.device, self.timeout, self.hidden, self.rules,
            self.track))

    def spawn(self) -> None:
        """Start the replay, and on a GPU its builder, without waiting for them."""
        super().spawn()
        if self.device != "cpu":
            self._builds.spawn()

    def close(self) -> None:
        self._builds.stop()
        super().close()

    def build_ahead(self, builds: list[Build]) -> None:
        """On a GPU: compile these proposals now, side by side, while the cases go on."""
        if self.device != "cpu":
            self._builds.start(builds)

    def settle_builds(self) -> None:
        """Once this returns, none of its builders runs (grader.sandbox.ahead.settle)."""
        self._builds.settle(2 * max(self.timeout, STARTUP_SECONDS))

    def withhold_output(self) -> None:
        self._builds.withhold_output()
        super().withhold_output()

    def output(self) -> str:
        """What the kernels printed: while they compiled (a GPU), then while they ran."""
        return self._builds.output() + super().output()

    def _install(self, problem_id: str, params: dict, dtype: str, seed: int,
                 proposal: dict) -> None:
        """On a GPU: the builder's binaries of `proposal`, given to the replay process unless
        it holds them already; raises Failed or SubmissionError."""
        if self.device == "cpu":
            return
        if not self._loaded:
            self.load()  # a fresh process: it holds nothing yet
        if self._installed_in is not self._process:
            self._installed, self._installed_in = set(), self._process
        key = proposal_key(proposal)
        if key in self._installed:
            return
        start = shown_clock.now()  # waited for a build, installed it (grade --profile)
        built = self._builds.get(key, lambda: self._builds.builder.build(
            problem_id, params, dtype, seed, proposal), self.timeout)
        self._ask("install", 0, tensors=built.tensors, key=key, value=built.header["value"])
        self._installed.add(key)
        self.installing += shown_clock.now() - start

    def call(self, problem_id: str, params: dict, dtype: str, seed: int,
             inputs: list, output_bytes: int, proposal: dict,
             replay: Replay = Replay()) -> Outcome:
        """The replay of `proposal` on the case's inputs drawn from `seed` (`inputs`: the parent's
        own copies, for the sizes that may come back; `output_bytes`: the expected output's;
        `replay`: which replay, grader.replay.variants.Replay)."""
        limit = 2 * (sum(t.nbytes for t in inputs) + output_bytes) + (1 << 20)
        try:
            self._install(problem_id, params, dtype, seed, proposal)
            reply = self._ask("call", limit, problem_id=problem_id, params=params, dtype=dtype,
                              seed=seed, proposal=proposal, configuration=replay.configuration,
                              in_grid_order=replay.in_grid_order)
            value = self._check(reply.header["value"], CALL_REPLY, "the call's reply")
            try:
                outcome = call_outcome(value, reply.tensors, inputs)
            except protocol.ProtocolError as exc:
                raise self._broken(str(exc)) from None
        except (Failed, SubmissionError) as exc:
            return failed_call(exc)
        if outcome.context_lost:
            self.end()  # the next call gets a fresh CUDA context
        return outcome

    def memory(self, problem_id: str, params: dict, dtype: str, seed: int,
               proposal: dict) -> tuple[int | None, str | None]:
        """(peak extra bytes of one replayed call, error)."""
        try:
            self._install(problem_id, params, dtype, seed, proposal)
            reply = self._ask("memory", 0, problem_id=problem_id, params=params, dtype=dtype,
                              seed=seed, proposal=proposal)
            return self._check(reply.header["value"], int, "the memory reply"), None
        except (Failed, SubmissionError) as exc:
            return None, str(exc)

    def warm(self, problem_id: str, params: dict, dtype: str, seed: int, proposal: dict,
             calls: int = 3) -> Outcome:
        """Untimed replays at a timed size that absorb compilation; what the first of them
        did (no output: only its launches, compile errors and error)."""
        try:
            self._install(problem_id, params, dtype, seed, proposal)
            reply = self._ask("warm", 0, problem_id=problem_id, params=params, dtype=dtype,
                              seed=seed, calls=calls, proposal=proposal)
            value = self._check(reply.header["value"], WARM_REPLY, "the warm-up reply")
        except (Failed, SubmissionError) as exc:
            return failed_call(exc)
        return Outcome(error=value["error"], host=value["host"],
                       compile_errors=value["compile_errors"],
                       launches=[LaunchRecord(**la) for la in value["launches"]])

    def time_batch(self, problem_id: str, params: dict, dtype: str, seeds: list[int],
                   key: int, proposal: dict, move: bool = False) -> Batch:
        """One batch of timed replays, on fresh inputs drawn from `seeds`, with the grader's
        own clock around all of it (`move`: its memory moved first); raises TimingFailed."""
        try:
            self._install(problem_id, params, dtype, seeds[0], proposal)
            start = time.perf_counter()  # the batch alone, its binaries installed
            reply = self._ask("time_batch", 0, problem_id=problem_id, params=params,
                              dtype=dtype, seeds=seeds, key=key, proposal=proposal, move=move)
            value = self._check(reply.header["value"], TIMING_REPLY, "the timing reply")
        except (Failed, SubmissionError) as exc:
            raise TimingFailed(str(exc)) from None
        wall = (time.perf_counter() - start) * 1e3
        if not len(value["times"]) == len(value["digests"]) == len(seeds):
            self.end()
            raise TimingFailed("crashed: its process sent timings for other calls than asked")
        if returned := next((o.get("type") for o in value["outputs"] if "type" in o), None):
            raise TimingFailed(f"they returned {inline(returned)}, expected a torch.Tensor")
        return Batch(value["times"], value["digests"], wall)

    def fetch(self, index: int, output_bytes: int):
        """The output of call `index` of the last batch, in GPU memory where the processes can
        share it (grader.device_memory), else through the host; raises TimingFailed."""
        def ask(on_device: bool) -> protocol.Message:
            return self._ask("fetch", 2 * output_bytes + (1 << 20), on_device=on_device,
                             index=index)

        try:
            try:
                reply = ask(self.device != "cpu" and ReplayProcess.on_device)
            except protocol.NotShared:  # and from now on: through host memory
                ReplayProcess.on_device = False
                reply = ask(False)
            self._check(reply.header["value"], RETURNED, "the fetched output")
        except (Failed, SubmissionError) as exc:
            raise TimingFailed(str(exc)) from None
        if "output" not in reply.tensors:
            raise TimingFailed("crashed: its process did not send the output asked for")
        return reply.tensors["output"]

