"""Triton kernels built from source, as the replay runs them on a CPU (the CPU runner part of
the Triton track, grader.tracks.contract.CpuRunner): each launch checked by the front end
with its very arguments, then run by the interpreter under the grader's watch."""

from __future__ import annotations

from pathlib import Path

from grader.languages.triton.fidelity import gpu_arithmetic
from grader.languages.triton.libdevice import libdevice_on_the_cpu
from grader.languages.triton.frontend import front_end_check, unwrap
from grader.languages.triton.program_order import programs_in_case_order
from grader.languages.triton.spellings import TRITON


def front_end(step, kernel, args: tuple, kwargs: dict, path: Path) -> str | None:
    """The launch compiled by Triton's compiler with its own options, under each of an
    autotuner's configurations (each is graded: grader.replay.variants)."""
    name = step.kernel
    jit, configs = unwrap(kernel)
    bound = dict(zip(jit.arg_names, args))
    bound.update({k: v for k, v in kwargs.items() if k in jit.arg_names})
    options = {k: v for k, v in kwargs.items() if k in TRITON.launch_options}
    for index, config in enumerate(configs or [None]):
        merged, chosen = dict(bound), dict(options)
        if config is not None:
            merged.update(config.kwargs)
            chosen.update({k: v for k, v in config.all_kwargs().items()
                           if k not in config.kwargs})
        error = front_end_check(name, jit.fn, merged, path, getattr(jit, "do_not_specialize", ()),
                      chosen)
        if error:
            return (f"under the autotuner's configuration {configuration(config, index, configs)}: "
                    f"{error}" if configs and len(configs) > 1 else error)
    return None


def configuration(config, index: int, configs: list) -> str:
    """An autotuner's configuration in words: "2 of 3 (BLOCK_SIZE=256, num_warps=2)"."""
    shown = ", ".join(f"{k}={v!r}" for k, v in config.all_kwargs().items())
    return f"{index + 1} of {len(configs)} ({shown})"


def launch(step, kernel, args: tuple, kwargs: dict) -> None:
    """The launch run by the interpreter; an autotuned kernel under the configuration the
    step names (the first where it names none: no GPU here to time them on), with the grid
    the wrapper's grid function gave that configuration in the child."""
    from grader.replay.proposal import ProposalError
    from grader.replay.variants import grids_given

    jit, configs = unwrap(kernel)
    wrong = grids_given(step, len(configs or ()))
    if wrong:
        raise ProposalError(wrong)
    grid, chosen = step.grid, {}
    if configs:
        index = step.configuration or 0
        grid, chosen = step.grids[index], configs[index].all_kwargs()
    # a float16 accumulator rounded as a GPU rounds it; the programs in the case's order
    with gpu_arithmetic(), libdevice_on_the_cpu(), programs_in_case_order():
        jit[grid](*args, **kwargs, **chosen)


def watch(watch, launch, grid: tuple[int, int, int], notes: dict):
    from grader.languages.triton.watch import hooks

    return hooks(watch, launch, grid, notes)


def runtime(filename: str) -> str | None:
    # Its interpreter's own failures are named as the language's.
    return "kernel language" if filename.endswith("triton/runtime/interpreter.py") else None
