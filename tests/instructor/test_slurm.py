"""`grade batch --slurm`: a class graded as a Slurm job array.

The first test grades a small class through a real single-node Slurm cluster started on
this machine (tests/slurm_cluster.py); the others check, without a cluster, what Slurm's
commands answer and what the login node makes of a task's results.
"""

import csv
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT
from slurm_cluster import Cluster, missing

from grader.errors import GradeError
from grader.instructor import batch, slurm, slurm_state

SOLUTION = (ROOT / "solutions/triton/stage1_vector_add.py").read_text()
SLEEPS = SOLUTION.replace("import torch\n", "import time\n\nimport torch\n").replace(
    '    """Return x + y for two 1-D tensors of the same shape and dtype."""\n',
    '    """Return x + y for two 1-D tensors of the same shape and dtype."""\n'
    "    time.sleep(1000)\n")
# The wrapper (host code, run in the student's sandbox) raises: a kernel that names
# RuntimeError would be refused before it ran, and "boom" would never be said.
CRASHES = SOLUTION.replace(
    '    """Return x + y for two 1-D tensors of the same shape and dtype."""\n',
    '    """Return x + y for two 1-D tensors of the same shape and dtype."""\n'
    '    raise RuntimeError("boom")\n')


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = missing()
    if why:
        pytest.skip(why)
    started = Cluster(tmp_path_factory.mktemp("slurm"))
    try:
        started.start()
    except RuntimeError as exc:
        started.stop()
        pytest.skip(f"a single-node Slurm cluster did not start here: {exc}")
    yield started
    started.stop()


def _class(root: Path) -> Path:
    """ada is right, bob's wrapper raises, carl and dan never finish (carl is cancelled
    with scancel, dan runs into Slurm's time limit)."""
    for name, source in (("ada", SOLUTION), ("bob", CRASHES), ("carl", SLEEPS), ("dan", SLEEPS)):
        assert source != SOLUTION or name == "ada"
        (root / name / "triton").mkdir(parents=True)
        (root / name / "triton/stage1_vector_add.py").write_text(source)
    return root


def _wait(what, seconds: float, why: str):
    deadline = time.monotonic() + seconds
    while not (found := what()):
        assert time.monotonic() < deadline, why
        time.sleep(0.5)
    return found


def _rows(gradebook: Path) -> dict[str, dict]:
    return {r["student"]: r for r in csv.DictReader(gradebook.open(encoding="utf-8-sig"))}


@pytest.mark.slow  # Slurm ends a task after its one-minute limit, twice
def test_a_class_is_graded_on_a_real_slurm_cluster(tmp_path, cluster, course, run_grade):
    subs, out = _class(tmp_path / "subs"), tmp_path / "out"
    # --time 1: Slurm ends dan's task after a minute (and once more when re-submitted);
    # --timeout is longer, so that it is Slurm that ends it, not the grader.
    command = [sys.executable, "-m", "grader", "--course", str(course.path), "batch", str(subs),
               "--out", str(out), "--backend", "triton-interpret", "--seed", "11", "--slurm",
               "--time", "1", "--timeout", "300", "--poll", "1"]
    # The tasks' temporary folder (sbatch passes the environment on): carl's and dan's
    # tasks, cancelled and out of time, must leave nothing there.
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**{k: v for k, v in cluster.env.items() if not k.startswith("PYTEST_")},
           "TMPDIR": str(temp)}
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    try:
        manifest = _wait(lambda: next(out.glob("slurm/1/manifest.json"), None), 60, "no array")
        job = _wait(lambda: json.loads(manifest.read_text())["job"], 30, "not submitted")
        assert [t[0][0] for t in json.loads(manifest.read_text())["tasks"]] == [
            "ada", "bob", "carl", "dan"]
        _wait(lambda: cluster.squeue().get(f"{job}_2") == "RUNNING", 60, "carl never ran")
        subprocess.run(["scancel", f"{job}_2"], env=cluster.env, check=True)
        # While dan's task runs on, the same class is graded on this host, for the seed.
        _wait(lambda: all((out / f"students/{n}.json").is_file() for n in ("ada", "bob")), 150,
              "ada and bob were not graded")
        local = tmp_path / "local"
        for name in ("ada", "bob"):
            shutil.copytree(subs / name, tmp_path / "local-subs" / name)
        code, _, _ = run_grade("--course", str(course.path), "batch", str(tmp_path / "local-subs"),
                               "--out", str(local), "--backend", "triton-interpret", "--seed",
                               "11", "--jobs", "2")
        assert code == 0
        # Ctrl-C on the login node: the array runs on, and the same command follows it.
        first.send_signal(signal.SIGINT)
        said, _ = first.communicate(timeout=60)
        assert first.returncode == 130, said
        assert "keeps running on the cluster" in said and f"scancel {job}" in said
        assert (out / "report.html").is_file()  # the class so far: gradebook, feedback, report
    finally:
        if first.poll() is None:
            first.kill()
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=400)
    # dan got no result (Slurm's time limit, twice): the batch says so in its exit code
    assert again.returncode == 1, again.stdout + again.stderr
    assert "1 of them got no result (dan)" in " ".join(again.stdout.split())
    assert "following Slurm job" in again.stdout
    assert not (out / "slurm/3").exists()  # it submitted nobody: all were in the array

    rows = _rows(out / "gradebook.csv")
    local_rows = _rows(local / "gradebook.csv")
    assert rows["ada"] == local_rows["ada"] and rows["bob"] == local_rows["bob"]
    assert float(rows["ada"]["vector_add"]) == course.select("vector_add").points
    assert float(rows["bob"]["vector_add"]) == 0 and "boom" in json.dumps(
        json.loads((out / "students/bob.json").read_text())["stages"][0])
    assert rows["carl"]["error"].startswith("not graded: CANCELLED")
    assert rows["dan"]["error"].startswith("not graded: TIMEOUT")
    assert "after a re-submission" in rows["dan"]["error"] and rows["dan"]["total"] == ""
    # dan's task was submitted once more, alone, and nobody else's.
    retry = json.loads((out / "slurm/2/manifest.json").read_text())
    assert retry["attempt"] == 2 and retry["tasks"] == [[["dan", str((subs / "dan").resolve())]]]
    # One result per student (a grading or an error), feedback for each, and the intake of
    # those whose task got as far as reading the submission.
    files = sorted(p.name for p in (out / "students").iterdir())
    assert [f for f in files if f.endswith((".json", ".error")) and ".intake." not in f] == [
        "ada.json", "bob.json", "carl.error", "dan.error"]
    assert {f for f in files if f.endswith(".md")} == {"ada.md", "bob.md", "carl.md", "dan.md"}
    assert {"ada.intake.json", "bob.intake.json"} <= set(files)
    assert json.loads((out / "class.json").read_text()) == {"seed": 11}
    assert not list(temp.iterdir())

    # Resumed: only the students without a result are submitted (cancelled here at once).
    third = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    manifest = _wait(lambda: next(out.glob("slurm/3/manifest.json"), None), 60, "no third array")
    job = _wait(lambda: json.loads(manifest.read_text())["job"], 30, "not submitted")
    assert [t[0][0] for t in json.loads(manifest.read_text())["tasks"]] == ["carl", "dan"]
    subprocess.run(["scancel", job], env=cluster.env, check=True)
    said, _ = third.communicate(timeout=120)
    # both cancelled: no result for them, which the exit code says
    assert third.returncode == 1 and "submitted 2 submissions" in said, said
    assert "2 of them got no result (carl, dan)" in " ".join(said.split())
    assert _rows(out / "gradebook.csv")["ada"] == local_rows["ada"]


def test_what_sbatch_refuses_is_said_and_nothing_is_left(tmp_path, cluster, course, run_grade,
                                                        monkeypatch):
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    (tmp_path / "subs/ada/triton").mkdir(parents=True)
    code, _, err = run_grade("--course", str(course.path), "batch", str(tmp_path / "subs"),
                             "--out", str(tmp_path / "out"), "--backend", "triton-interpret",
                             "--slurm", "--partition", "nosuch")
    assert code == 2 and "sbatch refused the array" in err and "partition" in err.lower()
    assert "Traceback" not in err and not (tmp_path / "out/slurm/1").exists()


# --- without a cluster ------------------------------------------------------------------


def test_slurm_commands_missing_is_a_clear_error(tmp_path, run_grade, course, monkeypatch):
    (tmp_path / "subs/ada/triton").mkdir(parents=True)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, _, err = run_grade("--course", str(course.path), "batch", str(tmp_path / "subs"),
                             "--slurm", "--out", str(tmp_path / "out"))
    assert code == 2 and "needs Slurm's sbatch, squeue, scancel on PATH" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
    code, _, err = run_grade("--course", str(course.path), "batch", str(tmp_path / "subs"),
                             "--partition", "gpu", "--time", "5", "--out", str(tmp_path / "out"))
    assert code == 2 and "--partition, --time only go with --slurm" in err
    code, _, err = run_grade("--course", str(course.path), "batch", str(tmp_path / "subs"),
                             "--partition", "gpu", "--out", str(tmp_path / "out"))
    assert code == 2 and "--partition only goes with --slurm" in err


def test_array_task_states_are_read_from_sacct_and_squeue():
    # What sacct prints for an array, tasks not started yet folded into one line.
    states = slurm_state.parse_sacct("41_0|COMPLETED\n41_1|CANCELLED by 1000\n41_2|TIMEOUT\n"
                                     "41_[3-5,8%2]|PENDING\n")
    assert states["41_1"] == slurm_state.TaskState("CANCELLED", "CANCELLED by 1000")
    assert states["41_2"].ended and not states["41_3"].ended
    assert sorted(states) == ["41_0", "41_1", "41_2", "41_3", "41_4", "41_5", "41_8"]
    queue = slurm_state.parse_squeue("7_0|RUNNING|None\n7_1|TIMEOUT|TimeLimit\n")
    assert queue["7_1"].text == "TIMEOUT (TimeLimit)" and queue["7_0"].text == "RUNNING"
    # A task neither names for FORGET_AFTER looks in a row is reported, not waited for.
    reader = slurm_state.SlurmStateReader()
    assert [reader.state({}, "7_9") for _ in range(slurm_state.FORGET_AFTER)][-1] is \
        slurm_state.FORGOTTEN
    assert reader.state(queue, "7_0").name == "RUNNING"


def test_a_partition_of_mixed_gpu_kinds_is_refused(monkeypatch):
    assert slurm.gpu_types("gpu:a100:4(S:0-1)\ngpu:h100:8,shard:2\n(null)\n") == {"a100", "h100"}
    answer = subprocess.CompletedProcess([], 0, "gpu:a100:4(S:0-1)\ngpu:h100:8\n", "")
    monkeypatch.setattr(slurm.subprocess, "run", lambda *a, **k: answer)
    with pytest.raises(GradeError, match="GPUs of 2 kinds .*--gres gpu:a100:1"):
        slurm.require_one_gpu_kind(slurm.Options(gres="gpu:1"))
    slurm.require_one_gpu_kind(slurm.Options(gres="gpu:h100:1"))  # a kind is named
    slurm.require_one_gpu_kind(slurm.Options(gres="gpu:1", allow_mixed_gpus=True))


def _staged(run: slurm.Run, name: str, data: dict) -> batch.Entry:
    (run.folder / "results" / f"{name}.json").write_text(json.dumps(data))
    return batch.Entry(name, run.folder / name)


def test_the_login_node_takes_only_results_of_this_class_and_gpu_kind(tmp_path):
    out = tmp_path / "out"
    (out / "students").mkdir(parents=True)
    run = slurm.Run(out / "slurm/1", "5", 1, [], [], 60)
    (run.folder / "results").mkdir(parents=True)
    done = slurm_state.TaskState("COMPLETED", "COMPLETED")
    graded = {"seed": 3, "stages": [], "machine": {"gpu": "NVIDIA H100"}}
    gpus: set[str] = set()
    args = (done, out, 3, gpus, slurm.Options())
    first = slurm.collect(run, 0, _staged(run, "ada", graded), *args)
    assert first.json_path == out / "students/ada.json" and gpus == {"NVIDIA H100"}
    a100 = {**graded, "machine": {"gpu": "NVIDIA A100"}}
    other = slurm.collect(run, 1, _staged(run, "bob", a100), *args)
    assert "graded on NVIDIA A100, but this class on NVIDIA H100" in other.error
    assert not (out / "students/bob.json").exists()
    assert (out / "students/bob.error").read_text().startswith("graded on NVIDIA A100")
    wrong_seed = slurm.collect(run, 2, _staged(run, "carl", {**graded, "seed": 4}), *args)
    assert "not one of this class" in wrong_seed.error
    (run.folder / "results/dan.json").write_text('{"seed": 3, "stag')  # cut short
    cut = slurm.collect(run, 3, batch.Entry("dan", tmp_path), done, out, 3, gpus, slurm.Options())
    assert cut.error.startswith("not graded: the Slurm task ended (COMPLETED) without a result")
    # Killed by Slurm: submitted once more (None); the second time, reported.
    killed = slurm_state.TaskState("NODE_FAIL", "NODE_FAIL")
    assert slurm.collect(run, 4, batch.Entry("erin", tmp_path), killed, out, 3, gpus,
                          slurm.Options()) is None
    run.attempt = 2
    again = slurm.collect(run, 4, batch.Entry("erin", tmp_path), killed, out, 3, gpus,
                           slurm.Options())
    assert again.error.startswith("not graded: NODE_FAIL") and "re-submission" in again.error
