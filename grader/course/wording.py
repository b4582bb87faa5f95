"""pydantic's errors for course.toml as sentences: `key.path: what is wrong`, naming the key
path (`stages[3].cases[1].N`) and what was expected: the keys a table knows, the doc of a
missing parameter, the values a choice allows.

The tables are those of grader.course.schema (typed dicts, as pydantic validates them); what
a table knows is read from them, so a sentence never lists a key the file may not give.
"""

from __future__ import annotations

import typing
from datetime import datetime
from typing import Annotated, Any, Union

from pydantic.fields import FieldInfo
from typing_extensions import NotRequired, Required, is_typeddict

from grader.course.schema import TAGS

_EXPECTED = {"float_type": "an integer or a number", "int_type": "an integer",
             "string_type": "a string", "bool_type": "true or false", "dict_type": "a table",
             "model_type": "a table", "list_type": "an array",
             "datetime_type": "a date and time with its offset, unquoted "
                              "(due = 2026-12-18T23:59:00-08:00)"}


def describe(error: dict, kind: Any, where: str = "") -> str:
    """One error of validating against the table `kind` as `key.path: what is wrong`."""
    loc = tuple(part for part in error["loc"] if part not in TAGS)
    path = where
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    path = path or "(top level)"
    found = error["type"]
    if found == "missing":
        doc = _doc(_at(kind, loc)) if loc else None
        return f"{path}: missing" + (f" ({doc})" if doc else "")
    if found == "extra_forbidden":
        known = ", ".join(_keys(_at(kind, loc[:-1])))
        return f"{path}: unknown key; expected one of: {known}"
    if found in _EXPECTED:
        return f"{path}: expected {_EXPECTED[found]}, found {kind_of(error['input'])}"
    if found == "literal_error":
        name = next((part for part in reversed(loc) if isinstance(part, str)), "value")
        return f"{path}: unknown {name} {error['input']!r}; known: {bound_names(error)}"
    if found == "string_too_short":
        return f"{path}: expected a non-empty string"
    if found == "too_short":
        return f"{path}: expected at least one entry"
    if found == "string_pattern_mismatch":
        return f"{path}: expected a name, as Python writes one, found {error['input']!r}"
    bound = error.get("ctx", {})
    if found == "greater_than":
        return f"{path}: must be positive" if bound["gt"] == 0 else f"{path}: must be above {bound['gt']}"
    if found == "greater_than_equal":
        return f"{path}: must not be negative" if bound["ge"] == 0 else f"{path}: must be at least {bound['ge']}"
    if found == "less_than_equal":
        return f"{path}: must be at most {bound['le']:g}"
    return f"{path}: {error['msg'].removeprefix('Value error, ')}"


def bound_names(error: dict) -> str:
    return error.get("ctx", {}).get("expected", "").replace(" or ", ", ")


def kind_of(value) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            dict: "a table", list: "an array", datetime: "a date and time"}.get(type(value), type(value).__name__)


def _at(kind: Any, loc: tuple) -> Any:
    """The type of the value at `loc` in a value of `kind` (None: no key there)."""
    for part in loc:
        bare = _bare(kind)
        if is_typeddict(bare):
            kind = typing.get_type_hints(bare, include_extras=True).get(part)
        elif typing.get_origin(bare) is list:
            kind = typing.get_args(bare)[0]
        elif typing.get_origin(bare) is dict:
            kind = typing.get_args(bare)[1]
        else:
            return None
    return kind


def _keys(kind: Any) -> list[str]:
    bare = _bare(kind)
    return list(typing.get_type_hints(bare)) if is_typeddict(bare) else []


def _doc(kind: Any) -> str | None:
    """The description a key was given (a parameter's doc), if any."""
    while typing.get_origin(kind) in (Annotated, NotRequired, Required):
        args = typing.get_args(kind)
        doc = next((m.description for m in args[1:] if isinstance(m, FieldInfo)
                    and m.description), None)
        if doc:
            return doc
        kind = args[0]
    return None


def _bare(kind: Any) -> Any:
    """X for Annotated[X, ...], NotRequired[X] and Optional[X]; of a union that may be a
    table, that table."""
    while True:
        origin = typing.get_origin(kind)
        if origin in (Annotated, NotRequired, Required):
            kind = typing.get_args(kind)[0]
        elif origin is Union:
            members = [_bare(a) for a in typing.get_args(kind) if a is not type(None)]
            return next((a for a in members if is_typeddict(a)), members[0])
        else:
            return kind
