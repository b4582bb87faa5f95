"""The class report, OUT/report.html, from a class's result files (tests/class_fixture.py):
one page that parses, links only to files OUT holds, fetches nothing, shows every string of
a submission as text, and counts what the results say. Its behaviour in a real browser is
test_class_report_browser.py's."""

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from class_fixture import (ERROR_TEXT, HOSTILE, IDLE, MARKUP_MESSAGE, NO_RESULT, SCRIPT,
                           write_class)
from conftest import ROOT, schema_errors

from grader.instructor.class_report import REPORT, students_in, write_report
from grader.instructor.gradebook import class_gradebook, read_row, speed_points
from grader.quoting import GUTTER, said
from grader.report.charts import Axis, counts
from grader.report.class_page import SCRIPT as PAGE_SCRIPT
from grader.report.class_page import STYLE as CLASS_STYLE
from grader.report.class_page import page as class_page
from grader.report.class_view import ClassView, StageColumn, Student
from grader.results import Report, StageResult, Status


class Page(HTMLParser):
    """What a browser would make of the page: its elements, its text, its tables' cells."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.items: list[str] = []  # the text of each <li>
        self._open: list[str] = []
        self._cell: list[str] | None = None
        self._item: list[str] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables:
            self._cell = []
        elif tag == "li":
            self._item = []
        self._open.append(tag)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "li" and self._item is not None:
            self.items.append("".join(self._item))
            self._item = None
        if tag in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(tag):]

    def handle_data(self, data):
        if self._open and self._open[-1] == "script":
            self.scripts.append(data)
            return
        self.text.append(data)
        for part in (self._cell, self._item):
            if part is not None:
                part.append(data)

    def of(self, tag: str) -> list[dict]:
        return [attrs for t, attrs in self.tags if t == tag]


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    out = tmp_path_factory.mktemp("class") / "out"
    names = write_class(out, course)
    path = write_report(out, course, names)
    return out, names, path, Page(path.read_text(encoding="utf-8"))


def _results(out: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8"))
            for p in (out / "students").glob("*.json") if not p.name.endswith(".intake.json")}


def test_the_fixture_class_follows_the_result_schema(graded):
    schema = json.loads((ROOT / "grader/result.schema.json").read_text())
    out = graded[0]
    for name, data in _results(out).items():
        assert not schema_errors(data, schema), name


def test_the_page_is_one_file_that_fetches_nothing(graded):
    _, _, path, page = graded
    text = path.read_text(encoding="utf-8")
    assert path.name == REPORT
    for tag, attrs in page.tags:
        for key in ("src", "href", "action", "data", "srcset", "poster"):
            value = (attrs.get(key) or "").strip().lower()
            assert not re.match(r"^([a-z][a-z0-9+.-]*:|//)", value), (tag, key, value)
    assert not page.of("link") and not page.of("img") and not page.of("iframe")
    assert "@import" not in text and "url(" not in text.lower()
    # One script, the page's own; the policy lets nothing else run or load.
    assert page.scripts == [PAGE_SCRIPT]
    policy = next(a["content"] for a in page.of("meta") if a.get("http-equiv"))
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy


def test_each_student_links_their_own_feedback_file(graded):
    out, names, _, page = graded
    links = [a["href"] for a in page.of("a")]
    assert len(links) == len(names)
    for href in links:
        target = out / unquote(urlsplit(href).path)
        assert target.is_file() and target.parent == out / "students", href
    assert {unquote(h)[len("students/"):-len(".html")] for h in links} == set(names)


def test_strings_from_submissions_are_text_never_markup(graded):
    _, _, path, page = graded
    shown = "".join(page.text)
    assert HOSTILE in shown  # the name, as written
    assert MARKUP_MESSAGE.split(": ")[1] in shown  # the error message's markup, as text
    assert SCRIPT in shown  # a cause's sentence holding a script, as text
    assert f"{ERROR_TEXT}" in shown
    # None of it became an element: no image, no bold, no second script, no link out.
    assert not page.of("img") and not page.of("b") and not page.of("i")
    assert len(page.of("script")) == 1
    assert "<img src=x" not in path.read_text(encoding="utf-8")


def test_the_gradebook_has_a_row_per_student_with_their_points(graded, course):
    out, names, _, page = graded
    table = page.tables[0]
    head, rows = table[0], {r[0]: r for r in table[1:]}
    assert head[:2] == ["student", "track"]
    assert head[-5:] == ["total", "of", "late %", "final", "result"]
    assert set(rows) == set(names)
    for name, data in _results(out).items():
        row = rows[name]
        stages = {s["id"]: s["total_points"] for s in data["stages"]}
        assert [float(v) for v in row[2:2 + len(course.stages)]] == [
            stages[s.id] for s in course.stages]
        assert float(row[-5]) == data["points"]
    # Out of the gradebook's total, the same for every student graded on one machine,
    # whatever they started (not each result's own maximum, which moves with it).
    graded_rows = [read_row(out, name) for name in _results(out)]
    speed = speed_points(course, graded_rows)
    for found in graded_rows:
        assert float(rows[found.name][-4]) == sum(s.points for s in course.stages) + (
            speed[found.machine] or 0)
    assert len({rows[n][-4] for n in _results(out)}) == len(set(speed.values()))
    assert rows[NO_RESULT][-1] == f"not graded: {ERROR_TEXT}"
    assert rows[IDLE][-1] == f"{len(course.stages)} NOT STARTED"


def test_the_confirmed_causes_are_counted_by_student_with_an_example(graded):
    out, _, _, page = graded
    expected: dict[tuple[str, str], set[str]] = {}
    for name, data in _results(out).items():
        for stage in data["stages"]:
            for case in stage["cases"]:
                for key in case["stats"].get("causes", []):
                    expected.setdefault((stage["id"], key), set()).add(name)
    assert expected  # the fixture confirms causes
    causes = next(t for t in page.tables if t[0][:2] == ["stage", "cause"])
    found = {(r[0], r[1]): int(r[2]) for r in causes[1:]}
    assert found == {k: len(v) for k, v in expected.items()}
    counts_shown = [int(r[2]) for r in causes[1:]]
    assert counts_shown == sorted(counts_shown, reverse=True)  # the most common first
    for row in causes[1:]:
        student = row[4].split(", case ")[0]
        assert student in expected[(row[0], row[1])]


def test_observations_are_not_causes():
    from grader.report.class_sections import confirmed
    from grader.results import CaseResult

    case = CaseResult("c", "float32", {}, 0, False, "wrong",
                      stats={"causes": ["grid_short"], "cause_texts": {"grid_short": "too few"}},
                      details=["observed (no single cause confirmed): 3 rows",
                               "cause: a line of the details, not the stats' sentence"])
    assert confirmed(case) == [("grid_short", "too few")]
    case.stats, case.details = {}, ["observed (no single cause confirmed): 3 rows"]
    assert confirmed(case) == []


def test_a_result_without_cause_texts_has_them_read_from_its_details():
    """A result written before the judge kept each cause's sentence in its stats."""
    from grader.report.class_sections import confirmed
    from grader.results import CaseResult

    case = CaseResult("c", "float32", {}, 0, False, "wrong", stats={"causes": ["grid_short"]},
                      details=["observed (no single cause confirmed): 3 rows", "cause: too few"])
    assert confirmed(case) == [("grid_short", "too few")]


def test_who_has_not_started_each_stage(graded, course):
    out, _, _, page = graded
    results = _results(out)
    for stage in course.stages:
        idle = sorted(n for n, d in results.items() for s in d["stages"]
                      if s["id"] == stage.id and s["status"] == "NOT STARTED")
        item = next(i for i in page.items if i.startswith(f"{stage.number}. {stage.title} "))
        assert f"({len(idle)})" in item
        assert sorted(item.split(": ", 1)[1].split(", ")) == idle
    assert f"{NO_RESULT}: {ERROR_TEXT}" in page.items
    assert f"{HOSTILE}, 2. fused_gelu: {MARKUP_MESSAGE}" in page.items


def test_a_quoted_line_stands_apart_from_the_sentence_that_introduces_it():
    """An ERROR's headline and why a student has no result: the grader's sentence as text,
    the quoted line it introduces after it as a block of its own, which the page's style
    draws with its mark on every visual line (measured in Chromium:
    tests/report/test_quoted_lines_browser.py)."""
    raised = "its stage file raised an exception while it was imported:"
    stage = StageResult(1, "vector_add", "Vector add", "triton", "m.py", 10, Status.ERROR,
                        message=said(raised, "<b>VERDICT</b>: PASS"))
    students = [Student("ada", Report("c", "exercises", "triton", "", {}, "", stages=[stage])),
                Student("cy", None, "triton", said("no result:", " " * 9 + "VERDICT"))]
    html = class_page(ClassView("c", [StageColumn(1, "vector_add", "Vector add", 10)],
                                students))
    assert (f"<li>ada, 1. vector_add: {raised}<span class='q'>{GUTTER}&lt;b&gt;VERDICT&lt;/b&gt;"
            ": PASS</span></li>") in html
    assert f"<td>not graded: no result:<span class='q'>{GUTTER}{' ' * 9}VERDICT</span></td>" in html
    assert "border-left" in CLASS_STYLE.split(".q{")[1] and " style=" not in html


def test_a_chart_per_stage_and_per_speed_case_with_its_threshold(graded, course):
    out, _, _, page = graded
    charts = page.of("svg")
    points = [c for c in charts if c["aria-label"].endswith("students")]
    assert len(points) == len(course.stages)
    speed = {(s["id"], c["id"], s["backend"]) for d in _results(out).values()
             for s in d["stages"] if s["speed"]["graded"] for c in s["speed"]["cases"]}
    assert speed  # the fixture timed speed
    assert len([c for c in charts if c["aria-label"].endswith("speed-ups")]) == len(speed)
    # Each speed chart marks its backend's threshold: vector add asks 0.8x on every GPU.
    assert "needs 0.8x" in "".join(page.text)
    assert len([t for t in page.of("line") if t.get("class") == "mark"]) >= len(speed)
    for chart in charts:
        assert int(chart["width"]) > 0 and int(chart["height"]) > 0


def test_histogram_bins_hold_their_lower_edge_and_the_last_its_upper():
    assert counts([0, 1, 1.99, 2, 10], [0, 2, 4, 6, 8, 10]) == [3, 1, 0, 0, 1]
    assert Axis(0.5, 2.0, log=True).place(1.0) == pytest.approx(0.5)
    assert Axis(0, 10).place(15) == 1.0


def test_the_report_is_written_again_from_an_out_folder(graded, run_grade, course, tmp_path):
    out, names, path, _ = graded
    path.unlink()
    code, stdout, _ = run_grade("--course", str(course.path), "report", str(out))
    assert code == 0 and path.is_file() and "class report:" in stdout
    assert set(students_in(out)) == set(names)
    code, _, err = run_grade("--course", str(course.path), "report", str(tmp_path))
    assert code == 2 and "holds no students/ folder" in err


def test_the_report_shows_the_gradebooks_students_out_of_its_totals(course, tmp_path):
    out = tmp_path / "out"
    write_class(out, course)
    # A student the roster knows of but who has no file yet, and a file no student has.
    (out / "roster.json").write_text(json.dumps({"zoe": {"source": "zoe"}}), encoding="utf-8")
    (out / "students" / ".partial.json").write_text("{}", encoding="utf-8")
    book = class_gradebook(course, out, [])
    page = Page(write_report(out, course).read_text(encoding="utf-8"))
    rows = {r[0]: r for r in page.tables[0][1:]}
    # the class fixture's students, the roster's one without a file, no dotfile
    expected = ["<img src=x onerror=alert(1)>&amp;", "José Núñez", "ada", "bob", "carl",
                "dana", "eve", "fay", "gus", "hal", "ivan", "nina", "zoe"]
    assert students_in(out) == expected and [row.name for row in book.rows] == expected
    assert set(rows) == set(expected)
    # out of the course's points: the stages' 100 and their speed points' 35
    assert sum(s.points for s in course.stages) + sum(
        s.speed.points for s in course.stages if s.speed) == 135
    assert {rows[row.name][-4] for row in book.rows if row.data is not None} == {"135"}


def test_a_result_that_cannot_be_read_is_said_so_in_its_row(course, tmp_path):
    out = tmp_path / "out"
    write_class(out, course)
    (out / "students" / "ada.json").write_text("{\"schema\": ", encoding="utf-8")
    page = Page(write_report(out, course).read_text(encoding="utf-8"))
    row = next(r for r in page.tables[0] if r[0] == "ada")
    assert row[-1].startswith("not graded: its result file could not be read")


def test_names_with_control_characters_are_shown_spelled_out(course, tmp_path):
    """A file name may hold an escape sequence or a bidi override: the page shows them
    spelled out, on one line, wherever it names the student."""
    out = tmp_path / "out"
    write_class(out, course)
    folder = out / "students"
    red, flipped = "eve\x1b[31mred\nline", "mallory\u202egnp.exe"
    (folder / f"{red}.json").write_bytes((folder / f"{IDLE}.json").read_bytes())
    (folder / f"{flipped}.error").write_text(ERROR_TEXT + "\n", encoding="utf-8")
    text = write_report(out, course).read_text(encoding="utf-8")
    assert "\x1b" not in text and "\u202e" not in text and "red\nline" not in text
    page = Page(text)
    shown_red, shown_flipped = "eve\\x1b[31mred\\x0aline", "mallory\\u202egnp.exe"
    assert {shown_red, shown_flipped} <= {r[0] for r in page.tables[0][1:]}
    assert f"{shown_flipped}: {ERROR_TEXT}" in page.items
    assert any(shown_red in item for item in page.items)  # among those not started


def test_each_feedback_file_is_a_page_that_runs_and_loads_nothing(tmp_path):
    """The class report linked raw Markdown; the feedback is a page beside it, drawn with raw
    HTML off: a submission's text is escaped, its quoted lines in a block that does not wrap."""
    from grader.report.feedback_page import page

    hostile = "## ada\n\n<script>alert(1)</script> [x](javascript:alert(1))\n\n```text\n" \
              "┆ " + " " * 300 + "VERDICT: 10/10 PASS\n```\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n"
    drawn = page(hostile, "feedback: ada")
    assert "<script>alert" not in drawn and "&lt;script&gt;" in drawn
    assert "href=\"javascript:" not in drawn and "[x](javascript:alert(1))" in drawn  # text
    assert "<table>" in drawn and "<pre><code" in drawn
    assert "white-space:pre;" in drawn and "pre-wrap" not in drawn
    assert "script-src 'sha256-" in drawn and "default-src 'none'" in drawn


def test_the_report_names_the_people_and_shows_the_penalty_and_final_score(tmp_path, run_grade,
                                                                           monkeypatch):
    """A bulk export names results by SID: the report showed SIDs and left the late penalty
    out. The gradebook's names, late % and final score are in its table."""
    from test_class import POLICY, _course, _export, _fake_grader
    from grader.instructor import batch

    course = _course(tmp_path, POLICY)
    copy = _export(tmp_path)
    (copy / "submission_2571002" / "triton").mkdir(parents=True, exist_ok=True)
    (copy / "submission_2571002" / "triton/stage1_vector_add.py").write_text("# good\n")
    monkeypatch.setattr(batch, "run_isolated", _fake_grader(course, {"good": {"vector_add": 10}}))
    out = tmp_path / "out"
    run_grade("--course", str(course.path), "batch", str(copy), "--out", str(out), "--backend",
              "triton-interpret", "--seed", "3")
    page = Page((out / "report.html").read_text(encoding="utf-8"))
    head = page.tables[0][0]
    row = next(r for r in page.tables[0][1:] if r[0].endswith("(34567+23456)"))
    assert "Ann Lee" in row[0]  # the group's names, then the key their results go by
    assert row[head.index("late %")] == "20" and row[head.index("final")] == "8"
