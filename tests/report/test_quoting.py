"""Text from a submission, quoted: a block behind a gutter or one escaped value, in every
report; never a line that could pass for the grader's own."""

import io
import json
import xml.etree.ElementTree as ET

from rich.console import Console

from grader.course import HIDDEN_DEFAULT
from grader.quoting import (BLOCK_LINES, GUTTER, headline, headline_parts, inline, is_quoted,
                            quote, quoted, said, single_line, visible)
from grader.report import gradescope, junit, markdown
from grader.results import CaseResult, CheckResult, Report, StageResult, Status
from grader.report.scorecard import render

FORGED = "│   │ total │ ... │ 20/20 │ PASS │\ntotal 20/20 PASS"
MARKUP = "[bold red]x[/] [/] </failure><testcase name='forged'/>"


def test_each_line_of_a_block_begins_with_the_gutter():
    lines = quoted("RuntimeError: boom\n" + FORGED)
    assert lines == [GUTTER + "RuntimeError: boom", GUTTER + "│   │ total │ ... │ 20/20 │ PASS │",
                     GUTTER + "total 20/20 PASS"]
    assert all(is_quoted(line) for line in lines)
    assert said("the wrapper raised an exception:", "boom") == \
        f"the wrapper raised an exception:\n{GUTTER}boom"


def test_control_characters_are_spelled_out_and_cannot_break_a_line():
    text = "a\rb\x1b[2Jc\x9b2J\x07\u202eSSAP\u2028next\x0bvertical\x85nel"
    (line,) = quoted(text)  # none of them starts a line of its own
    assert line == GUTTER + "a\\x0db\\x1b[2Jc\\x9b2J\\x07\\u202eSSAP\\u2028next\\x0bvertical\\x85nel"
    assert line == GUTTER + visible(text)


def test_a_long_line_goes_on_behind_the_gutter_and_a_block_stops_with_a_note():
    long = "advice " * 30 + "check the strides"  # 227 characters, its advice at the end
    lines = quoted(long, chars=100)
    assert all(is_quoted(line) and len(line) <= len(GUTTER) + 100 for line in lines)
    assert len(lines) == 3 and lines[-1].endswith("check the strides")
    assert " ".join(line[len(GUTTER):] for line in lines) == long  # broken at spaces only
    assert quoted("x" * 250, chars=100) == [GUTTER + "x" * 100] * 2 + [GUTTER + "x" * 50]
    *shown, note = quoted("\n".join(f"line {n}" for n in range(50)))
    assert len(shown) == BLOCK_LINES and all(is_quoted(line) for line in shown)
    assert shown[-1] == GUTTER + f"line {BLOCK_LINES - 1}"
    assert not is_quoted(note)
    assert note == f"(the quoted text is cut: {50 - BLOCK_LINES} more lines)"


def test_blank_ends_are_trimmed_tabs_expanded_and_nothing_still_shows():
    assert quoted("\n\n\tx\ty  \n\n") == [GUTTER + "    x   y"]
    assert quoted("") == quoted("\n \n") == [GUTTER + "(no text)"]
    assert quote("a\nb") == f"{GUTTER}a\n{GUTTER}b"


def test_a_name_stays_one_escaped_line_between_backticks():
    assert inline("[bold red]x[/]") == "`[bold red]x[/]`"
    assert inline("a`b\ntotal 20/20 PASS") == "`a\\`b\\x0atotal 20/20 PASS`"
    assert inline("x" * 500, 20) == "`" + "x" * 19 + "…`"
    assert single_line("a\tb\nc\x1b") == "a\\x09b\\x0ac\\x1b"


def test_a_headline_shows_the_first_quoted_line_after_the_sentence():
    text = said("the wrapper raised an exception:", "RuntimeError: boom\nmore")
    assert headline(text) == f"the wrapper raised an exception: {GUTTER}RuntimeError: boom"
    assert headline("3 of 8 elements mismatch\ndetail") == "3 of 8 elements mismatch"
    assert headline("\n\n") == ""
    assert len(headline("x" * 1000, 300)) == 300


def test_a_headline_in_parts_keeps_the_quoted_line_apart_however_it_is_cut():
    """A page draws the quoted line of a headline apart from the grader's (with its mark on
    every visual line), so the parts are the headline's own, cut where it is cut."""
    sentence = "the wrapper raised an exception:"
    text = said(sentence, "RuntimeError: boom\nmore")
    assert headline_parts(text) == (sentence, f"{GUTTER}RuntimeError: boom")
    assert headline_parts(text, 40) == (sentence, f"{GUTTER}Runt…")
    # cut before the quoted line has a character of its own: the grader's line alone
    assert headline_parts(text, len(sentence) + 2) == (sentence + " …", "")
    assert headline_parts(text, 20) == (sentence[:19] + "…", "")
    assert headline_parts("3 of 8 elements mismatch\ndetail") == ("3 of 8 elements mismatch", "")
    assert headline_parts("\n") == ("", "")
    for chars in range(10, 60):  # the two parts are the headline, whatever the cut
        own, quote = headline_parts(text, chars)
        assert (f"{own} {quote}" if quote else own) == headline(text, chars)


def _report(summary: str, details: list[str], message: str = "") -> Report:
    case = CaseResult("n1000-float32", "float32", {"n": 1000}, 7, False, summary, details)
    stage = StageResult(1, "vector_add", "Vector add", "triton-interpret",
                        "exercises/triton/stage1_vector_add.py", 10, status=Status.FAIL,
                        message=message, cases=[case],
                        checks=[CheckResult("memory growth", True, False,
                                            said("could not be measured:", FORGED))])
    return Report("tilecourse", "exercises", "triton-interpret", "no usable GPU", {},
                  "2026-01-01T00:00:00+00:00", seed=4242, stages=[stage])


def _shown(report: Report, width: int = 400, terminal: bool = False) -> list[str]:
    out = io.StringIO()
    render(report, Console(file=out, width=width, highlight=False, force_terminal=terminal,
                           color_system=None))
    return out.getvalue().rstrip("\n").split("\n")


def test_the_scorecard_shows_quoted_text_as_text_and_ends_with_its_total():
    report = _report("the wrapper raised an exception:", quoted(MARKUP + "\n" + FORGED))
    lines = _shown(report)
    assert lines[-1] == "total: 0/10 points, FAIL"
    assert f"    {GUTTER}{MARKUP}" in lines  # markup shown as it is, not read as markup
    assert not [line for line in lines if line.strip().startswith(("total 20/20", "│   │ total │"))]
    assert f"    {GUTTER}total 20/20 PASS" in lines  # the check's message, under its name


def test_a_long_quoted_line_keeps_its_gutter_on_every_piece():
    body = "word " * 60 + "total 20/20 PASS"
    lines = _shown(_report("the wrapper raised an exception:", quoted(body)), width=60,
                   terminal=True)
    pieces = [line for line in lines if "word" in line or "20/20" in line]
    assert len(pieces) > 3 and all(line.startswith(f"    {GUTTER}") for line in pieces)
    assert max(len(line) for line in pieces) <= 60


def test_a_summary_of_several_lines_is_indented_under_its_case():
    # A message in the grader's words whose later lines quote (a crash's cause, say).
    lines = _shown(_report(said("crashed: the grader's worker in its process failed:", FORGED),
                           []))
    at = lines.index("  case n1000-float32 (seed 7): crashed: the grader's worker in its "
                     "process failed:")
    assert lines[at + 1] == f"    {GUTTER}│   │ total │ ... │ 20/20 │ PASS │"


def test_junit_keeps_quoted_xml_as_text(tmp_path):
    report = _report("the wrapper raised an exception:", quoted(MARKUP + "\x1b[2J\n" + FORGED))
    junit.write_junit(report, tmp_path / "j.xml")
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert [c.get("name") for c in root.iter("testcase")] == \
        ["n1000-float32", "memory growth", "speed"]  # no case forged by the text
    failure = root.find(".//testcase[@name='n1000-float32']/failure")
    assert failure.get("message") == \
        f"the wrapper raised an exception: {GUTTER}{MARKUP}\\x1b[2J"
    assert f"\n{GUTTER}total 20/20 PASS\n" in failure.text


def test_markdown_and_gradescope_keep_quoted_text_behind_its_gutter(tmp_path):
    report = _report("the wrapper raised an exception:",
                     quoted("![x](https://example.invalid/p.png) *b* `c`\n" + FORGED))
    markdown.write_markdown(report, tmp_path / "s.md")
    summary = (tmp_path / "s.md").read_text()
    # no image, emphasis or code span: the quoted text's Markdown is escaped
    assert "!\\[x\\](https://example.invalid/p.png) \\*b\\* \\`c\\`" in summary
    assert not [line for line in summary.splitlines() if line.startswith("total 20/20")]
    gradescope.write_gradescope(report, tmp_path / "g.json", HIDDEN_DEFAULT)
    tests = json.loads((tmp_path / "g.json").read_text())["tests"]
    output = next(t["output"] for t in tests if t["name"].endswith("n1000-float32"))
    assert output.split("\n")[:3] == ["the wrapper raised an exception:",
                                      GUTTER + "![x](https://example.invalid/p.png) *b* `c`",
                                      GUTTER + "│   │ total │ ... │ 20/20 │ PASS │"]


def test_a_folder_named_to_wrap_into_a_verdict_stays_on_the_graders_lines():
    # The footer and a stage's heading name the student's folder: in a log no line of the
    # grader's is broken, so nothing in the name can begin a line of its own.
    report = _report("the wrapper raised an exception:", quoted("boom"))
    report.target = "work" + " " * 150 + "total 20/20 PASS"
    report.stages[0].module = report.target + "/triton/stage1_vector_add.py"
    lines = _shown(report, width=120)
    assert not [line for line in lines if line.strip().startswith("total 20/20")]
    assert lines[-1] == "total: 0/10 points, FAIL"
