"""A term's class in `grade batch`: Gradescope's bulk export and its metadata, regrades that
keep every other row, what changed graded again, --limit and --keep-going, the class's
fixed denominators, and the class policy of course.toml (due date, late penalty,
resubmission limit, hidden cases)."""

import csv
import json
import os
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import GELU_STAGE, ROOT, vector_add_course

from grader.course import HIDDEN_DEFAULT, LatePenalty, Policy, load_course
from grader.errors import CourseError, GradeError
from grader.grading.request import GradingRequest
from grader.grading.session import NEEDS_CORRECTNESS
from grader.instructor import (batch, export, gradebook, isolation, regrade, roster,
                               submissions)
from grader.results import CaseResult, Report, SpeedResult, StageResult, Status

EXPORT = Path(__file__).parent / "gradescope_export"
TRITON_ADD = "triton/stage1_vector_add.py"
POLICY = """
[policy]
due = 2026-12-18T23:59:00-08:00
max_submissions = 2
hidden_cases = "after_due_date"

[policy.late]
percent_per_day = 10
max_percent = 30
grace_minutes = 15
"""


def _course(tmp_path: Path, extra: str = "") -> object:
    root = tmp_path / "course"
    root.mkdir()
    shutil.copytree(ROOT / "exercises", root / "exercises",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "course.toml").write_text(
        vector_add_course('[ { n = 1000, dtypes = ["float32"] } ]', GELU_STAGE + extra),
        encoding="utf-8")
    return load_course(root / "course.toml")


def _rows(out: Path) -> dict[str, dict]:
    with (out / "gradebook.csv").open(encoding="utf-8-sig", newline="") as handle:
        return {r["student"]: r for r in csv.DictReader(handle)}


def _export(tmp_path: Path) -> Path:
    copy = tmp_path / "export"
    shutil.copytree(EXPORT, copy)
    return copy


# --- Gradescope's bulk export ---------------------------------------------------------------


def test_the_bulk_export_names_each_submission_by_its_submitters(tmp_path):
    course = _course(tmp_path)
    found = submissions.entries(course, [_export(tmp_path)])
    by_name = {e.name: e for e in found}
    # SIDs (a group's joined), else the email: the same across exports and resubmissions.
    assert set(by_name) == {"12345", "34567+23456", "mika.virtanen@example.edu"}
    jose = by_name["12345"]
    assert jose.source.name == "submission_2571001"
    assert jose.meta.submitters[0].name == "José Núñez 李"
    assert jose.meta.created_at == datetime(2026, 12, 18, 23, 41, 7, 512093,
                                            tzinfo=timezone(timedelta(hours=-8)))
    assert jose.meta.submissions == 3  # two in its :history:, and this one
    assert by_name["34567+23456"].meta.submissions == 1
    # One submission of the export named alone keeps its name and metadata.
    [alone] = submissions.entries(course, [jose.source])
    assert (alone.name, alone.meta) == ("12345", jose.meta)


def test_unreadable_metadata_is_a_clear_error(tmp_path):
    copy = _export(tmp_path)
    (copy / export.METADATA).write_text("submission_1: [unclosed\n", encoding="utf-8")
    with pytest.raises(GradeError, match="submission_metadata.yml cannot be read as "
                                         "Gradescope's submission metadata.*Export the"):
        submissions.entries(_course(tmp_path), [copy])


def test_a_bulk_export_yields_named_rows_with_late_work(tmp_path, run_grade, monkeypatch):
    """Graded for real (the smallest stage, on the CPU): one student's own file, one not
    started, one not a submission; names, emails and SIDs reach the gradebook."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(isolation.tempfile, "tempdir", str(temp))
    course = _course(tmp_path, POLICY)
    copy = _export(tmp_path)
    (copy / "submission_2571001" / TRITON_ADD).write_text(
        (ROOT / "solutions" / TRITON_ADD).read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, _ = run_grade("--course", str(course.path), "batch", str(copy), "--out",
                                str(out), "--backend", "triton-interpret", "--seed", "3")
    assert code == 0, stdout
    raw = (out / "gradebook.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and "José Núñez 李".encode() in raw
    rows = _rows(out)
    assert set(rows) == {"12345", "34567+23456", "mika.virtanen@example.edu"}
    jose = rows["12345"]
    assert (jose["name"], jose["email"], jose["sid"]) == ("José Núñez 李", "jnunez@example.edu",
                                                          "12345")
    assert jose["status"] == "graded" and float(jose["vector_add"]) == 10
    assert (jose["correctness"], jose["correctness max"]) == ("10", "20")
    assert jose["speed"] == jose["speed max"] == "" and jose["graded on"] == "CPU"
    assert (jose["total"], jose["total max"]) == ("10", "20")
    assert jose["submitted at"] == "2026-12-18T23:41:07-08:00"
    assert jose["submitted from"] == "Gradescope metadata"
    assert (jose["days late"], jose["late penalty %"], jose["total after penalty"]) == (
        "0", "0", "10")
    assert (jose["submissions"], jose["counted"]) == ("3", "Gradescope history")
    assert jose["over limit"] == "3 of at most 2"
    group = rows["34567+23456"]
    # 32 hours late: two days begun, 10% each; a name that is a formula stays text.
    assert (group["days late"], group["late penalty %"]) == ("2", "20")
    assert group["name"].startswith("'=HYPERLINK(") and group["name"].endswith("; Ann Lee")
    assert group["sid"] == "34567; 23456"
    mika = rows["mika.virtanen@example.edu"]
    assert mika["status"] == "not a submission" and mika["name"] == "Mika Virtanen"
    assert mika["days late"] == "0"
    roster = json.loads((out / "roster.json").read_text(encoding="utf-8"))
    assert roster["12345"]["names"] == ["José Núñez 李"]
    # José handed in no GELU file: the grading process saw the handout's skeleton in its place.
    gelu = json.loads((out / "students" / "12345.json").read_text(encoding="utf-8"))["stages"][1]
    assert gelu["status"] == "NOT STARTED"
    assert gelu["message"].startswith("stage2_fused_gelu.py is not in the submission")


def test_a_time_from_file_times_is_shown_but_never_made_late(tmp_path, monkeypatch):
    """File times are the student's to set (a zip keeps whatever times its members were
    given): a submission timed by them is shown with its time, but has no days late and
    loses nothing. The same time from Gradescope's metadata is late."""
    course = _course(tmp_path, POLICY)
    monkeypatch.setattr(batch, "run_isolated",
                        _fake_grader(course, {"good": {"vector_add": 10.0}}))
    subs = _class(tmp_path, {"ada": "good"})
    week_late = datetime(2026, 12, 25, tzinfo=timezone.utc).timestamp()
    os.utime(subs / "ada" / TRITON_ADD, (week_late, week_late))
    out = tmp_path / "out"
    found = submissions.entries(course, [subs])
    roster.update_roster(out, found)
    request = GradingRequest(course, course.stages, "triton-interpret", seed=3)
    batch.run(found, out, request, 1, [], 60)
    gradebook.write_gradebook(course, out, found)
    row = _rows(out)["ada"]
    assert (row["submitted at"], row["submitted from"]) == ("2026-12-25T00:00:00+00:00",
                                                            "file times")
    assert (row["days late"], row["late penalty %"]) == ("", "")
    assert row["total after penalty"] == row["total"] == "10"

    kept = json.loads((out / "roster.json").read_text(encoding="utf-8"))
    kept["ada"]["submitted_from"] = roster.FROM_METADATA
    (out / "roster.json").write_text(json.dumps(kept), encoding="utf-8")
    gradebook.write_gradebook(course, out, found)
    row = _rows(out)["ada"]  # six days begun past the due date, 10% each, at most 30%
    assert (row["days late"], row["late penalty %"], row["total after penalty"]) == (
        "6", "30", "7")


# --- regrades -----------------------------------------------------------------------------


def _result(course, points: dict[str, float], gpu: str | None = None,
            speed: dict[str, SpeedResult] | None = None) -> dict:
    """A result JSON as `grade all --json` writes one."""
    stages = []
    for stage in course.stages:
        got = points.get(stage.id)
        result = StageResult(stage.number, stage.id, stage.title, "triton-interpret",
                             f"exercises/{stage.modules['triton']}", stage.points)
        if got is None:
            result.status, result.message = Status.NOT_STARTED, "not started"
        else:
            result.cases = [CaseResult("c", "float32", {}, 0, got == stage.points, "")]
            result.conclude(1)
        result.speed = (speed or {}).get(stage.id, SpeedResult(False, "not graded: no GPU"))
        stages.append(result)
    report = Report(course.title, "exercises", "triton-interpret", "", {"gpu": gpu}, "now",
                    seed=3, stages=stages)
    return report.to_json()


def _fake_grader(course, scores: dict[str, dict], commands: list | None = None):
    """A stand-in for the `grade all` process: writes the result `scores` gives the
    submission whose folder is graded (by the word its stage file holds)."""
    def fake_run(command, log, env, cwd, limit, stop=None):
        if commands is not None:
            commands.append(command)
        text = (cwd / "exercises" / TRITON_ADD).read_text()
        word = text.split("#", 1)[1].split()[0] if "#" in text[:3] else "skeleton"
        path = Path(command[command.index("--json") + 1])
        path.write_text(json.dumps(_result(course, scores.get(word, {}))))
        return 0

    return fake_run


def _class(tmp_path: Path, words: dict[str, str]) -> Path:
    subs = tmp_path / "subs"
    for name, word in words.items():
        (subs / name / "triton").mkdir(parents=True, exist_ok=True)
        (subs / name / TRITON_ADD).write_text(f"# {word}\nimport triton\n")
    return subs


def test_a_regrade_keeps_every_other_row_and_finds_what_changed(tmp_path, run_grade,
                                                               monkeypatch):
    course = _course(tmp_path)
    scores = {"good": {"vector_add": 10.0, "fused_gelu": 10.0}, "half": {"vector_add": 10.0},
              "worse": {"vector_add": 0.0}}
    monkeypatch.setattr(batch, "run_isolated", _fake_grader(course, scores))
    subs = _class(tmp_path, {"ada": "good", "bob": "half", "cy": "half"})
    out = tmp_path / "out"
    args = ("--course", str(course.path), "batch", "--out", str(out), "--backend",
            "triton-interpret", "--seed", "3")
    code, stdout, _ = run_grade(*args, str(subs))
    assert code == 0 and "graded 3 now" in stdout
    before = _rows(out)
    assert before["ada"]["total"] == "20" and before["bob"]["total"] == "10"
    assert before["ada"]["submitted from"] == "file times" and before["ada"]["submitted at"]

    # One student named alone (a late upload, say): the other rows stay.
    code, stdout, _ = run_grade(*args, str(subs / "bob"), "--force")
    assert code == 0 and "graded 1 now" in stdout
    assert _rows(out) == before

    # --only regrades one, even unchanged; nothing else is graded.
    code, stdout, _ = run_grade(*args, str(subs), "--only", "cy")
    assert "graded 1 now (2 already had results)" in stdout
    # Unchanged files are not graded again; a resubmission is.
    code, stdout, _ = run_grade(*args, str(subs))
    assert "graded 0 now (3 already had results)" in stdout
    (subs / "bob" / TRITON_ADD).write_text("# worse\nimport triton\n")
    code, stdout, _ = run_grade(*args, str(subs))
    assert "grading 1 of 3 submissions (1 changed since their result)" in stdout
    after = _rows(out)
    assert after["bob"]["total"] == "0" and after["bob"]["submissions"] == "2"
    assert after["bob"]["counted"] == "changed files graded"
    assert {n: after[n] for n in ("ada", "cy")} == {n: before[n] for n in ("ada", "cy")}
    intake = gradebook.read_intake(out, "bob")
    assert intake.digest.startswith("files:") and len(intake.digest) == 6 + 64
    assert intake.versions == 2

    code, _, err = run_grade(*args, str(subs), "--only", "nobody")
    assert code == 2 and "--only nobody: no submission of that name" in err


def test_a_change_to_the_handout_is_not_a_new_submission(tmp_path, monkeypatch):
    """The digest is of the stage files a submission gives, not of the handout's files laid
    under them: a new skeleton or README leaves every result standing; a change to the
    student's own file is still graded again."""
    course = _course(tmp_path)
    monkeypatch.setattr(batch, "run_isolated",
                        _fake_grader(course, {"good": {"vector_add": 10.0}}))
    subs = _class(tmp_path, {"ada": "good"})
    out = tmp_path / "out"
    found = submissions.entries(course, [subs])
    request = GradingRequest(course, course.stages, "triton-interpret", seed=3)
    batch.run(found, out, request, 1, [], 60)
    (course.root / "exercises" / "triton" / "stage2_fused_gelu.py").write_text("# new\n")
    (course.root / "exercises" / "README.md").write_text("A new handout.\n")
    plan = regrade.plan(course, found, out, force=False)
    assert plan.todo == [] and plan.unchanged == 1
    (subs / "ada" / TRITON_ADD).write_text("# worse\nimport triton\n")
    assert regrade.plan(course, found, out, force=False).changed == ["ada"]


def test_a_change_past_the_resubmission_limit_is_not_graded(tmp_path, monkeypatch):
    course = _course(tmp_path, "\n[policy]\nmax_submissions = 1\n")
    scores = {"good": {"vector_add": 10.0}, "worse": {"vector_add": 0.0}}
    monkeypatch.setattr(batch, "run_isolated", _fake_grader(course, scores))
    subs = _class(tmp_path, {"ada": "good"})
    out = tmp_path / "out"
    found = submissions.entries(course, [subs])
    request = GradingRequest(course, course.stages, "triton-interpret", seed=3)
    batch.run(regrade.plan(course, found, out, force=False).todo, out, request, 1, [], 60)
    (subs / "ada" / TRITON_ADD).write_text("# worse\nimport triton\n")
    plan = regrade.plan(course, found, out, force=False)
    assert plan.todo == [] and plan.held == ["ada"]
    assert "the last result stands" in regrade.held_note("ada", 1)
    gradebook.write_gradebook(course, out, found)
    row = _rows(out)["ada"]
    assert row["total"] == "10" and row["submissions"] == "1"
    assert row["over limit"] == "changed after 1 graded version; not graded again"


def test_a_digest_an_older_grader_took_is_graded_again_without_counting(tmp_path, monkeypatch):
    """A digest of the whole laid-out folder (an older grader's) cannot tell whether the files
    changed: the student is graded again, not held by the limit, and no version is added."""
    course = _course(tmp_path, "\n[policy]\nmax_submissions = 1\n")
    monkeypatch.setattr(batch, "run_isolated", _fake_grader(course, {"good": {"vector_add": 10.0}}))
    subs = _class(tmp_path, {"ada": "good"})
    out = tmp_path / "out"
    found = submissions.entries(course, [subs])
    request = GradingRequest(course, course.stages, "triton-interpret", seed=3)
    batch.run(found, out, request, 1, [], 60)
    intake = gradebook.read_intake(out, "ada")
    intake.digest = "0" * 64  # the older form: no "files:" before it
    batch.write_intake(out, "ada", intake)
    plan = regrade.plan(course, found, out, force=False)
    assert plan.todo == found and plan.held == []
    batch.run(plan.todo, out, request, 1, [], 60)
    again = gradebook.read_intake(out, "ada")
    assert again.versions == 1 and again.digest.startswith("files:")
    assert regrade.plan(course, found, out, force=False).unchanged == 1


def test_two_submissions_of_one_name_are_both_graded_under_names_of_their_own(tmp_path,
                                                                               run_grade):
    """Results are keyed by a name the grader gives: two folders' 'ada's would overwrite each
    other's results, so the second, in the order of their paths, is 'ada-2', said."""
    course = _course(tmp_path)
    for folder in ("a", "b"):
        (tmp_path / folder / "ada" / "triton").mkdir(parents=True)
        (tmp_path / folder / "ada" / TRITON_ADD).write_text("# x\n")
    code, out, err = run_grade("--course", str(course.path), "batch", str(tmp_path / "a"),
                               str(tmp_path / "b"), "--out", str(tmp_path / "out"),
                               "--backend", "triton-interpret")
    said = " ".join(out.split())
    assert f"{tmp_path / 'b' / 'ada'}: its results are named 'ada-2' (another submission is " \
        "named 'ada')" in said, out + err
    assert set(_rows(tmp_path / "out")) == {"ada", "ada-2"}


@pytest.mark.parametrize("names", [("alice", "alice.intake"), ("alice.intake",)])
def test_a_name_that_would_write_over_another_students_record_is_renamed(tmp_path, run_grade,
                                                                         names):
    """A submission named 'alice.intake' would write its result as alice.intake.json, alice's
    intake record (her submission count gone, then the gradebook unreadable), or be read as
    the record of an 'alice' who never handed in: its results are named 'alice-intake', and
    the class is graded (the name stopped the whole class once)."""
    course = _course(tmp_path)
    for name in names:
        (tmp_path / "class" / name / "triton").mkdir(parents=True)
        (tmp_path / "class" / name / TRITON_ADD).write_text("# x\n")
    code, out, err = run_grade("--course", str(course.path), "batch", str(tmp_path / "class"),
                               "--out", str(tmp_path / "out"), "--backend", "triton-interpret")
    assert "its results are named 'alice-intake' (a result named alice.intake.json would be " \
        "the intake record of 'alice')" in " ".join(out.split()), out + err
    assert set(_rows(tmp_path / "out")) == {n.replace(".", "-") for n in names}
    renamed = tmp_path / "out/students/alice-intake.intake.json"  # its record, under its name
    assert json.loads(renamed.read_text())["track"] == "triton"


def test_a_name_that_is_not_utf8_text_is_graded_under_a_name_of_text(tmp_path, run_grade):
    """A student folder named with a byte no UTF-8 text holds (0xff) cannot name a file of
    results: the roster's write failed with a traceback and nobody in the class was graded,
    then the class was refused. The bytes become U+FFFD, said, and everyone is graded."""
    course = _course(tmp_path)
    classroom = tmp_path / "class"
    for name in (b"bad\xffname", b"sue"):
        folder = os.path.join(os.fsencode(classroom), name, b"triton")
        os.makedirs(folder)
        with open(os.path.join(folder, b"stage1_vector_add.py"), "w") as handle:
            handle.write("# x\n")
    code, out, err = run_grade("--course", str(course.path), "batch", str(classroom),
                               "--out", str(tmp_path / "out"), "--backend", "triton-interpret")
    assert "bad\\udcffname: its results are named 'bad\ufffdname' (its name is not UTF-8 " \
        "text)" in " ".join(out.split()), out + err
    assert set(_rows(tmp_path / "out")) == {"bad\ufffdname", "sue"}
    assert "Traceback" not in out + err


def test_an_upload_that_holds_an_export_of_its_own_is_one_student(tmp_path, run_grade):
    """A student's upload with its own submission_metadata.yml and submission_NNNN/ folder,
    named alone for a regrade (`grade batch export/submission_NNNN`), was read as a whole
    export: another student's result overwritten with 0, the forged name and time shown and
    trusted for lateness. Named from inside an export, it is that export's student."""
    course = _course(tmp_path, POLICY)
    copy = _export(tmp_path)
    jose = copy / "submission_2571001"
    (jose / export.METADATA).write_text(
        "submission_7:\n  :submitters:\n  - :name: Forged Name\n    :sid: '34567'\n"
        "  :created_at: 2026-12-01 10:00:00.000000000 -08:00\n", encoding="utf-8")
    (jose / "submission_7" / "triton").mkdir(parents=True)
    (jose / "submission_7" / TRITON_ADD).write_text("# nothing\n")
    [alone] = submissions.entries(course, [jose])
    assert alone.name == "12345" and alone.source == jose
    assert alone.meta.submitters[0].name == "José Núñez 李"


def test_limit_keeps_the_stages_graded_before_it(tmp_path, monkeypatch):
    course = _course(tmp_path)

    def slow(command, log, env, cwd, limit, stop=None):  # the first stage finished, the second did not
        data = _result(course, {"vector_add": 10.0})
        data["stages"] = data["stages"][:1]
        Path(command[command.index("--json-so-far") + 1]).write_text(json.dumps(data))
        raise subprocess.TimeoutExpired(command, limit)

    monkeypatch.setattr(batch, "run_isolated", slow)
    subs = _class(tmp_path, {"ada": "good"})
    out = tmp_path / "out"
    request = GradingRequest(course, course.stages, "triton-interpret", seed=3)
    [graded] = batch.run(submissions.entries(course, [subs]), out, request, 1, [], 30)
    assert graded.json_path == out / "students" / "ada.json" and not graded.error
    data = json.loads(graded.json_path.read_text())
    first, second = data["stages"]
    assert first["status"] == "PASS" and first["total_points"] == 10
    assert second["status"] == "ERROR" and "(--limit 30 s) before this stage" in second["message"]
    assert data["points"] == 10 and data["passed"] is False
    assert not list((out / "students").glob("*.so-far"))
    batch.write_gradebook(course, out, [])
    row = _rows(out)["ada"]
    assert row["total"] == "10" and row["total max"] == "20"
    assert "fused_gelu: not graded: the submission's time ran out" in row["error"]

    def nothing(command, log, env, cwd, limit, stop=None):
        raise subprocess.TimeoutExpired(command, limit)

    monkeypatch.setattr(batch, "run_isolated", nothing)
    [graded] = batch.run(submissions.entries(course, [subs]), out, request, 1, [], 30)
    assert graded.json_path is None and "before its first stage finished" in graded.error


def test_limit_keeps_a_later_stage_that_finished_first_in_the_courses_order(tmp_path,
                                                                            monkeypatch):
    """On a GPU a stage finishes once its speed is timed, after every stage's cases: the
    second stage (not timed) can finish before the first (timed)."""
    course = _course(tmp_path)

    def slow(command, log, env, cwd, limit, stop=None):
        data = _result(course, {"vector_add": 10.0, "fused_gelu": 10.0})
        data["stages"] = data["stages"][1:]
        Path(command[command.index("--json-so-far") + 1]).write_text(json.dumps(data))
        raise subprocess.TimeoutExpired(command, limit)

    monkeypatch.setattr(batch, "run_isolated", slow)
    subs = _class(tmp_path, {"ada": "good"})
    request = GradingRequest(course, course.stages, "triton-interpret", seed=3)
    [graded] = batch.run(submissions.entries(course, [subs]), tmp_path / "out", request, 1,
                         [], 30)
    data = json.loads(graded.json_path.read_text())
    assert [(s["id"], s["status"]) for s in data["stages"]] == [("vector_add", "ERROR"),
                                                                ("fused_gelu", "PASS")]
    assert data["points"] == 10


NOT_HANDED_IN = ("stage2_fused_gelu.py is not in the submission, so the handout's untouched "
                 "skeleton was graded: fill in its TODOs and submit it")


def test_a_stage_file_not_handed_in_is_named_so(tmp_path, monkeypatch):
    """The grading process reads the folder laid out for it, where every stage file is (the
    handout's skeleton for one not handed in): the batch still tells a student that the
    file was not in their submission, and leaves a skeleton they handed in alone."""
    course = _course(tmp_path)
    monkeypatch.setattr(batch, "run_isolated",
                        _fake_grader(course, {"good": {"vector_add": 10.0}}))
    subs = _class(tmp_path, {"ada": "good", "bob": "good"})
    gelu = "triton/stage2_fused_gelu.py"
    shutil.copy(course.root / "exercises" / gelu, subs / "bob" / gelu)
    out = tmp_path / "out"
    request = GradingRequest(course, course.stages, "triton-interpret", seed=3)
    batch.run(submissions.entries(course, [subs]), out, request, 1, [], 60)

    def second_stage(name: str) -> dict:
        return json.loads((out / "students" / f"{name}.json").read_text())["stages"][1]

    assert (second_stage("ada")["status"], second_stage("ada")["message"]) == (
        "NOT STARTED", NOT_HANDED_IN)
    assert second_stage("bob")["message"] == "not started"  # the grading's own words
    batch.write_feedback_files(out, [])
    assert NOT_HANDED_IN in (out / "students" / "ada.md").read_text(encoding="utf-8")

    def out_of_time(command, log, env, cwd, limit, stop=None):  # both stages finished, then the limit
        Path(command[command.index("--json-so-far") + 1]).write_text(
            json.dumps(_result(course, {"vector_add": 10.0})))
        raise subprocess.TimeoutExpired(command, limit)

    monkeypatch.setattr(batch, "run_isolated", out_of_time)
    [graded] = batch.run(submissions.entries(course, [subs / "ada"]), out, request, 1, [], 30)
    assert graded.json_path and second_stage("ada")["message"] == NOT_HANDED_IN


def test_the_stages_kept_past_the_limit_name_the_students_own_files(tmp_path, monkeypatch):
    """The grading process records its stages as they end in the paths of its own scratch
    folder: what is kept of them past --limit names the student's files, as a result does."""
    course = _course(tmp_path)

    def out_of_time(command, log, env, cwd, limit, stop=None):
        data = _result(course, {"vector_add": 0.0})
        data["stages"] = data["stages"][:1]
        inner = cwd / "tilecourse-submission-x" / "exercises"
        data["stages"][0]["module"] = f"{inner}/{TRITON_ADD}"
        data["stages"][0]["message"] = f"wrong output of {inner}/{TRITON_ADD}"
        Path(command[command.index("--json-so-far") + 1]).write_text(json.dumps(data))
        raise subprocess.TimeoutExpired(command, limit)

    monkeypatch.setattr(batch, "run_isolated", out_of_time)
    subs = _class(tmp_path, {"ada": "good"})
    out = tmp_path / "out"
    request = GradingRequest(course, course.stages, "triton-interpret", seed=3)
    [graded] = batch.run(submissions.entries(course, [subs]), out, request, 1, [], 30)
    first = json.loads(graded.json_path.read_text())["stages"][0]
    assert first["module"] == f"exercises/{TRITON_ADD}"
    assert first["message"] == f"wrong output of exercises/{TRITON_ADD}"


def test_keep_going_reaches_each_grading_process(tmp_path, run_grade, monkeypatch):
    course = _course(tmp_path)
    commands: list = []
    monkeypatch.setattr(batch, "run_isolated", _fake_grader(course, {}, commands))
    subs = _class(tmp_path, {"ada": "good"})
    code, _, _ = run_grade("--course", str(course.path), "batch", str(subs), "--out",
                           str(tmp_path / "out"), "--backend", "triton-interpret",
                           "--keep-going")
    assert code == 0 and "--keep-going" in commands[0]


# --- the gradebook's denominators -------------------------------------------------------------


def test_every_student_on_one_gpu_has_the_same_denominators(tmp_path):
    """Speed counts for every stage the class's GPU times, whatever a student started; on
    the CPU it is blank (a number or nothing, for an LMS), never 0."""
    course = _course(tmp_path)
    course = course.__class__(**{**course.__dict__, "stages": tuple(
        s.__class__(**{**s.__dict__, "speed": _speed(5)}) for s in course.stages)})
    out = tmp_path / "out"
    (out / "students").mkdir(parents=True)
    fast = {"vector_add": SpeedResult(True, "", 5.0, 5.0)}
    waiting = {"vector_add": SpeedResult(False, NEEDS_CORRECTNESS),
               "fused_gelu": SpeedResult(False, NEEDS_CORRECTNESS)}
    results = {"ada": _result(course, {"vector_add": 10.0}, "H200", {**waiting, **fast}),
               "bob": _result(course, {}, "H200", waiting),
               "cy": _result(course, {"vector_add": 10.0})}
    for name, data in results.items():
        (out / "students" / f"{name}.json").write_text(json.dumps(data))
    gradebook.write_gradebook(course, out, [])
    rows = _rows(out)
    assert [rows[n]["speed max"] for n in ("ada", "bob")] == ["10", "10"]
    assert [rows[n]["total max"] for n in ("ada", "bob")] == ["30", "30"]
    assert (rows["ada"]["speed"], rows["ada"]["total"]) == ("5", "15")
    assert (rows["bob"]["speed"], rows["bob"]["total"]) == ("0", "0")
    assert rows["bob"]["not started"] == "vector_add fused_gelu"
    assert rows["ada"]["graded on"] == "H200" and rows["cy"]["graded on"] == "CPU"
    assert rows["cy"]["speed"] == rows["cy"]["speed max"] == ""
    assert rows["cy"]["total max"] == "20"


def _speed(points: float):
    from grader.course import Speed

    return Speed(points, "torch", (), {}, seconds=0.1)


# --- class policy ---------------------------------------------------------------------------


def test_lateness_counts_begun_days_after_the_grace_period_up_to_the_cap():
    due = datetime(2026, 12, 18, 23, 59, tzinfo=timezone.utc)
    policy = Policy(due, LatePenalty(percent_per_day=10, max_percent=25, grace_minutes=15))
    assert policy.lateness(due + timedelta(minutes=15)).percent == 0
    assert policy.lateness(due + timedelta(minutes=16)).days == 1
    assert policy.lateness(due + timedelta(hours=25)).percent == 20
    assert policy.lateness(due + timedelta(days=9)).percent == 25
    assert policy.lateness(None).percent == 0 and Policy().lateness(due).days == 0


@pytest.mark.parametrize("policy, message", [
    ("[policy]\ndue = 2026-12-18T23:59:00\n",
     "policy.due: 2026-12-18T23:59:00 has no time zone; add the offset"),
    ('[policy]\ndue = "2026-12-18"\n', "policy.due: expected a date and time with its offset"),
    ("[policy.late]\npercent_per_day = 10\n", "policy.late: a late penalty counts from a due"),
    ("[policy]\ndue = 2026-12-18T23:59:00Z\n[policy.late]\ngrace_minutes = 5\n",
     "policy.late.percent_per_day: give the percent of the total taken off per day late"),
    ('[policy]\nhidden_cases = "never"\n', "policy.hidden_cases: unknown hidden_cases 'never'; "
                                           "known: 'after_due_date', 'after_published', 'hidden'"),
    ("[policy]\nmax_submissions = 0\n", "policy.max_submissions: must be at least 1"),
    ("[policy]\ndue = 2026-12-18T23:59:00Z\n[policy.late]\npercent_per_day = 120\n",
     "policy.late.percent_per_day: must be at most 100"),
    ("[policy]\ndue = 2026-12-18T23:59:00Z\n[policy.late]\npercent = 5\n",
     "policy.late.percent: unknown key; expected one of: percent_per_day"),
])
def test_policy_errors_name_the_key_and_the_fix(tmp_path, policy, message):
    with pytest.raises(CourseError) as caught:
        _course(tmp_path, "\n" + policy)
    assert message in str(caught.value)


def test_the_policy_is_read(tmp_path):
    policy = _course(tmp_path, POLICY).policy
    assert policy.due == datetime(2026, 12, 18, 23, 59, tzinfo=timezone(timedelta(hours=-8)))
    assert policy.late == LatePenalty(10, 30, 15) and policy.max_submissions == 2
    assert policy.hidden_cases == "after_due_date"


@pytest.mark.parametrize("extra", ["", "\n[policy]\nmax_submissions = 2\n"])
def test_hidden_cases_are_shown_after_publishing_unless_the_policy_says(tmp_path, extra):
    """Without [policy], or without its hidden_cases, one default: Gradescope's
    after_published."""
    assert HIDDEN_DEFAULT == "after_published" and Policy().hidden_cases == HIDDEN_DEFAULT
    assert _course(tmp_path, extra).policy.hidden_cases == HIDDEN_DEFAULT


def test_grade_writes_hidden_cases_as_the_policy_says(tmp_path, run_grade, monkeypatch):
    """The Gradescope autograder's results.json: a hidden case's test is shown when the
    course's [policy] hidden_cases says."""
    from grader.cli import run as cli_run

    course = _course(tmp_path, '\n[policy]\nhidden_cases = "after_due_date"\n')
    stage = StageResult(1, "vector_add", "Vector add", "triton-interpret",
                        f"exercises/{TRITON_ADD}", 10,
                        cases=[CaseResult("hidden1-float32", "float32", {}, 0, False, "wrong",
                                          hidden=True)])
    stage.conclude(1)
    report = Report(course.title, "exercises", "triton-interpret", "", {"gpu": None}, "now",
                    stages=[stage])
    monkeypatch.setattr(cli_run.grading, "grade", lambda grading, progress: report)
    results = tmp_path / "results.json"
    run_grade("--course", str(course.path), "all", "--backend", "triton-interpret",
              "--gradescope", str(results))
    (test,) = json.loads(results.read_text(encoding="utf-8"))["tests"]
    assert test["visibility"] == "after_due_date"


def test_grading_rewrites_the_stages_so_far_after_each_stage(tmp_path, run_grade):
    """What `grade batch` keeps when --limit ends a submission: `grade all --json-so-far`
    holds every stage finished, whole."""
    course = _course(tmp_path)
    so_far = tmp_path / "so-far.json"
    code, _, _ = run_grade("--course", str(course.path), "all", "--backend", "triton-interpret",
                           "--json-so-far", str(so_far))
    data = json.loads(so_far.read_text(encoding="utf-8"))
    assert [s["id"] for s in data["stages"]] == ["vector_add", "fused_gelu"]
    assert {s["status"] for s in data["stages"]} == {"NOT STARTED"}


@pytest.mark.parametrize("policy", ["after_published", "hidden"])
def test_feedback_files_show_hidden_cases_as_the_policy_says(tmp_path, policy):
    course = _course(tmp_path)
    data = _result(course, {"vector_add": 10.0})
    data["stages"][0]["cases"].append(
        {**data["stages"][0]["cases"][0], "id": "hidden1-float32", "passed": False,
         "hidden": True, "summary": "hidden case failed", "failure": "failed"})
    data["stages"][0]["status"] = "FAIL"
    out = tmp_path / "out"
    (out / "students").mkdir(parents=True)
    (out / "students" / "ada.json").write_text(json.dumps(data))
    [path] = gradebook.write_feedback_files(out, [], policy)
    text = path.read_text(encoding="utf-8")
    if policy == "hidden":
        assert "hidden1" not in text and "1 hidden cases were graded too" in text
    else:
        assert "Case `hidden1-float32`" in text


def test_each_students_grading_imports_the_grader_that_runs_the_batch(tmp_path, monkeypatch):
    """A student is graded in their own folder by `python -m grader`: from a checkout, not
    installed, that finds no grader unless this one's package is on its path (each student
    failed with "No module named grader" on a GPU host that ran the course from a copy)."""
    course = _course(tmp_path, POLICY)
    envs = []
    fake = _fake_grader(course, {"good": {"vector_add": 10.0}})
    monkeypatch.setattr(batch, "run_isolated", lambda c, log, env, cwd, limit, stop=None:
                        envs.append(env) or fake(c, log, env, cwd, limit))
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    subs = _class(tmp_path, {"ada": "good"})
    found = submissions.entries(course, [subs])
    batch.run(found, tmp_path / "out", GradingRequest(course, course.stages, "triton-interpret",
                                                      seed=3), 1, [], 60)
    root = str(Path(batch.__file__).resolve().parents[2])
    assert envs[0]["PYTHONPATH"].split(os.pathsep) == [root, "/elsewhere"]
    assert (Path(root) / "grader" / "__main__.py").is_file()


@pytest.mark.parametrize("text, cell", [
    ("Ann Lee; =HYPERLINK(\"http://x\")", "Ann Lee; '=HYPERLINK(\"http://x\")"),
    ("=1+1", "'=1+1"), ("a,+1", "a,'+1"), ("x\t@SUM(A1)", "x\t'@SUM(A1)"),
    ("p|-2", "p|'-2"), ("Jean-Luc; Ann", "Jean-Luc; Ann"), ("12345; 23456", "12345; 23456")])
def test_no_gradebook_cell_starts_a_formula_after_any_separator(text, cell):
    """A name cell joined with "; " held a formula after it, live in a spreadsheet that
    splits on ';': every piece a separator could begin is quoted, not only the cell's start."""
    assert gradebook.csv_cell(text) == cell


def test_a_regrade_never_loses_a_result(tmp_path, run_grade, monkeypatch):
    """Every result kept in OUT/history/NAME/; the newest stands, except where the same files
    scored more before (a regrade with a smaller --limit once replaced 100/100 with 25/100):
    that one stands, said. --only past the resubmission limit says so (it graded 15 -> 45
    without a word)."""
    course = _course(tmp_path, "\n[policy]\nmax_submissions = 1\n")
    scores = {"good": {"vector_add": 10.0, "fused_gelu": 10.0}}
    monkeypatch.setattr(batch, "run_isolated", _fake_grader(course, scores))
    subs = _class(tmp_path, {"ada": "good"})
    out = tmp_path / "out"
    args = ("--course", str(course.path), "batch", str(subs), "--out", str(out), "--backend",
            "triton-interpret", "--seed", "3")
    run_grade(*args)
    scores["good"] = {"vector_add": 10.0}  # the same files, graded worse this time
    code, stdout, _ = run_grade(*args, "--force")
    assert "ada: the same files scored 10 now against 20 in an earlier grading, which stands " \
        "(every result is kept in history/ada/)" in " ".join(stdout.split()), stdout
    assert _rows(out)["ada"]["total"] == "20"
    kept = json.loads((out / "history/ada/index.json").read_text())
    assert [e["points"] for e in kept] == [10.0]  # every result but the one standing
    (subs / "ada" / TRITON_ADD).write_text("# better\nimport triton\n")  # past the limit of 1
    scores["better"] = {"vector_add": 10.0, "fused_gelu": 10.0}
    code, stdout, _ = run_grade(*args)
    assert "ada: changed after 1 graded version (the resubmission limit); not graded again" in \
        " ".join(stdout.split())
    code, stdout, _ = run_grade(*args, "--only", "ada")
    assert "ada: changed after 1 graded version (the resubmission limit), and graded all the " \
        "same" in " ".join(stdout.split()), stdout
    kept = json.loads((out / "history/ada/index.json").read_text())
    assert sorted(e["points"] for e in kept) == [10.0, 20.0]
    assert _rows(out)["ada"]["total"] == "20"  # the version graded past the limit stands


def test_a_class_list_gives_every_student_a_row(tmp_path, run_grade, monkeypatch):
    """A student on the class list who handed nothing in has a row with a 0 (they had none);
    a folder that is no submission gets a 0 too, as a number; speed a CPU does not time is
    blank, never text, in a column an LMS imports as numbers."""
    course = _course(tmp_path)
    monkeypatch.setattr(batch, "run_isolated",
                        _fake_grader(course, {"good": {"vector_add": 10.0}}))
    subs = _class(tmp_path, {"ada": "good"})
    (subs / "nora").mkdir()
    (subs / "nora/notes.md").write_text("start the course\n")
    roster_csv = tmp_path / "class.csv"
    roster_csv.write_text("Student,Name,Email\nada,Ada L,ada@x.edu\nbob,Bob =1+1,bob@x.edu\n"
                          "nora,Nora K,nora@x.edu\n", encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, _ = run_grade("--course", str(course.path), "batch", str(subs), "--out",
                                str(out), "--backend", "triton-interpret", "--roster",
                                str(roster_csv))
    assert "1 student with no submission listed here, each given a row" in " ".join(stdout.split())
    rows = _rows(out)
    assert set(rows) == {"ada", "bob", "nora"}
    assert rows["bob"]["status"] == "no submission" and rows["bob"]["total"] == "0"
    assert rows["bob"]["name"] == "Bob =1+1" and rows["bob"]["email"] == "bob@x.edu"
    assert rows["nora"]["status"] == "not a submission" and rows["nora"]["total"] == "0"
    assert rows["ada"]["total"] == "10" and rows["ada"]["speed"] == ""
    bad = tmp_path / "bad.csv"
    bad.write_text("who,what\nada,1\n", encoding="utf-8")
    code, _, err = run_grade("--course", str(course.path), "batch", str(subs), "--out", str(out),
                             "--backend", "triton-interpret", "--roster", str(bad))
    assert code == 2 and "has no column named student, sid or email" in err


def test_extensions_and_adjustments_by_hand_survive_a_regrade(tmp_path, run_grade, monkeypatch):
    """A student's own due date ([policy.extensions]) spares them the penalty; an adjustment
    in OUT/adjustments.csv, with its comment, is in the gradebook's final score and the
    student's feedback after every regrade (grade batch never writes the file)."""
    course = _course(tmp_path, POLICY + '\n[policy.extensions]\n"34567+23456" = '
                     '2026-12-21T23:59:00-08:00\n')
    assert course.policy.due_for("34567+23456").day == 21
    copy = _export(tmp_path)
    monkeypatch.setattr(batch, "run_isolated", _fake_grader(course, {}))
    out = tmp_path / "out"
    args = ("--course", str(course.path), "batch", str(copy), "--out", str(out), "--backend",
            "triton-interpret", "--seed", "3")
    run_grade(*args)
    (out / "adjustments.csv").write_text("student,points,comment\n34567+23456,2.5,stage 2 "
                                         "graded by hand\n", encoding="utf-8")
    run_grade(*args, "--force")
    group = _rows(out)["34567+23456"]
    assert (group["days late"], group["late penalty %"]) == ("0", "0")  # 32 h late, extended
    assert (group["adjustment"], group["adjustment comment"]) == ("2.5", "stage 2 graded by hand")
    assert float(group["final"]) == float(group["total after penalty"]) + 2.5
    feedback = (out / "students/34567+23456.md").read_text(encoding="utf-8")
    assert "Adjusted by hand: +2.5 points. stage 2 graded by hand" in feedback
    (out / "adjustments.csv").write_text("student,points\n34567+23456,two\n", encoding="utf-8")
    code, _, err = run_grade(*args)
    assert code == 2 and "adjustments.csv, line 2: points must be a number" in err


def test_canvas_takes_the_final_scores_matched_to_its_own_students(tmp_path, run_grade,
                                                                   monkeypatch):
    """Canvas's gradebook export names students by its own ids: each is matched to a row (by
    SIS User ID against a bulk export's SIDs, by login or email, by name) and given the
    final score; one no row matches keeps an empty cell, and both sides' strays are named."""
    course = _course(tmp_path, POLICY)
    copy = _export(tmp_path)
    (copy / "submission_2571001" / TRITON_ADD).write_text("# good\nimport triton\n")
    monkeypatch.setattr(batch, "run_isolated", _fake_grader(course, {"good": {"vector_add": 10.0}}))
    out = tmp_path / "out"
    run_grade("--course", str(course.path), "batch", str(copy), "--out", str(out), "--backend",
              "triton-interpret", "--seed", "3")
    export_csv = tmp_path / "canvas-export.csv"
    export_csv.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Tiles (777),Quiz 1 (778)\n"
        "    Points Possible,,,,,20,5\n"
        "\"Núñez 李, José\",101,12345,jnunez,CS 101,,4\n"
        "\"Virtanen, Mika\",102,,mika.virtanen@example.edu,CS 101,,5\n"
        "\"Nobody, Ann\",103,99999,ann,CS 101,,3\n", encoding="utf-8")
    code, said, _ = run_grade("--course", str(course.path), "canvas", str(out), str(export_csv),
                              "--column", "Tiles (777)")
    assert code == 0, said
    flat = " ".join(said.split())
    assert "2 students scored in 'Tiles (777)'" in flat
    assert "1 in Canvas, with no row in the gradebook (left empty): Nobody, Ann" in flat
    assert "1 in the gradebook, not in Canvas's export: 34567+23456" in flat
    with (out / "canvas.csv").open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Tiles (777)"]
    scores = {r[1]: r[5] for r in rows[2:]}
    assert scores == {"101": "10", "102": "0", "103": ""}
    code, _, err = run_grade("--course", str(course.path), "canvas", str(out), str(export_csv),
                             "--column", "Tiles")
    assert code == 2 and "has no column 'Tiles'; its assignments: Tiles (777), Quiz 1 (778)" in err


def test_a_stage_due_later_keeps_its_points_from_the_penalty(tmp_path, run_grade, monkeypatch):
    """[policy.stage_due] gives a stage its own due date: each stage's points lose the
    penalty of its own lateness, and the gradebook says the share of the whole taken off."""
    course = _course(tmp_path, POLICY + "\n[policy.stage_due]\nfused_gelu = "
                     "2026-12-22T23:59:00-08:00\n")
    copy = _export(tmp_path)
    (copy / "submission_2571002" / "triton").mkdir(parents=True, exist_ok=True)
    (copy / "submission_2571002" / TRITON_ADD).write_text("# good\nimport triton\n")
    monkeypatch.setattr(batch, "run_isolated", _fake_grader(
        course, {"good": {"vector_add": 10.0, "fused_gelu": 10.0}}))
    out = tmp_path / "out"
    run_grade("--course", str(course.path), "batch", str(copy), "--out", str(out), "--backend",
              "triton-interpret", "--seed", "3")
    group = _rows(out)["34567+23456"]  # 32 hours past the class's date, within the stage's
    assert group["total"] == "20" and group["days late"] == "2"
    assert (group["late penalty %"], group["total after penalty"]) == ("10", "18")
    from grader.course import load_course
    bad = course.path.read_text() + "\n[policy.stage_due]\nnope = 2026-12-22T23:59:00-08:00\n"
    course.path.write_text(bad.replace("\n[policy.stage_due]\nfused_gelu", "\n#"))
    with pytest.raises(CourseError, match="policy.stage_due.nope.*no stage has the id 'nope'"):
        load_course(course.path)
