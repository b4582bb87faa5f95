"""A class's policy ([policy] in course.toml): when work is due, what lateness costs, how
many times a student may submit, and when students see the hidden cases' results.

The course's own content (stages, cases) is the same for every class; the policy is the one
part an instructor sets per term, so it is a table of its own, read by `grade batch` (late
penalties, the resubmission limit) and the Gradescope results writer (hidden cases)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Annotated, Literal

from grader.course.bounds import AT_LEAST_ONE, NOT_NEGATIVE, PERCENT

# When a student sees the result of a hidden case, as Gradescope names it.
HIDDEN_VISIBILITY = ("after_due_date", "after_published", "hidden")
HIDDEN_DEFAULT = "after_published"  # where course.toml's [policy] does not say
DAY = timedelta(days=1)


@dataclass(frozen=True)
class LatePenalty:
    """What lateness costs: `percent_per_day` of the total for each day (or part of one)
    past the due date, at most `max_percent`; nothing within `grace_minutes` of it."""

    percent_per_day: Annotated[float, PERCENT] = 0.0
    max_percent: Annotated[float, PERCENT] = 100.0
    grace_minutes: Annotated[float, NOT_NEGATIVE] = 0.0


@dataclass(frozen=True)
class Lateness:
    """How late one submission was, and what it costs."""

    days: int  # started days past the due date (0: on time, or within the grace period)
    percent: float  # of the total taken off


ON_TIME = Lateness(0, 0.0)


@dataclass(frozen=True)
class Penalty:
    """What lateness cost a whole submission (Policy.penalised)."""

    days: int  # the most days late of any stage
    percent: float  # of the whole taken off
    after: float  # the points left


NO_PENALTY = LatePenalty()


@dataclass(frozen=True)
class Policy:
    """[policy]: the class's due date, late penalty, resubmission limit and when students
    see the hidden cases."""

    due: datetime | None = None  # with its time zone; None: no due date, nothing is late
    late: LatePenalty | None = None  # None: lateness costs nothing
    max_submissions: Annotated[int, AT_LEAST_ONE] | None = None  # None: any number
    hidden_cases: Literal[HIDDEN_VISIBILITY] = HIDDEN_DEFAULT
    # a student's own due date (an extension), by their name in the gradebook
    extensions: dict[str, datetime] = field(default_factory=dict)
    # a stage's own due date (before or after the class's), by the stage's id
    stage_due: dict[str, datetime] = field(default_factory=dict)
    leaderboard: bool = False  # Gradescope's leaderboard of speed-ups, where speed is timed

    def due_for(self, student: str | None = None, stage: str | None = None) -> datetime | None:
        """The due date that counts for `student`'s `stage`: the stage's own, else the
        class's; a student's extension where it is later."""
        due = self.stage_due.get(stage, self.due) if stage else self.due
        extended = self.extensions.get(student) if student else None
        if extended is None or due is None:
            return due
        return max(due, extended)

    def shifted(self, by: timedelta) -> "Policy":
        """The policy with every due date later by `by` (an extension a platform granted)."""
        return replace(self, due=self.due and self.due + by,
                       stage_due={s: d + by for s, d in self.stage_due.items()})

    def stage_lateness(self, submitted: datetime | None, student: str | None,
                       stages: list[str]) -> dict[str, Lateness]:
        """How late the submission is for each stage (each may have its own due date)."""
        return {stage: self.lateness(submitted, student, stage) for stage in stages}

    def penalised(self, points: dict[str, float], submitted: datetime | None,
                  student: str | None = None) -> "Penalty":
        """What lateness costs a submission whose stages earned `points` (by stage id): each
        stage's points lose the penalty of its own lateness; said as the most days late and
        the share of the whole taken off."""
        late = self.stage_lateness(submitted, student, list(points))
        total = sum(points.values())
        after = sum(p * (1 - late[s].percent / 100) for s, p in points.items())
        worst = max(late.values(), key=lambda x: (x.days, x.percent), default=ON_TIME)
        percent = round(100 * (1 - after / total), 2) if total else worst.percent
        return Penalty(worst.days, percent, round(after, 2))

    def lateness(self, submitted: datetime | None, student: str | None = None,
                 stage: str | None = None) -> Lateness:
        """How late a submission made at `submitted` (by `student`, for `stage`) is
        (unknown time: on time)."""
        due = self.due_for(student, stage)
        if due is None or submitted is None:
            return ON_TIME
        past, late = submitted - due, self.late or NO_PENALTY
        if past <= timedelta(minutes=late.grace_minutes):
            return ON_TIME
        # A day begun is a day late: one minute past the grace period costs a whole day.
        days = math.ceil(past / DAY)
        return Lateness(days, min(days * late.percent_per_day, late.max_percent))


def parse_time(value) -> datetime | None:
    """When a submission was made, as its platform writes it: a datetime (a bulk export's
    :created_at:, as YAML read it) or text (Gradescope's `2026-12-18 23:41:07.123456789
    -08:00` there, ISO 8601 in its submission_metadata.json); naive times are taken as UTC;
    None where it is no time."""
    if isinstance(value, str):
        text = re.sub(r"(\.\d{6})\d+", r"\1", value.strip())  # nanoseconds: Python has micro
        text = re.sub(r"\s+([+-]\d\d:?\d\d|Z)$", r"\1", text)
        try:
            value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
