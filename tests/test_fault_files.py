"""Beginner faults kept as files a student could submit (tests/faults/<track>/stageN_*.py),
each graded as a submission and held to what its header promises.

A fault file starts with a module docstring: its first line says what the mistake is, then

    expect: FAIL                     the stage's status (a Status name)
    message: <text>                  (one or more) text that the failing cases must report;
                                     a case's id counts, so `layout=sliced` says such a case failed
    passes: <text>                   (optional) every case whose id contains the text passes
    line: <N>                        (optional) the line of the file the report must name
    cause: <key>                     (optional, one or more) the causes the output may confirm
                                     (grader.problems.evidence); no other may be named
    mistake: <word>                  (optional) files whose edits behave alike on every input
                                     (no experiment on the kernel tells them apart) give one
                                     word, and may be told the same thing

Every named cause carries the experiment that confirmed it in the case's result
(stats.experiments: a recompute the output matched, a probe replay that passed, the watch's
traffic), and the case's report says it under the cause, checked for each fault graded. Over the whole corpus (`test_the_corpus_*`): every
fault fails, at least NAMED of the reports name the faulty line or the cause, and no report
names a cause its header does not.
The default suite grades one file per track and stage; `pytest -m slow` grades them all,
and holds each track's corpus to the rules above.

Files of tests/faults/triton are graded on Triton's interpreter, tests/faults/cutile on the
grader's cuTile simulator.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.quoting import GUTTER
from grader.results import Status

FAULTS = Path(__file__).resolve().parent / "faults"
BACKENDS = {"triton": "triton-interpret", "cutile": "cutile-sim"}
HEADER = re.compile(r"^(expect|message|passes|line|cause|mistake):\s*(.+?)\s*$")
# The least fraction of a track's reports that name the faulty line or the cause (about nine
# in ten do). The rest are told what was observed, at the line where it showed: a grid, a
# mask or a tile size where it is used, not where it is computed; a row of zeros; an input
# read with another tensor's strides.
NAMED = 0.88
_graded: dict[str, object] = {}  # fault id -> its StageResult, shared by the tests below


@dataclass(frozen=True)
class Fault:
    """A fault file and what grading it must show."""

    path: Path
    stage: int  # the stage number, from the file name
    backend: str
    mistake: str  # the docstring's first line
    expect: Status
    messages: tuple[str, ...]
    passes: tuple[str, ...] = ()
    line: int | None = None
    causes: tuple[str, ...] = ()
    kind: str | None = None  # its `mistake:`: files that behave alike share the word

    @property
    def id(self) -> str:
        return f"{self.path.parent.name}/{self.path.stem}"


def parse(path: Path) -> Fault:
    """The header of a fault file; a file without a complete one is an error, not a skip."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    lines = doc.splitlines()
    assert lines and lines[0].strip(), f"{path}: the docstring's first line must say the mistake"
    found: dict[str, list[str]] = {"expect": [], "message": [], "passes": [], "line": [],
                                   "cause": [], "mistake": []}
    for line in lines[1:]:
        match = HEADER.match(line)
        if match:
            found[match.group(1)].append(match.group(2))
    stage = re.match(r"stage(\d+)_", path.name)
    assert stage, f"{path}: name it stageN_<what>.py"
    assert len(found["expect"]) == 1, f"{path}: give exactly one `expect:` line"
    assert found["message"], f"{path}: give at least one `message:` line"
    return Fault(path=path, stage=int(stage.group(1)), backend=BACKENDS[path.parent.name],
                 mistake=lines[0].strip(), expect=Status[found["expect"][0].replace(" ", "_")],
                 messages=tuple(found["message"]), passes=tuple(found["passes"]),
                 line=int(found["line"][0]) if found["line"] else None,
                 causes=tuple(found["cause"]),
                 kind=found["mistake"][0] if found["mistake"] else None)


def fault_files() -> list[Fault]:
    return [parse(path) for track in BACKENDS for path in sorted((FAULTS / track).glob("stage*.py"))]


# The lines of a report that say what is wrong and why, as opposed to the data under them
# (the first mismatches, the tiles, the traffic's counts).
EXPLAINING = ("cause:", "observed", "how the values are wrong:", GUTTER)


def explanation(result) -> str:
    """What the report tells a student first, as words: the stage's message, the summary
    and explaining lines of the case shown first (grader.results.StageResult.failures), and
    the hints, every number masked (two faults differ in their seeds and sizes, not in
    what they are told)."""
    shown = result.failures[:1]
    lines = [result.message, *(c.summary for c in shown), *result.hints]
    lines += [line.strip() for c in shown for line in c.details
              if line.strip().startswith(EXPLAINING)]
    return re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", "\n".join(lines))


def reported(result) -> str:
    """What the failing cases of a graded stage say, each under its id."""
    return "\n".join("\n".join([case.id, case.summary, *case.details])
                     for case in result.cases if not case.passed)


def test_every_track_has_fault_files():
    faults = fault_files()
    assert {f.path.parent.name for f in faults} == set(BACKENDS)


def test_a_header_without_messages_is_refused(tmp_path):
    folder = tmp_path / "triton"
    folder.mkdir()
    path = folder / "stage1_nothing.py"
    path.write_text('"""Does nothing.\n\nexpect: FAIL\n"""\n', encoding="utf-8")
    with pytest.raises(AssertionError, match="at least one `message:` line"):
        parse(path)


def _params() -> list:
    """Every fault file; the first of each track and stage runs in the default suite, the
    others with `-m slow` (with the corpus-wide checks, which need them all)."""
    seen, params = set(), []
    for fault in fault_files():
        key = (fault.path.parent.name, fault.stage)
        params.append(pytest.param(fault, id=fault.id,
                                   marks=() if key not in seen else pytest.mark.slow))
        seen.add(key)
    return params


@pytest.mark.parametrize("fault", _params())
def test_the_fault_is_graded_as_its_header_says(fault, grade_source, course):
    result = graded(fault, grade_source, course)
    text = reported(result)
    assert result.status is fault.expect, f"{fault.id} ({fault.mistake}): {result.status}\n{text}"
    for message in fault.messages:
        assert message in text, f"{fault.id}: no failing case reports {message!r}:\n{text}"
    for case in result.cases:  # every cause named carries what confirmed it, and says it
        confirmed_by = case.stats.get("experiments", {})
        assert all(confirmed_by.values()), (fault.id, case.id, confirmed_by)
        for key, experiment in confirmed_by.items():
            assert f"  confirmed: {experiment}" in case.details, (fault.id, case.id, key)
        assert set(case.stats.get("cause_texts", {})) == set(confirmed_by), (fault.id, case.id)
    for part in fault.passes:
        matching = [case for case in result.cases if part in case.id]
        assert matching, f"{fault.id}: no case's id contains {part!r}"
        assert all(case.passed for case in matching), f"{fault.id}: a {part} case failed:\n{text}"


def graded(fault: Fault, grade_source, course):
    """The fault's result, graded once per session."""
    if fault.id not in _graded:
        stage = course.select(str(fault.stage))
        _graded[fault.id] = grade_source(stage.id, fault.path.read_text(encoding="utf-8"),
                                         backend=fault.backend)
    return _graded[fault.id]


def confirmed(result) -> set[str]:
    return {key for case in result.cases for key in case.stats.get("causes", ())}


def names_line_or_cause(fault: Fault, result) -> bool:
    text = reported(result)
    return bool((fault.line and re.search(rf"\bline {fault.line}\b", text))
                or (set(fault.causes) & confirmed(result)))


def test_the_corpus_covers_both_tracks_and_every_stage():
    faults = fault_files()
    assert len(faults) >= 50
    for track in BACKENDS:
        assert {f.stage for f in faults if f.path.parent.name == track} == {1, 2, 3, 4, 5}, track


def test_every_cause_of_the_catalogue_has_a_fault_file(course):
    """Each cause a stage's hypotheses can name is made by a fault file of that stage (on a
    track where it can be made): a hypothesis no submission shows has never been seen to
    confirm anything."""
    faults = fault_files()
    missing = {(stage.id, h.cause) for stage in course.stages for h in stage.hypotheses
               if not any(f.stage == stage.number and h.cause in f.causes for f in faults)}
    assert not missing, sorted(missing)


@pytest.mark.slow
@pytest.mark.parametrize("track", list(BACKENDS))
def test_the_corpus_reports_name_the_line_or_the_cause_and_only_confirmed_causes(
        track, grade_source, course):
    faults = [f for f in fault_files() if f.path.parent.name == track]
    results = {f.id: graded(f, grade_source, course) for f in faults}
    assert all(results[f.id].status is Status.FAIL for f in faults if f.expect is Status.FAIL)
    named = [f.id for f in faults if names_line_or_cause(f, results[f.id])]
    assert len(named) >= NAMED * len(faults), sorted(set(f.id for f in faults) - set(named))
    # A cause is named only where the fault's own header expects it: the checks behind the
    # causes must not confirm a mistake the file does not make.
    wrong = {f.id: confirmed(results[f.id]) - set(f.causes) for f in faults}
    assert not {k: v for k, v in wrong.items() if v}, wrong
    for fault in faults:  # and so does every hint shown under the stage
        stage = course.select(str(fault.stage))
        hints = {h.hint: h for h in stage.hints}
        for text in results[fault.id].hints:
            cause = hints[text].when.cause
            assert cause is None or cause in confirmed(results[fault.id]), (fault.id, text)


@pytest.mark.slow
@pytest.mark.parametrize("track", list(BACKENDS))
def test_faults_with_different_causes_are_told_different_things(track, grade_source, course):
    """Two faults of one stage that are different mistakes are never told the same thing word
    for word: a student who made one must not be told what a student who made the other is.
    What a fault is told is about: the causes its shown case confirmed (two faults that
    confirm the same cause are told its words, rightly), else its header's `mistake:` (two
    edits that behave alike, which no experiment on the kernel can tell apart, say so with
    one word), else the file itself."""
    faults = [f for f in fault_files() if f.path.parent.name == track]
    told: dict[tuple[int, str], list[Fault]] = {}
    about: dict[str, object] = {}
    for fault in faults:
        result = graded(fault, grade_source, course)
        told.setdefault((fault.stage, explanation(result)), []).append(fault)
        named = frozenset(k for c in result.failures[:1] for k in c.stats.get("causes", ()))
        about[fault.id] = named or fault.kind or fault.id
    shared = {said: [f.id for f in group] for (_, said), group in told.items()
              if len({about[f.id] for f in group}) > 1}
    assert not shared, "\n\n".join(f"{ids}:\n{said}" for said, ids in shared.items())
