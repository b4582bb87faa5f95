"""The shape of course.toml, made from the records of grader.course.model: a record's table
has a key per field, of the field's type and bounds, and validates straight into the record.
Strict on purpose: a typo in an instructor's course.toml must not silently drop a case or a
tolerance, and TOML's booleans are not numbers.

What a record cannot say is said here, per problem: the parameters a case gives (its keys
are the problem's), a case entry's dtypes (one case per dtype), a speed table's baselines,
thresholds per architecture and backend. What the keys mean together (a dtype with a
tolerance, a claim with a case) is checked by grader.course.checker, and pydantic's errors
become sentences that name the key path (`stages[3].cases[1].N`) and what was expected
(grader.course.wording).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import types
import typing
from functools import cache
from typing import Annotated, Any, Literal, Union

from pydantic import (AfterValidator, BeforeValidator, ConfigDict, Discriminator, Field, Tag,
                      TypeAdapter)
from typing_extensions import NotRequired, TypedDict

from grader.course.bounds import Bound
from grader.course.model import (FailureKind, FromLaunch, Hint, Hypothesis, MemoryGrowth,
                                 Signature, Speed, Stage, SubmissionRules, Text, Threshold,
                                 Tolerance)
from grader.course.policy import Policy
from grader.problems import DTYPES, Problem
from grader.tracks import TRACKS

FAILURE_KINDS = typing.get_args(FailureKind)
FILE = ConfigDict(extra="forbid", strict=True)
ARCH = re.compile(r"sm_[0-9]{2,3}")  # a GPU architecture as nvcc names it: sm_90, sm_120
ARCH_EXAMPLES = "sm_90: H100/H200, sm_80: A100, sm_86: A10/RTX 30xx, sm_89: L4, sm_75: T4"
# The discriminator's tags: no key has a space, so a key path leaves them out.
TAGS = ("a value", "from the launch")


def keyed(name: str, keys: dict[str, Any]) -> type:
    """A table of course.toml with these keys (NotRequired[...]: one it may leave out)."""
    found = TypedDict(name, keys)
    found.__pydantic_config__ = FILE
    return found


def table(record: type, keys: dict[str, Any] | None = None, tables: dict[type, Any] | None = None,
          into: bool = True) -> Any:
    """The table `record` is read from: a key per field, optional where the field has a
    default; validated into the record (`into`), else into a dict of its keys. `keys` gives
    a key's type in the file where it is not the field's (None: the file has no such key; a
    key the record lacks is added), `tables` the table of a record a field holds."""
    keys, tables = keys or {}, tables or {}
    found = {}
    for f in dataclasses.fields(record):
        if f.name in keys and keys[f.name] is None:
            continue
        kind = keys.get(f.name) or file_type(_annotation(record, f), tables)
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        found[f.name] = kind if required else NotRequired[kind]
    found |= {k: v for k, v in keys.items() if v is not None and k not in found}
    shape = keyed(record.__name__.lower(), found)
    return Annotated[shape, AfterValidator(lambda given: record(**given))] if into else shape


@cache
def plain_table(record: type) -> Any:
    """The table of a record none of whose keys depends on the problem."""
    return table(record)


def file_type(kind: Any, tables: dict[type, Any]) -> Any:
    """What the file gives for a field of type `kind`: a record's table for a record, an
    array (read as a tuple) for a tuple, the bounds of grader.course.bounds as pydantic's."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Annotated:
        inner, *marks = args
        marks = [Field(**{k: v for k, v in vars(m).items() if v is not None})
                 if isinstance(m, Bound) else m for m in marks]
        if typing.get_origin(inner) is tuple:  # the bounds are the array's
            return Annotated[(list[file_type(typing.get_args(inner)[0], tables)], *marks,
                              AfterValidator(tuple))]
        return Annotated[(file_type(inner, tables), *marks)]
    if origin is tuple and args[1:] == (...,):
        return Annotated[list[file_type(args[0], tables)], AfterValidator(tuple)]
    if origin in (Union, types.UnionType):
        return Union[tuple(file_type(a, tables) for a in args)]
    if origin is dict:
        return dict[args[0], file_type(args[1], tables)]
    if dataclasses.is_dataclass(kind):
        return tables.get(kind) or plain_table(kind)
    return kind


def _annotation(record: type, f: dataclasses.Field) -> Any:
    """A field's type. The records' modules keep their annotations as text: each is read in
    the record's module, one field at a time, since a field the file does not give may name
    a type imported for type checkers only (Stage.problem: the problems import PyTorch)."""
    if not isinstance(f.type, str):
        return f.type
    return eval(f.type, vars(sys.modules[record.__module__]))  # noqa: S307 - the grader's own


# --- the keys that depend on the problem ------------------------------------------------


def _one_or_more(value: Any) -> Any:
    """A hint's `failure`: one kind, or a list of kinds, read as a list. One unknown kind is
    named at the field itself (in a list, at its place)."""
    if not isinstance(value, str):
        return value
    if value not in FAILURE_KINDS:
        raise ValueError(f"unknown failure {value!r}; known: "
                         + ", ".join(repr(kind) for kind in FAILURE_KINDS))
    return [value]


def _per_arch(value: Any) -> Any:
    """The keys of `thresholds` are GPU architectures; an older course's backend keys
    (`thresholds.triton`) get a sentence that shows the new layout."""
    if isinstance(value, dict):
        for key in value:
            if not (isinstance(key, str) and ARCH.fullmatch(key)):
                raise ValueError(
                    f"'{key}' is not a GPU architecture. Thresholds are set per architecture, "
                    f"then backend: thresholds.sm_90.triton = {{ min_speedup = 1.2 }} "
                    f"({ARCH_EXAMPLES}; `grade doctor` shows a GPU's)")
    return value


def _param_kind(p) -> Any:
    """What a case may give for the parameter `p`: an int at least 1, one of its choices
    where it has them (an unknown value gets pydantic's literal_error, which lists them),
    else a value of its type."""
    if p.choices:
        return Literal[tuple(p.choices)]
    return Annotated[int, Field(ge=1)] if p.type is int else p.type


def _probed(p) -> Any:
    """What a probe may give for the parameter `p`: a case's value, or for an int, a table
    that names the launch's constant (N = { launch = ["BLOCK_N", "TILE_N"], minus = 1 })."""
    if p.type is not int or p.choices:
        return _param_kind(p)
    return Annotated[Union[Annotated[_param_kind(p), Tag(TAGS[0])],
                           Annotated[plain_table(FromLaunch), Tag(TAGS[1])]],
                     Discriminator(lambda v: TAGS[isinstance(v, dict)])]


def _optional(name: str, kinds: dict[str, Any]) -> type:
    """A table that may give any of these keys."""
    return keyed(name, {key: NotRequired[kind] for key, kind in kinds.items()})


Modules = keyed("modules", {track: str for track in TRACKS})
# Each entry a constexpr name, "*" or a positive integer (grader.course.checker says which).
Tiles = _optional("tiles", {track: Annotated[list[Any], AfterValidator(tuple)] for track in TRACKS})
Tolerances = _optional("tolerance", {dtype: plain_table(Tolerance) for dtype in DTYPES})
Head = keyed("course", {"title": str, "description": NotRequired[str],
                        # where students get the handout (git URL): the notebook clones it
                        "handout": NotRequired[str]})
CourseFile = keyed("course file", {
    "course": Head,
    "stages": list[dict[str, Any]],  # each checked against its problem's stage_table
    "submissions": NotRequired[plain_table(SubmissionRules)],
    "policy": NotRequired[plain_table(Policy)]})
# course.hidden.toml: cases of the course's stages that students never see
HiddenFile = keyed("hidden file", {
    "seed": NotRequired[int],  # secret: mixed into every hidden case's seed
    "stages": list[dict[str, Any]]})  # each checked against its problem's hidden_stage


def stage_table(problem: Problem, gpu_backends: tuple[str, ...]) -> type:
    """A [[stages]] entry of `problem`, read into a dict of the Stage's keys: its cases carry
    the problem's parameters, its speed table names one of the problem's baselines and
    thresholds for the GPU backends (the checker makes the Stage, a case per dtype)."""
    return _cached(("stage", _problem_key(problem), gpu_backends),
                   lambda: _stage_table(problem, gpu_backends))


def _stage_table(problem: Problem, gpu_backends: tuple[str, ...]) -> type:
    timed = list[_entry(problem, with_dtypes=True)]
    backends = _optional("thresholds", {name: plain_table(Threshold) for name in gpu_backends})
    speed = table(Speed, into=False, keys={
        "baseline": Literal[tuple(problem.baselines)] if problem.baselines else str,
        "cases": timed, "thresholds": Annotated[dict[str, backends], BeforeValidator(_per_arch)]})
    one = _entry(problem, with_dtypes=False)
    growth = table(MemoryGrowth, into=False, keys={"small": one, "large": one, "dtype": str})
    given = {p.name: float if p.type is float else p.type for p in problem.params}
    when = table(Signature, keys={
        # one failure kind, or a list of them: any one of them
        "failure": Annotated[list[FailureKind], BeforeValidator(_one_or_more),
                             AfterValidator(tuple)],
        "params": _optional("params", given),
        "larger": _optional("larger", {p.name: float for p in problem.params
                                   if p.type in (int, float)})})
    # A probe's values are a case's, each one held to what a case may give, or a launch's.
    probe = _optional("probe", {p.name: _probed(p) for p in problem.params})
    records = {Hint: table(Hint, tables={Signature: when}), Speed: speed, MemoryGrowth: growth,
               Hypothesis: table(Hypothesis, keys={"probe": probe})}
    return table(Stage, into=False, tables=records, keys={
        "number": None, "problem": None, "modules": Modules, "tolerance": Tolerances,
        "cases": list[_entry(problem, with_dtypes=True, with_claims=True)], "tiles": Tiles})


def hidden_stage(problem: Problem) -> type:
    """A stage of course.hidden.toml: its cases name no claims, as a hidden case's report
    never says what it tests."""
    return _cached(("hidden", _problem_key(problem)), lambda: keyed("hidden stage", {
        "id": str, "cases": list[_entry(problem, with_dtypes=True)]}))


def _entry(problem: Problem, with_dtypes: bool, with_claims: bool = False) -> type:
    """One case entry of `problem`: its parameters (ints at least 1, one of a parameter's
    choices where it has them; one with a default may be left out), and unless only the
    sizes are asked for, its dtypes (a case each) and an optional seed; a graded case (not a
    timed one) also the lesson claims it tests."""
    return _cached(("case", _problem_key(problem), with_dtypes, with_claims),
                   lambda: _build_entry(problem, with_dtypes, with_claims))


def _build_entry(problem: Problem, with_dtypes: bool, with_claims: bool) -> type:
    keys: dict[str, Any] = {}
    if with_dtypes:
        keys = {"dtypes": list[str], "seed": NotRequired[int]}
    if with_claims:  # the names of the stage's claims this case tests ([stages] claims)
        keys["claims"] = NotRequired[file_type(tuple[Text, ...], {})]
    for p in problem.params:
        kind = Annotated[_param_kind(p), Field(description=p.doc or None)]
        keys[p.name] = kind if p.required else NotRequired[kind]
    return keyed(f"{problem.id} case" if with_dtypes else f"{problem.id} sizes", keys)


# Tables are built once per problem (and list of GPU backends), validators once per table:
# pydantic compiles each.
_tables: dict[tuple, type] = {}
_validators: dict[int, tuple[Any, TypeAdapter]] = {}


def _cached(key: tuple, build) -> type:
    if key not in _tables:
        _tables[key] = build()
    return _tables[key]


def _problem_key(problem: Problem) -> tuple:
    return problem.id, tuple((p.name, p.type, repr(p.default), p.doc) for p in problem.params)


def validator(kind: Any) -> TypeAdapter:
    """The validator of a table made here."""
    if id(kind) not in _validators:
        _validators[id(kind)] = (kind, TypeAdapter(kind))
    return _validators[id(kind)][1]
