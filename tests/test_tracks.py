"""Each tile language is one record (grader.tracks); the code particular to a language sits
in tables keyed by the track's name (Triton's entries lead to its wing, grader.languages). A track missing from any of them is a third language
half added: docs/architecture.md ("add a tile language") names every table checked here."""

import pytest
from conftest import ROOT

from grader.backends.selection import BACKENDS
from grader.replay import binaries, source, spellings, watch
from grader.sandbox import launches
from grader.tracks import TRACKS

TABLES = {"grader.sandbox.launches.HOOKS": launches.HOOKS, "grader.replay.watch.HOOKS": watch.HOOKS,
          "grader.replay.source.FRONT_ENDS": source.FRONT_ENDS,
          "grader.replay.source.LAUNCHERS": source.LAUNCHERS,
          "grader.replay.source.PARAMETERS": source.PARAMETERS,
          "grader.replay.binaries.BUILDERS": binaries.BUILDERS,
          "grader.replay.spellings.table": {name: spellings.table(name) for name in TRACKS}}


@pytest.mark.parametrize("name", list(TRACKS))
def test_a_track_has_its_backends_its_code_and_its_corpora(name):
    track = TRACKS[name]
    gpu, cpu = BACKENDS[track.gpu_backend], BACKENDS[track.cpu_backend]
    assert (gpu.track, gpu.device, gpu.interpret) == (name, "cuda", False)
    assert (cpu.track, cpu.device, cpu.interpret) == (name, "cpu", True)
    missing = [table for table, entries in TABLES.items() if name not in entries]
    assert not missing, f"{name} has no entry in {missing}"
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert track.extra is None or track.extra in extras
    for corpus in ("faults", "attacks"):
        assert list((ROOT / "tests" / corpus / name).glob("stage*.py")), (corpus, name)


def test_a_stage_file_shows_its_own_track_and_no_other(course):
    for stage in course.stages:
        for name, track in TRACKS.items():
            text = (ROOT / "exercises" / stage.modules[name]).read_text(encoding="utf-8")
            shown = [other for other, t in TRACKS.items() if t.imports.search(text)]
            assert shown == [name], (stage.id, name, shown)
