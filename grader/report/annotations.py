"""GitHub Actions annotations: one `::error file=...,line=...::message` line per failing
stage, which GitHub shows on the student's file (at the line, when the message names one) in
the workflow run and the pull request. `grade` prints them by itself where GitHub Actions
runs it (GITHUB_ACTIONS=true), so templates/github/grade.yml needs no option for them."""

from __future__ import annotations

import os
import re
from pathlib import PurePath

from grader.results import Report, StageResult, Status
from grader.report.text import case_text, clean, first_line, stage_name

ANNOTATED = (Status.FAIL, Status.ERROR)  # NOT STARTED is where every student begins


def enabled(environ: dict | None = None) -> bool:
    return (os.environ if environ is None else environ).get("GITHUB_ACTIONS") == "true"


def annotations(report: Report) -> list[str]:
    """The workflow commands for `report`'s failing stages, one per stage."""
    return [_annotation(stage) for stage in report.stages if stage.status in ANNOTATED]


def _annotation(stage: StageResult) -> str:
    failing = [case_text(c) for c in stage.failures]
    message = clean(stage.message) if stage.message else (failing[0] if failing else "")
    texts = [stage.message, *failing]
    line = next((n for n in (_line(t, PurePath(stage.module).name) for t in texts) if n), None)
    properties = {"file": _repository_path(stage.module), **({"line": str(line)} if line else {}),
                  "title": f"{stage_name(stage)}: {stage.status.value}"}
    fields = ",".join(f"{key}={_property(value)}" for key, value in properties.items())
    return f"::error {fields}::{_data(first_line(message) or stage.status.value)}"


def _repository_path(module: str) -> str:
    """GitHub places an annotation by its path in the repository, where the job runs."""
    if os.path.isabs(module) and not os.path.relpath(module).startswith(".."):
        return os.path.relpath(module)
    return module


def _line(text: str, filename: str) -> int | None:
    """The line of the student's file that a message names: the grader writes it as
    "stage3_softmax.py, line 42", "stage3_softmax.py has a syntax error at line 7" or "line
    42 of stage3_softmax.py", and a finding of the watch as "line 28 (`x = tl.load(...)`)",
    the file being the stage's own."""
    name = re.escape(filename)
    for pattern in (rf"{name}\b.*?\bline (\d+)", rf"\bline (\d+) of {name}\b",
                    r"\bline (\d+) \(`"):
        for part in text.splitlines():
            found = re.search(pattern, part)
            if found:
                return int(found.group(1))
    return None


def _data(text: str) -> str:
    """A workflow command's message: GitHub reads %, CR and LF as escapes."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
