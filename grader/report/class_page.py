"""The class report, OUT/report.html: one self-contained page an instructor reads after
`grade batch`.

The gradebook as a table that sorts by any column (a button in each header, so the keyboard
sorts it too) linking each student's feedback; per stage, the distribution of points; per
speed case, the distribution of speed-ups against the threshold; the confirmed causes the
class hit most, each with an example; who has not started which stage; and, where there are
any, the pairs of students' files that are unusually alike (grader.report.class_similar).

Nothing is fetched: the style, the one script and the charts (grader.report.charts) are in
the page, and its Content-Security-Policy (grader.report.content_policy) allows only that
script and that style (by their hashes), no connection, no image, no font. The page is
templates/class.html.j2's, which escapes every string from a submission (a student's name, a
message, the code it quotes) as it does every value; the script reads only the table.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from grader.report import class_sections as sections
from grader.report import class_similar, quoted_html
from grader.report.class_view import ClassView, Student
from grader.report.pages import page as drawn_page
from grader.results import Status

# A cause's example (blockquote) is the judge's own sentence, on one line; the text a
# submission's processes sent is shown by quoted_html, its mark on every visual line.
STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:78em;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{margin-top:1.8em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
td.num,th.num{text-align:right}
th button{font:inherit;font-weight:bold;background:none;border:0;padding:0;cursor:pointer}
th button:focus-visible{outline:2px solid #1a5fb4}
th[aria-sort=ascending] button::after{content:" \\25B2"}
th[aria-sort=descending] button::after{content:" \\25BC"}
td.PASS{background:#dcf2dc}td.FAIL{background:#fbe3d6}td.ERROR{background:#f6c6c6}
td.NOT_STARTED{background:#eee;color:#666}td.PARTLY_GRADED{background:#fff3c4}
.charts{display:flex;flex-wrap:wrap;gap:1em}
figure{margin:0;border:1px solid #ddd;padding:.5em}
figcaption{font-size:.9em;max-width:380px}
svg .bar{fill:#4a7fc1}svg .axis{stroke:#555}svg .mark{stroke:#c0392b;stroke-width:2;fill:#c0392b}
svg text{font-size:11px;fill:#333}svg text.mark{stroke:none}
blockquote{margin:.2em 0;white-space:pre-wrap;font-family:monospace;font-size:.9em;
background:#f4f4f4;padding:.3em}
.note{color:#555;font-size:.9em}
""" + quoted_html.STYLE + class_similar.STYLE

# Sorts a table by the column whose header button was pressed: by each cell's data-sort
# number where it has one, else by its text; pressing again reverses the order.
SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  function key(row, col) {
    var cell = row.cells[col];
    var n = cell.getAttribute("data-sort");
    return n === null ? cell.textContent.trim().toLowerCase() : parseFloat(n);
  }
  heads.forEach(function (th, col) {
    var button = th.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      var up = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, col), y = key(b, col);
        var order = typeof x === "number" ? x - y : x.localeCompare(y);
        return up ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def page(view: ClassView) -> str:
    graded = [s for s in view.students if s.report is not None]
    intro = (f"{len(view.students)} students: {len(graded)} graded, "
             f"{len(view.students) - len(graded)} without a result. "
             "Every figure here is read from each student's result file in students/, beside "
             "this page.")
    causes, more_causes = sections.causes(view)
    return drawn_page(
        "class.html.j2", SCRIPT, STYLE, course=view.course, intro=intro,
        heads=["student", "track", *(f"{s.number}. {s.id}" for s in view.stages), "total",
               "of", "late %", "final", "result"],
        rows=[_row(view, student) for student in view.students],
        points=sections.points_figures(view), speed=sections.speed_figures(view),
        causes=causes, more_causes=more_causes, not_started=sections.not_started(view),
        errors=sections.errors(view), missing=[s for s in view.students if s.report is None],
        alike=class_similar.shown(view.alike), alike_more=view.alike_more)


@dataclass(frozen=True)
class StageCell:
    """A stage's cell of the gradebook: its points, its status's name (the cell's class) and
    the status as said."""

    points: float
    kind: str
    status: str


@dataclass(frozen=True)
class ReportRow:
    """A student's row of the gradebook. `error` is why they have no result ("" when they
    have one), and then `points`, `out_of` and `result` are None."""

    name: str
    people: str  # who the submission is, where the class knows ("" where not)
    feedback: str  # the feedback page, relative to the report ("" where there is none)
    track: str
    stages: list[StageCell | None]  # None: no result of that stage
    points: float | None
    out_of: float | None
    late: float | None
    final: float | None
    result: str | None
    error: str


def _row(view: ClassView, student: Student) -> ReportRow:
    report = student.report
    stages = {s.id: s for s in report.stages} if report else {}
    cells: list[StageCell | None] = []
    for column in view.stages:
        stage = stages.get(column.id)
        cells.append(None if stage is None else
                     StageCell(stage.total_points, stage.status.name, stage.status.value))
    if report is None:
        return ReportRow(student.name, student.people, student.feedback, student.track, cells, None,
                   None, student.late_percent, student.final, None, student.error)
    counted = Counter(s.status for s in report.stages)
    result = ", ".join(f"{n} {status.value}" for status, n in counted.items()
                       if status is not Status.PASS)
    result = "passed" if report.passed else (result or "speed below threshold")
    out_of = report.max_points if student.out_of is None else student.out_of
    return ReportRow(student.name, student.people, student.feedback, student.track, cells,
               report.points, out_of, student.late_percent, student.final, result, "")
