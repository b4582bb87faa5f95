"""The course: course.toml read into typed records, checked, with the hidden cases.

    model.py     the records, each defined once: Course, Stage, Case, Speed, tolerances,
                 thresholds, submission rules, hints (the common mistakes, matched against
                 a stage's failures), hypotheses; a record's fields are its table's keys
    bounds.py    the bounds a record's field holds a value to (above 0, a non-empty string)
    policy.py    the class's policy: due date, late penalty, resubmission limit, hidden cases
    naming.py    the course's file names (and finding course.toml); a stage's name, and
                 the stages a command names
    outline.py   what `grade list` shows, kept from the course's last check
    schema.py    the file's tables, made from the records (and per problem, what a record
                 cannot say: a case's parameters), validated straight into the records
    wording.py   pydantic's errors as sentences: the key path and what was expected
    checker.py   what the values mean together, and a stage made of its records; every
                 error names the file, the key path and what to fix
    loading.py   reading course.toml and course.hidden.toml
    todos.py     which TODO blocks of a stage file still hold their placeholder

course.toml, exercises/ and solutions/ are the course; this package only reads them.

Its names are loaded when first asked for: checking course.toml needs pydantic and every
problem (PyTorch), which a module that only reads a stage file's TODOs (todos.py) or uses
the records has no use for. The records themselves import neither.
"""

_LOADING = ("load_course",)
_NAMING = ("COURSE_FILE", "HIDDEN_FILE", "find_course_file")
_POLICY = ("HIDDEN_DEFAULT", "HIDDEN_VISIBILITY", "LatePenalty", "Lateness", "Policy")

__all__ = ["COURSE_FILE", "HIDDEN_DEFAULT", "HIDDEN_FILE", "HIDDEN_VISIBILITY", "WHOLE_DIM",
           "Case", "Course", "FromLaunch", "Hint", "Hypothesis", "LatePenalty", "Lateness", "Policy",
           "MemoryGrowth", "Signature", "Speed", "Stage", "SubmissionRules", "Threshold",
           "TimeLimit", "Tolerance", "find_course_file", "load_course", "matching_hints"]


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _LOADING:
        from grader.course import loading as holder
    elif name in _NAMING:
        from grader.course import naming as holder
    elif name in _POLICY:
        from grader.course import policy as holder
    else:
        from grader.course import model as holder
    return getattr(holder, name)
