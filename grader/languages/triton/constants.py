"""The calls a Triton file's constants may be written with (grader.replay.literals reads
their arguments as data first): `tl.constexpr(64)` and `triton.Config({...}, num_warps=4)`."""

from __future__ import annotations

import ast

from grader.replay.literals import FROZEN, NotData, LiteralReader, changeable

_CONFIG_POSITIONS = ("kwargs", "num_warps", "num_stages", "num_ctas")
_CONFIG_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg"})


def constexpr(reader: LiteralReader, node: ast.Call, spelling: str):
    import triton.language as tl

    (value,) = reader.positional(node, 1, spelling)
    return tl.constexpr(value)


def config(reader: LiteralReader, node: ast.Call, spelling: str):
    import triton

    if len(node.args) > len(_CONFIG_POSITIONS):
        raise NotData(node, "triton.Config takes its kwargs dict, then num_warps, "
                            "num_stages and num_ctas")
    given = dict(zip(_CONFIG_POSITIONS, (reader.constant(a) for a in node.args)))
    given.update(reader.keywords(node, _CONFIG_OPTIONS | {"kwargs"}))
    meta = given.pop("kwargs", None)
    if not isinstance(meta, dict):
        raise NotData(node, "triton.Config's first argument is a dict of the kernel's "
                            "constexpr values, written as data")
    for name, value in meta.items():  # a kernel sees each as a constexpr
        why = changeable(value, reader.table)
        if why:
            raise NotData(node, f"triton.Config's value of `{name}` is {why}, which a kernel "
                                f"could change while it runs: {FROZEN}")
    for name, value in given.items():
        if value is not None and type(value) is not int:
            raise NotData(node, f"triton.Config's {name}= is an integer")
    return triton.Config(meta, **given)


CONSTRUCTORS = {"triton.Config": config, "triton.runtime.Config": config,
                "triton.runtime.autotuner.Config": config,
                "triton.language.constexpr": constexpr,
                "triton.language.core.constexpr": constexpr}
