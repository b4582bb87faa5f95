"""On a GPU, kernels are built apart from the clock: a builder process compiles each launch of
a proposal (`build`) and is then discarded; the replay, the process that runs, times and
reads outputs, installs what it made (`Binaries.install`) and launches only that.

Compiling runs the kernel language's compile-time Python (Triton's code generator calls
the functions a kernel names, cuTile's `static_eval` evaluates Python). The kernel bodies
were checked before any was built (grader.replay.bodies), and the builder is a confined
process whose only output is data: per launch step, records (JSON) and binary files. In
the replay no code path runs anything derived from the submission's Python.

Before a launch's binaries go to the replay, the builder reads their machine code
(grader.replay.machine_code): one that reads the GPU's clock or which multiprocessor runs
it is refused, as a launch that does not compile is; one it cannot read is not graded.

An autotuned Triton launch has a binary per configuration: the replay tunes itself, timing
each on the launch's own arguments with CUDA events (and restoring every tensor argument
after each), keeps the fastest, and launches that one from then on.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from pathlib import Path
from typing import Any

import torch

from grader.replay import arguments, machine_code
from grader.replay.buffers import argument, host_step
from grader.replay.execute import Launcher
from grader.replay.kernels import KernelFile, SourceError
from grader.replay.locate import describe
from grader.replay.proposal import Alloc, Launch, Proposal
from grader.replay.spellings import check_launch
from grader.replay.variants import grids_given
from grader.tracks import Unavailable, wing

TUNING_REPEATS = 5  # timed launches of each configuration, after one untimed


def proposal_key(data: dict) -> str:
    """The name of a proposal's binaries: a digest of its JSON."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]


# --- the builder ---------------------------------------------------------------------------


def build(file: KernelFile, proposal: Proposal, inputs: dict[str, torch.Tensor]
          ) -> tuple[dict, dict[str, torch.Tensor]]:
    """Every launch of `proposal` compiled on buffers laid out as the replay's (`inputs`:
    the case's inputs, drawn here too); per launch step, its records and files, or why it
    does not compile."""
    buffers = dict(inputs)
    device = next(iter(inputs.values())).device if inputs else torch.device("cuda")
    launches, files = [], {}
    for index, step in enumerate(proposal.steps):
        if isinstance(step, Alloc):
            buffers[step.ref().buffer] = torch.empty_strided(
                step.shape, step.stride, dtype=getattr(torch, step.dtype), device=device)
            continue
        if not isinstance(step, Launch):
            host_step(step, buffers)
            continue
        names: list[str] = []
        try:
            kernel = file.kernel(step.kernel, step.language)
            language = wing(step.language)
            names = language.reader.parameters(kernel)
            args = tuple(argument(v, buffers) for v in step.args)
            kwargs = {k: argument(v, buffers) for k, v in step.kwargs.items()}
            check_launch(names, kwargs, language.reader.spellings)
            wrong = arguments.check_arguments(file.path, step.kernel, language.reader, kernel, len(args),
                                    kwargs)
            if wrong:
                raise ValueError(wrong)
        except (SourceError, ValueError) as exc:  # the grader's refusal, worded for the student
            launches.append({"step": index, "names": names, "error": str(exc)})
            break
        try:
            grid = step.grid if isinstance(step.grid, tuple) else (step.grid,)
            records, made = language.gpu.build(kernel, args, kwargs, grid)
        except Exception as exc:  # noqa: BLE001 - the compiler's rejection is the answer
            launches.append({"step": index, "names": names, "error": describe(exc, file.path)})
            break  # a later launch would run after one that does not compile: never
        # One record a configuration: an autotuned launch's grids must be as many (one record
        # and no grids is a plain kernel; the replay on a CPU checks it the same way).
        wrong = grids_given(step, len(records) if step.grids is not None or len(records) > 1
                            else 0)
        if wrong:
            launches.append({"step": index, "names": names, "error": wrong})
            break
        try:
            refused = machine_code.check_cubins(made, file.path, language.reader.spellings.api)
        except machine_code.CubinUnreadable as exc:  # the grader's own failing: not graded
            launches.append({"step": index, "names": names, "unchecked": str(exc)})
            break
        if refused:  # it reads the clock, or where it runs: refused as if it did not compile
            launches.append({"step": index, "names": names, "error": refused})
            break
        for name, blob in made.items():
            files[f"{index}/{name}"] = torch.frombuffer(bytearray(blob), dtype=torch.uint8)
        launches.append({"step": index, "names": names, "records": records})
    return {"launches": launches}, files


# --- the replay ----------------------------------------------------------------------------


class Binaries:
    """The binaries installed in this process, by proposal; `folder` is where a language's
    loader has the files of its binaries written (grader.tracks.contract.GpuBuilder.load_binary)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.given: dict[str, tuple[dict, dict[str, torch.Tensor]]] = {}  # key -> the build
        self.steps: dict[str, dict[int, Any]] = {}  # key -> step -> [binary, ...] or an error
        self.parameters: dict[str, dict[int, list[str]]] = {}
        self.kept: dict[str, dict] = {}  # by track: what its wing keeps between loads
        self.tuned: dict[tuple[str, int], int] = {}

    def install(self, key: str, value: dict, tensors: dict[str, torch.Tensor]) -> None:
        """Keep what the builder made of the proposal named `key`."""
        self.given[key] = (value, tensors)

    def _loaded(self, key: str, proposal: Proposal) -> None:
        """The binaries of the proposal named `key`, loaded the first time they are used."""
        if key in self.steps:
            return
        if key not in self.given:
            raise RuntimeError("no binaries were installed for this proposal")
        value, tensors = self.given.pop(key)
        steps, names = {}, {}
        for launch in value["launches"]:
            index = launch["step"]
            names[index] = [str(n) for n in launch["names"]]
            if "error" in launch:
                steps[index] = str(launch["error"])
                continue
            if "unchecked" in launch:  # its machine code could not be read
                steps[index] = Unavailable(str(launch["unchecked"]))
                continue
            step = proposal.steps[index]
            files = {}
            for record in launch["records"]:
                for name in record.get("files", ()):
                    files[name] = tensors[f"{index}/{name}"]
            steps[index] = [self._load(step, record, files) for record in launch["records"]]
        self.steps[key], self.parameters[key] = steps, names

    def _load(self, step: Launch, record: dict, files: dict) -> Any:
        if "skipped" in record:  # a configuration that does not compile for this GPU
            return None
        kept = self.kept.setdefault(step.language, {})
        return wing(step.language).gpu.load_binary(record, files, self.folder, kept, step.kernel)

    def kernels(self, key: str, proposal: Proposal) -> "BuiltKernels":
        self._loaded(key, proposal)
        return BuiltKernels(self, key)

    def tune(self, key: str, index: int, step: Launch, args: tuple, kwargs: dict) -> int:
        """The fastest configuration of an autotuned launch, timed on its own arguments;
        every tensor argument is as it was before, after."""
        found = self.tuned.get((key, index))
        if found is not None:
            return found
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        saved = [t.clone() for t in tensors]
        times = []
        for binary, grid in zip(self.steps[key][index], step.grids):
            grid = grid if isinstance(grid, tuple) else (grid,)
            try:
                if binary is None:
                    raise LookupError("not built")
                binary.launch(grid, args, kwargs)  # loads it; not timed
            except Exception as exc:
                # A configuration this GPU cannot run (too much shared memory) is passed
                # over, as Triton's own autotuner does.
                if binary is not None and type(exc).__name__ not in wing(step.language).gpu.skipped:
                    raise
                times.append(float("inf"))
                continue
            runs = []
            for _ in range(TUNING_REPEATS):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                binary.launch(grid, args, kwargs)
                end.record()
                end.synchronize()
                runs.append(start.elapsed_time(end))
            times.append(statistics.median(runs))
            for tensor, before in zip(tensors, saved):
                tensor.copy_(before)
        found = min(range(len(times)), key=times.__getitem__)
        if times[found] == float("inf"):
            raise RuntimeError("no configuration of the autotuner runs on this GPU")
        self.tuned[(key, index)] = found
        return found


class BuiltKernels:
    """A proposal's launches from its installed binaries (grader.replay.execute.Kernels)."""

    def __init__(self, binaries: Binaries, key: str):
        self.binaries, self.key = binaries, key
        self.steps = binaries.steps[key]

    def parameters(self, index: int, step: Launch) -> list[str]:
        return self.binaries.parameters[self.key].get(index, [])

    def rejection(self, index: int, step: Launch, args: tuple, kwargs: dict) -> str | None:
        built = self.steps.get(index)
        if built is None:
            return "the kernel was not built (an earlier launch does not compile)"
        if isinstance(built, Unavailable):
            raise built  # not graded (grader.replay.execute)
        return built if isinstance(built, str) else None

    def launcher(self, index: int, step: Launch) -> Launcher:
        built = self.steps[index]
        if isinstance(built, (str, Unavailable)):
            raise RuntimeError(str(built))
        # One binary, or the configuration a variant names (grader.replay.variants). One this
        # GPU cannot run is never the autotuner's pick here: that variant runs the pick.
        choice = 0 if len(built) == 1 else step.configuration
        if choice is not None and built[choice] is not None:
            binary, grid = built[choice], step.grid if step.grids is None else step.grids[choice]
            grid = grid if isinstance(grid, tuple) else (grid,)
            return lambda args, kwargs: binary.launch(grid, args, kwargs)

        def tuned(args: tuple, kwargs: dict) -> None:
            choice = self.binaries.tune(self.key, index, step, args, kwargs)
            grid = step.grids[choice]
            built[choice].launch(grid if isinstance(grid, tuple) else (grid,), args, kwargs)

        return tuned

    def describe(self, exc: BaseException) -> str:
        return f"{type(exc).__name__}: {str(exc).strip()[:2000]}"
