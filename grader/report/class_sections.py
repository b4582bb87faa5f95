"""The class report's sections below the gradebook: points per stage, speed-ups per speed
case, the confirmed causes the class hit most, who has not started which stage, and what
could not be graded.

A confirmed cause is what the judge names when a wrong output itself confirms a mistake
(grader.problems.evidence): its key in the case's `stats["causes"]`, and its sentence in
`stats["cause_texts"]` by key (a result written before those were kept has the sentences only
in its details, as lines beginning "cause: ", in the keys' order). The details' other lines
say what was observed, and are not counted here: an observation names no mistake.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from grader.quoting import single_line
from grader.report import quoted_html
from grader.report.charts import Mark, points_chart, speedup_chart
from grader.report.class_view import ClassView, Student
from grader.results import CaseResult, SpeedCase, Status

CAUSE_PREFIX = "cause: "  # a confirmed cause in a case's details (read only from older results)
EXAMPLE_CHARS = 500  # of a cause's quoted example
CAUSES_SHOWN = 20


def student_name(name: str) -> str:
    """A student's name (a submission's file name) as the page shows it: one line, every
    control character and bidi override spelled out (grader.quoting.single_line), escaped."""
    return html.escape(single_line(name))


def points_section(view: ClassView) -> str:
    figures = []
    for column in view.stages:
        results = [s for st in _graded(view) for s in st.report.stages if s.id == column.id]
        if not results:
            continue
        maximum = max(s.total_max_points for s in results)
        statuses = Counter(s.status.value for s in results)
        caption = (f"{_students(len(results))}; "
                   + ", ".join(f"{n} {status}" for status, n in sorted(statuses.items())))
        chart = points_chart([s.total_points for s in results], maximum,
                             f"stage {column.number} {column.id}: points of {len(results)} "
                             "students")
        figures.append(_figure(f"{column.number}. {column.title}", chart, caption))
    if not figures:
        return "<p>No student has a result yet.</p>"
    return ("<p class='note'>Each stage's points (correctness and speed), from 0 to the most "
            "any student could earn on the machine that graded them.</p>"
            f"<div class='charts'>{''.join(figures)}</div>")


@dataclass
class _Timed:
    speedups: list[float] = field(default_factory=list)
    fast: int = 0
    untimed: int = 0  # the timing failed or was refused: no speed-up to show


def speed_section(view: ClassView) -> str:
    timed: dict[tuple[str, str, str], _Timed] = defaultdict(_Timed)
    for student in _graded(view):
        for stage in student.report.stages:
            if stage.speed.graded:
                for case in stage.speed.cases:
                    _count(timed[(stage.id, case.id, stage.backend)], case)
    if not timed:
        return ("<p>No speed was graded in this class: speed is timed on a GPU only, after "
                "every correctness case of a stage has passed.</p>")
    columns = {c.id: c for c in view.stages}
    figures = []
    order = [c.id for c in view.stages]
    for (stage_id, case_id, backend), found in sorted(
            timed.items(), key=lambda kv: (order.index(kv[0][0]) if kv[0][0] in order else 99,
                                           kv[0])):
        column = columns.get(stage_id)
        lines = column.lines.get(backend, []) if column else []
        marks = [Mark(line.speedup, f"needs {line.speedup:g}x"
                      + (f" ({line.where})" if len(lines) > 1 else "")) for line in lines]
        where = "; ".join(f"{line.speedup:g}x on {line.where}" for line in lines)
        caption = (f"{_students(len(found.speedups) + found.untimed)} timed, {found.fast} fast "
                   f"enough" + (f", {found.untimed} without a speed-up (the timing failed or "
                                "was rejected)" if found.untimed else "")
                   + (f". Threshold: {where}." if where else
                      ". No speed-up threshold in course.toml for this backend."))
        label = f"stage {stage_id}, case {case_id}, {backend}: speed-ups"
        title = f"{stage_id} {case_id} ({backend})"
        figures.append(_figure(title, speedup_chart(found.speedups, marks, label), caption))
    return ("<p class='note'>Each speed case's speed-up over its baseline (baseline time / "
            "the student's time), on a log scale; the red line is the speed-up the course "
            "asks for.</p>" f"<div class='charts'>{''.join(figures)}</div>")


def _count(found: _Timed, case: SpeedCase) -> None:
    if case.speedup > 0:
        found.speedups.append(case.speedup)
    else:
        found.untimed += 1
    found.fast += case.passed


@dataclass
class _Cause:
    students: set[str] = field(default_factory=set)
    cases: int = 0
    example: tuple[str, str, str] = ("", "", "")  # student, case id, the judge's sentence


def causes_section(view: ClassView) -> str:
    found: dict[tuple[str, str], _Cause] = defaultdict(_Cause)
    for student in _graded(view):
        for stage in student.report.stages:
            for case in stage.cases:
                for key, text in confirmed(case):
                    cause = found[(stage.id, key)]
                    cause.students.add(student.name)
                    cause.cases += 1
                    if not cause.example[0]:
                        cause.example = (student.name, case.id, text)
    if not found:
        return ("<p>No failing case had a cause its output confirmed (the judge names one only "
                "where the output itself shows the mistake).</p>")
    ranked = sorted(found.items(), key=lambda kv: (-len(kv[1].students), -kv[1].cases, kv[0]))
    rows = []
    for (stage_id, key), cause in ranked[:CAUSES_SHOWN]:
        name, case_id, text = cause.example
        rows.append(
            f"<tr><td>{html.escape(stage_id)}</td><td><code>{html.escape(key)}</code></td>"
            f"<td class='num'>{len(cause.students)}</td><td class='num'>{cause.cases}</td>"
            f"<td>{student_name(name)}, case <code>{html.escape(case_id)}</code>:"
            f"<blockquote>{html.escape(single_line(text, EXAMPLE_CHARS))}</blockquote></td></tr>")
    more = (f"<p class='note'>{len(ranked) - CAUSES_SHOWN} more causes are not shown.</p>"
            if len(ranked) > CAUSES_SHOWN else "")
    return ("<p class='note'>The mistakes the judge confirmed from the students' own outputs "
            "(what course.toml's hints name in <code>when.cause</code>), the most common first; "
            "what was only observed is not counted.</p>"
            "<table><thead><tr><th scope='col'>stage</th><th scope='col'>cause</th>"
            "<th scope='col' class='num'>students</th><th scope='col' class='num'>cases</th>"
            "<th scope='col'>example</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>{more}")


def confirmed(case: CaseResult) -> list[tuple[str, str]]:
    """The causes a case's output confirmed: (key, the judge's sentence) each."""
    if case.passed or case.hidden:
        return []
    keys = [k for k in case.stats.get("causes", ()) if isinstance(k, str)]
    texts = case.stats.get("cause_texts")
    if isinstance(texts, dict):
        return [(key, str(texts.get(key) or "")) for key in keys]
    # A result written before the judge kept each cause's sentence in its stats: read the
    # sentences from its details' "cause: " lines, in the order of the keys.
    sentences = [d[len(CAUSE_PREFIX):] for d in case.details
                 if d.startswith(CAUSE_PREFIX)]
    return [(key, sentences[i] if i < len(sentences) else "") for i, key in enumerate(keys)]


def not_started_section(view: ClassView) -> str:
    items = []
    for column in view.stages:
        names = [st.name for st in _graded(view) for s in st.report.stages
                 if s.id == column.id and s.status is Status.NOT_STARTED]
        shown = ", ".join(student_name(n) for n in names) if names else "none"
        items.append(f"<li><strong>{column.number}. {html.escape(column.title)}</strong> "
                     f"({len(names)}): {shown}</li>")
    errors = [f"<li>{student_name(st.name)}, {s.number}. {html.escape(s.id)}: "
              f"{quoted_html.headline(s.message, 300)}</li>"
              for st in _graded(view) for s in st.report.stages if s.status is Status.ERROR]
    missing = [s for s in view.students if s.report is None]
    without = "".join(f"<li>{student_name(s.name)}: "
                      f"{quoted_html.headline(s.error, 300)}</li>" for s in missing)
    return (f"<ul>{''.join(items)}</ul>"
            + (f"<h3>Stages that could not be graded (ERROR, {len(errors)})</h3>"
               f"<ul>{''.join(errors)}</ul>" if errors else "")
            + (f"<h3>Without a result ({len(missing)})</h3><ul>{without}</ul>" if missing else ""))


def _figure(title: str, chart: str, caption: str) -> str:
    return (f"<figure><figcaption><strong>{html.escape(title)}</strong></figcaption>{chart}"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _students(n: int) -> str:
    return f"{n} student" + ("" if n == 1 else "s")


def _graded(view: ClassView) -> list[Student]:
    return [s for s in view.students if s.report is not None]

