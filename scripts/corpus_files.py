"""The project's corpus of submission files and the course each is graded on: beginner faults
(tests/faults/<track>/), attacks (tests/attacks/<track>/) and honest submissions
(tests/honest/<track>/), each a stage file named `stageN_<what>.py` (N: the stage it is
graded as).

Not a study: what the CPU tests that grade the corpus (tests/test_attack_files.py,
tests/test_fault_files.py, through tests/conftest.py) and the GPU studies that grade it
again (`python -m scripts fidelity`) must agree on, so that a file is graded the same way
by both: a fault on the course's own cases, an attack or honest file of stage 1 on a
one-case course, a later one on its stage's own cases, each with the rules, hidden cases
and memory ceiling its header asks for.

An attack or honest file's module docstring says what it tries and what must come of it;
tests/test_attack_files.py documents its `key: value` lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from grader.course import load_course
from scripts.common import ROOT

COURSE_FILE = ROOT / "course.toml"
# The folders of the corpus, each holding a folder per track.
FAULTS, ATTACKS, HONEST = (ROOT / "tests" / kind for kind in ("faults", "attacks", "honest"))
# The course's [submissions] rules, for the one-off courses the tests write.
_TEXT = COURSE_FILE.read_text(encoding="utf-8")
RULES = _TEXT[_TEXT.index("[submissions]"):_TEXT.index("\n[[stages]]")]
# The same without the static check's lists: the attack corpus goes around that speed bump,
# as a student could, to reach the walls behind it (the sandbox, the host watch).
RELAXED_RULES = re.sub(r"forbidden_(imports|calls) = \[.*?\]", r"forbidden_\1 = []", RULES,
                       flags=re.S)
# and the dunders the attacks reach for (operator overloading, code objects)
RELAXED_RULES = re.sub(r"allowed_dunders = \[(.*?)\]", lambda m: "allowed_dunders = [" + m.group(1)
                       + ', "__int__", "__index__", "__new__", "__init__", "__hash__", "__code__", '
                       '"__class__", "__dict__", "__globals__", "__call__", "__float__"]',
                       RELAXED_RULES, flags=re.S)
# Stage 1's attacks are graded on this one case: each is about what it tries, not the sizes.
ONE_CASE = '[ { n = 1000, dtypes = ["float32"] } ]'
# The run seed the attack and honest files are graded with (their cases' inputs).
RUN_SEED = 12345
STATUSES = ("PASS", "FAIL", "ERROR", "NOT STARTED", "PARTLY GRADED")
TRACKS = ("triton", "cutile")


def vector_add_course(cases: str, extra: str = "", rules: str = RULES) -> str:
    """A one-stage course.toml: vector add in float32 with these cases, then `extra`."""
    return f"""
[course]
title = "small"

{rules}

[[stages]]
id = "vector_add"
title = "Vector add"
points = 10
modules = {{ triton = "triton/stage1_vector_add.py", cutile = "cutile/stage1_vector_add.py" }}
tolerance.float32 = {{ atol = 1e-6, rtol = 1e-6 }}
cases = {cases}
{extra}"""


def files(folders: tuple[Path, ...] = (FAULTS, ATTACKS, HONEST)) -> list[Path]:
    """Every stage file of these corpus folders, in order."""
    return sorted(p for folder in folders for p in folder.glob("*/stage*_*.py"))


def stage_number(path: Path) -> int:
    """The stage a corpus file is graded as, from its name."""
    found = re.match(r"stage(\d+)_\w+\.py$", path.name)
    assert found, f"{path.name}: name it stageN_<what>.py"
    return int(found.group(1))


@dataclass
class Attack:
    """An attack or honest file's header: what it tries, and what must come of it."""

    path: Path
    track: str
    stage: int
    tries: str
    expect: str
    messages: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    rules: str = "course"
    backend: str = ""
    points: str = ""  # the points it must get, when given
    memory: str = ""  # the memory ceiling (MiB) it is graded under, when given
    forged: list[str] = field(default_factory=list)  # text no line may begin with
    absent: list[str] = field(default_factory=list)  # text no output may hold


def read_attack(path: Path) -> Attack:
    """The header of an attack file (read as text: the file may not even parse)."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    header = re.match(r'[rR]?"""(.*?)"""', text, re.S)
    assert header, f"{path.name} must start with a docstring"
    first, *lines = header.group(1).strip().splitlines()
    attack = Attack(path, path.parent.name, stage_number(path), first.strip(), "")
    for line in lines:  # prose may explain the attack; `key: value` lines say what must come
        found = re.match(r"(\w+): (.*)$", line.strip())
        key, value = (found.group(1), found.group(2).strip()) if found else ("", "")
        if key in ("message", "hidden", "forged", "absent"):
            getattr(attack, "messages" if key == "message" else key).append(value)
        elif key in ("expect", "rules", "backend", "points", "memory"):
            setattr(attack, key, value)
    assert attack.expect in STATUSES, f"{path.name}: expect one of {STATUSES}"
    assert attack.track in TRACKS, f"{path.name}: put it in a folder named after its track"
    return attack


def course_text(attack: Attack) -> str:
    """The course.toml an attack is graded on: stage 1 on one case, a later stage on its
    own cases, with the rules its header asks for."""
    rules = RELAXED_RULES if attack.rules == "relaxed" else RULES
    if attack.stage == 1:
        return vector_add_course(ONE_CASE, rules=rules)
    return COURSE_FILE.read_text(encoding="utf-8").replace(RULES, rules)


def hidden_text(attack: Attack, stage_id: str) -> str:
    """The course.hidden.toml that gives the attack's stage the hidden cases it names."""
    cases = ", ".join(attack.hidden)
    return f'seed = 4242\n[[stages]]\nid = "{stage_id}"\ncases = [ {cases} ]\n'


def write_course(attack: Attack, folder: Path) -> Path:
    """Write the course an attack is graded on (with its hidden cases, if it names any) into
    `folder`, made here; returns its course.toml."""
    folder.mkdir(parents=True)
    course_file = folder / "course.toml"
    course_file.write_text(course_text(attack), encoding="utf-8")
    if attack.hidden:
        stage = next(s for s in load_course(course_file).stages if s.number == attack.stage)
        (folder / "course.hidden.toml").write_text(hidden_text(attack, stage.id))
    return course_file


def write_submission(path: Path, module: str, folder: Path) -> Path:
    """A submission folder holding the corpus file `path` as the stage file `module` (the
    stage's `modules` entry for the file's track); returns the folder."""
    (folder / module).parent.mkdir(parents=True)
    (folder / module).write_bytes(path.read_bytes())
    return folder
