"""Exceptions whose messages are written for the person running `grade`.

Anything derived from GradeError is a user-facing problem (a bad course.toml, an unknown
stage, a backend that cannot run here): the CLI prints its message and exits with code 2,
without a traceback.
"""


class GradeError(Exception):
    """A problem the user can fix; the message says what is wrong and how to fix it."""

    exit_code = 2


class CourseError(GradeError):
    """course.toml is missing or invalid."""


class StageSelectionError(GradeError):
    """The command line named a stage that does not exist."""


class BackendUnavailable(GradeError):
    """The requested backend cannot run on this machine."""
