"""Grading end to end on Triton's interpreter: the references pass, untouched skeletons are
NOT STARTED, and every way a submission can break is reported without a traceback."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import COURSE_FILE, ROOT, broken, schema_errors, vector_add_course

from grader.backends import selection as backends
from grader.course import load_course
from grader.grading import stages as grading
from grader.grading.request import GradingRequest
from grader.results import SCHEMA, Failure, Status
from grader.tracks import TRACKS

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "grader" / "result.schema.json"


def load_result(path):
    data = json.loads(Path(path).read_text())
    problems = schema_errors(data, json.loads(SCHEMA_FILE.read_text()))
    assert not problems, problems
    return data


@pytest.fixture(scope="module")
def solutions_run(tmp_path_factory, course):
    """One `grade all --solutions` run shared by the tests that read it."""
    from grader.cli import main

    out = tmp_path_factory.mktemp("solutions") / "result.json"
    code = main(["--course", str(course.path), "all", "--solutions",
                 "--backend", "triton-interpret", "--json", str(out)])
    return code, load_result(out)


def test_every_reference_passes_every_case(solutions_run, course):
    code, data = solutions_run
    failing = {s["id"]: [c["id"] + ": " + c["summary"] for c in s["cases"] if not c["passed"]]
               for s in data["stages"] if s["status"] != "PASS"}
    assert not failing
    assert code == 0 and data["passed"]
    assert [s["cases_passed"] for s in data["stages"]] == [len(s.cases) for s in course.stages]
    assert data["points"] == data["max_points"] == sum(s.points for s in course.stages)
    # The replay watched every load and store: a reference draws no finding at all.
    warned = [(s["id"], c["id"], c["stats"].get("traffic")) for s in data["stages"]
              for c in s["cases"] if c["stats"].get("traffic")]
    assert not warned, warned


def test_json_result_follows_the_schema(solutions_run):
    _, data = solutions_run
    assert data["schema"] == SCHEMA == json.loads(SCHEMA_FILE.read_text())["$id"]
    assert data["target"] == "solutions" and data["backend"] == "triton-interpret"
    case = data["stages"][0]["cases"][0]
    assert case["stats"]["mismatched"] == 0 and case["stats"]["total"] >= 1
    speed = data["stages"][0]["speed"]
    assert speed["graded"] is False and speed["reason"] == "needs a GPU" and speed["points"] == 0


def test_each_stage_says_where_its_time_went(solutions_run):
    """The phases of a stage (grade --profile) are in the JSON, by the grader's clock, and
    they add up to no more than the stage's own time."""
    _, data = solutions_run
    for stage in data["stages"]:
        phases = stage["phases"]
        assert {"start processes, load", "correctness cases", "end processes"} <= set(phases)
        assert all(v >= 0 for v in phases.values())
        assert sum(v for k, v in phases.items() if " / " not in k) <= stage["seconds"] + 0.05
        assert phases["correctness cases"] >= sum(c["seconds"] for c in stage["cases"]) * 0.9
        # the cases' parts, each a part of the cases' time, together no more than it
        parts = {k.partition(" / ")[2]: v for k, v in phases.items()
                 if k.startswith("correctness cases / ")}
        assert set(parts) == {"record the call", "inputs and the reference", "replay",
                              "judge the output", "pytest's own work"}
        assert sum(parts.values()) <= phases["correctness cases"] + 0.05


def test_schema_check_catches_a_broken_result(solutions_run):
    _, data = solutions_run
    schema = json.loads(SCHEMA_FILE.read_text())
    broken = json.loads(json.dumps(data))
    broken["stages"][0]["status"] = "GREAT"
    del broken["points"]
    problems = schema_errors(broken, schema)
    assert any(p.startswith("$.stages[0].status: 'GREAT'") for p in problems)
    assert "$: 'points' is a required property" in problems


def test_untouched_skeletons_are_not_started(run_grade, course, tmp_path):
    out = tmp_path / "result.json"
    code, stdout, stderr = run_grade("--course", str(course.path), "all",
                                     "--backend", "triton-interpret", "--json", str(out))
    data = load_result(out)
    assert code == 1
    assert [s["status"] for s in data["stages"]] == ["NOT STARTED"] * len(course.stages)
    assert data["points"] == 0
    assert all("fill in TODO 1" in s["message"] for s in data["stages"])
    assert "NOT STARTED" in stdout and "Traceback" not in stdout + stderr


@pytest.mark.parametrize("selector", ["stage3", "3", "softmax", "SOFTMAX"])
def test_a_stage_can_be_named_three_ways(run_grade, course, tmp_path, selector, monkeypatch):
    # Which stage is graded, not how: a stand-in grades it (the stage is graded for real in
    # the tests above and below).
    def stand_in(session, result, progress, later=()):
        result.module, result.status, result.points = "stand-in.py", Status.PASS, result.max_points
        return False  # not timed

    monkeypatch.setattr(grading, "judge_correctness", stand_in)
    out = tmp_path / "r.json"
    code, _, _ = run_grade("--course", str(course.path), selector, "--solutions",
                           "--backend", "triton-interpret", "--json", str(out))
    assert code == 0
    assert [s["id"] for s in load_result(out)["stages"]] == ["softmax"]


@pytest.mark.parametrize("args", [
    ["--backend", "triton-interpret", "1", "--solutions"],
    ["--track", "triton", "--backend=triton-interpret", "--solutions", "1"],
    ["1", "--track", "triton", "--backend", "triton-interpret", "--solutions"],
])
def test_grading_options_stand_before_or_after_the_stage(run_grade, course, tmp_path, args):
    out = tmp_path / "r.json"
    code, stdout, stderr = run_grade("--course", str(course.path), *args, "--json", str(out))
    assert code == 0, stdout + stderr
    result = load_result(out)
    assert [s["id"] for s in result["stages"]] == ["vector_add"]
    assert result["backend"] == "triton-interpret"


def test_profile_shows_where_the_time_went_after_the_scorecard(run_grade, course, monkeypatch):
    def stand_in(session, result, progress, later=()):  # a stage whose phases are known
        result.status, result.points = Status.PASS, result.max_points
        result.phases.update({"start processes, load": 1.25, "correctness cases": 1.5})
        return False  # not timed

    monkeypatch.setattr(grading, "judge_correctness", stand_in)
    code, stdout, _ = run_grade("--course", str(course.path), "1", "--solutions",
                                "--backend", "triton-interpret", "--profile")
    assert code == 0
    table = stdout[stdout.index("where the time went"):]
    assert "start processes, load" in table and "1.25" in table and "1.50" in table
    assert "rest of the stage" in table and "the whole run:" in table
    code, stdout, _ = run_grade("--course", str(course.path), "1", "--solutions",
                                "--backend", "triton-interpret")
    assert "where the time went" not in stdout  # only when asked


def test_the_help_lists_the_grading_options_and_says_what_auto_does(run_grade):
    code, stdout, _ = run_grade("--help")
    assert code == 0
    section = stdout.split("Grading options (before or after the stage")[1]
    for option in ("--backend", "--track", "--solutions", "--submission", "--seed", "--json"):
        assert option in section
    assert "cuTile where cuda-tile runs" in " ".join(section.split())


def test_a_grading_option_without_a_stage_says_to_name_one(run_grade):
    code, _, stderr = run_grade("--backend", "triton")
    assert code == 2 and "name the stages to grade too" in stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["stage9"], "There is no stage 'stage9'"),
        (["all", "--backend", "cuda"], "Invalid value for '--backend'"),
        (["all", "--backend", "triton"], "needs a CUDA GPU"),
        (["all", "--frobnicate"], "No such option"),
    ],
)
def test_usage_errors_exit_2_with_a_message(run_grade, course, args, message):
    code, out, err = run_grade("--course", str(course.path), *args)
    assert code == 2
    assert message in out + err
    assert "Traceback" not in out + err


def test_list_and_help(run_grade, course):
    code, out, _ = run_grade("--course", str(course.path), "list")
    assert code == 0 and "flash_attention" in out and "stage5" in out
    code, out, _ = run_grade("--help")
    assert code == 0 and "STAGE" in out


def test_auto_falls_back_to_the_interpreter_without_a_gpu(monkeypatch):
    import torch

    from grader.backends import selection as backends

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    selection = backends.select("auto")
    assert selection.backend.name == "triton-interpret"
    assert "no usable CUDA GPU" in selection.reason


VECTOR_ADD = (Path(__file__).resolve().parents[2] / "solutions/triton/stage1_vector_add.py").read_text()


def test_a_syntax_error_is_an_error_with_its_line(grade_source):
    result = grade_source("vector_add", VECTOR_ADD.replace("def vector_add(", "def vector_add((", 1))
    assert result.status is Status.ERROR and result.points == 0
    assert "syntax error at line" in result.message


def test_a_missing_function_is_an_error(grade_source):
    result = grade_source("vector_add", VECTOR_ADD.replace("def vector_add(", "def vector_plus(", 1))
    assert result.status is Status.ERROR
    assert "must define a function `vector_add`" in result.message


def test_an_exception_fails_the_case_and_points_at_the_line(grade_source):
    source = VECTOR_ADD.replace("    return out\n", "    raise ValueError('boom')\n", 1)
    result = grade_source("vector_add", source)
    assert result.status is Status.FAIL and result.cases_passed == 0
    line = source.splitlines().index("    raise ValueError('boom')") + 1
    # the grader's sentence, then what the wrapper raised, quoted on a line of its own (and
    # not the lesson's claims the case tests: an exception breaks none of them)
    assert result.cases[0].summary == "the wrapper raised an exception:"
    assert result.cases[0].details == [f"┆ ValueError (at vector_add_submission.py, line {line}: "
                                       "raise ValueError('boom')): boom"]


def test_wrong_dtype_and_shape_are_named(grade_source):
    result = grade_source("vector_add", VECTOR_ADD.replace("    return out\n", "    return out.float()\n"))
    half = [c for c in result.cases if c.dtype == "float16"]
    assert half and all("returned dtype float32, expected float16" in c.summary for c in half)
    assert all(c.passed for c in result.cases if c.dtype == "float32")
    assert result.status is Status.FAIL and 0 < result.points < result.max_points


def test_a_half_done_stage_is_graded_and_names_the_open_todo(grade_source):
    skeleton = (Path(__file__).resolve().parents[2] / "exercises/triton/stage1_vector_add.py").read_text()
    started = skeleton.replace("grid = ...", "grid = (triton.cdiv(n_elements, BLOCK_SIZE),)")
    result = grade_source("vector_add", started)
    assert result.status is Status.FAIL
    assert "vector_add_submission.py still unfilled: TODO 1 (lines " in result.message
    assert "TODO 2 (lines " in result.message and "TODO 3" not in result.message


# --- the checks as plain pytest (grader/checks/plugin.py) ---------------------------------


def _plain_pytest(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "grader.checks",
                           "-p", "no:cacheprovider", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_checks_run_as_plain_pytest_with_the_verdicts_grade_gives(tmp_path):
    """`pytest --pyargs grader.checks --stage 1 ...`: one item per case, each failing with
    the grader's own message, the same cases as `grade` with the same seed; speed items are
    skipped with the reason they are not graded."""
    submission = tmp_path / "exercises"
    (submission / "triton").mkdir(parents=True)
    source = broken("triton", "stage1_vector_add.py", "x + y, mask=mask)", "x + y + (offsets >= 1024), mask=mask)")
    (submission / "triton" / "stage1_vector_add.py").write_text(source)
    seed = 12345
    report = tmp_path / "junit.xml"
    run = _plain_pytest("--course", str(COURSE_FILE), "--stage", "1", "--backend",
                        "triton-interpret", f"--submission={tmp_path}", "--seed", str(seed),
                        f"--junitxml={report}", cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"seed {seed}" in run.stdout  # without -rs, the summary still says what was not graded
    assert "tilecourse: not graded: needs a GPU" in run.stdout
    cases = ElementTree.parse(report).getroot().iter("testcase")
    verdicts = {c.get("name"): [f.get("message") for f in c.iter("failure")] for c in cases}
    course = load_course(COURSE_FILE)
    graded = grading.grade(GradingRequest(course, (course.select("1"),), "triton-interpret",
                                          submission=submission, seed=seed).resolve())
    expected = {f"test_case[{c.id}]": c for c in graded.stages[0].cases}
    assert {name for name in verdicts if name.startswith("test_case")} == set(expected)
    assert any(not c.passed for c in expected.values()) and any(c.passed for c in expected.values())
    for name, case in expected.items():
        assert bool(verdicts[name]) is not case.passed, name
        if not case.passed:
            assert verdicts[name][0].startswith(f"AssertionError: {case.summary}"), name


def test_plain_pytest_reads_a_submission_as_grade_does(tmp_path):
    """A drag-and-drop upload (the stage file alone, its track told by its imports) is read
    by grader.intake.upload's rule here too; its scratch copy is gone afterwards."""
    upload = tmp_path / "upload"
    upload.mkdir()
    (upload / "stage1_vector_add.py").write_text(
        (ROOT / "solutions/cutile/stage1_vector_add.py").read_text())
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    run = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "grader.checks",
                          "-p", "no:cacheprovider", "--course", str(COURSE_FILE), "--stage",
                          "1", f"--submission={upload}", "--seed", "3"], cwd=tmp_path,
                         env={**env, "TMPDIR": str(temp)}, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    cases = len(load_course(COURSE_FILE).select("vector_add").cases)
    assert "backend cutile-sim" in run.stdout and f" {cases} passed" in run.stdout
    assert not list(temp.glob("tilecourse-submission-*"))


@pytest.mark.parametrize("args, message", [
    ((), "name the stage to check"),
    (("--stage", "9"), "There is no stage '9'"),
])
def test_plain_pytest_without_a_known_stage_is_a_usage_error(tmp_path, args, message):
    run = _plain_pytest("--course", str(COURSE_FILE), *args, cwd=tmp_path)
    assert run.returncode == 4 and message in run.stderr, run.stdout + run.stderr


def test_plain_pytest_on_untouched_exercises_says_not_started(tmp_path):
    run = _plain_pytest("--course", str(COURSE_FILE), "--stage", "2", "--backend",
                        "triton-interpret", "-x", cwd=tmp_path)
    assert run.returncode == 1 and "NOT STARTED: fill in TODO" in run.stdout, run.stdout


# --- Ctrl-C ------------------------------------------------------------------------------


@pytest.mark.parametrize("inherited, stop", [("default", "Ctrl-C"), ("ignored", "Ctrl-C"),
                                             ("default", "SIGTERM")])
def test_ctrl_c_stops_grading_at_once_and_writes_no_result(tmp_path, inherited, stop):
    """Ctrl-C while stage 2 hangs: the run stops there (no traceback, no ERROR for stage 2,
    no stage 3), shows stage 1 as graded, says it was interrupted, writes no JSON, leaves no
    process of the submission and no scratch folder behind, and exits 130. Also when `grade`
    starts with SIGINT ignored, as a background job of a non-interactive shell does: Python
    would keep it ignored. SIGTERM (Slurm's scancel, `timeout`) stops it the same way."""
    submission = tmp_path / "exercises" / "triton"
    submission.mkdir(parents=True)
    for name in ("stage1_vector_add.py", "stage3_softmax.py"):
        (submission / name).write_text((ROOT / "solutions/triton" / name).read_text())
    hang = broken("triton", "stage2_fused_gelu.py", "    return out\n",
                  "    while 'hang-token-2417':\n        pass\n    return out\n")
    (submission / "stage2_fused_gelu.py").write_text(hang)
    result, scratch = tmp_path / "result.json", tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["TMPDIR"] = str(scratch)
    process = subprocess.Popen(
        [sys.executable, "-m", "grader", "--course", str(COURSE_FILE), "1", "2", "3",
         "--backend", "triton-interpret", f"--submission={tmp_path}", "--json", str(result)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        if inherited == "ignored" else None)
    seen = []
    for line in process.stdout:  # not a terminal: one line as each stage starts
        seen.append(line)
        if line.startswith("grading stage2"):
            break
    time.sleep(3)  # inside the hanging call
    start = time.monotonic()
    assert list(scratch.glob("tilecourse-*"))  # the grading's own, while it runs
    process.send_signal(signal.SIGINT if stop == "Ctrl-C" else signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    out = "".join(seen) + out
    assert process.returncode == 130, out + err
    assert time.monotonic() - start < 20
    assert f"interrupted ({stop}) while grading stage2 fused_gelu" in out
    assert "1 of 3 stages graded; no result files were written" in out
    assert "vector_add" in out and "softmax" not in out.split("interrupted")[0].split("grading stage2")[1]
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err
    assert not result.exists() and not list(scratch.iterdir())
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and _mentions(pid, "hang-token")]


def test_sigterm_is_the_grade_commands_only_while_it_runs(run_grade):
    """`grade` stops on SIGTERM as on Ctrl-C while it runs; a process that called it (the
    test suite, a notebook) has its own handler back afterwards."""
    def own(signum, frame):
        pass

    before = signal.signal(signal.SIGTERM, own)
    try:
        code, out, _ = run_grade("list")
        assert code == 0 and "vector_add" in out
        assert signal.getsignal(signal.SIGTERM) is own
    finally:
        signal.signal(signal.SIGTERM, before)


def _mentions(pid: str, token: str) -> bool:
    try:
        return token in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False


# --- a hang costs one time limit ----------------------------------------------------------


@pytest.mark.parametrize("keep_going", [False, True])
def test_after_a_case_times_out_the_rest_of_the_stage_is_not_run(grade_source, keep_going):
    """An endless loop in the wrapper: the first case times out, and the other two are "not
    run" at once, naming it (one limit, not three); --keep-going runs each to its limit."""
    source = broken("triton", "stage1_vector_add.py", "    return out\n",
                    "    while True:\n        pass\n    return out\n")
    three = vector_add_course('[ { n = 1000, dtypes = ["float32"] }, { n = 5, dtypes = '
                              '["float32"] }, { n = 4097, dtypes = ["float32"] } ]')
    start = time.monotonic()
    result = grade_source("vector_add", source, course_toml=three, timeout=2,
                          keep_going=keep_going)
    took = time.monotonic() - start
    first, *rest = result.cases
    assert len(rest) == 2 and first.failure is Failure.TIMED_OUT
    if keep_going:
        assert all(c.failure is Failure.TIMED_OUT for c in rest)
        assert took > 3 * 2
    else:
        assert all(c.failure is Failure.NOT_RUN for c in rest)
        assert all(c.summary.startswith(f"not run: an earlier case ({first.id}) timed out")
                   for c in rest)
        assert took < 3 * 2  # one limit, with time to spare for the start


def test_auto_grades_the_track_the_student_started(run_grade, course, tmp_path):
    """Only the cuTile exercise of stage 1 is filled in: `auto` grades the cuTile track (here,
    without a GPU, on the simulator) and says why, instead of NOT STARTED on Triton."""
    folder = tmp_path / "exercises"
    (folder / "cutile").mkdir(parents=True)
    (folder / "cutile" / "stage1_vector_add.py").write_text(
        (ROOT / "solutions/cutile/stage1_vector_add.py").read_text())
    out = tmp_path / "r.json"
    code, stdout, stderr = run_grade("--course", str(course.path), "1",
                                     f"--submission={tmp_path}", "--json", str(out))
    result = load_result(out)
    assert code == 0, stdout + stderr
    assert result["backend"] == "cutile-sim"
    assert "the cutile track: the only track whose exercises are started" in result["backend_reason"]


def test_a_tie_between_started_tracks_goes_to_the_first_of_the_tracks(course, tmp_path):
    """Stage 1 started on both tracks: the first track in grader.tracks.TRACKS is graded,
    and the reason names that order (not the course's, which has none of tracks)."""
    for track in TRACKS:
        (tmp_path / track).mkdir()
        (tmp_path / track / "stage1_vector_add.py").write_text(
            (ROOT / f"solutions/{track}/stage1_vector_add.py").read_text())
    first, other = list(TRACKS)
    choice = GradingRequest(course, tuple(course.stages), submission=tmp_path).choose_track(
        tmp_path)
    assert choice.track == first
    assert choice.why.startswith("as many stages started as the other, and first in the "
                                 f"tracks' order ({first}, {other}); also started, not "
                                 f"graded: {other}: vector_add (`--track {other}` grades it)")


# --- the grader's own failures: one stage's ERROR, never the run's end --------------------


def test_an_exception_in_the_grader_is_that_stages_error_and_the_run_goes_on(
        run_grade, tmp_path, monkeypatch):
    """Something in the grader breaks while stage 1 is graded (here, matching its hints):
    stage 1 is ERROR, saying what broke in one line, stage 2 is still graded, and the
    results are written."""
    calls = []

    def broken_hints(*args):
        calls.append(args)
        raise RuntimeError("hint table broke\nsecond line")

    monkeypatch.setattr(grading, "matching_hints", broken_hints)
    monkeypatch.setenv("COLUMNS", "400")  # the scorecard's lines unwrapped
    submission = tmp_path / "exercises" / "triton"
    submission.mkdir(parents=True)
    (submission / "stage1_vector_add.py").write_text(VECTOR_ADD)  # stage 2 is not there
    result = tmp_path / "r.json"
    code, out, err = run_grade("--course", str(COURSE_FILE), "1", "2", "--backend",
                               "triton-interpret", f"--submission={tmp_path}",
                               "--json", str(result))
    first, second = load_result(result)["stages"]
    assert code == 1 and len(calls) == 1
    assert first["status"] == "ERROR" and first["points"] == 0
    assert first["message"].startswith("the grader failed while grading ")
    assert "RuntimeError: hint table broke (test_grading.py, line" in first["message"]
    assert "second line" not in first["message"]
    assert second["status"] == "NOT STARTED" and "is not in the submission" in second["message"]
    assert "Traceback" not in out + err, out + err
    assert "RuntimeError: hint table broke" in out


def test_a_check_that_breaks_on_a_hidden_case_keeps_the_case_to_itself(
        grade_source, tmp_path, monkeypatch):
    """The grader's check breaks while judging a hidden case: the stage is ERROR naming the
    case and the exception's type, never its text, which could hold the case's inputs."""
    from conftest import vector_add_course

    from grader.judge.stage import StageCheck

    judged = StageCheck._judged

    def judge(self, case, seed):
        if case.hidden:
            raise ValueError(f"cannot compare shape ({case.params['n']},)")
        return judged(self, case, seed)

    monkeypatch.setattr(StageCheck, "_judged", judge)
    (tmp_path / "course.hidden.toml").write_text(
        'seed = 5\n[[stages]]\nid = "vector_add"\ncases = [ { n = 7919, dtypes = ["float32"] } ]\n')
    result = grade_source("vector_add", VECTOR_ADD,
                          course_toml=vector_add_course('[ { n = 1000, dtypes = ["float32"] } ]'))
    assert result.status is Status.ERROR
    withheld = "case hidden1-float32: ValueError (its text is withheld: a hidden case)"
    assert withheld in result.message
    assert "7919" not in result.message and "Traceback" not in result.message


def test_ctrl_c_while_reading_a_submission_still_stops_the_run(course, interpret, monkeypatch):
    """Only exceptions become a stage's ERROR: Ctrl-C stops grading as it always did."""
    def interrupted(*args):
        raise KeyboardInterrupt

    from grader.grading import session

    monkeypatch.setattr(session, "read_submission", interrupted)
    with pytest.raises(grading.Interrupted):
        grading.grade(GradingRequest(course, (course.select("vector_add"),),
                                     interpret.backend.name).resolve())
