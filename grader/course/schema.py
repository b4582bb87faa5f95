"""The shape of course.toml as pydantic models: which keys a table has, which are required,
and the type of each value. Strict on purpose: a typo in an instructor's course.toml must
not silently drop a case or a tolerance, and TOML's booleans are not numbers.

What the keys mean together (a stage id the grader knows, a baseline of that problem, a
dtype with a tolerance, the parameters of a case) is checked by grader.course.checker,
which also turns pydantic's errors into sentences that name the key path
(`stages[3].cases[1].N`) and what was expected (`describe`).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from datetime import datetime
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Discriminator, Field,
                      StringConstraints, Tag, create_model, model_validator)

from grader.course.model import SubmissionRules
from grader.course.policy import HIDDEN_DEFAULT, HIDDEN_VISIBILITY
from grader.problems import DTYPES, Problem
from grader.results import Failure
from grader.tracks import TRACKS

FAILURE_KINDS = [kind.value for kind in Failure]
STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)
Text = Annotated[str, StringConstraints(min_length=1)]
ARCH = re.compile(r"sm_[0-9]{2,3}")  # a GPU architecture as nvcc names it: sm_90, sm_120
ARCH_EXAMPLES = "sm_90: H100/H200, sm_80: A100, sm_86: A10/RTX 30xx, sm_89: L4, sm_75: T4"


class Table(BaseModel):
    model_config = STRICT


class Head(Table):
    title: str
    description: str = ""
    handout: str = ""  # where students get the handout (git URL): the notebook clones it


class Tolerance(Table):
    atol: float
    rtol: float


class TimeLimits(Table):
    cpu: Optional[Annotated[float, Field(gt=0)]] = None
    gpu: Optional[Annotated[float, Field(gt=0)]] = None


class Threshold(Table):
    min_speedup: Optional[Annotated[float, Field(gt=0)]] = None
    min_fraction: Optional[Annotated[float, Field(gt=0)]] = None
    copied_from: Optional[Text] = None  # the architecture these figures were measured on
    baseline: Optional[Text] = None  # this architecture's baseline, where the stage's cannot run

    @model_validator(mode="after")
    def _one_at_least(self):
        if self.min_speedup is None and self.min_fraction is None:
            raise ValueError("give min_speedup, min_fraction or both")
        return self


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


class Launch(Table):
    """A probe's value that the case's launches give (grader.course.FromLaunch)."""

    launch: Annotated[list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z_]\w*$")]],
                      Field(min_length=1)]
    minus: Annotated[int, Field(ge=0)] = 0


# The discriminator's tags: no key has a space, so `describe` leaves them out of a key path.
TAGS = ("a value", "from the launch")


def _probed(p) -> Any:
    """What a probe may give for the parameter `p`: a case's value, or for an int, a table
    that names the launch's constant (N = { launch = ["BLOCK_N", "TILE_N"], minus = 1 })."""
    if p.type is not int or p.choices:
        return _param_kind(p)
    return Annotated[Union[Annotated[_param_kind(p), Tag(TAGS[0])], Annotated[Launch, Tag(TAGS[1])]],
                     Discriminator(lambda v: TAGS[isinstance(v, (dict, Launch))])]


def _table(name: str, fields: dict[str, Any]) -> type[Table]:
    return create_model(name, __base__=Table, **fields)


Rules = _table("submissions", {f.name: (list[Text], ...) for f in dataclasses.fields(SubmissionRules)})
Modules = _table("modules", {track: (str, ...) for track in TRACKS})
# Each entry a constexpr name, "*" or a positive integer (grader.course.checker says which).
Tiles = _table("tiles", {track: (Optional[list[Any]], None) for track in TRACKS})
Tolerances = _table("tolerance", {dtype: (Optional[Tolerance], None) for dtype in DTYPES})


def stage_model(problem: Problem, gpu_backends: tuple[str, ...]) -> type[Table]:
    """A [[stages]] entry of `problem`: its cases carry the problem's parameters, its speed
    table names one of the problem's baselines and thresholds for the GPU backends."""
    return _cached(("stage", _problem_key(problem), gpu_backends),
                   lambda: _stage_model(problem, gpu_backends))


def _stage_model(problem: Problem, gpu_backends: tuple[str, ...]) -> type[Table]:
    case, sizes = _case_model(problem, with_dtypes=True), _case_model(problem, with_dtypes=False)
    graded = _case_model(problem, with_dtypes=True, with_claims=True)
    backends = _table("thresholds", {name: (Optional[Threshold], None) for name in gpu_backends})
    thresholds = Annotated[dict[str, backends], BeforeValidator(_per_arch)]
    baseline = Literal[tuple(problem.baselines)] if problem.baselines else str
    speed = _table("speed", {
        "points": (float, ...), "baseline": (baseline, ...), "cases": (list[case], ...),
        "thresholds": (thresholds, ...), "seconds": (float, 3.0),
        "plain_at_limit": (str, "")})
    params = {p.name: (Optional[float if p.type is float else p.type], None) for p in problem.params}
    when = _table("when", {
        # one failure kind, or a list of them: any one of them
        "failure": (Optional[Annotated[list[Literal[tuple(FAILURE_KINDS)]],
                                       BeforeValidator(_one_or_more)]], None),
        "never_written": (Optional[bool], None), "nan": (Optional[bool], None),
        "inf": (Optional[bool], None), "params": (Optional[_table("params", params)], None),
        "larger": (Optional[_table("larger", {p.name: (Optional[float], None)
                                              for p in problem.params
                                              if p.type in (int, float)})], None),
        "dtypes": (Optional[list[str]], None), "cause": (Optional[str], None)})
    hint = _table("hint", {"when": (when, ...), "hint": (Text, ...)})
    # A probe's values are a case's, each one held to what a case may give, or a launch's.
    probed = {p.name: (Optional[_probed(p)], None) for p in problem.params}
    hypothesis = _table("hypothesis", {
        "cause": (str, ...), "says": (Text, ...),
        "experiment": (Optional[str], None),
        "probe": (Optional[_table("probe", probed)], None)})
    growth = _table("memory_growth", {
        "small": (sizes, ...), "large": (sizes, ...), "dtype": (str, ...),
        "max_growth": (Annotated[float, Field(gt=1)], ...)})
    return _table("stage", {
        "id": (str, ...), "title": (str, ...), "points": (Annotated[float, Field(ge=0)], ...),
        "modules": (Modules, ...), "tolerance": (Tolerances, ...), "cases": (list[graded], ...),
        "claims": (dict[str, Text], {}),
        "tiles": (Optional[Tiles], None), "speed": (Optional[speed], None),
        "memory_growth": (Optional[growth], None), "hints": (list[hint], []),
        "hypotheses": (list[hypothesis], []),
        "time_limit": (Optional[TimeLimits], None)})


class Late(Table):
    percent_per_day: Annotated[float, Field(ge=0, le=100)] = 0.0
    max_percent: Annotated[float, Field(ge=0, le=100)] = 100.0
    grace_minutes: Annotated[float, Field(ge=0)] = 0.0


class Policy(Table):
    """[policy]: the class's due date, late penalty, resubmission limit and when students
    see the hidden cases (grader.course.policy)."""

    due: Optional[datetime] = None
    late: Optional[Late] = None
    max_submissions: Optional[Annotated[int, Field(ge=1)]] = None
    hidden_cases: Literal[HIDDEN_VISIBILITY] = HIDDEN_DEFAULT
    # a student's own due date (an extension), by their name in the gradebook
    extensions: dict[str, datetime] = {}
    # a stage's own due date, by its id
    stage_due: dict[str, datetime] = {}
    leaderboard: bool = False


class CourseFile(Table):
    course: Head
    stages: list[dict[str, Any]]  # each checked against its problem's stage_model
    submissions: Optional[Rules] = None
    policy: Optional[Policy] = None


class HiddenFile(Table):
    """course.hidden.toml: cases of the course's stages that students never see."""

    seed: int = 0  # secret: mixed into every hidden case's seed
    stages: list[dict[str, Any]]  # each checked against its problem's hidden_stage


def hidden_stage(problem: Problem) -> type[Table]:
    """A stage of course.hidden.toml: its cases name no claims, as a hidden case's report
    never says what it tests."""
    return _cached(("hidden", _problem_key(problem)), lambda: _table("hidden stage", {
        "id": (str, ...),
        "cases": (list[_case_model(problem, with_dtypes=True)], ...)}))


# Models are built once per problem (and list of GPU backends): pydantic compiles each.
_models: dict[tuple, type[Table]] = {}


def _cached(key: tuple, build) -> type[Table]:
    if key not in _models:
        _models[key] = build()
    return _models[key]


def _problem_key(problem: Problem) -> tuple:
    return problem.id, tuple((p.name, p.type, repr(p.default), p.doc) for p in problem.params)


def _case_model(problem: Problem, with_dtypes: bool, with_claims: bool = False) -> type[Table]:
    """One case of `problem`: its parameters (ints at least 1, one of a parameter's choices
    where it has them), and unless only the sizes are asked for, its dtypes and an optional
    seed; a graded case (not a timed one) also the lesson claims it tests."""
    return _cached(("case", _problem_key(problem), with_dtypes, with_claims),
                   lambda: _build_case_model(problem, with_dtypes, with_claims))


def _build_case_model(problem: Problem, with_dtypes: bool, with_claims: bool) -> type[Table]:
    fields: dict[str, Any] = {}
    if with_dtypes:
        fields = {"dtypes": (list[str], ...), "seed": (Optional[int], None)}
    if with_claims:  # the names of the stage's claims this case tests ([stages] claims)
        fields["claims"] = (Optional[list[Text]], None)
    for p in problem.params:
        default = ... if p.required else p.default
        fields[p.name] = (_param_kind(p), Field(default, description=p.doc or None))
    return _table(f"{problem.id} case" if with_dtypes else f"{problem.id} sizes", fields)


def _param_kind(p) -> Any:
    """What a case may give for the parameter `p`: an int at least 1, one of its choices
    where it has them (an unknown value gets pydantic's literal_error: `describe` lists
    them), else a value of its type."""
    if p.choices:
        return Literal[tuple(p.choices)]
    return Annotated[int, Field(ge=1)] if p.type is int else p.type


# --- pydantic's errors as sentences -----------------------------------------------------

_EXPECTED = {"float_type": "an integer or a number", "int_type": "an integer",
             "string_type": "a string", "bool_type": "true or false", "dict_type": "a table",
             "model_type": "a table", "list_type": "an array",
             "datetime_type": "a date and time with its offset, unquoted "
                              "(due = 2026-12-18T23:59:00-08:00)"}


def describe(error: dict, model: type[BaseModel], where: str = "") -> str:
    """One error of `model.model_validate` as `key.path: what is wrong`."""
    loc = tuple(part for part in error["loc"] if part not in TAGS)
    path = where
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    path = path or "(top level)"
    kind = error["type"]
    if kind == "missing":
        field = _field(model, loc)
        doc = field.description if field is not None else None
        return f"{path}: missing" + (f" ({doc})" if doc else "")
    if kind == "extra_forbidden":
        parent = _model_at(model, loc[:-1])
        known = ", ".join(parent.model_fields) if parent else ""
        return f"{path}: unknown key; expected one of: {known}"
    if kind in _EXPECTED:
        return f"{path}: expected {_EXPECTED[kind]}, found {kind_of(error['input'])}"
    if kind == "literal_error":
        name = next((part for part in reversed(loc) if isinstance(part, str)), "value")
        return f"{path}: unknown {name} {error['input']!r}; known: {bound_names(error)}"
    if kind == "string_too_short":
        return f"{path}: expected a non-empty string"
    if kind == "too_short":
        return f"{path}: expected at least one entry"
    if kind == "string_pattern_mismatch":
        return f"{path}: expected a name, as Python writes one, found {error['input']!r}"
    bound = error.get("ctx", {})
    if kind == "greater_than":
        return f"{path}: must be positive" if bound["gt"] == 0 else f"{path}: must be above {bound['gt']}"
    if kind == "greater_than_equal":
        return f"{path}: must not be negative" if bound["ge"] == 0 else f"{path}: must be at least {bound['ge']}"
    return f"{path}: {error['msg'].removeprefix('Value error, ')}"


def bound_names(error: dict) -> str:
    return error.get("ctx", {}).get("expected", "").replace(" or ", ", ")


def kind_of(value) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            dict: "a table", list: "an array", datetime: "a date and time"}.get(type(value), type(value).__name__)


def _model_at(model, loc) -> type[BaseModel] | None:
    """The model class that validates the value at `loc`, if one does."""
    current = model
    for part in loc:
        if isinstance(part, int) or not (isinstance(current, type) and issubclass(current, BaseModel)):
            current = _inner(current)  # a list's (or dict's) items
            if isinstance(part, int):
                continue
        field = current.model_fields.get(part) if _is_model(current) else None
        if field is None:
            return None
        current = _unwrap(field.annotation)
    return current if _is_model(current) else None


def _field(model, loc):
    parent = _model_at(model, loc[:-1])
    return parent.model_fields.get(loc[-1]) if parent and loc else None


def _is_model(kind) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


def _unwrap(annotation):
    """Optional[X] and Annotated[X, ...] as X (a union, as the table it may be)."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin is Union:  # Optional[X] as X; a union holding a table as that table
            args = [_unwrap(a) for a in typing.get_args(annotation) if a is not type(None)]
            return next((a for a in args if _is_model(a)), args[0])
        else:
            return annotation


def _inner(annotation):
    args = typing.get_args(_unwrap(annotation))
    return _unwrap(args[-1]) if args else annotation
