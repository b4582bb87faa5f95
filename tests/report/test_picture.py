"""`grade --picture`: the judge's record of a failing output (grader.judge.picture.draw, by
way of grader.judge.compare) and the page that draws it (grader.report.picture_html), fed
outcomes as the replay would report them; nothing is graded here. The page in a real
browser: test_picture_browser.py."""

import json
import re
from html import escape
from pathlib import Path

import torch
from conftest import vector_add_course

from grader.course import Tolerance
from grader.judge.compare import Expected, compare, drawn
from grader.quoting import GUTTER
from grader.replay.execute import LaunchRecord
from grader.replay.poison import poison_
from grader.replay.traffic import NOBODY, OOB_READER, SEVERAL, SHARED, WRITTEN
from grader.report.content_policy import digest
from grader.report.picture_html import CELL_PX, SCRIPT, STYLE, page
from grader.results import CaseResult, Failure, Report, StageResult
from grader.sandbox.outcomes import Outcome
from grader.tracks import TRACKS

EXACT = Tolerance(1e-5, 1e-5)
FAULTS = Path(__file__).resolve().parents[1] / "faults" / "triton"


def expected(reference, tiles=("BLOCK_M", "BLOCK_N")) -> Expected:
    return Expected(reference, torch.float32, "cpu", EXACT, TRACKS["triton"], list(tiles))


def tiled_writers(shape, block, grid) -> torch.Tensor:
    """The program (numbered x fastest over `grid`, x along the columns) that owns each
    element, as the traffic's writers map has it when every program stores its own tile."""
    rows = torch.arange(shape[0])[:, None] // block[0]
    cols = torch.arange(shape[1])[None, :] // block[1]
    return (rows * grid[0] + cols).to(torch.int32).expand(shape).contiguous()


def launched(block, grid) -> list[LaunchRecord]:
    return [LaunchRecord("k", grid, {"BLOCK_M": block[0], "BLOCK_N": block[1]},
                         language="triton")]


def report_of(*cases: CaseResult) -> Report:
    stage = StageResult(2, "s", "Fused <GELU>", "cpu", "m.py", 10, cases=list(cases))
    return Report("c", "exercises", "triton-interpret", "", {}, "", stages=[stage])


def failed(picture: dict, case_id="M=45,N=301", summary="wrong") -> CaseResult:
    return CaseResult(case_id, "float32", {}, 0, False, summary, ["detail"], picture=picture)


def rows_of(html: str) -> list[list[str]]:
    """Each drawn row's cells, as the class lists of its <td>s."""
    table = re.search(r"<table class='pic'.*?</table>", html, re.S).group(0)
    # the dashed edges between programs' regions and the shades of the error are tested on
    # their own (test_the_programs_the_error_and_the_relation_are_drawn)
    return [[" ".join(c for c in classes.split() if c not in ("ol", "ot")
                      and not re.fullmatch(r"e\d", c))
             for classes in re.findall(r"<td class='([^']*)'", row)]
            for row in table.split("<tr>")[1:]]


def labels(html: str) -> list[str]:
    return re.findall(r"aria-label='([^']*)'>(?:<span[^>]*>[^<]*</span>)?</td>", html)


def test_a_kernel_whose_loads_leave_the_tensor_is_drawn_though_every_value_is_right():
    # 1 x 8 output, two programs of 4; program 1 read past the end: its elements are marked
    want = torch.arange(8, dtype=torch.float32).view(1, 8)
    traffic = torch.full((1, 8), WRITTEN, dtype=torch.uint8)
    traffic[0, 4:] |= OOB_READER
    outcome = Outcome(output=want.clone(), launches=launched((1, 4), (2, 1)),
                      traffic=[{"kind": "load_out_of_bounds", "text": "line 3", "line": 3,
                                "fails": True}],
                      traffic_map=traffic, writers=tiled_writers((1, 8), (1, 4), (2, 1)),
                      writer_launch=0)
    picture = drawn(outcome, expected(want))
    assert picture["marks"] == "....RRRR" and picture["cell"] == [1, 1]
    assert picture["counts"]["4"] == [0, 0, 0, 1]
    html = page(report_of(failed(picture, summary="read or wrote outside a tensor:")))
    assert "No failing case has a picture" not in html
    assert rows_of(html) == [["ok"] * 4 + ["oob l"] + ["oob"] * 3]
    assert labels(html)[5] == ("out[0, 5]: by a program that went out of bounds: got 5, "
                               "expected 5; stored by program 1")


def test_every_element_wrong_at_45_x_301_is_45_rows_of_blocks_with_the_tiles_outlined():
    want = torch.rand(45, 301)
    grid = (5, 1)  # 64 x 64 tiles: one row of five
    outcome = Outcome(output=want + 1, launches=launched((64, 64), grid),
                      traffic_map=torch.full((45, 301), WRITTEN, dtype=torch.uint8),
                      writers=tiled_writers((45, 301), (64, 64), grid), writer_launch=0)
    verdict = compare(outcome, expected(want))
    picture = verdict.picture
    assert picture["shape"] == [45, 301] and picture["grid"] == [45, 76]
    assert picture["cell"] == [1, 4]  # 4 divides the tile: tile edges fall on cell edges
    html = page(report_of(failed(picture)))
    rows = rows_of(html)
    assert len(rows) == 45 and {len(r) for r in rows} == {76}
    assert all(c.split()[0] == "bad" for r in rows for c in r)
    # the tiles' left edges at columns 64, 128, 192, 256: cells 16, 32, 48, 64
    assert [i for i, c in enumerate(rows[0]) if "l" in c.split()] == [16, 32, 48, 64]
    texts = labels(html)
    assert texts[0] == "out[0, 0:4] (4 elements): 4 wrong; stored by program 0"
    assert texts[75] == "out[0, 300]: wrong; stored by program 4"  # 301 = 75 * 4 + 1
    assert texts[-1].startswith("out[44, 300]")
    assert "45 x 301" in html and "each cell a block of 1 x 4 elements" in html


def test_a_small_output_is_drawn_one_cell_per_element_with_its_values_and_programs():
    want = torch.arange(60, dtype=torch.float32).view(6, 10)
    got = want.clone()
    got[0, 1] = 100.0
    poison_(got[5:, 9:])  # never written: it still holds the grader's poison
    traffic = torch.full((6, 10), WRITTEN, dtype=torch.uint8)
    traffic[2, 3] |= SHARED
    traffic[5, 9] = 0
    writers = tiled_writers((6, 10), (4, 4), (3, 2))
    writers[2, 3], writers[5, 9] = SEVERAL, NOBODY
    shared = torch.tensor([[23, 0, 3]], dtype=torch.int32)  # out[2, 3]: (0, 0) and (0, 1)
    outcome = Outcome(output=got, launches=launched((4, 4), (3, 2)), traffic_map=traffic,
                      writers=writers, shared=shared, writer_launch=0)
    picture = compare(outcome, expected(want)).picture
    assert picture["cell"] == [1, 1] and picture["grid"] == [6, 10]
    assert picture["marks"][1] == "X" and picture["marks"][23] == "2"
    html = page(report_of(failed(picture)))
    rows = rows_of(html)
    assert len(rows) == 6 and {len(r) for r in rows} == {10}
    assert [i for i, c in enumerate(rows[0]) if "l" in c.split()] == [4, 8]
    assert [i for i, r in enumerate(rows) if "t" in r[0].split()] == [4]
    texts = labels(html)
    assert texts[1] == "out[0, 1]: wrong: got 100, expected 1; stored by program (0, 0)"
    assert texts[23] == ("out[2, 3]: written more than once: got 23, expected 23; "
                         "stored by several programs, among them (0, 0), (0, 1)")
    assert texts[12] == "out[1, 2]: right: got 12, expected 12; stored by program (0, 0)"
    assert texts[16] == "out[1, 6]: right: got 16, expected 16; stored by program (1, 0)"
    assert texts[58] == "out[5, 8]: right: got 58, expected 58; stored by program (2, 1)"
    assert texts[59] == "out[5, 9]: never written, expected 59; stored by no program"


def test_the_programs_the_error_and_the_relation_are_drawn():
    """A 6 x 10 output of 4 x 4 tiles, each stored by its own program, wrong by errors of
    three sizes and one relation: the relation above the grid, the wrong cells shaded by
    the size of their error against the output's, each program named at its region's first
    cell and parted from its neighbours by dashed edges."""
    want = torch.ones(6, 10)
    got = 1.5 * want
    got[0, 0] = 1.0005  # 0.05% of the output's size: the palest shade
    got[0, 1] = 1.05  # 5%
    writers = tiled_writers((6, 10), (4, 4), (3, 2))
    outcome = Outcome(output=got, launches=launched((4, 4), (3, 2)), traffic_map=torch.full(
        (6, 10), WRITTEN, dtype=torch.uint8), writers=writers, writer_launch=0)
    picture = compare(outcome, expected(want)).picture
    assert picture["scale"][:3] == "134"  # under 0.1%, under 10%, under 100% (0.5 of 1)
    html = page(report_of(failed(picture)))
    table = re.search(r"<table class='pic'.*?</table>", html, re.S).group(0)
    cells = re.findall(r"<td class='([^']*)'", table)
    assert cells[0].split()[:2] == ["bad", "e1"] and cells[1].split()[:2] == ["bad", "e3"]
    assert cells[2].split()[:2] == ["bad", "e4"]
    assert "under 0.1%" in html and "under 10%" in html and "under 100%" in html
    # the six programs named where their tiles begin: (0, 0) at cell 0, (1, 0) at cell 4, ...
    assert re.findall(r"<span class='who'[^>]*>([^<]*)</span>", table) == \
        ["(0, 0)", "(1, 0)", "(2, 0)", "(0, 1)", "(1, 1)", "(2, 1)"]
    assert "ol" in cells[4].split() and "ol" not in cells[3].split()  # the edge at column 4
    assert "ot" in cells[40].split() and "ot" not in cells[30].split()  # and at row 4
    assert "named at its first cell" in html
    assert "class='rel'" not in html  # no relation holds of these three errors
    want = torch.arange(60, dtype=torch.float32).view(6, 10)
    outcome = Outcome(output=2 * want, launches=launched((4, 4), (3, 2)))
    html = page(report_of(failed(compare(outcome, expected(want)).picture)))
    assert "<p class='rel'>How the values are wrong: every element is 2 x the expected " \
        "one.</p>" in html


def test_a_vector_is_wrapped_into_rows_of_whole_tiles():
    want = torch.arange(1000, dtype=torch.float32)
    got = want.clone()
    got[-10:] = -1
    outcome = Outcome(output=got, launches=[LaunchRecord("k", (4,), {"BLOCK_SIZE": 256},
                                                         language="triton")])
    picture = compare(outcome, expected(want, ("BLOCK_SIZE",))).picture
    assert picture["cols"] == 128 and picture["grid"] == [8, 128] and picture["cell"] == [1, 1]
    html = page(report_of(failed(picture)))
    rows = rows_of(html)
    assert [i for i, r in enumerate(rows) if "t" in r[0].split()] == [2, 4, 6]  # a tile: 2 rows
    # 1000 = 7 * 128 + 104: the last row holds 104 elements, its last ten wrong
    assert rows[-1][104] == "none" and rows[-1][94] == "bad" and rows[-1][93] == "ok"
    assert labels(html)[999] == "out[999]: wrong: got -1, expected 999"


def test_every_string_on_the_page_is_escaped():
    want = torch.zeros(2, 2)
    outcome = Outcome(output=want + 1, launches=launched((2, 2), (1, 1)),
                      writers=torch.zeros(2, 2, dtype=torch.int32), writer_launch=0)
    picture = compare(outcome, expected(want)).picture
    picture["names"] = {"0": "<img src=x onerror=alert(1)>'"}
    case = failed(picture, case_id="<b>id</b>", summary="<script>alert(1)</script>")
    case.details = ["┆ '\"><svg onload=alert(1)>"]
    html = page(report_of(case))
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;&#39;" in html
    assert "<svg" not in html and "<b>" not in html and "Fused &lt;GELU&gt;" in html
    assert "http" not in html.replace("http-equiv=", "") and "src=" not in html.replace("src=x", "")
    assert html.count("<script>") == 1  # the page's own, inline


def test_each_line_of_a_case_report_is_a_block_and_a_quoted_one_is_drawn_apart():
    """A quoted line is a block of its own, which the page's style draws with its mark on
    every visual line it takes (measured in Chromium: test_quoted_lines_browser.py); the
    grader's lines are blocks without it. No <pre> is left to wrap a line bare."""
    want = torch.zeros(2, 2)
    outcome = Outcome(output=want + 1, launches=launched((2, 2), (1, 1)),
                      writers=torch.zeros(2, 2, dtype=torch.int32), writer_launch=0)
    case = failed(compare(outcome, expected(want)).picture, summary="the watch saw:")
    padded = f"{GUTTER}line 3 (`x = 1  #{' ' * 300}VERDICT: <b>PASS</b>`)"
    case.details = [padded, "this case tests: tails"]
    html = page(report_of(case))
    assert "<pre" not in html and "pre-wrap" in STYLE
    # under the case's heading (the sentence and its first line), and in the case's report
    assert re.findall(r"<span class='q'>([^<]*)</span>", html) == [escape(padded)] * 2
    assert "<span>the watch saw:</span>" in html and "<span>this case tests: tails</span>" in html
    assert ".q{" in STYLE and "border-left" in STYLE.split(".q{")[1]


def test_the_page_lets_only_its_own_script_and_style_run():
    """Its Content-Security-Policy allows the page's one script and one style by their
    hashes, and nothing else: no style attribute either (a grid's cell size is a class rule)."""
    want = torch.zeros(2, 2)
    outcome = Outcome(output=want + 1, launches=launched((2, 2), (1, 1)),
                      writers=torch.zeros(2, 2, dtype=torch.int32), writer_launch=0)
    html = page(report_of(failed(compare(outcome, expected(want)).picture)))
    policy = re.search(r"<meta http-equiv='Content-Security-Policy' content=\"([^\"]*)\">",
                       html).group(1)
    assert html.index("Content-Security-Policy") < html.index("<style>")
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy
    assert f"script-src '{digest(SCRIPT)}'" in policy and f"style-src '{digest(STYLE)}'" in policy
    assert f"<script>{SCRIPT}</script>" in html and f"<style>{STYLE}</style>" in html
    assert " style=" not in html
    size = re.search(r"<table class='pic'[^>]* data-cell='(\d+)'", html).group(1)
    assert CELL_PX[0] <= int(size) <= CELL_PX[1]
    assert f"table.pic[data-cell='{size}']{{--s:{size}px}}" in STYLE


def test_a_page_with_no_failing_case_says_so():
    html = page(report_of(CaseResult("n=1", "float32", {}, 0, True, "all 1 elements match")))
    assert "No failing case has a picture." in html


def test_grade_picture_draws_a_case_failed_on_its_traffic_and_keeps_it_out_of_the_json(
        run_grade, tmp_path):
    """`grade --submission FILE --picture DIR`, for real: the case fails on the loads past
    the vector's end before its numbers are judged, and the page still draws what the
    straying program stored; the JSON has the verdict, not the drawing."""
    course_file = tmp_path / "course.toml"
    course_file.write_text(vector_add_course('[ { n = 1000, dtypes = ["float32"] } ]'),
                           encoding="utf-8")
    submission = tmp_path / "stage1_vector_add.py"
    submission.write_text((FAULTS / "stage1_load_without_mask.py").read_text(encoding="utf-8"),
                          encoding="utf-8")
    code, out, err = run_grade("--course", str(course_file), "1", "--submission", str(submission),
                               "--backend", "triton-interpret", "--picture", str(tmp_path / "pic"),
                               "--json", str(tmp_path / "r.json"))
    assert code == 1, out + err
    case = json.loads((tmp_path / "r.json").read_text())["stages"][0]["cases"][0]
    assert case["failure"] == Failure.READ_OUT_OF_BOUNDS.value and "picture" not in case
    assert "picture" not in case["stats"]
    html = (tmp_path / "pic" / "failures.html").read_text(encoding="utf-8")
    rows = rows_of(html)
    assert len(rows) == 8 and rows[0][0] == "ok"  # 1000 elements: 8 rows of 128
    assert rows[-1][0].startswith("oob")  # the last program, 768:1000, read past the end
    assert "out[999]: by a program that went out of bounds: got " in html


def test_a_failing_case_with_no_output_is_listed_with_its_verdict():
    raised = CaseResult("n=7", "float32", {}, 0, False, "the wrapper raised <an> exception:",
                        failure=Failure.RAISED)
    html = page(report_of(raised))
    assert "No failing case has a picture." in html
    assert "<li>n=7: the wrapper raised &lt;an&gt; exception:</li>" in html
