"""Each tile language is one record (grader.tracks.Track), found through the
`tilecourse.tracks` entry point its package declares, and a module per part of its code
(the record's `Parts`), each keeping one contract of grader.tracks.contract: every member it
defines with the contract's own parameters, the optional ones answered by the contract's
defaults. Below the languages (the backends, the replay, the sandbox, the judge), nothing
names a language: a third language is its package, its entry point and its content
(docs/architecture.md, "add a tile language"), with no table to extend elsewhere."""

import ast
import dataclasses
import importlib.util
import json
import re
import sys
import types
from pathlib import Path

import pytest
from conftest import ROOT

from grader.backends.selection import BACKENDS, select
from grader.tracks import TRACKS, NotSupported, Parts, wing
from grader.tracks import contract as contracts
from grader.tracks.found import BrokenTrack, declared, load

CONTRACTS = {c.role: c for c in contracts.CONTRACTS}
MEMBERS = sorted((role, m) for role, c in CONTRACTS.items() for m in c.members())
MACHINE = json.loads((ROOT / "grader/result.schema.json").read_text())["properties"][
    "machine"]["required"]


def _project() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


@pytest.mark.parametrize("name", list(TRACKS))
def test_a_track_has_its_backends_its_extra_and_its_corpora(name):
    track = TRACKS[name]
    gpu, cpu = BACKENDS[track.gpu_backend], BACKENDS[track.cpu_backend]
    assert (gpu.track, gpu.device, gpu.interpret) == (name, "cuda", False)
    assert (cpu.track, cpu.device, cpu.interpret) == (name, "cpu", True)
    assert track.extra is None or track.extra in _project()["optional-dependencies"]
    for corpus in ("faults", "attacks"):
        assert list((ROOT / "tests" / corpus / name).glob("stage*.py")), (corpus, name)


def test_the_tracks_are_the_entry_points_the_project_declares():
    points = _project()["entry-points"]["tilecourse.tracks"]
    assert {n: v for n, v, _ in declared()} == points
    assert sorted(TRACKS) == sorted(points) and list(TRACKS)[0] == "triton"  # no extra: first
    for name, value in points.items():
        module = value.partition(":")[0]
        assert module == f"grader.languages.{name}.track", value  # its record in its package
        assert all(p.startswith(f"grader.languages.{name}.")
                   for p in dataclasses.astuple(TRACKS[name].parts) if p)


def test_an_entry_point_that_names_no_record_is_refused():
    with pytest.raises(BrokenTrack, match="cannot be loaded"):
        load("odd", "grader.languages.odd.track:ODD", "a test")
    with pytest.raises(BrokenTrack, match="is not the record"):
        load("odd", "grader.tracks.record:Words", "a test")  # a class, not a record
    with pytest.raises(BrokenTrack, match="is not the record"):
        load("cutile", "grader.languages.triton.track:TRITON", "a test")  # another's record


def test_each_part_a_record_names_has_one_contract():
    assert list(CONTRACTS) == [f.name for f in dataclasses.fields(Parts)]


@pytest.mark.parametrize("name", list(TRACKS))
@pytest.mark.parametrize("role", list(CONTRACTS))
def test_a_part_gives_every_member_of_its_contract_loaded_once(name, role):
    part = getattr(wing(name), role)
    assert sorted(vars(part)) == sorted(CONTRACTS[role].members())
    assert getattr(wing(name), role) is part and wing(TRACKS[name]) is wing(name)


def _module(**members) -> types.ModuleType:
    module = types.ModuleType("grader.languages.odd.reader")
    vars(module).update(members)
    return module


def test_a_part_that_breaks_its_contract_is_refused_with_the_member_named():
    track = TRACKS["triton"]
    good = dict(spellings=object(), decorate=lambda function, spelling, options, node,
                interpreted: None, parameters=lambda kernel: [], optional=lambda kernel: set())
    part = contracts.KernelReader.answered_by(track, _module(**good))
    assert part.dtype("float32") is None and part.helpers_are_tile_code is False  # defaults
    missing = {k: v for k, v in good.items() if k != "parameters"}
    with pytest.raises(TypeError, match="defines no `parameters`, which the reader contract"):
        contracts.KernelReader.answered_by(track, _module(**missing))
    renamed = {**good, "optional": lambda k: set()}
    with pytest.raises(TypeError, match=r"reader.optional takes \(k\); the contract's takes "
                                        r"\(kernel\)"):
        contracts.KernelReader.answered_by(track, _module(**renamed))


def test_a_language_without_a_gpu_part_says_so_where_it_is_asked():
    toy = dataclasses.replace(TRACKS["triton"], parts=dataclasses.replace(
        TRACKS["triton"].parts, gpu=None))
    with pytest.raises(NotSupported, match="has no gpu part"):
        wing(toy).gpu.build(None, (), {}, (1,))
    assert wing(toy).gpu.skipped == () and wing(toy).gpu.disassemblers() == []
    assert "has no GPU backend" in BACKENDS["triton"].probe.func(toy, "cuda")
    # its one program is the one the CPU runs: no front end to check it against
    assert contracts.CpuRunner(toy).front_end(None, None, (), {}, None) is None
    with pytest.raises(contracts.Unavailable, match="no compiler front end"):
        contracts.CpuRunner(TRACKS["triton"]).front_end(None, None, (), {}, None)


def _backends(track):
    return {"cuda": BACKENDS[track.gpu_backend], "cpu": BACKENDS[track.cpu_backend]}


def _text_or_none(value) -> bool:
    return value is None or isinstance(value, str) and value.strip() != ""


# What each member must be for every language, where it can be seen without a GPU and
# without running a kernel (the grading tests run the rest, per track: test_grading,
# test_replay, test_cutile_sim, test_traffic and the attack and fault corpora).
CHECKS = {
    ("backends", "probe"): lambda p, t: all(_text_or_none(p.probe(d)) for d in ("cuda", "cpu"))
    and BACKENDS[t.cpu_backend].probe() == p.probe("cpu"),
    ("backends", "prepare"): lambda p, t: p.prepare(BACKENDS[t.cpu_backend]) is None,
    ("backends", "gpu_facts"): lambda p, t: callable(p.gpu_facts),
    ("backends", "versions"): lambda p, t: p.versions() and set(p.versions()) <= set(MACHINE)
    and all(_text_or_none(v) for v in p.versions().values()),
    ("backends", "readable"): lambda p, t: all(Path(f).is_absolute() and Path(f).is_dir()
                                               for f in p.readable()),
    ("worker", "bind"): lambda p, t: p.bind("child", "cuda") is None and t.module in sys.modules,
    ("worker", "warm"): lambda p, t: callable(p.warm),
    ("recorder", "hook_launches"): lambda p, t: callable(p.hook_launches),
    ("recorder", "dtype_name"): lambda p, t: p.dtype_name(3) is None
    and p.dtype_name("float32") is None,
    ("recorder", "build_offline"): lambda p, t: callable(p.build_offline),
    ("reader", "spellings"): lambda p, t: p.spellings.track == t.name
    and p.spellings.package == t.module and t.decorator.split("(")[0] in p.spellings.shown
    and all(kind in p.spellings.options or kind in p.spellings.refused
            for kind in p.spellings.decorators.values()),
    ("reader", "helpers_are_tile_code"): lambda p, t: isinstance(p.helpers_are_tile_code, bool),
    ("reader", "decorate"): lambda p, t: callable(p.decorate),
    ("reader", "constructors"): lambda p, t: all(s.startswith(t.module + ".") and callable(c)
                                                 for s, c in p.constructors.items()),
    ("reader", "dtype"): lambda p, t: p.dtype("no_such_dtype") is None,
    ("reader", "parameters"): lambda p, t: callable(p.parameters),
    ("reader", "optional"): lambda p, t: callable(p.optional),
    ("cpu", "front_end"): lambda p, t: callable(p.front_end),
    ("cpu", "launch"): lambda p, t: callable(p.launch),
    ("cpu", "watch"): lambda p, t: callable(p.watch),
    ("cpu", "runtime"): lambda p, t: p.runtime(str(ROOT / "solutions" / "x.py")) is None,
    ("gpu", "build"): lambda p, t: callable(p.build),
    ("gpu", "load_binary"): lambda p, t: callable(p.load_binary),
    ("gpu", "disassemblers"): lambda p, t: all(isinstance(d, str) for d in p.disassemblers()),
    ("gpu", "skipped"): lambda p, t: all(isinstance(s, str) for s in p.skipped),
}


def test_every_member_of_every_contract_is_checked():
    assert sorted(CHECKS) == MEMBERS


@pytest.mark.parametrize("name", list(TRACKS))
@pytest.mark.parametrize("role,member", MEMBERS)
def test_each_member_answers_as_the_contract_says(name, role, member):
    assert CHECKS[role, member](getattr(wing(name), role), TRACKS[name]), (name, role, member)


@pytest.mark.parametrize("name", list(TRACKS))
def test_the_backends_are_worded_from_the_record(name, monkeypatch):
    track = TRACKS[name]
    assert BACKENDS[track.cpu_backend].summary == track.cpu_summary != ""
    assert BACKENDS[track.gpu_backend].summary == track.gpu_summary != ""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    chosen = select("auto", name)
    assert chosen.backend.name == track.cpu_backend  # no GPU here
    assert chosen.reason.endswith(f"so {track.cpu_runner} runs the {track.title} kernels on "
                                  "the CPU"), chosen.reason
    if track.forced_by:
        variable, value = track.forced_by
        monkeypatch.setenv(variable, value)
        forced = select("auto")
        assert forced.backend.name == track.cpu_backend
        assert forced.reason == f"{variable}={value} is set in the environment"


@pytest.mark.parametrize("name", list(TRACKS))
def test_a_wing_rebuilds_its_own_solutions_kernels(course, name):
    """The kernel-file members together: the first stage's solution read, its decorators
    applied and its constants made by the wing, and each kernel's parameters named."""
    from grader.replay import kernels

    path = ROOT / "solutions" / course.stages[0].modules[name]
    file = kernels.load(path, name, interpreted=True)
    found = [v for v in file.namespace.values() if TRACKS[name].owns(type(v).__module__)]
    assert found and all(wing(name).reader.parameters(k) for k in found)


def test_a_stage_file_shows_its_own_track_and_no_other(course):
    for stage in course.stages:
        for name, track in TRACKS.items():
            text = (ROOT / "exercises" / stage.modules[name]).read_text(encoding="utf-8")
            shown = [other for other, t in TRACKS.items() if t.imports.search(text)]
            assert shown == [name], (stage.id, name, shown)


# --- below the wings, no language is named ---------------------------------------------------

BELOW = ("backends", "replay", "sandbox", "judge")
_DOTTED = re.compile(r"[A-Za-z_][\w.]*")


def language_names() -> set[str]:
    """What names a language: its track's name, its module, its package's modules."""
    return {n for t in TRACKS.values()
            for n in (t.name, t.module, *filter(None, dataclasses.astuple(t.parts)))} \
        | {"grader.languages"}


def naming(source: str) -> list[str]:
    """Where code names a language: an import of a language's module or of a wing, or a
    string that is such a name or a dotted name below one (`"cuda.tile.ByTarget"`, a track
    compared with `"cutile"`). Prose that mentions a language is not a name."""
    names, found = language_names(), []

    def names_one(text: str) -> bool:
        return any(text == n or text.startswith(n + ".") for n in names)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if names_one(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and names_one(node.module):
            found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _DOTTED.fullmatch(node.value) and names_one(node.value):
            found.append((node.lineno, repr(node.value)))
    return [f"line {line}: {what}" for line, what in sorted(found)]


def test_the_check_finds_a_language_named_below_the_wings():
    # The check must be able to fail: each way lower code could name a language.
    for code in ('if track == "cutile":\n    pass\n', 'HOOKS = {"triton": None}\n',
                 "import triton.language as tl\n", "from cuda.tile import launch\n",
                 "from grader.languages.triton import reader\n",
                 'importlib.import_module("grader.languages.cutile")\n',
                 'spelling == "cuda.tile.ByTarget"\n'):
        assert naming(code), code
    assert not naming('message = "a Triton kernel: write tl.load(x, mask=...)"\n'
                      "wing(track).reader.spellings\n")


@pytest.mark.parametrize("part", BELOW)
def test_no_language_is_named_below_the_wings(part):
    found = [f"{path.relative_to(ROOT)} {where}"
             for path in sorted((ROOT / "grader" / part).rglob("*.py"))
             for where in naming(path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


def test_the_entry_points_are_read_once_per_state_of_the_installation(tmp_path, monkeypatch):
    from grader.tracks import found

    monkeypatch.delenv(found.ENV, raising=False)
    monkeypatch.setattr(found, "CACHE_FILE", tmp_path / "tracks.json")
    reads = []
    monkeypatch.setattr(found, "_read", lambda: reads.append(1) or [("t", "m:T", "here")])
    assert found.declared() == found.declared() == [("t", "m:T", "here")] and len(reads) == 1
    folder = tmp_path / "site"  # a folder on sys.path whose contents change: read again
    folder.mkdir()
    monkeypatch.setattr(found.sys, "path", [*found.sys.path, str(folder)])
    found.declared()
    (folder / "new.dist-info").mkdir()
    found.declared()
    assert len(reads) == 3
    monkeypatch.setenv(found.ENV, '[["told", "m:T", "the grading process"]]')
    assert found.declared() == [("told", "m:T", "the grading process")] and len(reads) == 3


@pytest.mark.parametrize("told,said", [
    ("[]", "No tile language is declared: no `tilecourse.tracks` entry point"),
    ('[["odd", "no_such_module:ODD", "a test"]]',
     "The tile language 'odd', declared by a test as 'no_such_module:ODD', cannot be loaded")])
def test_an_installation_without_its_languages_says_so_without_a_traceback(told, said):
    import os
    import subprocess

    from grader.tracks import found

    run = subprocess.run([sys.executable, "-m", "grader", "--help"], cwd=ROOT, text=True,
                         capture_output=True, env={**os.environ, found.ENV: told}, timeout=60)
    assert run.returncode == 2 and said in run.stderr and "Traceback" not in run.stderr, run
