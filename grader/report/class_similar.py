"""The class report's "Similar submissions": the pairs of students' files that are unusually
alike for the class (grader.instructor.similarity), each a <details> that opens on the two
files side by side, the lines they have in common marked.

It is evidence for a person to read, and the page says so: two honest students can write a
short kernel alike, and a student who rewrote what they took is not found. Every line of a
file is escaped, with its control characters and bidi overrides spelled out
(grader.quoting.visible), so that what the page shows is what the file holds. Only class
names style it: the page's Content-Security-Policy lets no style attribute apply.
"""

from __future__ import annotations

import html

from grader.quoting import visible
from grader.report.class_sections import student_name
from grader.report.class_view import AlikeFile, AlikePair

LINES_SHOWN = 400  # of each file
LINE_CHARS = 300  # of each line

STYLE = (".sbs{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1em;"
         "margin:.5em 0}"
         ".src{font-family:monospace;font-size:.85em;background:#f8f8f8;border:1px solid #ddd;"
         "padding:.3em;overflow-x:auto;white-space:pre;margin:0}"
         ".src>span{display:block;min-height:1.2em}"
         ".src>span.m{background:#ffe08a;box-shadow:inset 3px 0 #b8860b}"
         ".src .ln{color:#888;display:inline-block;width:4ch;text-align:right;"
         "margin-right:1ch;user-select:none}"
         "details.alike{margin:.4em 0}details.alike>summary{cursor:pointer}")


def similar_section(pairs: list[AlikePair], more: int) -> str:
    """The section ("" where no pair is unusual: the page then has none)."""
    if not pairs:
        return ""
    items = "".join(_pair(p) for p in pairs)
    rest = (f"<p class='note'>{more} more pairs are as unusual; the {len(pairs)} most alike "
            "are shown.</p>" if more else "")
    return ("<h2 id='similar'>Similar submissions</h2>"
            "<p class='note'>Pairs of students whose files of a stage are far more alike than "
            "the class's pairs of that file usually are, compared with the handout's skeleton "
            "taken out, and with comments, layout and the names of variables set aside. This "
            "is evidence for a person to read, not a finding: short kernels can be written "
            "alike by students who worked alone, and what two students share may have a "
            "common source. The score is the share of the two files' fingerprints they "
            "have in common; open a pair to read both files, the lines in common marked.</p>"
            f"{items}{rest}")


def _pair(found: AlikePair) -> str:
    a, b = found.first, found.second
    summary = (f"<code>{html.escape(found.path)}</code>: {student_name(a.student)} and "
               f"{student_name(b.student)}, {_percent(found.score)} alike "
               f"(this file's median pair: {_percent(found.typical)}); "
               f"in common: {_percent(a.share)} of {student_name(a.student)}'s own code, "
               f"{_percent(b.share)} of {student_name(b.student)}'s")
    return (f"<details class='alike'><summary>{summary}</summary>"
            f"<div class='sbs'>{_file(a)}{_file(b)}</div></details>")


def _file(file: AlikeFile) -> str:
    shown = file.lines[:LINES_SHOWN]
    rows = "".join(_line(i, text, i in file.marked) for i, text in enumerate(shown))
    cut = (f"<p class='note'>{len(file.lines) - LINES_SHOWN} more lines are not shown.</p>"
           if len(file.lines) > LINES_SHOWN else "")
    return (f"<div><p><strong>{student_name(file.student)}</strong> "
            f"({_percent(file.share)} of their own code in common)</p>"
            f"<pre class='src'>{rows}</pre>{cut}</div>")


def _line(index: int, text: str, marked: bool) -> str:
    if len(text) > LINE_CHARS:
        text = text[:LINE_CHARS] + "…"
    kind = " class='m'" if marked else ""
    return (f"<span{kind}><span class='ln'>{index + 1}</span>"
            f"{html.escape(visible(text))}</span>")


def _percent(value: float) -> str:
    return f"{round(100 * value)}%"
