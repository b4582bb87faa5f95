"""Bad submissions kept as the files a student would hand in, each graded through `grade`;
beside them, honest submissions written in ways the grader must not refuse (an autotuned
kernel), which must earn every point.

Every file under tests/attacks/<track>/ and tests/honest/<track>/ is a stage file named
`stageN_<what>.py` (N: the stage it is graded as) whose module docstring says what it tries
and what must come of it (after the first line, prose may explain; these lines decide):

    '''Returns an object whose class name is rich markup, to restyle the scorecard.

    expect: FAIL                                  PASS, FAIL, ERROR or NOT STARTED
    message: returned [/], expected a torch.Tensor    the scorecard shows it (one or more)
    hidden: { n = 7919, dtypes = ["float32"] }    a hidden case of its stage (any number)
    rules: relaxed                                grade without the static check's lists
    points: 0                                     the points it must get
    backend: cutile-sim                           default: the track's backend on the CPU
    memory: 1024                                  the memory ceiling to grade it under, MiB
    forged: total 20/20 PASS                      no line of any output begins with it
    absent: of type tuple                         no output a student sees holds it
    '''

Stage 1 is graded on a one-case course, any other stage on the course's own cases. Whatever
a file tries, `grade` must write its results, show the stage's real status in the table, put
no raw control character on the terminal, end the terminal's output with lines of its own
(the total, then the files it wrote), and show nothing of a hidden case (its parameters, its
seed) on the terminal or in any export a student may see.

The default suite grades every stage-1 file, and the first attack and the first honest file
of each later stage per track; `pytest -m slow` (CI's second step) grades the rest.
"""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ROOT

from grader.course import load_course
from grader.sandbox import memory_ceiling
from scripts.corpus_files import (ATTACKS, HONEST, ONE_CASE, RUN_SEED, files, read_attack,
                                  vector_add_course, write_course, write_submission)

# The beginner faults (tests/faults/) are graded by tests/test_fault_files.py, which also
# checks the causes and lines their messages name. Reading a file's header and writing the
# course it is graded on are scripts/corpus_files.py's, which the GPU's fidelity study shares.
FILES = files((ATTACKS, HONEST))
BACKENDS = {"triton": "triton-interpret", "cutile": "cutile-sim"}
# What must never reach a terminal: it could move the cursor, erase, recolour or reorder.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def flat(text: str) -> str:
    return " ".join(text.split())  # the scorecard wraps long lines


def _params() -> list:
    """Every file; one of a later stage (graded on its stage's every case) runs in the
    default suite if it is the first of its folder, track and stage, the others with `-m
    slow`, as the fault files do. Stage 1's files (graded on one case) all run."""
    seen, params = set(), []
    for path in FILES:
        key = (path.parents[1].name, path.parent.name, path.name.split("_")[0])
        later = key[2] != "stage1"
        params.append(pytest.param(path, id=str(path.relative_to(path.parents[1])),
                                   marks=pytest.mark.slow if later and key in seen else ()))
        seen.add(key)
    return params


@pytest.mark.parametrize("path", _params())
def test_attack_file(path, tmp_path, run_grade, monkeypatch):
    attack = read_attack(path)
    monkeypatch.setenv("COLUMNS", "400")  # few wrapped lines to look through
    if attack.memory:  # a ceiling this machine can reach without hurting the other tests
        monkeypatch.setattr(memory_ceiling, "LIMIT", int(attack.memory) << 20)
    course_file = write_course(attack, tmp_path / "course")
    stage = next(s for s in load_course(course_file).stages if s.number == attack.stage)
    submission = write_submission(path, stage.modules[attack.track], tmp_path / "student")
    results = {name: tmp_path / "results" / name for name in
               ("r.json", "junit.xml", "gradescope.json", "summary.md")}
    code, out, err = run_grade(
        "--course", str(course_file), str(attack.stage), "--submission", str(submission),
        "--backend", attack.backend or BACKENDS[attack.track], "--seed", str(RUN_SEED), "-v",
        "--json", str(results["r.json"]), "--junit", str(results["junit.xml"]),
        "--gradescope", str(results["gradescope.json"]), "--markdown", str(results["summary.md"]))

    assert code in (0, 1), out + err  # graded, whatever it tried
    graded = json.loads(results["r.json"].read_text())["stages"][0]
    assert graded["status"] == attack.expect, f"{attack.tries}\n{out}"
    if attack.points:
        assert graded["points"] == float(attack.points), f"{attack.tries}\n{out}"
    row = next((line for line in out.splitlines()
                if re.match(rf"\W*{attack.stage}\W+{stage.id}\W", line)), "")
    assert re.search(rf"\b{attack.expect}\W*$", row), f"the table shows:\n{row}\n{out}"
    assert not RAW_CONTROL.search(out + err), "a raw control character reached the terminal"
    for message in attack.messages:
        assert flat(message) in flat(out), f"{message!r} is not on the scorecard:\n{out}"
    assert TOTAL.match(last_own_line(out)), f"the scorecard does not end with its total:\n{out}"
    shown = [out, err, *(p.read_text(encoding="utf-8") for p in results.values())]
    for secret in [*hidden_secrets(course_file, stage.id), *attack.absent]:
        leaks = [text for text in shown if secret in text]
        assert not leaks, f"{secret!r} is shown:\n{leaks[0]}"
    lines = output_lines(out + err, results)
    for forged in attack.forged:
        starting = [line for line in lines if line.strip().startswith(forged)]
        assert not starting, f"a line begins with the forged {forged!r}: {starting[0]!r}"


# The grader's last line of a scorecard, before the files it wrote are listed.
TOTAL = re.compile(r"total: [\d.]+/[\d.]+ points, (PASS|FAIL)$")


def last_own_line(out: str) -> str:
    """The terminal's last line once the `wrote <file>` lines after the scorecard are left
    out: the total, whatever the submission's text above it says."""
    lines = [line for line in out.rstrip("\n").split("\n")]
    while lines and lines[-1].startswith("wrote "):
        lines.pop()
    return lines[-1] if lines else ""


def output_lines(terminal: str, results: dict[str, Path]) -> list[str]:
    """Every line a reader sees: the terminal's, the Markdown's, the text of each JUnit
    element and attribute, each Gradescope test's output, each message of the JSON (the
    JSON's own lines hold these escaped, so the decoded messages are what count)."""
    texts = [terminal, results["summary.md"].read_text(encoding="utf-8")]
    for element in ET.parse(results["junit.xml"]).iter():
        texts += [element.text or "", *element.attrib.values()]
    gradescope = json.loads(results["gradescope.json"].read_text(encoding="utf-8"))
    texts += [gradescope["output"], *(test["output"] for test in gradescope["tests"])]
    for stage in json.loads(results["r.json"].read_text(encoding="utf-8"))["stages"]:
        # (not its "output": what the submission printed, kept as data under its own name)
        texts += [stage["message"], *(c["message"] for c in stage["checks"]),
                  *(c["summary"] for c in stage["speed"]["cases"])]
        texts += [line for c in stage["cases"] for line in (c["summary"], *c["details"])]
    return [line for text in texts for line in text.split("\n")]


def hidden_secrets(course_file: Path, stage_id: str) -> set[str]:
    """What a hidden case of the stage must never show: its parameters and its seed."""
    stage = load_course(course_file).select(stage_id)
    found = set()
    for case in (c for c in stage.cases if c.hidden):
        found |= {str(v) for v in case.params.values()} | {str(case.seed_in_run(RUN_SEED))}
    return found


def test_every_attack_file_has_a_readable_header():
    assert FILES, "no attack files found"
    for path in FILES:
        attack = read_attack(path)
        assert attack.tries and (attack.messages or attack.expect == "PASS"), path.name


def test_a_submission_folder_named_as_markup_is_graded_and_shown_as_text(tmp_path, run_grade,
                                                                          monkeypatch):
    """A class's folders are named by its students (a zip's name): the scorecard shows the
    path as it is, and no closing tag in it stops `grade` before the results are written."""
    monkeypatch.setenv("COLUMNS", "400")
    course_file = tmp_path / "course.toml"
    course_file.write_text(vector_add_course(ONE_CASE), encoding="utf-8")
    submission = tmp_path / "[/]ada [bold red]x"
    (submission / "triton").mkdir(parents=True)
    (submission / "triton/stage1_vector_add.py").write_text(
        (ROOT / "solutions/triton/stage1_vector_add.py").read_text())
    result = tmp_path / "r.json"
    code, out, err = run_grade("--course", str(course_file), "1", "--submission", str(submission),
                               "--backend", "triton-interpret", "--json", str(result))
    assert code == 0, out + err
    assert json.loads(result.read_text())["stages"][0]["status"] == "PASS"
    assert f"graded {submission.name}/" in flat(out)  # its name: no path outside it is shown
