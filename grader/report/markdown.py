"""Markdown: a short summary for a CI job page, such as GitHub's $GITHUB_STEP_SUMMARY: the
scorecard table and what failed; and a student's feedback file from `grade batch`: the same
table, every failure in full, and the hints."""

from __future__ import annotations

from pathlib import Path

from grader.results import Report, StageResult, Status, write_file
from grader.report.text import (case_text, clean, first_line, number, ran, speed_points, speed_text,
                                stage_name, versions)

SUMMARIES_SHOWN = 3  # failing items listed per stage in a CI summary


def write_markdown(report: Report, path: Path) -> None:
    """A scorecard for a CI job page: the table, what failed, and how it was graded."""
    write_file(path, summary_text(report))


def append_markdown(report: Report, path: Path) -> None:
    """The same scorecard added at the end of `path` (created where missing): a CI job's
    summary file, such as GitHub's $GITHUB_STEP_SUMMARY, collects what each command of a
    step appends, and replacing it would drop what an earlier one wrote."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    earlier = path.is_file() and path.stat().st_size > 0
    with open(path, "a", encoding="utf-8") as summary:
        summary.write(("\n" if earlier else "") + summary_text(report))


def summary_text(report: Report) -> str:
    """The scorecard as Markdown, ending in a newline."""
    verdict = "PASS" if report.passed else "FAIL"
    lines = [(f"## {_cell(report.course)}: {number(report.points)}/{number(report.max_points)} "
             f"points, {verdict}"), "", *_markdown_table(report)]
    for stage in report.stages:
        if _needs_explaining(stage):
            lines += ["", *_markdown_failures(stage)]
    lines += ["", (f"Graded {_cell(report.target)}/ with backend `{report.backend}` "
                  f"({_cell(report.backend_reason)}) and seed {report.seed} "
                  f"(`--seed {report.seed}` reproduces the inputs); "
                  f"{_cell(versions(report.machine))}.")]
    return clean("\n".join(lines)) + "\n"


def _markdown_table(report: Report) -> list[str]:
    rows = ["| # | Stage | Backend | Cases | Speed | Points | Status |",
            "|--:|---|---|--:|---|--:|---|"]
    for s in report.stages:
        cases = f"{s.cases_passed}/{len(s.cases)}" if ran(s) else "-"
        rows.append(f"| {s.number} | {_cell(s.id)} | {_cell(s.backend)} | {cases} | "
                    f"{_cell(_speed_cell(s))} | {number(s.total_points)}/{number(s.total_max_points)} "
                    f"| {s.status.value} |")
    verdict = "PASS" if report.passed else "FAIL"
    rows.append(f"| | **total** | | | | **{number(report.points)}/{number(report.max_points)}** "
                f"| **{verdict}** |")
    return rows


def _speed_cell(s: StageResult) -> str:
    return speed_points(s) if ran(s) else "-"  # "-": nothing was timed, nor could it be


def _needs_explaining(stage: StageResult) -> bool:
    return stage.status is not Status.PASS or any(not c.passed for c in stage.speed.cases)


def _markdown_failures(stage: StageResult) -> list[str]:
    lines = [f"**{stage_name(stage)}: {stage.status.value}** (`{_cell(stage.module)}`)", ""]
    if stage.message:  # an ERROR's message can be a whole traceback: its headline here
        lines.append(f"- {_said(first_line(clean(stage.message)))}")
    failing = [f"case `{c.id}`: {_said(first_line(case_text(c)))}" for c in stage.failures]
    failing += [f"{_cell(c.name)}: {_said(c.message)}" for c in stage.checks
                if c.graded and not c.passed]
    failing += [f"speed `{c.id}`: {_said(speed_text(c))}" for c in stage.speed.cases
                if not c.passed]
    lines += [f"- {item}" for item in failing[:SUMMARIES_SHOWN]]
    if len(failing) > SUMMARIES_SHOWN:
        lines.append(f"- ... and {len(failing) - SUMMARIES_SHOWN} more (`grade --verbose` "
                     "shows all)")
    return lines


def _cell(text: object) -> str:
    """One line of Markdown that cannot break a table row or open an HTML tag."""
    line = " ".join(clean(text).split())
    return line.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


# `_` too: `__text__` in a student's exception rendered bold in a CI job's summary.
_INLINE_MARKUP = str.maketrans({c: "\\" + c for c in "\\`*_[]~"})


def _said(text: object) -> str:
    """A message in one line of Markdown, the text it quotes from a submission included:
    besides `_cell`, nothing in it may start a code span, emphasis, a link or an image."""
    return _cell(clean(text).translate(_INLINE_MARKUP))


def write_feedback(path: Path, student: str, report: Report | None, problem: str = "",
                   note: str = "", ignored: list[str] = (), read_as: list[str] = ()) -> None:
    """A student's feedback: the scorecard, each failure's message in full, the hints; or,
    for a submission that could not be graded, why. `ignored` lists what of the submission
    was not taken (zip members), `read_as` the stage files taken from another place than
    their own and where they were graded, `note` how it was graded (its track)."""
    if report is None:
        lines = [f"## {_cell(student)}: not graded", "", _cell(problem or "not graded")]
    else:
        lines = [f"## {_cell(student)}: {number(report.points)}/{number(report.max_points)} "
                 f"points, {'PASS' if report.passed else 'FAIL'}", "", *_markdown_table(report)]
        for stage in report.stages:
            if _needs_explaining(stage):
                lines += ["", *_feedback_stage(stage)]
        lines += ["", f"Seed {report.seed}: `grade all --seed {report.seed}` draws the same "
                      "inputs (hidden cases excepted)."]
    if note:
        lines += ["", _cell(note)]
    if read_as:
        lines += ["", "**How the submission was read:**", "",
                  *(f"- `{_code(item)}`" for item in read_as)]
    if ignored:
        lines += ["", "**Not taken from the submission** (only the stage files are graded):", "",
                  *(f"- `{_code(item)}`" for item in ignored)]
    write_file(path, clean("\n".join(lines)) + "\n")


def _feedback_stage(stage: StageResult) -> list[str]:
    """Everything about a stage's failures, as a student can read it (hidden cases say only
    that they failed)."""
    lines = [f"### {stage_name(stage)}: {stage.status.value}", "", f"File: `{_code(stage.module)}`"]
    if stage.message:
        lines += ["", _block(stage.message)]
    for case in stage.cases:
        if not case.passed:
            lines += ["", f"Case `{_code(case.id)}`:", "", _block(case_text(case))]
    for check in stage.checks:  # each message in full, with what it quotes
        if check.graded and not check.passed:
            lines += ["", f"Check {_cell(check.name)}:", "", _block(check.message)]
    for case in stage.speed.cases:
        if not case.passed:
            lines += ["", f"Speed case `{_code(case.id)}`:", "", _block(speed_text(case))]
    lines += ["", *(f"Hint: {_cell(hint)}" for hint in stage.hints)] if stage.hints else []
    return lines


def _block(text: str) -> str:
    """`text` as a fenced block that nothing in it can close."""
    body = clean(text).rstrip()
    fence = "```"
    while fence in body:
        fence += "`"
    return f"{fence}text\n{body}\n{fence}"


def _code(text: object) -> str:
    return " ".join(clean(text).split()).replace("`", "'")
