"""Reading course.toml, and the instructor's hidden cases next to it.

The checker (pydantic, and every problem: PyTorch) is imported when a course is loaded, not
with this module.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from grader.course.model import Case, Course
from grader.course.naming import COURSE_FILE, HIDDEN_FILE
from grader.errors import CourseError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def load_course(path: Path) -> Course:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CourseError(f"Cannot read {path}: {exc.strerror}.") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CourseError(f"{path} is not valid TOML: {exc}.") from None
    from grader.course.checker import Checker

    checker = Checker(path)
    course = checker.course(raw)
    checker.raise_if_errors()
    hidden = path.with_name(HIDDEN_FILE)
    if hidden.is_file():
        course = with_hidden_cases(course, hidden)
    return course


def with_hidden_cases(course: Course, path: Path) -> Course:
    """Append the instructor's hidden cases (course.hidden.toml) to their stages.

        seed = 8412                      # secret: mixed into every hidden case's seed
        [[stages]]
        id = "softmax"
        cases = [ { M = 4099, N = 3001, dtypes = ["float32"] } ]
    """
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CourseError(f"{path} cannot be read as TOML: {exc}.") from None
    from grader.course import schema
    from grader.course.checker import Checker

    checker = Checker(path)
    top = checker.validate(raw, schema.HiddenFile)
    extra: dict[str, list[Case]] = {}
    by_id = {s.id: s for s in course.stages}
    problems = {s.id: s.problem for s in course.stages}
    for i, entry in enumerate(top["stages"] if top else []):
        where = f"stages[{i}]"
        problem = checker.problem(entry, where, problems, COURSE_FILE)
        hidden = problem and checker.validate(entry, schema.hidden_stage(problem), where)
        if hidden:
            stage = by_id[hidden["id"]]
            extra.setdefault(stage.id, []).extend(checker.cases(
                hidden["cases"], f"{where}.cases", problem, stage.tolerance, f"hidden/{stage.id}"))
    checker.raise_if_errors()
    secret = top.get("seed", 0)
    stages = []
    for stage in course.stages:
        hidden = [Case(c.params, c.dtype, c.seed_in_run(secret), hidden=n)
                  for n, c in enumerate(extra.get(stage.id, []), 1)]
        stages.append(dataclasses.replace(stage, cases=stage.cases + tuple(hidden)))
    return dataclasses.replace(course, stages=tuple(stages), hidden_file=path)
