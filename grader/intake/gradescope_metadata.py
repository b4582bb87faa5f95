"""What Gradescope says of the submission it hands its autograder: when it was made, the
student's own due date, and their earlier submissions with their results
(/autograder/submission_metadata.json,
https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/).

The file is the platform's, beside the upload (the student's files are in submission/, apart
from it), so its time is one the student did not set, as a bulk export's is in `grade batch`
(grader.instructor.export). With the class's policy ([policy] in course.toml) it gives the
submission's Standing: how late it came, against the policy's due date moved by any
extension Gradescope granted the student (their own due date later than the assignment's),
and which of the student's submissions it is; past the resubmission limit, the result of the
last one counted stands, as in `grade batch`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from grader.course.policy import Policy, parse_time
from grader.errors import GradeError
from grader.results import Standing


_LONG_AGO = datetime.min.replace(tzinfo=timezone.utc)  # where an earlier one has no time


@dataclass(frozen=True)
class Earlier:
    """One of the student's earlier submissions, as Gradescope kept it."""

    score: float | None
    results: dict[str, Any] | None  # its results.json


@dataclass(frozen=True)
class SubmissionMetadata:
    created_at: datetime | None
    extension: timedelta  # how much later the student's own due date is than the assignment's
    earlier: tuple[Earlier, ...]  # oldest first


def read(path: Path) -> SubmissionMetadata:
    """The metadata in `path`; raises GradeError, saying what is wrong, where it is no such
    file."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise GradeError(f"{path} cannot be read as Gradescope's submission metadata: "
                         f"{getattr(exc, 'strerror', None) or exc}.") from None
    if not isinstance(raw, dict):
        raise GradeError(f"{path} is not Gradescope's submission metadata (expected a JSON "
                         "object with created_at and previous_submissions).")
    earlier = [e for e in raw.get("previous_submissions") or [] if isinstance(e, dict)]
    earlier.sort(key=lambda e: parse_time(e.get("submission_time")) or _LONG_AGO)
    return SubmissionMetadata(parse_time(raw.get("created_at")), _extension(raw),
                              tuple(Earlier(_number(e.get("score")), _dict(e.get("results")))
                                    for e in earlier))


def standing(policy: Policy, metadata: SubmissionMetadata, stages: list[str]) -> Standing:
    """Where the submission stands in `policy`, for the course's `stages` (ids)."""
    number = len(metadata.earlier) + 1
    allowed = policy.max_submissions
    if allowed is not None and number > allowed:
        counted = metadata.earlier[allowed - 1] if allowed else Earlier(0.0, None)
        held = counted.results or {"score": counted.score or 0.0, "tests": []}
        return Standing(number, allowed, held=held)
    late = policy.shifted(metadata.extension).stage_lateness(metadata.created_at, None, stages)
    days = max((x.days for x in late.values()), default=0)
    return Standing(number, allowed, days, tuple((s, x.percent) for s, x in late.items()))


def _extension(raw: dict) -> timedelta:
    """The latest due date among the submitters' own (Gradescope lists a user's extension
    under users[].assignment), past the assignment's; none where either is not said."""
    assignment = _dict(raw.get("assignment")) or {}
    due = parse_time(assignment.get("due_date"))
    own = [parse_time((_dict(u.get("assignment")) or {}).get("due_date"))
           for u in raw.get("users") or [] if isinstance(u, dict)]
    own = [d for d in own if d is not None]
    if due is None or not own:
        return timedelta(0)
    return max(timedelta(0), max(own) - due)


def _number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _dict(value) -> dict | None:
    return value if isinstance(value, dict) else None
