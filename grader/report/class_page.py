"""The class report, OUT/report.html: one self-contained page an instructor reads after
`grade batch`.

The gradebook as a table that sorts by any column (a button in each header, so the keyboard
sorts it too) linking each student's feedback; per stage, the distribution of points; per
speed case, the distribution of speed-ups against the threshold; the confirmed causes the
class hit most, each with an example; who has not started which stage; and, where there are
any, the pairs of students' files that are unusually alike (grader.report.class_similar).

Nothing is fetched: the style, the one script and the charts (grader.report.charts) are in
the page, and its Content-Security-Policy (grader.report.content_policy) allows only that
script and that style (by their hashes), no connection, no image, no font. Every string from
a submission (a student's name, a message, the code it quotes) is escaped, and the script
reads only the table.
"""

from __future__ import annotations

import html
from collections import Counter
from urllib.parse import quote as url_quote

from grader.report import class_sections as sections
from grader.report import quoted_html
from grader.report.class_similar import STYLE as SIMILAR_STYLE
from grader.report.class_similar import similar_section
from grader.report.content_policy import policy_meta
from grader.report.class_view import ClassView, Student
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
""" + quoted_html.STYLE + SIMILAR_STYLE

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
    body = [f"<h1>{html.escape(view.course)}: class report</h1>",
            f"<p class='note'>{html.escape(intro)}</p>",
            "<h2 id='gradebook'>Gradebook</h2>", gradebook(view),
            "<h2 id='points'>Points per stage</h2>", sections.points_section(view),
            "<h2 id='speed'>Speed-ups per speed case</h2>", sections.speed_section(view),
            "<h2 id='causes'>Confirmed causes</h2>", sections.causes_section(view),
            "<h2 id='not-started'>Not started</h2>", sections.not_started_section(view),
            similar_section(view.alike, view.alike_more)]
    return ("<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"{policy_meta(SCRIPT, STYLE)}"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(view.course)}: class report</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}"
            f"<script>{SCRIPT}</script></body></html>\n")


def gradebook(view: ClassView) -> str:
    heads = ["student", "track", *(f"{s.number}. {s.id}" for s in view.stages), "total",
             "of", "late %", "final", "result"]
    numeric = set(range(2, 2 + len(view.stages) + 4))
    head = "".join(f"<th scope='col'{' class=num' if i in numeric else ''}>"
                   f"<button type='button'>{html.escape(h)}</button></th>"
                   for i, h in enumerate(heads))
    rows = "".join(_row(view, student) for student in view.students)
    return (f"<table class='sortable' id='gradebook-table'><thead><tr>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table>"
            "<p class='note'>Press a column's header to sort by it (again to reverse). A "
            "stage's cell is its points, correctness and speed together; its colour is its "
            "status. <em>late %</em> is the late penalty taken off the total, <em>final</em> "
            "the score after it and any adjustment by hand (adjustments.csv), as the "
            "gradebook has them.</p>")


def _row(view: ClassView, student: Student) -> str:
    name = sections.student_name(student.name)
    if student.people:  # a bulk export names results by SID: the people first
        name = f"{sections.student_name(student.people)} ({name})"
    if student.feedback:
        name = f"<a href='{html.escape(url_quote(student.feedback))}'>{name}</a>"
    cells = [f"<th scope='row'>{name}</th>", f"<td>{html.escape(student.track)}</td>"]
    report = student.report
    stages = {s.id: s for s in report.stages} if report else {}
    for column in view.stages:
        stage = stages.get(column.id)
        if stage is None:
            cells.append("<td class='num' data-sort='-1'></td>")
            continue
        kind = stage.status.name
        cells.append(f"<td class='num {kind}' data-sort='{stage.total_points:g}' "
                     f"title='{html.escape(stage.status.value)}'>{stage.total_points:g}</td>")
    late = _number_cell(student.late_percent)
    final = _number_cell(student.final)
    if report is None:
        cells += ["<td class='num' data-sort='-1'></td>", "<td class='num' data-sort='-1'></td>",
                  late, final, f"<td>not graded: {quoted_html.headline(student.error, 200)}</td>"]
    else:
        counted = Counter(s.status for s in report.stages)
        result = ", ".join(f"{n} {status.value}" for status, n in counted.items()
                           if status is not Status.PASS)
        result = "passed" if report.passed else (result or "speed below threshold")
        out_of = report.max_points if student.out_of is None else student.out_of
        cells += [f"<td class='num' data-sort='{report.points:g}'>{report.points:g}</td>",
                  f"<td class='num' data-sort='{out_of:g}'>{out_of:g}</td>", late, final,
                  f"<td>{html.escape(result)}</td>"]
    return "<tr>" + "".join(cells) + "</tr>"


def _number_cell(value: float | None) -> str:
    if value is None:
        return "<td class='num' data-sort='-1'></td>"
    return f"<td class='num' data-sort='{value:g}'>{value:g}</td>"
