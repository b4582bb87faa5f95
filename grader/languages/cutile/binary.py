"""cuTile kernels built in one process and launched in another (the GPU part of the cuTile
track, grader.tracks.contract.GpuBuilder).

On a GPU, `ct.launch` compiles a kernel on its first launch with each signature: cuTile's
front end reads the kernel's Python (its `static_eval` evaluates Python; grader.replay.bodies
keeps that to cuTile's own), then tileiras makes a cubin. So the kernels are compiled in a
builder process (`build`), which is then discarded, and the process that runs and times
them only loads the cubins (`PrebuiltKernel`): a kernel object of cuTile's own dispatcher
whose compile step hands back the builder's cubin for the signature asked, and never
compiles. What it knows of the kernel is data: its parameters' annotations, each cubin's
signature (as cuTile's dispatcher spells it) and symbol.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import torch


class _Captured(Exception):
    """Raised from a kernel's compile step in the builder: the cubin is kept, the launch is
    not made."""


# The builder's cubins by kernel and signature: cuTile's dispatcher keeps only what it
# launched, and the builder launches nothing.
_built: dict[tuple[int, str], tuple[bytes, str]] = {}


def build(kernel, args: tuple, kwargs: dict, grid: tuple) -> tuple[list[dict], dict[str, bytes]]:
    """Compile one launch as cuTile's dispatcher would for these arguments: one record (the
    signature's spelling, the symbol, the parameters' annotations), and the cubin."""
    import cuda.tile as ct

    captured = {}
    original = type(kernel)

    class Capturing(original):
        """The kernel, for one launch: its compile step keeps the cubin and stops there."""

        def _compile(self, signature, context, compute_capability=None):
            key = (id(self), repr(signature))
            if key not in _built:
                cubin, symbol, host, providers = original._compile(
                    self, signature, context, compute_capability)
                if host is not None or providers:
                    raise TypeError("this kernel needs cuTile host code or libraries, which "
                                    "the grader does not launch")
                _built[key] = (bytes(cubin), symbol)
            captured.update(key=key[1], cubin=_built[key][0], symbol=_built[key][1])
            raise _Captured

    kernel.__class__ = Capturing  # cuTile's dispatcher compiles through it: the launch stops
    try:
        ct.launch(torch.cuda.current_stream(), tuple(grid), kernel, tuple(args))
    except _Captured:
        pass
    finally:
        kernel.__class__ = original
    if not captured:  # already compiled for this signature in this process
        raise RuntimeError("the kernel was not compiled for this launch")
    record = {"key": captured["key"], "symbol": captured["symbol"], "files": ["cubin"],
              "annotations": [encode(n) for n in kernel._annotated_function.parameter_annotations]}
    return [record], {"cubin": captured["cubin"]}


def encode(node: Any) -> Any:
    """A parameter annotation node of cuTile (a dataclass of dataclasses, dtypes and plain
    values) as JSON."""
    if dataclasses.is_dataclass(node):
        return {"class": type(node).__name__,
                "fields": {f.name: encode(getattr(node, f.name)) for f in dataclasses.fields(node)}}
    if isinstance(node, (tuple, list)):
        return {"tuple": [encode(n) for n in node]}
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    name = getattr(node, "name", None)
    if isinstance(name, str) and type(node).__name__ == "DType":
        return {"dtype": name}
    raise TypeError(f"a parameter annotated with {node!r} cannot be launched from a cubin")


def decode(data: Any) -> Any:
    import cuda.tile as ct
    from cuda.tile import _annotated_function, _stub

    if isinstance(data, dict) and "class" in data:
        classes = {c.__name__: c for c in (
            _annotated_function.LeafAnnotationNode, _annotated_function.HomogeneousTupleNode,
            _annotated_function.HeterogeneousTupleNode, _stub.ScalarAnnotation,
            _stub.ArrayAnnotation)}
        cls = classes.get(data["class"])
        if cls is None:
            raise TypeError(f"no parameter annotation of kind {data['class']!r}")
        return cls(**{k: decode(v) for k, v in data["fields"].items()})
    if isinstance(data, dict) and "tuple" in data:
        return tuple(decode(n) for n in data["tuple"])
    if isinstance(data, dict) and "dtype" in data:
        found = getattr(ct, data["dtype"], None)
        if type(found).__name__ != "DType":
            raise TypeError(f"{data['dtype']!r} is not a cuTile dtype")
        return found
    return data


def prebuilt_class():
    """The class of a kernel launched from cubins (defined once cuda.tile is imported)."""
    from cuda.tile._cext import TileDispatcher

    class PrebuiltKernel(TileDispatcher):
        """A cuTile kernel whose compile step hands back a cubin the builder made."""

        def __init__(self, annotations: typing.Sequence):
            super().__init__(annotations)
            self.cubins: dict[str, tuple[bytes, str]] = {}

        def _compile(self, signature, context, compute_capability=None):
            found = self.cubins.get(repr(signature))
            if found is None:
                raise RuntimeError("the replay was given no cubin for this launch's signature "
                                   f"({signature!r})")
            cubin, symbol = found
            return cubin, symbol, None, ()

    return PrebuiltKernel


def load_binary(record: dict, files: dict, folder, kept: dict, name: str) -> "CutileBinary":
    return CutileBinary(record, files, kept, name)


def disassemblers() -> list[str]:
    import os

    from grader.languages.cutile.backend import readable

    # tileiras's toolkit, where it has NVIDIA's other tools beside it.
    return [os.path.join(folder, "bin", "nvdisasm") for folder in readable()]


class CutileBinary:
    """The cubin of one launch, added to the prebuilt kernel of its name in this process."""

    def __init__(self, record: dict, files: dict[str, torch.Tensor], kernels: dict, name: str):
        kernel = kernels.get(name)
        if kernel is None:
            annotations = tuple(decode(a) for a in record["annotations"])
            kernel = kernels[name] = prebuilt_class()(annotations)
        kernel.cubins[record["key"]] = (files["cubin"].numpy().tobytes(), record["symbol"])
        self.kernel = kernel

    def launch(self, grid: tuple, args: tuple, kwargs: dict) -> None:
        import cuda.tile as ct

        ct.launch(torch.cuda.current_stream(), tuple(grid), self.kernel, tuple(args))
