"""Triton kernels built in one process and launched in another (grader.replay.binaries; the
GPU part of the Triton track, grader.tracks.contract.GpuBuilder).

On a GPU, compiling a Triton kernel runs Triton's code generator, which calls the Python a
kernel names (grader.replay.bodies keeps that to Triton's own). So the kernels are compiled
in a builder process (`build`), which is then discarded, and the process that runs and
times them only loads the compiled binaries (`TritonBinary`): the cubin and its metadata,
both data, launched through Triton's own launcher. Nothing in that process is derived from
the submission's Python: the binary's parameters are named, and each argument taken from
the proposal, by the record the builder wrote.

A record is JSON: the binary's name and hash, its signature (parameter -> Triton type,
"constexpr" for the compile-time ones), and where each parameter's value comes from (the
launch's arguments, or a value of the configuration or a default, as data).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from grader.languages.triton.frontend import constant_json, constant_value, unwrap
from grader.quoting import inline

_KEPT = (".json", ".cubin")  # of a compiled kernel's files, what launching it needs
# What a record may name (it is data from another process): a hash, and files within it.
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
_SAFE_FILE = re.compile(r"\d{1,4}/[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
# A parameter's type, as Triton spells it in a compiled kernel's signature ("*fp16", "i32",
# "constexpr", "tensordesc<bf16[64, 64]>"): its launcher is made from the types, and in
# Triton 3.6 compiled as C. What the builder sends is checked before that (the names too:
# Python identifiers).
_SAFE_TYPE = re.compile(r"constexpr|nvTmaDesc|\*{0,2}k?[a-z0-9]{1,12}"
                        r"|tensordesc<[a-z0-9]{1,12}\[[0-9, ]{1,64}\]"
                        r"[A-Za-z0-9_,.=\[\]() -]{0,200}>")
# What makes Triton's own autotuner pass over a configuration rather than fail the launch:
# one that does not fit this GPU (shared memory, registers) or that its compiler refuses.
skipped = ("OutOfResources", "CompileTimeAssertionFailure", "PTXASError")


def build(kernel, args: tuple, kwargs: dict, grid: tuple) -> tuple[list[dict], dict[str, bytes]]:
    """Compile one launch: one record per configuration of an autotuner (one for a plain
    kernel), and the files they need, by name. (A Triton binary takes its grid at launch.)"""
    jit, configs = unwrap(kernel)
    records, files = [], {}
    for index, config in enumerate(configs or [None]):
        chosen = config.all_kwargs() if config is not None else {}
        try:
            compiled = jit.warmup(*args, grid=(1,), **kwargs, **chosen)
        except Exception as exc:
            if configs is None or type(exc).__name__ not in skipped:
                raise
            records.append({"skipped": f"{type(exc).__name__}: {str(exc)[:500]}"})
            continue
        if hasattr(compiled, "result"):  # an asynchronous compile
            compiled = compiled.result()
        kept = {name: Path(path) for name, path in compiled.metadata_group.items()
                if name.endswith(_KEPT)}
        for name, path in kept.items():
            files[f"{index}/{name}"] = path.read_bytes()
        records.append({"name": compiled.name, "hash": compiled.hash,
                        "signature": dict(compiled.src.signature),
                        "files": [f"{index}/{name}" for name in kept],
                        "params": _sources(jit, args, kwargs, chosen)})
    if not any("skipped" not in r for r in records):
        raise RuntimeError("no configuration of the autotuner compiles: "
                           + "; ".join(r["skipped"] for r in records))
    return records, files


def _sources(jit, args: tuple, kwargs: dict, config: dict) -> list:
    """Where each parameter's value comes from: ["arg", i] or ["kwarg", name] of the launch,
    or ["value", data] (a configuration's value, or the parameter's default)."""
    import inspect

    defaults = inspect.signature(jit.fn).parameters
    sources = []
    for index, name in enumerate(jit.arg_names):
        if index < len(args):
            sources.append(["arg", index])
        elif name in kwargs:
            sources.append(["kwarg", name])
        elif name in config:
            sources.append(["value", constant_json(config[name])])
        else:
            sources.append(["value", constant_json(defaults[name].default)])
    return sources


def load_binary(record: dict, files: dict, folder: Path, kept: dict, name: str) -> "TritonBinary":
    return TritonBinary(record, files, folder)


def disassemblers() -> list[str]:
    import importlib.util
    import os

    # Triton ships NVIDIA's tools beside its own ptxas, the one its cubins were made by.
    spec = importlib.util.find_spec("triton")
    folders = (spec.submodule_search_locations or []) if spec else []
    return [os.path.join(f, "backends", "nvidia", "bin", "nvdisasm") for f in folders]


class TritonBinary:
    """One compiled configuration of a launch, loaded from the builder's files (written to
    `folder`), launched with the arguments of a proposal's launch step."""

    def __init__(self, record: dict, files: dict[str, torch.Tensor], folder: Path):
        from types import SimpleNamespace

        from triton.compiler.compiler import CompiledKernel

        for parameter, kind in record["signature"].items():
            if not (parameter.isidentifier() and isinstance(kind, str)
                    and _SAFE_TYPE.fullmatch(kind)):
                raise ValueError("a built kernel's record has a parameter the grader does not "
                                 f"launch: {inline(parameter)}: {inline(kind)}")
        group = {}
        for name in record["files"]:
            if not _SAFE_NAME.fullmatch(record["hash"]) or not _SAFE_FILE.fullmatch(name):
                raise ValueError("a built kernel's record names a file outside its folder")
            path = folder / record["hash"] / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(files[name].numpy().tobytes())
            group[Path(name).name] = str(path)
        self.params = record["params"]
        names = list(record["signature"])
        # What Triton's launcher reads of the source: the signature and the parameters'
        # names; the source itself stays in the builder.
        source = SimpleNamespace(signature=dict(record["signature"]), constants={},
                                 fn=SimpleNamespace(arg_names=names))
        self.kernel = CompiledKernel(source, group, record["hash"])

    def launch(self, grid: tuple, args: tuple, kwargs: dict) -> None:
        from triton.runtime import driver

        values = [_value(source, args, kwargs) for source in self.params]
        grid = tuple(grid) + (1,) * (3 - len(grid))
        device = driver.active.get_current_device()
        stream = driver.active.get_current_stream(device)
        run = self.kernel.run  # loads the binary and makes its launcher, the first time
        run(grid[0], grid[1], grid[2], stream, self.kernel.function, self.kernel.packed_metadata,
            None, None, None, *values)


def _value(source: list, args: tuple, kwargs: dict) -> Any:
    kind, where = source
    if kind == "arg":
        return args[where]
    if kind == "kwarg":
        return kwargs[where]
    return constant_value(where)
