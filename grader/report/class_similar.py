"""The class report's "Similar submissions": the pairs of students' files that are unusually
alike for the class (grader.instructor.similarity), each a <details> that opens on the two
files side by side, the lines they have in common marked.

It is evidence for a person to read, and the page says so: two honest students can write a
short kernel alike, and a student who rewrote what they took is not found. Every line of a
file is escaped, with its control characters and bidi overrides spelled out
(grader.quoting.visible), so that what the page shows is what the file holds. Only class
names style it: the page's Content-Security-Policy lets no style attribute apply. The pairs
are put here as the page shows them, and templates/similar.html.j2 draws them.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class ShownFile:
    """One file of a pair as the page shows it: its first LINES_SHOWN lines, each cut to
    LINE_CHARS (number, text, in common with the other file), and how many more it has."""

    student: str
    share: str  # "40%"
    lines: list[tuple[int, str, bool]]
    more: int


@dataclass(frozen=True)
class ShownPair:
    """A pair as the page shows it (grader.report.class_view.AlikePair), its scores in %."""

    path: str
    score: str
    typical: str
    first: ShownFile
    second: ShownFile


def shown(pairs: list[AlikePair]) -> list[ShownPair]:
    """The pairs as the section shows them; none, and the page has no such section."""
    return [ShownPair(p.path, _percent(p.score), _percent(p.typical), _file(p.first),
                      _file(p.second)) for p in pairs]


def _file(file: AlikeFile) -> ShownFile:
    lines = [(i + 1, text[:LINE_CHARS] + "…" if len(text) > LINE_CHARS else text,
              i in file.marked) for i, text in enumerate(file.lines[:LINES_SHOWN])]
    return ShownFile(file.student, _percent(file.share), lines,
                     max(len(file.lines) - LINES_SHOWN, 0))


def _percent(value: float) -> str:
    return f"{round(100 * value)}%"
