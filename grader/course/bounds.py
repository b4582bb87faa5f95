"""The bounds course.toml holds a value to beyond its type: a number above 0, a percent, a
non-empty string, a name as Python writes one.

A record of grader.course.model says them in its annotations (`Annotated[float, POSITIVE]`),
where the field is defined; grader.course.schema reads them when it checks a course. They are
plain values, not pydantic's or annotated_types' own: the records are imported where no
course is checked (a stage NOT STARTED is answered without pydantic).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    """A value's bound, by the names pydantic's Field takes them: above `gt`, at least `ge`,
    at most `le`; a string or an array of at least `min_length`; a string matching `pattern`."""

    gt: float | None = None
    ge: float | None = None
    le: float | None = None
    min_length: int | None = None
    pattern: str | None = None


POSITIVE = Bound(gt=0)
NOT_NEGATIVE = Bound(ge=0)
AT_LEAST_ONE = Bound(ge=1)
PERCENT = Bound(ge=0, le=100)
TEXT = Bound(min_length=1)  # a string with something in it
ONE_OR_MORE = Bound(min_length=1)  # an array with an entry
NAME = Bound(pattern=r"^[A-Za-z_]\w*$")  # a Python name: a launch's constant
