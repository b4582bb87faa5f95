"""The call a cuTile file's constants may be written with (grader.replay.literals reads its
arguments as data first): `ct.ByTarget(...)`, a value per target architecture."""

from __future__ import annotations

import ast

from grader.replay.literals import LiteralReader


def by_target(reader: LiteralReader, node: ast.Call, spelling: str):
    import cuda.tile as ct

    return ct.ByTarget(*reader.positional(node, None, spelling), **reader.keywords(node))


CONSTRUCTORS = {"cuda.tile.ByTarget": by_target}
