"""Each tile language is one record (grader.tracks.TRACKS) and one wing, the package its
record names, whose `WING` keeps the contract (grader.tracks.Wing): every member, with the
contract's own parameters. Below the wings (the backends, the replay, the sandbox, the
judge), nothing names a language: a third language is its record, its wing and its content
(docs/architecture.md, "add a tile language"), with no table to extend elsewhere."""

import ast
import importlib
import importlib.util
import inspect
import json
import re
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from grader.backends.selection import BACKENDS
from grader.tracks import TRACKS, Wing, wing

MEMBERS = sorted(Wing.__abstractmethods__)
MACHINE = json.loads((ROOT / "grader/result.schema.json").read_text())["properties"][
    "machine"]["required"]


@pytest.mark.parametrize("name", list(TRACKS))
def test_a_track_has_its_backends_its_extra_and_its_corpora(name):
    track = TRACKS[name]
    gpu, cpu = BACKENDS[track.gpu_backend], BACKENDS[track.cpu_backend]
    assert (gpu.track, gpu.device, gpu.interpret) == (name, "cuda", False)
    assert (cpu.track, cpu.device, cpu.interpret) == (name, "cpu", True)
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert track.extra is None or track.extra in extras
    for corpus in ("faults", "attacks"):
        assert list((ROOT / "tests" / corpus / name).glob("stage*.py")), (corpus, name)


@pytest.mark.parametrize("name", list(TRACKS))
def test_a_track_loads_its_wing_by_the_path_its_record_holds(name):
    track = TRACKS[name]
    found = wing(track)
    assert track.wing == f"grader.languages.{name}"
    assert importlib.import_module(track.wing).WING is found is wing(name)  # loaded once
    assert isinstance(found, Wing) and found.name == name
    assert not type(found).__abstractmethods__


def test_a_record_whose_module_holds_no_wing_is_refused(monkeypatch):
    from dataclasses import replace

    odd = replace(TRACKS["triton"], name="odd", wing="grader.tracks")  # a module without WING
    with pytest.raises(AttributeError, match="WING"):
        wing(odd)
    impostor = replace(TRACKS["triton"], name="cutile", wing="grader.languages.triton")
    monkeypatch.setitem(TRACKS, "cutile", impostor)
    monkeypatch.setattr("grader.tracks._loaded", {})
    with pytest.raises(TypeError, match="is not the Wing of the cutile track"):
        wing("cutile")


def _kind(owner: type, member: str) -> str:
    value = inspect.getattr_static(owner, member)
    return "method" if inspect.isfunction(value) else "value"


def _parameters(owner: type, member: str) -> list[str]:
    return list(inspect.signature(getattr(owner, member)).parameters)


@pytest.mark.parametrize("name", list(TRACKS))
@pytest.mark.parametrize("member", MEMBERS)
def test_a_wing_implements_each_member_as_the_contract_says(name, member):
    """A method takes the contract's parameters, by the contract's names (the machinery
    calls some by keyword); a property may be a plain attribute of the class."""
    cls = type(wing(name))
    assert member in vars(cls), f"{cls.__name__} inherits {member} unimplemented"
    assert _kind(cls, member) == _kind(Wing, member), (name, member)
    if _kind(Wing, member) == "method":
        assert _parameters(cls, member) == _parameters(Wing, member), (name, member)


def _backends(track):
    return {"cuda": BACKENDS[track.gpu_backend], "cpu": BACKENDS[track.cpu_backend]}


def _text_or_none(value) -> bool:
    return value is None or isinstance(value, str) and value.strip() != ""


# What each member must be for every language, where it can be seen without a GPU and
# without running a kernel (the grading tests run the rest, per track: test_grading,
# test_replay, test_cutile_sim, test_traffic and the attack and fault corpora).
CHECKS = {
    "name": lambda w, t: w.name == t.name,
    "summary": lambda w, t: all(b.summary == w.summary(d) != "" for d, b in _backends(t).items()),
    "probe": lambda w, t: all(_text_or_none(w.probe(d)) for d in ("cuda", "cpu"))
    and BACKENDS[t.cpu_backend].probe() == w.probe("cpu"),
    "prepare": lambda w, t: w.prepare(BACKENDS[t.cpu_backend]) is None,
    "note": lambda w, t: _text_or_none(w.note(BACKENDS[t.cpu_backend])),
    "reason": lambda w, t: isinstance(w.reason("cpu"), str) and w.reason("cpu") != "",
    "forced": lambda w, t: _text_or_none(w.forced()),
    "unavailable": lambda w, t: "MISSING" in w.unavailable("MISSING"),
    "versions": lambda w, t: w.versions() and set(w.versions()) <= set(MACHINE)
    and all(_text_or_none(v) for v in w.versions().values()),
    "readable": lambda w, t: all(Path(p).is_absolute() and Path(p).is_dir() for p in w.readable()),
    "preload": lambda w, t: all(importlib.util.find_spec(m) for m in w.preload),
    "bind": lambda w, t: w.bind("child", "cuda") is None and t.module in sys.modules,
    "hook_launches": lambda w, t: callable(w.hook_launches),
    "dtype_name": lambda w, t: w.dtype_name(3) is None and w.dtype_name("float32") is None,
    "build_offline": lambda w, t: callable(w.build_offline),
    "spellings": lambda w, t: w.spellings.track == t.name and w.spellings.package == t.module
    and t.decorator.split("(")[0] in w.spellings.shown
    and all(kind in w.spellings.options or kind in w.spellings.refused
            for kind in w.spellings.decorators.values()),
    "helpers_are_tile_code": lambda w, t: isinstance(w.helpers_are_tile_code, bool),
    "decorate": lambda w, t: callable(w.decorate),
    "constructors": lambda w, t: all(s.startswith(t.module + ".") and callable(c)
                                     for s, c in w.constructors.items()),
    "dtype": lambda w, t: w.dtype("no_such_dtype") is None,
    "parameters": lambda w, t: callable(w.parameters),
    "optional": lambda w, t: callable(w.optional),
    "front_end": lambda w, t: callable(w.front_end),
    "launch": lambda w, t: callable(w.launch),
    "watch": lambda w, t: callable(w.watch),
    "runtime": lambda w, t: w.runtime(str(ROOT / "solutions" / "x.py")) is None,
    "build": lambda w, t: callable(w.build),
    "load_binary": lambda w, t: callable(w.load_binary),
    "skipped": lambda w, t: all(isinstance(s, str) for s in w.skipped),
}


def test_every_member_of_the_contract_is_checked():
    assert sorted(CHECKS) == MEMBERS


@pytest.mark.parametrize("name", list(TRACKS))
@pytest.mark.parametrize("member", MEMBERS)
def test_each_member_answers_as_the_contract_says(name, member):
    assert CHECKS[member](wing(name), TRACKS[name]), (name, member)


@pytest.mark.parametrize("name", list(TRACKS))
def test_a_wing_rebuilds_its_own_solutions_kernels(course, name):
    """The kernel-file members together: the first stage's solution read, its decorators
    applied and its constants made by the wing, and each kernel's parameters named."""
    from grader.replay import kernels

    path = ROOT / "solutions" / course.stages[0].modules[name]
    file = kernels.load(path, name, interpreted=True)
    found = [v for v in file.namespace.values() if TRACKS[name].owns(type(v).__module__)]
    assert found and all(wing(name).parameters(k) for k in found)


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
    """What names a language: its track's name, its module, its wing's module."""
    return {n for t in TRACKS.values() for n in (t.name, t.module, t.wing)} | {"grader.languages"}


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
                 "from grader.languages.triton import WING\n",
                 'importlib.import_module("grader.languages.cutile")\n',
                 'spelling == "cuda.tile.ByTarget"\n'):
        assert naming(code), code
    assert not naming('message = "a Triton kernel: write tl.load(x, mask=...)"\n'
                      "wing(track).spellings\n")


@pytest.mark.parametrize("part", BELOW)
def test_no_language_is_named_below_the_wings(part):
    found = [f"{path.relative_to(ROOT)} {where}"
             for path in sorted((ROOT / "grader" / part).rglob("*.py"))
             for where in naming(path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)
