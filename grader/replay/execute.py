"""Running a proposal: the grader's own host code, with the submission's kernels.

`Replay` holds one file's kernels (grader.replay.kernels) and runs proposals with them on
inputs the grader drew: it makes the buffers (fresh ones poisoned, with a guard region, as
the child's host watch would), does the host steps, and launches each kernel by its name in
the file. On a CPU each launch is first given to the real compiler's front end
(grader.replay.frontends), with the very arguments it runs with. `timed` gives a bare
callable for the timing loop: the same steps without poison or checks.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from grader.replay import frontends
from grader.replay.kernels import KernelFile, SourceError
from grader.replay.locate import describe
from grader.replay.poison import GUARD_MIN, PATTERNS, Guarded, poison_
from grader.replay.proposal import Alloc, Copy, DType, Fill, Launch, Proposal, ProposalError, Ref


@dataclass
class LaunchRecord:
    """One launch as it ran, for placing a wrong element in its program's tile."""

    kernel: str
    grid: tuple[int, ...]
    constants: dict[str, Any] = field(default_factory=dict)  # int and bool arguments by name
    language: str = "triton"


@dataclass
class Replayed:
    output: torch.Tensor | None = None
    error: str | None = None  # what a launch raised, at the student's line
    launches: list[LaunchRecord] = field(default_factory=list)
    allocations: list[Guarded] = field(default_factory=list)
    compile_errors: list[str] = field(default_factory=list)
    unchecked: str | None = None  # why the front end could not check a kernel


class Replay:
    def __init__(self, file: KernelFile, device: str, frontend: bool):
        self.file = file
        self.device = torch.device(device)
        self.frontend = frontend  # on a CPU: check each launch with the real front end
        if self.device.type == "cuda" and "triton" in sys.modules:
            _scratch_for_descriptors(self.device)

    def run(self, proposal: Proposal, inputs: dict[str, torch.Tensor],
            watch: Any = None) -> Replayed:
        """The proposal run once, watched: poisoned allocations, front-end checks, and with
        `watch` (grader.replay.watch.Watch), every load and store of its kernels."""
        done = Replayed()
        buffers = dict(inputs)
        try:
            for step in proposal.steps:
                if isinstance(step, Alloc):
                    buffers[step.ref().buffer], guarded = self._poisoned(step)
                    done.allocations += [guarded] if guarded else []
                else:
                    self._step(step, buffers, done, watch, proposal.result)
                    if done.compile_errors or done.unchecked:
                        return done  # a kernel no GPU compiler accepted does not run
            if proposal.result is not None:
                done.output = _view(buffers, proposal.result)
        except (SourceError, ProposalError) as exc:
            done.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a failing kernel is a graded outcome
            done.error = describe(exc, self.file.path)
        return done

    def timed(self, proposal: Proposal) -> Callable[[dict[str, torch.Tensor]], Any]:
        """The proposal as one call on `inputs` (name -> tensor), for the timing loop."""
        steps = [(s, self._launcher(s) if isinstance(s, Launch) else None)
                 for s in proposal.steps]
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
                    _host_step(step, buffers)
            return None if result is None else _view(buffers, result)

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

    def _step(self, step, buffers: dict[str, torch.Tensor], done: Replayed, watch: Any = None,
              result: Ref | None = None) -> None:
        if not isinstance(step, Launch):
            _host_step(step, buffers)
            return
        kernel = self.file.kernel(step.kernel, step.language)
        args = tuple(_argument(v, buffers) for v in step.args)
        kwargs = {k: _argument(v, buffers) for k, v in step.kwargs.items()}
        done.launches.append(_record(step, kernel, args, kwargs))
        if self.frontend:
            try:
                error = self._check(step, kernel, args, kwargs)
            except frontends.Unavailable as exc:
                done.unchecked = str(exc)
                return  # a kernel no front end checked does not run: it could run host code
            if error:
                done.compile_errors.append(error)
                return
        # the launch, with its loads and stores seen when watched (grader.replay.watch)
        if watch is None:
            _launch(step, kernel, args, kwargs)
            return
        output = _view(buffers, result) if result is not None and result.buffer in buffers else None
        regions = watch.regions(buffers, output, result.buffer if result else None,
                                {ref.buffer for ref in step.tensors()})
        with watch.launch(step.language, done.launches[-1].grid, regions, output,
                         len(done.launches) - 1):
            _launch(step, kernel, args, kwargs)

    def _check(self, step: Launch, kernel, args: tuple, kwargs: dict) -> str | None:
        return FRONT_ENDS[step.language](self, step, kernel, args, kwargs)

    def _check_cutile(self, step: Launch, kernel, args: tuple, kwargs: dict) -> str | None:
        return frontends.cutile(kernel, args)

    def _check_triton(self, step: Launch, kernel, args: tuple, kwargs: dict) -> str | None:
        jit, configs = _unwrap(kernel)
        bound = dict(zip(jit.arg_names, args))
        bound.update({k: v for k, v in kwargs.items() if k in jit.arg_names})
        for config in configs or [None]:
            merged = {**bound, **(config.kwargs if config is not None else {})}
            error = frontends.triton(step.kernel, jit.fn, merged, self.file.path,
                                     getattr(jit, "do_not_specialize", ()))
            if error:
                return error
        return None

    def _launcher(self, step: Launch) -> Callable[[dict[str, torch.Tensor]], None]:
        kernel = self.file.kernel(step.kernel, step.language)

        def launch(buffers):
            args = tuple(_argument(v, buffers) for v in step.args)
            kwargs = {k: _argument(v, buffers) for k, v in step.kwargs.items()}
            _launch(step, kernel, args, kwargs)

        return launch


def _scratch_for_descriptors(device: torch.device) -> None:
    """Triton kernels that make tensor descriptors need global scratch memory, which a
    wrapper would give with triton.set_allocator: the replay gives it for every kernel."""
    import triton

    def scratch(size: int, alignment: int, stream) -> torch.Tensor:  # noqa: ARG001
        return torch.empty(size, dtype=torch.int8, device=device)

    if hasattr(triton, "set_allocator"):
        triton.set_allocator(scratch)


def _unwrap(kernel) -> tuple[Any, list | None]:
    """(the JIT function under an autotuner, the autotuner's configurations or None)."""
    configs = getattr(kernel, "configs", None)
    while not hasattr(kernel, "arg_names") or hasattr(kernel, "configs"):
        kernel = kernel.fn
    return kernel, configs


def _grid(step: Launch, kernel) -> Any:
    if step.grids is None:
        return step.grid
    configs = getattr(kernel, "configs", None) or []
    if len(configs) != len(step.grids):
        raise ProposalError(f"the launch of {step.kernel} gives grids for {len(step.grids)} "
                            f"configurations; its @triton.autotune has {len(configs)}")

    def grid(meta: dict):
        for config, found in zip(configs, step.grids):
            if all(meta.get(k) == v for k, v in config.kwargs.items()):
                return found
        return step.grid

    return grid


def _launch(step: Launch, kernel, args: tuple, kwargs: dict) -> None:
    LAUNCHERS[step.language](step, kernel, args, kwargs)


def _launch_triton(step: Launch, kernel, args: tuple, kwargs: dict) -> None:
    kernel[_grid(step, kernel)](*args, **kwargs)


def _launch_cutile(step: Launch, kernel, args: tuple, kwargs: dict) -> None:
    import cuda.tile as ct

    # On a CPU the simulator stands in for CUDA's current stream (grader.cutile_sim.install).
    ct.launch(torch.cuda.current_stream(), step.grid, kernel, args)


def _triton_parameters(kernel) -> list[str]:
    return list(_unwrap(kernel)[0].arg_names)


def _cutile_parameters(kernel) -> list[str]:
    from grader.backends.build import cutile_parameters

    return [n for n, _ in cutile_parameters(kernel)]


def _record(step: Launch, kernel, args: tuple, kwargs: dict) -> LaunchRecord:
    names = PARAMETERS[step.language](kernel)
    bound = dict(zip(names, args))
    bound.update(kwargs)
    grid = step.grid if isinstance(step.grid, tuple) else (step.grid,)
    return LaunchRecord(step.kernel, grid, {k: v for k, v in bound.items()
                                            if isinstance(v, (int, bool))}, step.language)


def _argument(value: Any, buffers: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, Ref):
        return _view(buffers, value)
    if isinstance(value, DType):
        return _dtype(value)
    if isinstance(value, tuple):
        return tuple(_argument(v, buffers) for v in value)
    return value


def _dtype(value: DType) -> Any:
    if value.kind == "torch" and isinstance(getattr(torch, value.name, None), torch.dtype):
        return getattr(torch, value.name)
    if value.kind == "tl":
        import triton.language as tl

        found = getattr(tl, value.name, None)
        if isinstance(found, tl.dtype):
            return found
    raise ProposalError(f"`{value.name}` is not a dtype")


def _host_step(step, buffers: dict[str, torch.Tensor]) -> None:
    if isinstance(step, Fill):
        _view(buffers, step.target).fill_(step.value)
    elif isinstance(step, Copy):
        _view(buffers, step.target).copy_(_view(buffers, step.source))


def _view(buffers: dict[str, torch.Tensor], ref: Ref) -> torch.Tensor:
    base = buffers[ref.buffer]
    if (ref.offset == 0 and ref.shape == tuple(base.shape) and ref.stride == base.stride()
            and ref.dtype == str(base.dtype).removeprefix("torch.")):
        return base  # the whole buffer: the common case, and the cheapest in the timed loop
    start = base.storage_offset() * base.element_size() + ref.offset
    if start % ref.itemsize:
        raise ProposalError(f"a {ref.dtype} view of {ref.buffer} starts between two elements")
    view = torch.empty(0, dtype=getattr(torch, ref.dtype), device=base.device)
    return view.set_(base.untyped_storage(), start // ref.itemsize, ref.shape, ref.stride)


# Per track (grader.tracks): how a kernel is checked by its compiler's front end, launched,
# and its parameters named.
FRONT_ENDS = {"triton": Replay._check_triton, "cutile": Replay._check_cutile}
LAUNCHERS = {"triton": _launch_triton, "cutile": _launch_cutile}
PARAMETERS = {"triton": _triton_parameters, "cutile": _cutile_parameters}
