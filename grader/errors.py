"""Exceptions whose messages are written for the person running `grade`.

Anything derived from GradeError is a user-facing problem (a bad course.toml, an unknown
stage, a backend that cannot run here): the CLI prints its message and exits with code 2,
without a traceback.
"""

from __future__ import annotations

import traceback
from pathlib import Path

LINE_CHARS = 300  # of an exception's text, in a one-line account of it


class GradeError(Exception):
    """A problem the user can fix; the message says what is wrong and how to fix it."""

    exit_code = 2


class CourseError(GradeError):
    """course.toml is missing or invalid."""


class StageSelectionError(GradeError):
    """The command line named a stage that does not exist."""


class BackendUnavailable(GradeError):
    """The requested backend cannot run on this machine."""


def one_line(exc: BaseException) -> str:
    """An unexpected exception in a line, for a message rather than a traceback: its type,
    the first line of its text, and the file and line that raised it."""
    text = next((line for line in str(exc).splitlines() if line.strip()), "")[:LINE_CHARS]
    frames = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = "".join(f" ({Path(f.filename).name}, line {f.lineno})" for f in frames)
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__) + where
