"""Running a proposal: the grader's own host code, with the submission's kernels.

`Executor` runs proposals on inputs the grader drew: it makes the buffers (fresh ones
poisoned, with a guard region, as the child's host watch would), does the host steps, and
launches each kernel through its `kernels`: on a CPU, the file's kernels built from source
(grader.replay.source, each launch first given to the real compiler's front end with the
very arguments it runs with); on a GPU, binaries a builder process compiled
(grader.replay.binaries), so that nothing of the submission's Python is built or compiled
in the process that runs and times. `timed` gives a bare callable for the timing loop: the
same steps without poison or checks.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import torch

from grader.replay.buffers import argument, host_step, view
from grader.replay.kernels import SourceError
from grader.replay.poison import GUARD_MIN, PATTERNS, Guarded, poison_
from grader.replay.proposal import Alloc, Launch, Proposal, ProposalError, Ref
from grader.replay.spellings import check_launch
from grader.tracks import Unavailable, wing

Launcher = Callable[[tuple, dict], None]


@dataclass
class LaunchRecord:
    """One launch as it ran, for placing a wrong element in its program's tile."""

    kernel: str
    grid: tuple[int, ...]
    constants: dict[str, Any] = field(default_factory=dict)  # int and bool arguments by name
    language: str = field(kw_only=True)  # its track's name


@dataclass
class Executed:
    output: torch.Tensor | None = None
    error: str | None = None  # what a launch raised, at the student's line
    launches: list[LaunchRecord] = field(default_factory=list)
    allocations: list[Guarded] = field(default_factory=list)
    compile_errors: list[str] = field(default_factory=list)
    unchecked: str | None = None  # why the front end could not check a kernel


class Kernels(Protocol):
    """What runs a proposal's launches: the file's kernels built from source, or binaries."""

    def parameters(self, index: int, step: Launch) -> list[str]:
        """The names of the parameters of the kernel launch step `index` launches."""

    def rejection(self, index: int, step: Launch, args: tuple, kwargs: dict) -> str | None:
        """The compiler's rejection of this launch, or None; raises Unavailable when it
        could not be checked."""

    def launcher(self, index: int, step: Launch) -> Launcher:
        """The launch of step `index`, as a call with its arguments."""

    def describe(self, exc: BaseException) -> str:
        """A launch's exception, at the student's line where it has one."""


class Executor:
    def __init__(self, kernels: Kernels, device: str):
        self.kernels = kernels
        self.device = torch.device(device)

    def run(self, proposal: Proposal, inputs: dict[str, torch.Tensor],
            watch: Any = None) -> Executed:
        """The proposal run once, watched: poisoned allocations, compile checks, and with
        `watch` (grader.replay.watch.Watch), every load and store of its kernels."""
        done = Executed()
        buffers = dict(inputs)
        # An interpreter computing with numpy warns of every overflow (exp of a large value
        # is inf by design in GELU and softmax): noise under "what the submission printed";
        # the comparison reports the inf and NaN that matter, as the recorded call does.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            self._run(proposal, buffers, done, watch)
        return done

    def _run(self, proposal: Proposal, buffers: dict, done: Executed, watch: Any) -> None:
        try:
            for index, step in enumerate(proposal.steps):
                if isinstance(step, Alloc):
                    buffers[step.ref().buffer], guarded = self._poisoned(step)
                    done.allocations += [guarded] if guarded else []
                else:
                    self._step(index, step, buffers, done, watch, proposal.result)
                    if done.compile_errors or done.unchecked:
                        return  # a kernel no GPU compiler accepted does not run
            if proposal.result is not None:
                done.output = view(buffers, proposal.result)
        except (SourceError, ProposalError) as exc:
            done.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a failing kernel is a graded outcome
            done.error = self.kernels.describe(exc)

    def timed(self, proposal: Proposal) -> Callable[[dict[str, torch.Tensor]], Any]:
        """The proposal as one call on `inputs` (name -> tensor), for the timing loop."""
        steps = [(s, self._launcher(i, s) if isinstance(s, Launch) else None)
                 for i, s in enumerate(proposal.steps)]
        result = proposal.result

        def call(inputs: dict[str, torch.Tensor]):
            buffers = dict(inputs)
            for step, launch in steps:
                if launch is not None:
                    launch(buffers)
                elif isinstance(step, Alloc):
                    buffers[step.ref().buffer] = torch.empty_strided(
                        step.shape, step.stride, dtype=getattr(torch, step.dtype),
                        device=self.device)
                else:
                    host_step(step, buffers)
            return None if result is None else view(buffers, result)

        return call

    # --- steps ------------------------------------------------------------------------------

    def _poisoned(self, alloc: Alloc) -> tuple[torch.Tensor, Guarded | None]:
        dtype = getattr(torch, alloc.dtype)
        span = alloc.ref().span() // dtype.itemsize
        buffer = poison_(torch.empty(span + max(span, GUARD_MIN), dtype=dtype, device=self.device))
        shown = "x".join(map(str, alloc.shape)) or "scalar"
        name = f"the {alloc.dtype} [{shown}] tensor your wrapper allocated"
        tensor = buffer.as_strided(alloc.shape, alloc.stride)
        return tensor, (Guarded(name, buffer[:span], buffer) if dtype in PATTERNS else None)

    def _step(self, index: int, step, buffers: dict[str, torch.Tensor], done: Executed,
              watch: Any = None, result: Ref | None = None) -> None:
        if not isinstance(step, Launch):
            host_step(step, buffers)
            return
        args = tuple(argument(v, buffers) for v in step.args)
        kwargs = {k: argument(v, buffers) for k, v in step.kwargs.items()}
        names = self.kernels.parameters(index, step)
        try:
            check_launch(names, kwargs, wing(step.language).reader.spellings)
        except ValueError as exc:
            raise ProposalError(str(exc)) from None
        done.launches.append(_record(step, names, args, kwargs))
        try:
            error = self.kernels.rejection(index, step, args, kwargs)
        except Unavailable as exc:
            done.unchecked = str(exc)
            return  # a kernel no front end checked does not run: it could run host code
        if error:
            done.compile_errors.append(error)
            return
        launch = self.kernels.launcher(index, step)
        # the launch, with its loads and stores seen when watched (grader.replay.watch)
        if watch is None:
            launch(args, kwargs)
            return
        output = view(buffers, result) if result is not None and result.buffer in buffers else None
        regions = watch.regions(buffers, output, result.buffer if result else None,
                                {ref.buffer for ref in step.tensors()})
        with watch.launch(step.language, done.launches[-1].grid, regions, output,
                         len(done.launches) - 1):
            launch(args, kwargs)

    def _launcher(self, index: int, step: Launch) -> Callable[[dict[str, torch.Tensor]], None]:
        launch = self.kernels.launcher(index, step)

        def run(buffers):
            args = tuple(argument(v, buffers) for v in step.args)
            kwargs = {k: argument(v, buffers) for k, v in step.kwargs.items()}
            launch(args, kwargs)

        return run


def _record(step: Launch, names: list[str], args: tuple, kwargs: dict) -> LaunchRecord:
    bound = dict(zip(names, args))
    bound.update(kwargs)
    grid = step.grid if isinstance(step.grid, tuple) else (step.grid,)
    return LaunchRecord(step.kernel, grid, {k: v for k, v in bound.items()
                                            if isinstance(v, (int, bool))},
                        language=step.language)
