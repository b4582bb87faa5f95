"""The course: course.toml loaded into typed dataclasses, checked, with the hidden cases.

    model.py     the dataclasses: Course, Stage, Case, Speed, tolerances, submission rules,
                 hints (the common mistakes, matched against a stage's failures)
    schema.py    the file's shape as pydantic models, per problem
    checker.py   validation: every error names the file, the key path and what to fix
    loading.py   finding course.toml, reading it and course.hidden.toml
    policy.py    the class's policy: due date, late penalty, resubmission limit, hidden cases
    todos.py     which TODO blocks of a stage file still hold their placeholder

course.toml, exercises/ and solutions/ are the course; this package only reads them.
"""

from grader.course.loading import find_course_file, load_course
from grader.course.model import (COURSE_FILE, HIDDEN_FILE, WHOLE_DIM, Case, Course, FromLaunch,
                                 Hint, Hypothesis, MemoryGrowth, Speed, Stage, SubmissionRules,
                                 Threshold, TimeLimit, Tolerance, matching_hints)
from grader.course.policy import (HIDDEN_DEFAULT, HIDDEN_VISIBILITY, LatePenalty, Lateness,
                                  Policy)

__all__ = ["COURSE_FILE", "HIDDEN_DEFAULT", "HIDDEN_FILE", "HIDDEN_VISIBILITY", "WHOLE_DIM",
           "Case", "Course", "FromLaunch", "Hint", "Hypothesis", "LatePenalty", "Lateness", "Policy",
           "MemoryGrowth", "Speed", "Stage", "SubmissionRules", "Threshold", "TimeLimit", "Tolerance",
           "find_course_file", "load_course", "matching_hints"]
