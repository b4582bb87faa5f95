"""What a hidden case can tell a student through everything `grade` shows: whether it passed,
nothing more (docs/integrity.md, "What a hidden case can still tell").

Two attack files of the corpus, each graded twice through `grade` with every export, on a
one-case course with one hidden case: one sleeps in proportion to any size it was not shown
(a hidden case's time would give its size), the other fails a hidden case one way for an odd
size and another for an even one (the kind of failure would give a bit of it). Between the
two gradings of each, nothing a student sees may differ but what the hidden case cannot
steer: no time moves with the sleep, and no export reads otherwise for the other kind.
"""

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import ROOT, schema_errors

from scripts.corpus_files import (ATTACKS, ONE_CASE, RULES, RUN_SEED, hidden_text, read_attack,
                                  vector_add_course, write_submission)

SLEEPS = ATTACKS / "triton" / "stage1_sleeps_by_the_hidden_size.py"
KINDS = ATTACKS / "triton" / "stage1_failure_kind_by_the_hidden_size.py"
SCHEMA = json.loads((ROOT / "grader" / "result.schema.json").read_text())
# The file sleeps n / 10,000 seconds on a hidden case of length n: a second, or nothing.
SLEPT = 1.0
ASLEEP, AWAKE = "{ n = 10000, dtypes = [\"float32\"] }", "{ n = 1, dtypes = [\"float32\"] }"
# What a figure of one grading may differ from the other's by, the machine's own noise (other
# tests share its cores): well below the sleep, which every figure held before.
NOISE = SLEPT / 3
# A hint that would fire on the hidden case's failure, were hints matched against it.
HINT = """
[[stages.hints]]
when = { failure = ["raised an exception", "host did the work"] }
hint = "HINT-ON-A-HIDDEN-KIND"
"""


@dataclasses.dataclass
class Shown:
    """Everything one grading showed: the terminal, and each file it wrote."""

    terminal: str
    result: dict
    junit: ET.Element
    gradescope: dict
    markdown: str


def graded(attack_file: Path, hidden: str, folder: Path, run_grade) -> Shown:
    """`attack_file` graded as stage 1 of the one-case course with `hidden` as its hidden
    case, every export asked for, the profile shown."""
    attack = dataclasses.replace(read_attack(attack_file), hidden=[hidden])
    course = folder / "course"
    course.mkdir(parents=True)
    (course / "course.toml").write_text(vector_add_course(ONE_CASE, HINT, RULES))
    (course / "course.hidden.toml").write_text(hidden_text(attack, "vector_add"))
    submission = write_submission(attack_file, "triton/stage1_vector_add.py", folder / "student")
    files = {name: folder / name for name in ("r.json", "junit.xml", "gs.json", "feedback.md")}
    code, out, err = run_grade(
        "--course", str(course / "course.toml"), "1", "--submission", str(submission),
        "--backend", "triton-interpret", "--seed", str(RUN_SEED), "-v", "--profile",
        "--json", str(files["r.json"]), "--junit", str(files["junit.xml"]),
        "--gradescope", str(files["gs.json"]), "--markdown", str(files["feedback.md"]))
    assert code in (0, 1), out + err
    result = json.loads(files["r.json"].read_text())
    assert not schema_errors(result, SCHEMA)
    return Shown(out + err, result, ET.parse(files["junit.xml"]).getroot(),
                 json.loads(files["gs.json"].read_text()), files["feedback.md"].read_text())


def figures(shown: Shown) -> dict[str, float]:
    """Every time a student sees, by where it is shown."""
    found = {"run": shown.result["seconds"]}
    for stage in shown.result["stages"]:
        found[f"stage {stage['id']}"] = stage["seconds"]
        found.update({f"phase {name}": s for name, s in stage["phases"].items()})
        found.update({f"case {c['id']}": c["seconds"] for c in stage["cases"]})
    for element in shown.junit.iter():
        if "time" in element.attrib:
            found[f"junit {element.tag} {element.get('name')}"] = float(element.get("time"))
    found["gradescope execution_time"] = shown.gradescope["execution_time"]
    whole = re.search(r"the whole run: ([\d.]+) s", shown.terminal)
    after = re.search(r"and ([\d.]+) s after it", shown.terminal)
    assert whole and after, shown.terminal  # the profile's caption, and its after-row
    found["profile: the whole run"] = float(whole.group(1))
    found["profile: after the run"] = float(after.group(1))
    for case, seconds in re.findall(r"^  (\S+): \w+ \(([\d.]+) s\)$", shown.terminal, re.M):
        found[f"progress {case}"] = float(seconds)
    return found


def test_no_time_a_student_sees_moves_with_a_hidden_cases_sleep(tmp_path, run_grade,
                                                                monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # the profile's caption on one line
    # The first grading of a process starts the template its workers are forked from
    # (grader.sandbox.spares): a second of its own, in every time around it.
    graded(SLEEPS, AWAKE, tmp_path / "first", run_grade)
    asleep = graded(SLEEPS, ASLEEP, tmp_path / "asleep", run_grade)
    awake = graded(SLEEPS, AWAKE, tmp_path / "awake", run_grade)
    for shown in (asleep, awake):
        assert shown.result["stages"][0]["status"] == "PASS", shown.terminal
        assert shown.gradescope["execution_time"] == round(shown.result["seconds"])
    long, short = figures(asleep), figures(awake)
    assert long.keys() == short.keys()
    assert "progress n=1000-float32" in long and "phase correctness cases" in long
    moved = {name: (short[name], long[name]) for name in long
             if abs(long[name] - short[name]) >= NOISE}
    assert not moved, f"moved with the hidden case's {SLEPT} s sleep: {moved}"
    hidden = next(c for c in asleep.result["stages"][0]["cases"] if c["hidden"])
    assert hidden["passed"] and hidden["seconds"] == 0.0


def exported(shown: Shown) -> dict[str, str]:
    """Every export as text, its times masked (the test above holds them still), and the
    user id each grading's processes ran as (new every grading)."""
    result = json.loads(json.dumps(shown.result))
    for key in ("started_at", "seconds", "sandbox"):
        result.pop(key)
    for stage in result["stages"]:
        stage.pop("phases")
        stage.pop("seconds")
        for case in stage["cases"]:
            case.pop("seconds")
    junit = ET.tostring(shown.junit, encoding="unicode")
    gradescope = dict(shown.gradescope, execution_time=0)
    return {"json": json.dumps(result, indent=1), "junit": _times_masked(junit),
            "gradescope": json.dumps(gradescope, indent=1),
            "markdown": _times_masked(shown.markdown),
            "terminal": _times_masked(shown.terminal.split("where the time went")[0])}


def _times_masked(text: str) -> str:
    text = re.sub(r"user id \d+", "user id *", text)
    text = re.sub(r'(time|timestamp)="[^"]*"', r'\1="*"', text)
    return re.sub(r"\d+(\.\d+)? ?s\b", "* s", text)


def test_a_hidden_cases_kind_of_failure_reads_the_same_in_every_export(tmp_path, run_grade,
                                                                       monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    raised = graded(KINDS, "{ n = 7919, dtypes = [\"float32\"] }", tmp_path / "odd", run_grade)
    host = graded(KINDS, "{ n = 7920, dtypes = [\"float32\"] }", tmp_path / "even", run_grade)
    odd, even = exported(raised), exported(host)
    for name in odd:
        assert odd[name] == even[name], f"the {name} export tells the kind of failure"
    (case,) = [c for c in raised.result["stages"][0]["cases"] if c["hidden"]]
    assert case["failure"] == "failed" and case["summary"] == "hidden case failed"
    assert raised.result["stages"][0]["hints"] == []  # the hint's kinds are hidden ones
    assert "HINT-ON-A-HIDDEN-KIND" not in "".join(odd.values())
    for kind in ("raised an exception", "host did the work"):
        assert kind not in "".join(odd.values()) + "".join(even.values())
