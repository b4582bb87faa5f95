"""The exports (JUnit XML, Gradescope results.json, Markdown) of a hand-built Report.

No kernels run: the Report holds one stage of each kind that an export must tell apart:
passed, failed (with a hidden case), not started, errored, zeroed by a failed check, speed
graded with a slow case, and speed and a check that were not graded.
"""

import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from rich.console import Console

from grader.course import HIDDEN_DEFAULT
from grader.report import gradescope as gradescope_export
from grader.report import junit as junit_export
from grader.report import markdown as markdown_export
from grader.results import (CaseResult, CheckResult, Report, SpeedCase, SpeedResult,
                                   StageResult, Status)
from grader.report.scorecard import render
from grader.quoting import visible

# What a hidden case must never reveal, in any export.
SECRETS = ("SECRETPARAM", "31337", "HIDDENSUMMARY", "HIDDENDETAIL", "4242")
HIDDEN_ID = "hidden1-float32"
NOT_STARTED_MESSAGE = "fill in TODO 1, 2 in exercises/triton/stage3_softmax.py"
ERROR_MESSAGE = "the grader's checks could not run (pytest exit 3).\nTraceback: boom"


def case(id, passed, summary="max abs error 0", hidden=False, **params):
    return CaseResult(id=id, dtype="float32", params=params or {"n": 100}, seed=7,
                      passed=passed, summary=summary, seconds=0.25, hidden=hidden)


def speed_case(id, passed):
    summary = "0.1 ms vs torch 0.2 ms: 2.00x" if passed else "0.5 ms vs torch 0.2 ms: too slow"
    return SpeedCase(id=id, dtype="float32", params={"n": 4096}, passed=passed,
                     summary=summary, ms=0.5, baseline="torch", baseline_ms=0.2)


def hidden_case():
    result = case(HIDDEN_ID, False, "HIDDENSUMMARY max abs error 3", hidden=True,
                  n=31337, secret="SECRETPARAM")
    result.details = ["HIDDENDETAIL at index 4242"]
    result.seed = 4242
    return result


def stage(number, id, status, max_points, points=0.0, **fields):
    return StageResult(number=number, id=id, title=id, backend="triton-interpret",
                       module=f"exercises/triton/stage{number}_{id}.py", max_points=max_points,
                       status=status, points=points, seconds=1.5, **fields)


def not_graded_speed():
    return SpeedResult(False, "needs a GPU")


def build_report():
    failing = case("n4097-float32", False, "max abs error 0.5 at index 7\x1b[31m red\x1b[0m\x00",
                   n=4097)
    failing.details = ["expected 1.0, got 1.5"]
    stages = [
        stage(1, "vector_add", Status.PASS, 10, 10.0,
              cases=[case("n100-float32", True), case("n200-float32", True)],
              speed=not_graded_speed()),
        stage(2, "fused_gelu", Status.FAIL, 10, 2.0, speed=not_graded_speed(),
              message="exercises/triton/stage2_fused_gelu.py has 1 unfilled TODO",
              cases=[case("n1-float32", True), failing, hidden_case(),
                     case("n5-float32", False, "wrong shape B"),
                     case("n6-float32", False, "wrong shape C")]),
        stage(3, "softmax", Status.NOT_STARTED, 15, message=NOT_STARTED_MESSAGE),
        stage(4, "matmul", Status.ERROR, 20, message=ERROR_MESSAGE),
        # Speed graded: 5 points over 3 cases, one too slow -> round(5 * 2/3, 2) = 3.33.
        stage(5, "layernorm", Status.PASS, 10, 10.0,
              cases=[case(f"n{i}-float32", True) for i in range(3)],
              checks=[CheckResult("memory growth", True, True, "extra GPU memory grew 0 B")],
              speed=SpeedResult(True, "2/3 speed cases fast enough", 3.33, 5,
                                [speed_case("s1", True), speed_case("s2", False),
                                 speed_case("s3", True)])),
        stage(6, "flash_attention", Status.PASS, 20, 20.0, cases=[case("q64-float32", True)],
              checks=[CheckResult("memory growth", False, False, "not graded: needs a GPU")],
              speed=not_graded_speed()),
        # Every case right, but the graded memory check failed: the stage scores 0.
        stage(7, "reduction", Status.FAIL, 10, 0.0, speed=not_graded_speed(),
              cases=[case("n1-float32", True), case("n2-float32", True)],
              checks=[CheckResult("memory growth", True, False, "extra GPU memory grew 4 MB")]),
    ]
    return Report(course="tilecourse", target="exercises", backend="triton-interpret",
                  backend_reason="no usable CUDA GPU", started_at="2025-01-02T03:04:05+00:00",
                  machine={"python": "3.11.9", "torch": "2.5.1", "triton": "3.2.0",
                           "cuda_tile": None, "gpu": None, "cuda": None},
                  seed=1234, seconds=12.5, stages=stages)


@pytest.fixture
def report():
    return build_report()


# ----------------------------------------------------------------------------- JUnit


@pytest.fixture
def junit(report, tmp_path):
    path = tmp_path / "nested" / "dir" / "junit.xml"  # parent folders are created
    junit_export.write_junit(report, path)
    return path


def junit_cases(root, stage_id):
    return {c.get("name"): c for c in root.iter("testcase")
            if c.get("classname") == f"tilecourse.{stage_id}"}


def outcome(testcase):
    children = [c.tag for c in testcase if c.tag in ("failure", "error", "skipped")]
    assert len(children) <= 1, children
    return children[0] if children else "passed"


def test_junit_counts_match_the_junit_cases(junit):
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 7
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for suite in suites:
        cases = suite.findall("testcase")
        counts = {"tests": len(cases),
                  **{key: sum(outcome(c) == tag for c in cases)
                     for key, tag in (("failures", "failure"), ("errors", "error"),
                                      ("skipped", "skipped"))}}
        for key, value in counts.items():
            assert int(suite.get(key)) == value, (suite.get("name"), key)
            totals[key] += value
    for key, value in totals.items():
        assert int(root.get(key)) == value, key
    assert totals == {"tests": 25, "failures": 6, "errors": 1, "skipped": 6}


def test_junit_outcomes(junit):
    root = ET.parse(junit).getroot()
    assert {n: outcome(c) for n, c in junit_cases(root, "vector_add").items()} == {
        "n100-float32": "passed", "n200-float32": "passed", "speed": "skipped"}
    gelu = junit_cases(root, "fused_gelu")
    assert outcome(gelu["n1-float32"]) == "passed"
    assert outcome(gelu["n4097-float32"]) == outcome(gelu[HIDDEN_ID]) == "failure"
    failure = gelu["n4097-float32"].find("failure")
    assert failure.get("message").startswith("max abs error 0.5 at index 7")
    assert "expected 1.0, got 1.5" in failure.text and "n=4097" in failure.text

    (softmax,) = junit_cases(root, "softmax").values()
    assert softmax.get("name") == "softmax"  # NOT STARTED: skipped, never a failure in CI
    assert outcome(softmax) == "skipped"
    assert softmax.find("skipped").get("message") == f"not started: {NOT_STARTED_MESSAGE}"
    (matmul,) = junit_cases(root, "matmul").values()
    error = matmul.find("error")
    assert error.get("message") == "the grader's checks could not run (pytest exit 3)."
    assert "Traceback: boom" in error.text

    layernorm = junit_cases(root, "layernorm")
    assert [outcome(layernorm[f"speed s{i}"]) for i in (1, 2, 3)] == ["passed", "failure", "passed"]
    assert outcome(layernorm["memory growth"]) == "passed"

    flash = junit_cases(root, "flash_attention")
    for name in ("speed", "memory growth"):
        assert flash[name].find("skipped").get("message") == "not graded: needs a GPU"
    assert outcome(junit_cases(root, "reduction")["memory growth"]) == "failure"


def test_junit_suite_names_and_properties(junit, report):
    root = ET.parse(junit).getroot()
    for suite, stage in zip(root.findall("testsuite"), report.stages, strict=True):
        assert suite.get("name") == f"stage{stage.number} {stage.id} [triton-interpret]"
        props = {p.get("name"): p.get("value") for p in suite.find("properties")}
        assert props["backend"] == "triton-interpret" and props["seed"] == "1234"
        assert float(props["points"]) == stage.total_points
        assert float(props["max_points"]) == stage.total_max_points
        assert suite.get("timestamp") == "2025-01-02T03:04:05"


def test_junit_hidden_case_reveals_nothing(junit):
    text = junit.read_text(encoding="utf-8")
    for secret in SECRETS:
        assert secret not in text, secret
    hidden = junit_cases(ET.parse(junit).getroot(), "fused_gelu")[HIDDEN_ID]
    assert hidden.find("failure").get("message") == "hidden case failed"
    assert hidden.find("failure").text == "hidden case failed"


def test_junit_drops_characters_xml_cannot_hold(junit):
    data = junit.read_bytes()
    assert b"\x00" not in data and b"\x1b" not in data
    assert data.startswith(b"<?xml version='1.0' encoding='utf-8'?>")
    assert "index 7 red" in data.decode("utf-8")


# The structure rules of the JUnit XSD (Jenkins' junit-10.xsd) that hold for our output.
NUMERIC = {"testsuites": ("tests", "failures", "errors", "skipped", "time"),
           "testsuite": ("tests", "failures", "errors", "skipped", "time"),
           "testcase": ("time",)}
REQUIRED = {"testsuites": ("name", "tests"), "testsuite": ("name", "tests"),
            "testcase": ("name", "classname", "time"), "failure": ("message",),
            "error": ("message",), "property": ("name", "value")}
CHILDREN = {"testsuites": {"testsuite"},
            "testsuite": {"properties", "testcase", "system-out", "system-err"},
            "testcase": {"failure", "error", "skipped", "system-out", "system-err", "properties"},
            "properties": {"property"}, "failure": set(), "error": set(), "skipped": set(),
            "property": set(), "system-out": set(), "system-err": set()}


def test_junit_follows_the_schema_structure(junit):
    root = ET.parse(junit).getroot()
    seen = set()
    for element in root.iter():
        seen.add(element.tag)
        assert element.tag in CHILDREN, element.tag
        for child in element:
            assert child.tag in CHILDREN[element.tag], (element.tag, child.tag)
        for name in REQUIRED.get(element.tag, ()):
            assert element.get(name), (element.tag, name)
        for name in NUMERIC.get(element.tag, ()):
            assert re.fullmatch(r"\d+(\.\d+)?", element.get(name)), (element.tag, name)
        if element.tag == "testsuite":  # properties first, as the schema's sequence says
            assert element[0].tag == "properties"
    assert {"failure", "error", "skipped", "property"} <= seen


# ----------------------------------------------------------------------------- Gradescope


VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}


@pytest.fixture
def gradescope(report, tmp_path):
    path = tmp_path / "results" / "results.json"
    gradescope_export.write_gradescope(report, path, HIDDEN_DEFAULT)
    return json.loads(path.read_text(encoding="utf-8"))


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def stage_tests(results, number):
    return [t for t in results["tests"] if t["number"].split(".")[0] == str(number)]


def test_gradescope_follows_the_spec(gradescope):
    assert is_number(gradescope["score"]) and is_number(gradescope["execution_time"])
    assert isinstance(gradescope["output"], str)
    assert gradescope["stdout_visibility"] in VISIBILITIES
    assert "max_score" not in gradescope
    assert isinstance(gradescope["tests"], list) and gradescope["tests"]
    numbers = [t["number"] for t in gradescope["tests"]]
    assert len(set(numbers)) == len(numbers)
    for test in gradescope["tests"]:
        assert isinstance(test["name"], str) and test["name"]
        assert re.fullmatch(r"\d+\.\d+", test["number"])
        assert is_number(test["score"]) and is_number(test["max_score"])
        assert test["status"] in ("passed", "failed")
        assert isinstance(test["output"], str)
        assert test["visibility"] in VISIBILITIES
        assert isinstance(test["tags"], list) and all(isinstance(t, str) for t in test["tags"])


def test_gradescope_scores_add_up(gradescope, report):
    assert gradescope["score"] == report.points == 45.33
    assert sum(t["score"] for t in gradescope["tests"]) == pytest.approx(report.points, abs=1e-6)
    for test in gradescope["tests"]:
        assert test["max_score"] >= test["score"] >= 0, test
    for stage in report.stages:
        tests = stage_tests(gradescope, stage.number)
        assert sum(t["score"] for t in tests) == pytest.approx(stage.total_points, abs=1e-6)
        assert sum(t["max_score"] for t in tests) == pytest.approx(stage.total_max_points, abs=1e-6)


@pytest.mark.parametrize("total", range(1, 12))
@pytest.mark.parametrize("max_points", [1, 7, 10, 12.5])
def test_gradescope_rounding_remainders(tmp_path, total, max_points):
    """Every pass count of every case count: the tests sum exactly, none below 0 or above max."""
    for passed in range(total + 1):
        s = stage(1, "vector_add", Status.PASS if passed == total else Status.FAIL, max_points,
                  cases=[case(f"c{i}", i < passed) for i in range(total)])
        s.conclude(total)
        report = Report("c", "exercises", "triton", "", {}, "now", stages=[s])
        gradescope_export.write_gradescope(report, tmp_path / "r.json", HIDDEN_DEFAULT)
        tests = json.loads((tmp_path / "r.json").read_text())["tests"]
        assert sum(t["score"] for t in tests) == pytest.approx(s.points, abs=1e-6)
        assert sum(t["max_score"] for t in tests) == pytest.approx(max_points, abs=1e-6)
        assert all(t["max_score"] >= t["score"] >= 0 for t in tests)
        assert all(t["score"] == 0 for t in tests if t["status"] == "failed")


def test_gradescope_hidden_case(gradescope):
    (hidden,) = [t for t in gradescope["tests"] if HIDDEN_ID in t["name"]]
    assert hidden["visibility"] == "after_published"
    assert hidden["output"] == "hidden case failed"
    assert hidden["status"] == "failed" and hidden["score"] == 0
    text = json.dumps(gradescope)
    for secret in SECRETS:
        assert secret not in text, secret
    visible = [t for t in gradescope["tests"] if HIDDEN_ID not in t["name"]]
    assert all(t["visibility"] == "visible" for t in visible)


def test_gradescope_stages_that_did_not_run(gradescope):
    (softmax,) = stage_tests(gradescope, 3)
    (matmul,) = stage_tests(gradescope, 4)
    assert (softmax["score"], softmax["max_score"], softmax["status"]) == (0, 15, "failed")
    assert (matmul["score"], matmul["max_score"], matmul["status"]) == (0, 20, "failed")
    assert NOT_STARTED_MESSAGE in softmax["output"]
    assert "Traceback: boom" in matmul["output"]


def test_gradescope_leaves_out_what_was_not_graded(gradescope):
    names = [t["name"] for t in stage_tests(gradescope, 6)]
    assert names == ["stage6 flash_attention: q64-float32"]  # no speed, no memory growth
    assert not any("speed" in t["name"] for t in stage_tests(gradescope, 1))
    output = gradescope["output"]
    assert "stage6 flash_attention: speed: not graded: needs a GPU" in output
    assert "stage6 flash_attention: memory growth: not graded: needs a GPU" in output
    assert "softmax: speed" not in output  # a stage that never ran has no speed to skip


def test_gradescope_speed_and_checks(gradescope):
    tests = {t["name"].split(": ", 1)[1]: t for t in stage_tests(gradescope, 5)}
    assert [tests[f"speed s{i}"]["status"] for i in (1, 2, 3)] == ["passed", "failed", "passed"]
    assert tests["speed s2"]["score"] == 0
    assert sum(tests[f"speed s{i}"]["score"] for i in (1, 2, 3)) == pytest.approx(3.33)
    assert (tests["memory growth"]["max_score"], tests["memory growth"]["status"]) == (0, "passed")

    zeroed = {t["name"].split(": ", 1)[1]: t for t in stage_tests(gradescope, 7)}
    assert zeroed["memory growth"]["status"] == "failed"
    assert all(zeroed[c]["score"] == 0 and zeroed[c]["max_score"] == 5
               for c in ("n1-float32", "n2-float32"))
    assert "memory growth" in zeroed["n1-float32"]["output"]


# ----------------------------------------------------------------------------- Markdown


@pytest.fixture
def markdown(report, tmp_path):
    path = tmp_path / "summary" / "step.md"
    markdown_export.write_markdown(report, path)
    return path.read_text(encoding="utf-8")


def test_markdown_table(markdown, report):
    assert markdown.startswith("## tilecourse: 45.33/100 points, FAIL\n")
    lines = markdown.splitlines()
    assert "| # | Stage | Backend | Cases | Speed | Points | Status |" in lines
    for stage in report.stages:
        rows = [line for line in lines if line.startswith(f"| {stage.number} | {stage.id} |")]
        assert len(rows) == 1, stage.id
        assert rows[0].endswith(f"| {stage.status.value} |")
        assert len(rows[0].split(" | ")) == 7  # no stray pipe broke the row
    assert "| 2 | fused_gelu | triton-interpret | 1/5 | not graded: needs a GPU | 2/10 | FAIL |" \
        in lines
    assert "| 3 | softmax | triton-interpret | - | - | 0/15 | NOT STARTED |" in lines
    assert "| 5 | layernorm | triton-interpret | 3/3 | 3.33/5 | 13.33/15 | PASS |" in lines


def test_markdown_failures(markdown):
    assert "case `n4097-float32`: max abs error 0.5 at index 7 red" in markdown
    assert f"case `{HIDDEN_ID}`: hidden case failed" in markdown
    assert "wrong shape B" in markdown and "wrong shape C" not in markdown  # 3 shown
    assert "... and 1 more" in markdown
    assert NOT_STARTED_MESSAGE.replace("_", "\\_") in markdown  # rendered as it was
    assert "the grader's checks could not run (pytest exit 3)." in markdown
    assert "speed `s2`: 0.5 ms vs torch 0.2 ms: too slow" in markdown  # a PASS stage, slow
    assert "memory growth: extra GPU memory grew 4 MB" in markdown
    assert "**stage1 vector_add" not in markdown and "**stage6" not in markdown
    for secret in SECRETS:
        assert secret not in markdown, secret
    assert "\x1b" not in markdown and "\x00" not in markdown


def test_markdown_quotes_no_emphasis_from_a_submission(tmp_path):
    """What a submission raised reaches a CI job's summary as text: `__x__` and `*x*` are
    not bold, a backtick opens no code span, brackets make no link."""
    from grader.report.markdown import write_markdown

    report = build_report()
    forged = "__All cases PASS__ *20/20* `ok` [link](http://example.com)"
    [failing] = [c for s in report.stages for c in s.cases if c.id == "n4097-float32"]
    failing.summary = forged
    write_markdown(report, tmp_path / "s.md")
    text = (tmp_path / "s.md").read_text()
    assert "\\_\\_All cases PASS\\_\\_ \\*20/20\\* \\`ok\\` \\[link\\](http://example.com)" in text
    assert "__All" not in text


def test_markdown_how_it_was_graded(markdown):
    last = markdown.strip().splitlines()[-1]
    assert "seed 1234" in last and "`--seed 1234`" in last
    assert "`triton-interpret`" in last and "torch 2.5.1" in last and "no GPU" in last


# ----------------------------------------------------------------------------- the scorecard


def test_visible_spells_out_what_could_drive_a_terminal():
    assert visible("a\x1b[2J\rb\x9b\u202e\x7f\x00") == "a\\x1b[2J\\x0db\\x9b\\u202e\\x7f\\x00"
    assert visible("one\n\ttwo") == "one\n\ttwo"
    assert visible("one\n\ttwo", lines=False) == "one\\x0a\\x09two"
    assert visible("[bold red]x[/] é 日本") == "[bold red]x[/] é 日本"
    # A lone surrogate encodes in no UTF-8 output; a pair of them as one character is fine.
    assert visible("a\ud800b\udfff 😀") == "a\\ud800b\\udfff 😀"


def test_the_scorecard_shows_a_submissions_text_as_text(report):
    """Markup, escape codes and a NUL from a submission (its error, what it printed, the
    name of its folder) reach the terminal spelled out, and the real verdicts stay."""
    report.stages[3].message = "raised [/] \x1b[2J[bold green]10/10 PASS"  # matmul: ERROR
    report.stages[1].output = "\x1b[1A\x1b[2K| 2 | fused_gelu | 10/10 | PASS |\n"
    report.target = "subs/[/]mallory"
    console = Console(file=io.StringIO(), record=True, width=200)
    render(report, console, verbose=True)
    shown = console.export_text()
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", shown)
    assert "raised [/] \\x1b[2J[bold green]10/10 PASS" in shown
    assert "max abs error 0.5 at index 7\\x1b[31m red\\x1b[0m\\x00" in shown
    assert "  stage2 | \\x1b[1A\\x1b[2K| 2 | fused_gelu | 10/10 | PASS |" in shown
    assert "graded subs/[/]mallory/" in shown
    assert re.search(r"│ 4 │ matmul .*│ ERROR\s*│", shown)


@pytest.mark.parametrize("visibility", ["after_due_date", "after_published", "hidden"])
def test_gradescope_hidden_cases_follow_the_class_policy(report, tmp_path, visibility):
    path = tmp_path / "results.json"
    gradescope_export.write_gradescope(report, path, visibility)
    tests = json.loads(path.read_text(encoding="utf-8"))["tests"]
    (hidden,) = [t for t in tests if HIDDEN_ID in t["name"]]
    assert hidden["visibility"] == visibility
    assert {t["visibility"] for t in tests if t is not hidden} == {"visible"}


def test_the_leaderboard_is_opt_in_and_holds_only_timed_stages(report, tmp_path):
    """[policy] leaderboard = true: each stage whose speed was timed is an entry, the
    geometric mean of its shown cases' speed-ups; a stage not timed has none, and without
    the opt-in there is no leaderboard."""
    timed = next(s for s in report.stages if s.speed.graded)
    for c, up in zip(timed.speed.cases, (2.0, 0.5, 8.0)):
        c.speedup = up
    path = tmp_path / "results.json"
    gradescope_export.write_gradescope(report, path, HIDDEN_DEFAULT)
    assert "leaderboard" not in json.loads(path.read_text())
    gradescope_export.write_gradescope(report, path, HIDDEN_DEFAULT, leaderboard=True)
    board = json.loads(path.read_text())["leaderboard"]
    assert board == [{"name": "stage5 layernorm speed-up", "value": 2.0, "order": "desc"}]


@pytest.mark.parametrize("target,shown", [("exercises", "graded exercises/ in"),
                                          ("stage2_fused_gelu.py", "graded stage2_fused_gelu.py in"),
                                          ("hw3.zip", "graded hw3.zip in")])
def test_the_scorecard_names_what_it_graded_as_the_student_named_it(report, target, shown):
    report.target = target
    console = Console(file=io.StringIO(), record=True, width=300)
    render(report, console)
    assert shown in console.export_text()
