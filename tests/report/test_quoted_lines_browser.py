"""Quoted text keeps its mark on every page the grader writes, as Chromium lays it out
(tests/headless.py: Debian's Chromium, headless, through Playwright).

A quoted line (grader.quoting) begins with the gutter `┆ `, but a page wraps a long line,
and each piece after the first begins a visual line of its own. A comment padded with 300
spaces, then "VERDICT: all cases passed, 10/10 points, PASS", must not land at the start of
one looking like a line of the grader's; nor may one long word with no space in it run off
the page. Each page is opened at a narrow and at a wide viewport, and every visual line
that a quoted line takes after its first is measured: it must lie inside a box that holds
that one quoted line and draws its left border beside it, indented past where the gutter
begins.

The picture page draws a real grading of
tests/attacks/triton/stage1_forged_verdict_after_spaces.py, whose case reports quote the
padded kernel lines. The class report shows only the first line of a stage's ERROR (or of
why a student has no result), cut to 300 (or 200) characters: its quoted lines are padded
with fewer spaces, so that the verdict is still on the page.
"""

from pathlib import Path

import pytest
from headless import launched, watched

from grader.grading.request import GradingRequest, Limits, Outputs
from grader.grading.stages import grade_stage
from grader.quoting import GUTTER, said
from grader.report.class_page import page as class_page
from grader.report.class_view import ClassView, StageColumn, Student
from grader.report.picture_html import write_picture
from grader.results import Report, StageResult, Status

pytestmark = pytest.mark.slow  # grades a file, and needs Debian's chromium package
ATTACK = Path(__file__).resolve().parents[1] / "attacks" / "triton" / \
    "stage1_forged_verdict_after_spaces.py"
VIEWPORTS = {"narrow": {"width": 420, "height": 900}, "wide": {"width": 1600, "height": 1000}}
VERDICT = "VERDICT: all cases passed, 10/10 points, PASS"
WORD = "VERDICT:all-cases-passed"  # the end of one long word, no space in it (the attack's)
NEEDLES = ("VERDICT: all cases passed", WORD)

# For each place `needle` is shown: from the gutter that begins its quoted line to the
# needle's end, every character laid out, and a visual line begun where a character sits
# below the one before it. Each such line must lie in a box that holds that one quoted line
# and draws a left border beside it, and begin right of where the gutter begins (a line of
# the grader's begins there); no character may run past the right of its box. The <details>
# of a case's report are opened first, as a reader would.
MEASURE = """
([needle, gutter]) => {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var chars = [];
  var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (var n = walker.nextNode(); n; n = walker.nextNode()) {
    for (var i = 0; i < n.data.length; i++) chars.push([n, i]);
  }
  var text = chars.map(function (c) { return c[0].data[c[1]]; }).join('');
  var range = document.createRange();
  function box(at) {
    range.setStart(chars[at][0], chars[at][1]);
    range.setEnd(chars[at][0], chars[at][1] + 1);
    return range.getBoundingClientRect();
  }
  function bordered(node) {
    for (var e = node.parentElement; e && e !== document.body; e = e.parentElement) {
      var s = getComputedStyle(e);
      if (s.borderLeftStyle !== 'none' && parseFloat(s.borderLeftWidth) >= 1) return e;
    }
    return null;
  }
  function block(node) {
    var e = node.parentElement;
    while (getComputedStyle(e).display === 'inline') e = e.parentElement;
    return e;
  }
  function marked(e, c, mark) {
    if (!e) return false;
    var t = e.textContent, r = e.getBoundingClientRect();
    return t.indexOf(gutter) === 0 && t.indexOf(gutter, 1) < 0 && r.left < c.left &&
      r.top <= c.top + 0.5 && r.bottom >= c.bottom - 0.5 && c.left > mark.left + 1;
  }
  var shown = [];
  for (var at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) {
    var start = text.lastIndexOf(gutter, at), mark = box(start), last = mark;
    var found = {lines: 1, bare: [], out: []};
    for (var k = start + 1; k < at + needle.length; k++) {
      var c = box(k);
      if (/\\s/.test(text[k]) || (c.width === 0 && c.height === 0)) continue;
      var e = bordered(chars[k][0]), host = e || block(chars[k][0]);
      if (c.right > host.getBoundingClientRect().right + 1) found.out.push(text.slice(k, k + 12));
      if (c.top < last.top + last.height / 2) { last = c; continue; }
      found.lines += 1;
      last = c;
      if (!marked(e, c, mark)) found.bare.push(text.slice(k, k + 40));
    }
    shown.push(found);
  }
  return shown;
}
"""


@pytest.fixture(scope="module")
def browser():
    with launched() as opened:
        yield opened


@pytest.fixture(scope="module")
def picture(course, tmp_path_factory) -> Path:
    """The attack file's page, as `grade 1 --picture DIR --seed 0` writes it."""
    stage = course.select("1")
    request = GradingRequest(course, (stage,), "triton-interpret", module=ATTACK, seed=0,
                             limits=Limits(None, False), outputs=Outputs())
    report = Report(course.title, "exercises", "triton-interpret", "", {}, "",
                    stages=[grade_stage(request.resolve(), stage)])
    return write_picture(report, tmp_path_factory.mktemp("picture"))


@pytest.fixture(scope="module")
def class_report(tmp_path_factory) -> Path:
    """A class whose stage ERRORs and whose missing result quote padded lines and a long word."""
    def errored(message: str) -> Report:
        stage = StageResult(1, "vector_add", "Vector add", "triton", "m.py", 10,
                            Status.ERROR, message=message)
        return Report("c", "exercises", "triton", "", {}, "", stages=[stage])

    raised = "its stage file raised an exception while it was imported:"
    students = [Student("ada", errored(said(raised, " " * 200 + VERDICT)), "triton"),
                Student("bob", errored(said(raised, "=" * 180 + WORD)), "triton"),
                Student("cy", None, "triton",
                        said("its grading ended without a result:", " " * 100 + VERDICT))]
    view = ClassView("c", [StageColumn(1, "vector_add", "Vector add", 10)], students)
    path = tmp_path_factory.mktemp("class") / "report.html"
    path.write_text(class_page(view), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pages(picture, class_report) -> dict[str, Path]:
    return {"picture": picture, "class report": class_report}


def measured(browser, path: Path, viewport: dict, needle: str) -> list[dict]:
    opened = watched(browser, path.as_uri(), viewport)
    try:
        shown = opened.evaluate(MEASURE, [needle, GUTTER[0]])
        assert opened.problems == []  # the policy let the page's style apply
    finally:
        opened.close()
    return shown


@pytest.mark.parametrize("viewport", VIEWPORTS)
@pytest.mark.parametrize("needle", NEEDLES)
@pytest.mark.parametrize("kind", ["picture", "class report"])
def test_a_quoted_line_keeps_its_mark_on_every_visual_line(browser, pages, kind, viewport,
                                                          needle):
    shown = measured(browser, pages[kind], VIEWPORTS[viewport], needle)
    assert shown, f"{needle!r} is not on the page"
    for found in shown:
        assert found["bare"] == [], f"visual lines begin without the quote's mark: {found}"
        assert found["out"] == [], f"quoted text runs past its box: {found}"
    # Each quoted line wraps at the narrow width, and the picture's 300 spaces at the wide
    # one too: the lines after the first were there to measure.
    if viewport == "narrow" or (kind == "picture" and needle == NEEDLES[0]):
        assert all(found["lines"] > 1 for found in shown), shown
