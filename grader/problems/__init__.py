"""What each stage computes: its parameters, how inputs are drawn, and the PyTorch reference.

A problem is the contract between the course and a submission: the function name a module
must export, the arguments it is called with, and the float32 result it must match. Which
shapes, dtypes and tolerances are graded is course content and lives in course.toml; a
problem only knows how to turn one case of course.toml into tensors and a reference.

    base.py        Param, Call, Work, Problem, and the helpers the problem files share
    evidence.py    what `explain` is given, and the checks a named cause must pass
    <problem>.py   one file per problem, defining PROBLEM; every file here but base.py is one

A new stage's problem is a new file in this folder: nothing else in grader/ lists them.
"""

import importlib
import pkgutil

from grader.problems.base import DTYPES, REQUIRED, Call, Param, Problem, Work

__all__ = ["DTYPES", "PROBLEMS", "REQUIRED", "Call", "Param", "Problem", "Work"]


def _discover() -> dict[str, Problem]:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name in ("base", "evidence"):
            continue
        problem = importlib.import_module(f"{__name__}.{info.name}").PROBLEM
        found[problem.id] = problem
    return found


PROBLEMS: dict[str, Problem] = _discover()
