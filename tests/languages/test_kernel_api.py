"""Each language's reviewed list of what a kernel body may name (grader.replay.kernel_api),
checked against the installed version: every name the course's own files use is on it,
every name on it exists, every public name is on it or left out with a reason, and the
installed version is one the list was reviewed for. A new version of a language fails here
until someone reviews what it adds and removes, rather than being accepted silently."""

import ast
import re
from pathlib import Path

import pytest
from conftest import ROOT

from grader.replay import kernels
from grader.replay.spellings import Aliases, Unknown, lookup
from grader.tracks import TRACKS, wing

# The course's own kernels: the reference solutions, the exercises' stubs, and the honest
# submissions of the test corpus.
COURSE_FILES = sorted([*ROOT.glob("solutions/*/stage*.py"), *ROOT.glob("exercises/*/stage*.py"),
                       *ROOT.glob("tests/honest/*/stage*.py")])


def _table(track: str):
    return wing(track).reader.spellings


def _spellings(path: Path, track: str) -> set[str]:
    """Every spelling of a name or attribute chain in the bodies of the file's kernels, as
    its imports spell it (`tl.load` -> "triton.language.load")."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = Aliases()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            aliases.add(node)
    decorators = _table(track).decorators
    found = set()
    for function in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        marks = [aliases.spelling(d.func if isinstance(d, ast.Call) else d)
                 for d in function.decorator_list]
        if not any(mark in decorators for mark in marks):
            continue  # host code: the wrapper
        for node in (n for statement in function.body for n in ast.walk(statement)):
            if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
                spelled = aliases.spelling(node)
                if spelled and (isinstance(node, ast.Attribute) or node.id in aliases.spelled):
                    found.add(spelled)
    return found


@pytest.mark.parametrize("path", COURSE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_the_course_uses_is_on_the_list(path):
    track = path.parent.name
    listed = _table(track).kernel_api
    modules = set(listed.current())
    used = {s for s in _spellings(path, track) if s.split(".")[0] in modules}
    # (an exercise's stub may name none yet)
    assert used or "exercises" in path.parts, f"{path.name}: no kernel API found"
    assert sorted(s for s in used if not listed.allows(s)) == []
    kernels.load(path, track)  # and the body check, which reads the list, takes the file


@pytest.mark.parametrize("track", list(TRACKS))
def test_the_installed_version_is_one_the_list_was_reviewed_for(track):
    listed = _table(track).kernel_api
    assert listed.installed() in listed.reviewed(), (
        f"{listed.title} {listed.installed()} is installed, and its kernel API was reviewed for "
        f"{', '.join(listed.reviewed())}: review what it adds and removes, and write that "
        f"as a Change at {listed.installed()}")


@pytest.mark.parametrize("track", list(TRACKS))
def test_every_listed_name_exists_in_the_installed_version(track):
    table = _table(track)
    missing = []
    for module, names in table.kernel_api.current().items():
        for name in names:
            try:
                lookup(f"{module}.{name}", table)
            except (Unknown, ImportError):
                missing.append(f"{module}.{name}")
    assert sorted(missing) == []


@pytest.mark.parametrize("track", list(TRACKS))
def test_every_public_name_is_listed_or_left_out_with_a_reason(track):
    """What a new version adds is found here: a kernel would be refused it (the list is the
    only way in), but the list must say so on purpose, with the reason a student reads."""
    table = _table(track)
    listed = table.kernel_api
    unreviewed = []
    for module, names in listed.current().items():
        for name in dir(lookup(module, table)):
            spelling = f"{module}.{name}"
            if name.startswith("_") or name in names or spelling in listed.left_out:
                continue
            try:
                lookup(spelling, table)
            except (Unknown, ImportError):
                continue  # refused before the list is read: a module of the host, a step
            unreviewed.append(spelling)
    assert sorted(unreviewed) == []
    assert all(listed.left_out.values())


@pytest.mark.parametrize("track", list(TRACKS))
def test_nothing_is_both_listed_and_left_out(track):
    listed = _table(track).kernel_api
    for version in listed.reviewed():
        names = listed.at(version)
        pairs = (s.rsplit(".", 1) for s in listed.left_out)
        both = [f"{module}.{name}" for module, name in pairs if name in names.get(module, ())]
        assert both == [], version


def test_a_version_gets_the_base_and_every_change_up_to_it():
    listed = _table("triton").kernel_api
    assert "advance" in listed.at("3.6")["triton.language"]
    assert "squeeze" not in listed.at("3.6")["triton.language"]
    assert listed.at("3.8") == listed.at("3.6")  # not reviewed: the list below it
    assert "squeeze" in listed.at("3.9")["triton.language"]
    assert "advance" not in listed.at("3.9")["triton.language"]
    assert listed.at("3.12") == listed.at("3.9")  # newer than any reviewed: nothing new


@pytest.mark.parametrize("spelling", [
    "triton.language.extra.cuda.globaltimer", "triton.language.extra.cuda.smid",
    "triton.language.extra.cuda.num_warps", "triton.language.extra.cuda.num_threads",
    "triton.language.inline_asm_elementwise",
])
def test_what_reads_the_clock_the_hardware_or_runs_assembly_is_off_the_list(spelling):
    listed = _table("triton").kernel_api
    for version in listed.reviewed():
        module, name = spelling.rsplit(".", 1)
        assert name not in listed.at(version).get(module, ())
    assert spelling in listed.left_out


HEADER = "import triton\nimport triton.language as tl\nfrom triton.language.extra import cuda\n"


@pytest.mark.parametrize("body, said", [
    ("t = tl.extra.cuda.globaltimer()", "`tl.extra.cuda.globaltimer` cannot be used in a "
                                        "kernel: it reads the GPU's clock"),
    ("t = cuda.smid()", "`tl.extra.cuda.smid` cannot be used in a kernel: it reads which "
                        "multiprocessor (SM) a program runs on"),
    ("w = tl.extra.cuda.num_warps()", "it reads how the kernel was launched"),
    ("tl.debug_barrier()", "`tl.debug_barrier` cannot be used in a kernel: a barrier"),
    ("x = tl.atomic_poll(p, 0)", "`tl.atomic_poll` cannot be used in a kernel"),
    ("x = tl.extra.libdevice.exp(tl.load(p))", None),
    ("x = tl.extra.cuda.libdevice.tanh(tl.load(p))", None),
    ("x = tl.math.exp2(tl.load(p)).to(tl.float16)", None),
])
def test_a_kernel_body_may_name_only_what_the_list_names(tmp_path, body, said):
    path = tmp_path / "submission.py"
    path.write_text(HEADER + "\n\n@triton.jit\ndef k(p):\n    " + body + "\n")
    if said is None:
        kernels.load(path, "triton", interpreted=True)
        return
    with pytest.raises(kernels.SourceError, match=re.escape(said)) as found:
        kernels.load(path, "triton", interpreted=True)
    assert str(found.value).startswith("line 8 of submission.py")


def test_a_name_not_on_the_list_says_which_version_and_what_to_use(tmp_path):
    path = tmp_path / "submission.py"
    path.write_text("import cuda.tile as ct\n\n\n@ct.kernel\ndef k(x):\n"
                    "    ct.grid_dependency_control_wait()\n")
    with pytest.raises(kernels.SourceError, match="the grader runs launches one after another"):
        kernels.load(path, "cutile")
    listed = _table("cutile").kernel_api
    said = listed.refusal("cuda.tile.not_a_function")
    assert f"cuTile {listed.installed()}" in said and "ct.load" in said
