"""The CI files a student's repository runs, as shipped: GitHub Actions
(templates/github/grade.yml -> .github/workflows/grade.yml) and GitLab CI
(templates/gitlab/gitlab-ci.yml -> .gitlab-ci.yml), both put into the handout by `grade
release`. Read as the two hosts read them (YAML), they install PyTorch's CPU build with pip's
cache, give the token read access only, run the GPU job only where the instructor opted in
and never for a fork's pull request, and grade with `--fail-on failure`, so that a fresh
handout is green and a started stage that fails is red."""

import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest
import yaml  # the test extra: GitHub and GitLab read these files as YAML
from conftest import COURSE_PARTS, copy_course

from grader.cli import cli
from grader.cli.requested import exit_code
from grader.report import junit, markdown
from grader.results import Report, SpeedResult, StageResult, Status

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "templates/github/grade.yml"
GITLAB = ROOT / "templates/gitlab/gitlab-ci.yml"
CPU_INSTALL = "python -m grader.install cutile --torch cpu"


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in data:  # YAML 1.1 reads GitHub's key `on` as true
        data["on"] = data.pop(True)
    return data


@pytest.fixture(scope="module")
def workflow():
    return load(WORKFLOW)


@pytest.fixture(scope="module")
def gitlab():
    return load(GITLAB)


def shell_commands(lines: list[str]) -> list[list[str]]:
    """The commands of shell lines (`a && b` is two), each split into words."""
    found = []
    for line in lines:
        for part in re.split(r"&&|;", line):
            if part.strip():
                found.append(shlex.split(part))
    return found


def grade_commands(lines: list[str]) -> list[list[str]]:
    """Every `grade ...` (or `.venv/bin/grade ...`) command, its arguments after `grade`."""
    return [words[1:] for words in shell_commands(lines) if Path(words[0]).name == "grade"]


def runs(job: dict) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def parses(args: list[str]) -> bool:
    """Whether `grade ARGS` parses: the command exists and every option and value is valid.
    Nothing runs."""
    name, *rest = args
    group = click.Context(cli, info_name="grade")
    command = cli.get_command(group, name)
    if command is None:  # `grade stage3 ...` is the hidden `stage` command
        command, rest = cli.get_command(group, "stage"), args
    try:
        command.make_context(name, list(rest), parent=group)
    except click.UsageError:
        return False
    return True


def test_the_help_says_what_each_exit_code_means(run_grade):
    for args in (["--help"], ["all", "--help"], ["compile", "--help"]):
        code, stdout, _ = run_grade(*args)
        text = " ".join(stdout.split())
        assert code == 0 and "--fail-on [unfinished|failure|never]" in text, args
    assert "Exit codes: 0 every stage graded passes; 1" in " ".join(run_grade("all", "--help")[1].split())
    assert "130 interrupted" in " ".join(run_grade("--help")[1].split())


def test_a_wrong_option_would_be_caught():
    assert parses(["all", "--junit", "x.xml"]) and parses(["3", "--backend", "cutile"])
    assert parses(["all", "--fail-on", "failure", "--summary", "s.md"])
    assert not parses(["all", "--junitt", "x.xml"])
    assert not parses(["all", "--backend", "cuda"])
    assert not parses(["all", "--fail-on", "started"])
    assert not parses(["all", "--summary", ""])  # $GITHUB_STEP_SUMMARY unset


# --- GitHub Actions -------------------------------------------------------------------


class Context:
    """A GitHub expression context (`github.event.pull_request...`): a missing key is null."""

    def __init__(self, values: dict):
        self._values = values

    def __getattr__(self, name):
        value = self._values.get(name)
        return Context(value) if isinstance(value, dict) else value


def github_if(expression: str, **contexts: dict) -> bool:
    """A job's `if:` as GitHub evaluates it, for the operators the template uses
    (==, !=, &&, ||, !, parentheses, 'strings')."""
    python = expression.replace("&&", " and ").replace("||", " or ")
    python = re.sub(r"!(?!=)", " not ", python)
    assert re.fullmatch(r"[\w\s.'()!=]+", python), expression  # nothing else to evaluate
    names = {name: Context(values) for name, values in contexts.items()}
    return bool(eval(python, {"__builtins__": {}}, names))  # the template's text, not input


def event(name: str, var: str | None, head_repo: str = "teacher/course") -> dict:
    github = {"event_name": name, "repository": "teacher/course", "event": {}}
    if name == "pull_request":
        github["event"] = {"pull_request": {"head": {"repo": {"full_name": head_repo}}}}
    return {"github": github, "vars": {} if var is None else {"TILECOURSE_GPU_RUNNER": var}}


def test_the_workflow_reads_only_and_never_runs_a_forks_code_with_secrets(workflow):
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "pull_request_target" not in text and "secrets." not in text
    assert set(workflow["on"]) == {"push", "pull_request", "workflow_dispatch"}
    assert workflow["permissions"] == {"contents": "read"}
    assert not [name for name, job in workflow["jobs"].items() if "permissions" in job]
    assert "github.ref" in workflow["concurrency"]["group"]
    assert workflow["concurrency"]["cancel-in-progress"] is True
    for name, job in workflow["jobs"].items():
        assert 0 < job["timeout-minutes"] <= 60, name
        checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@"))
        assert checkout["with"]["persist-credentials"] is False, name


# The first major version of each action that runs on Node 24: GitHub is removing Node 20
# from its runners, and an action pinned below these would stop the job.
NODE24 = {"actions/checkout": 5, "actions/setup-python": 6, "actions/upload-artifact": 6}


def test_every_action_runs_on_node_24(workflow):
    for name, job in workflow["jobs"].items():
        for step in (s for s in job["steps"] if "uses" in s):
            action, _, version = step["uses"].partition("@")
            assert action in NODE24, f"{name}: {action} is not known to run on Node 24"
            assert int(version.lstrip("v").split(".")[0]) >= NODE24[action], (name, step["uses"])


def test_the_cpu_job_installs_pytorchs_cpu_build_with_pips_cache_and_grades_for_ci(workflow):
    job = workflow["jobs"]["correctness"]
    assert job["runs-on"] == "ubuntu-latest" and "if" not in job  # every push, every fork
    setup = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@"))
    assert setup["with"]["cache"] == "pip" and setup["with"]["cache-dependency-path"] == "pyproject.toml"
    assert CPU_INSTALL in runs(job)
    assert "pip install" not in WORKFLOW.read_text(encoding="utf-8")  # the multi-GB CUDA path
    grade, build = grade_commands(runs(job))
    assert parses(grade) and parses(build), (grade, build)
    assert grade[:3] == ["all", "--fail-on", "failure"]
    assert build == ["compile", "all", "--fail-on", "failure"]
    assert grade[grade.index("--summary") + 1] == "$GITHUB_STEP_SUMMARY"
    assert "--junit" in grade and "--backend" not in grade  # the student's own track
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()"  # the results of a red run too


def test_the_gpu_job_runs_only_where_the_instructor_opted_in_and_never_for_a_fork(workflow):
    job = workflow["jobs"]["speed"]
    assert job["runs-on"] == ["self-hosted", "gpu"] and "needs" not in job
    condition = job["if"]
    assert github_if(condition, **event("push", "true"))
    assert github_if(condition, **event("workflow_dispatch", "true"))
    assert github_if(condition, **event("pull_request", "true"))  # a branch of this repository
    assert not github_if(condition, **event("pull_request", "true", head_repo="student/course"))
    assert not github_if(condition, **event("push", None))  # a fork, or no GPU runner
    assert not github_if(condition, **event("push", "false"))
    # Its own environment, PyTorch's build chosen by the machine (CUDA on the GPU runner).
    assert "python3 -m venv .venv && .venv/bin/python -m grader.install cutile" in runs(job)
    commands = grade_commands(runs(job))
    assert [c[0] for c in commands] == ["doctor", "all"]
    assert all(parses(c) for c in commands), commands
    assert commands[1][:3] == ["all", "--fail-on", "failure"] and "--summary" in commands[1]


def test_the_condition_reader_would_catch_a_condition_that_lets_forks_in():
    assert github_if("vars.TILECOURSE_GPU_RUNNER == 'true'",
                     **event("pull_request", "true", head_repo="student/course"))


# --- GitLab CI -------------------------------------------------------------------------


def gitlab_if(expression: str, variables: dict) -> bool:
    """A rule's `if:` as GitLab evaluates it, for the operators the template uses
    ($VAR, ==, !=, &&, ||, "strings"); an undefined variable is null."""
    python = re.sub(r"\$(\w+)", lambda m: f"V.get({m.group(1)!r})", expression)
    python = python.replace("&&", " and ").replace("||", " or ")
    assert re.fullmatch(r"""[\w\s.'"()!=]+""", python), expression
    return bool(eval(python, {"__builtins__": {}}, {"V": variables}))


def gitlab_when(rules: list[dict], variables: dict) -> str:
    """The first rule that matches decides; none: the job is not in the pipeline."""
    for rule in rules:
        if "if" not in rule or gitlab_if(rule["if"], variables):
            return rule.get("when", "on_success")
    return "never"


def test_gitlab_runs_one_pipeline_per_change(gitlab):
    rules = gitlab["workflow"]["rules"]
    assert gitlab_when(rules, {"CI_COMMIT_BRANCH": "main"}) == "on_success"
    assert gitlab_when(rules, {"CI_PIPELINE_SOURCE": "merge_request_event"}) == "on_success"
    assert gitlab_when(rules, {"CI_COMMIT_BRANCH": "work", "CI_OPEN_MERGE_REQUESTS": "a!1"}) == "never"
    assert gitlab["default"]["interruptible"] is True  # a newer push cancels the older pipeline


def test_gitlab_cpu_job_installs_pytorchs_cpu_build_with_a_cache_and_reports_junit(gitlab):
    job = gitlab["correctness"]
    assert job["image"].startswith("python:3.") and "tags" not in job and "rules" not in job
    assert job["timeout"] == "45 minutes"
    assert gitlab["variables"]["PIP_CACHE_DIR"] == "$CI_PROJECT_DIR/.cache/pip"
    assert job["cache"]["paths"] == [".cache/pip"] and job["cache"]["key"]["files"] == ["pyproject.toml"]
    assert CPU_INSTALL in job["script"] and "pip install" not in GITLAB.read_text(encoding="utf-8")
    grade, build = grade_commands(job["script"])
    assert parses(grade) and grade[:3] == ["all", "--fail-on", "failure"]
    assert parses(build) and build == ["compile", "all", "--fail-on", "failure"]
    assert job["artifacts"]["reports"]["junit"] == grade[grade.index("--junit") + 1]
    assert job["artifacts"]["when"] == "always"
    assert grade[grade.index("--markdown") + 1] in job["artifacts"]["paths"]


def test_gitlab_gpu_job_runs_only_where_the_instructor_opted_in_and_never_for_a_fork(gitlab):
    job = gitlab["speed"]
    assert job["tags"] == ["gpu"] and job["timeout"] == "60 minutes"
    opted_in = {"TILECOURSE_GPU_RUNNER": "true", "CI_PROJECT_ID": "3"}
    assert gitlab_when(job["rules"], {**opted_in, "CI_COMMIT_BRANCH": "main"}) == "on_success"
    assert gitlab_when(job["rules"], {**opted_in, "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "3"}) \
        == "on_success"  # a merge request from a branch of this project
    assert gitlab_when(job["rules"], {**opted_in, "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "7"}) \
        == "never"  # a fork's merge request, run in this project
    assert gitlab_when(job["rules"], {"CI_PROJECT_ID": "3", "CI_COMMIT_BRANCH": "main"}) == "never"
    commands = grade_commands(job["script"])
    assert [c[0] for c in commands] == ["doctor", "all"] and all(parses(c) for c in commands)
    assert commands[1][:3] == ["all", "--fail-on", "failure"]
    assert job["artifacts"]["reports"]["junit"] == commands[1][commands[1].index("--junit") + 1]


# --- the handout -----------------------------------------------------------------------


def test_release_puts_both_ci_files_where_each_host_looks(tmp_path, run_grade):
    course_file = copy_course(tmp_path / "course", (*COURSE_PARTS, "templates"))
    out = tmp_path / "handout"
    code, stdout, _ = run_grade("--course", str(course_file), "release", str(out))
    assert code == 0, stdout  # the scan for reference code read them too
    assert (out / ".github/workflows/grade.yml").read_bytes() == WORKFLOW.read_bytes()
    assert (out / ".gitlab-ci.yml").read_bytes() == GITLAB.read_bytes()
    assert not (out / "templates").exists()
    bare = copy_course(tmp_path / "bare")  # a course without templates/ hands out none
    assert run_grade("--course", str(bare), "release", str(tmp_path / "bare-out"))[0] == 0
    assert not (tmp_path / "bare-out/.github").exists()
    assert not (tmp_path / "bare-out/.gitlab-ci.yml").exists()


# --- what CI reads: JUnit, the exit code, the summary ---------------------------------


def stage(number: int, status: Status, speed: SpeedResult | None = None) -> StageResult:
    result = StageResult(number, f"s{number}", "t", "triton", f"exercises/triton/s{number}.py", 10,
                         status, points=10 if status is Status.PASS else 0,
                         message="fill in TODO 1" if status is Status.NOT_STARTED else "")
    result.speed = speed or SpeedResult(False, "needs a GPU")
    return result


def report(*stages: StageResult) -> Report:
    return Report("c", "exercises", "triton", "", {}, "", stages=list(stages))


SLOW = SpeedResult(True, "", points=2, max_points=5)
FAST = SpeedResult(True, "", points=5, max_points=5)


@pytest.mark.parametrize("stages, codes", [
    # (stages, exit code with --fail-on unfinished, failure, never)
    ((Status.NOT_STARTED, Status.NOT_STARTED), (1, 0, 0)),  # a fresh handout: green in CI
    ((Status.PASS, Status.NOT_STARTED), (1, 0, 0)),
    ((Status.PASS, Status.PASS), (0, 0, 0)),
    ((Status.FAIL, Status.NOT_STARTED), (1, 1, 0)),
    ((Status.ERROR, Status.PASS), (1, 1, 0)),
    ((Status.PARTLY_GRADED, Status.PASS), (1, 0, 0)),  # what can run here passes
])
def test_exit_codes(stages, codes):
    graded = report(*(stage(i, s) for i, s in enumerate(stages, 1)))
    assert tuple(exit_code(graded, f) for f in ("unfinished", "failure", "never")) == codes


def test_a_started_stage_too_slow_on_the_gpu_fails_ci():
    assert exit_code(report(stage(1, Status.PASS, SLOW)), "failure") == 1
    assert exit_code(report(stage(1, Status.PASS, FAST)), "failure") == 0


def test_compile_fails_ci_only_for_a_started_stage_that_does_not_build(run_grade, course,
                                                                       monkeypatch):
    from grader.languages.cutile import compile_check

    args = ("--course", str(course.path), "compile", "1", "2")
    assert run_grade(*args)[0] == 1  # the exercises: NOT STARTED
    assert run_grade(*args, "--fail-on", "failure")[0] == 0
    built = {"vector_add": "COMPILED", "fused_gelu": "FAILED"}
    monkeypatch.setattr(compile_check, "compile_stage", lambda course, stage, *rest:
                        compile_check.CompileResult(stage.number, stage.id, "m.py",
                                                    built[stage.id], "the build failed"))
    assert run_grade(*args, "--fail-on", "failure")[0] == 1
    assert run_grade(*args, "--fail-on", "never")[0] == 0


def test_junit_skips_not_started_stages(tmp_path):
    path = tmp_path / "grade.xml"
    junit.write_junit(report(stage(1, Status.NOT_STARTED), stage(2, Status.FAIL)), path)
    root = ET.parse(path).getroot()
    assert (root.get("failures"), root.get("errors"), root.get("skipped")) == ("0", "0", "2")
    not_started = next(c for c in root.iter("testcase") if c.get("classname") == "tilecourse.s1")
    assert not_started.find("skipped").get("message") == "not started: fill in TODO 1"


def test_summary_appends_to_what_the_step_wrote_before(tmp_path):
    summary = tmp_path / "step_summary"
    summary.write_text("## earlier\n", encoding="utf-8")
    graded = report(stage(1, Status.PASS), stage(2, Status.NOT_STARTED))
    markdown.append_markdown(graded, summary)
    markdown.append_markdown(graded, summary)
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## earlier\n\n## c: 10/20 points")
    assert text.count("| 2 | s2 | triton | - | - | 0/10 | NOT STARTED |") == 2


def test_ci_grading_of_a_fresh_handout_is_green_and_a_broken_stage_red(tmp_path, run_grade,
                                                                       course):
    out = tmp_path / "handout"
    assert run_grade("--course", str(course.path), "release", str(out))[0] == 0
    summary, xml = tmp_path / "summary.md", tmp_path / "grade.xml"
    course_and = ("--course", str(out / "course.toml"))
    ci = ("--backend", "triton-interpret", "--fail-on", "failure", "--junit", str(xml))
    code, stdout, _ = run_grade(*course_and, "all", *ci, "--summary", str(summary))
    assert code == 0, stdout
    root = ET.parse(xml).getroot()
    assert root.get("failures") == root.get("errors") == "0"
    assert root.get("skipped") == str(len(course.stages))
    assert summary.read_text().count("NOT STARTED |") == len(course.stages)
    # A started stage that does not import: red, in the exit code and in JUnit.
    broken = out / "exercises/triton/stage1_vector_add.py"
    broken.write_text(broken.read_text() + "\ndef broken(:\n")
    code, stdout, _ = run_grade(*course_and, "1", "2", *ci)
    assert code == 1, stdout
    assert ET.parse(xml).getroot().get("errors") == "1"
    assert run_grade(*course_and, "1", "2", *ci[:2], "--fail-on", "never")[0] == 0


# --- the CPU job, run as GitHub runs it ---------------------------------------------------


@pytest.mark.slow
def test_the_cpu_jobs_steps_install_and_grade_a_fresh_handout(tmp_path, run_grade, course,
                                                              workflow):
    """The correctness job's shell steps, as written, in a fresh handout and a fresh virtual
    environment (actions/setup-python's part): the CPU install, then grading, with stage 1
    done. Green, stage 1 PASS in JUnit and the summary, the other stages skipped."""
    out = tmp_path / "handout"
    assert run_grade("--course", str(course.path), "release", str(out))[0] == 0
    shutil.copy(ROOT / "solutions/triton/stage1_vector_add.py", out / "exercises/triton/")
    python = tmp_path / "python"
    subprocess.run([sys.executable, "-m", "venv", str(python)], check=True)
    summary = tmp_path / "step_summary.md"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "VIRTUAL_ENV", "TRITON_INTERPRET"))}
    env.update(PATH=f"{python / 'bin'}{os.pathsep}{env['PATH']}", GITHUB_ACTIONS="true", CI="true",
               GITHUB_STEP_SUMMARY=str(summary))
    for step in runs(workflow["jobs"]["correctness"]):
        run = subprocess.run(["bash", "-eo", "pipefail", "-c", step], cwd=out, env=env,
                             capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, (step, run.stdout[-3000:], run.stderr[-3000:])
    assert "+cpu" in subprocess.run([str(python / "bin/python"), "-c",
                                     "import torch; print(torch.__version__)"],
                                    capture_output=True, text=True, check=True).stdout
    root = ET.parse(out / "grade.xml").getroot()
    assert (root.get("failures"), root.get("errors")) == ("0", "0")
    outcomes = {c.get("classname"): c.find("skipped") is not None for c in root.iter("testcase")
                if c.get("name") == c.get("classname").removeprefix("tilecourse.")}
    assert outcomes == {f"tilecourse.{s.id}": True for s in course.stages[1:]}  # NOT STARTED
    text = summary.read_text(encoding="utf-8")
    assert "| 1 | vector_add | triton-interpret |" in text and "| PASS |" in text
    assert text.count("NOT STARTED |") == len(course.stages) - 1
