"""The grader's layout is its design: these tests keep it so.

Imports run one way, from the command line down to the course:

    cli -> instructor, doctor, checks -> grading -> speed, languages -> judge -> sandbox
        -> replay -> course -> problems, backends

with a few leaves any layer may use (errors, cache, the GPU clock, the tile languages'
records, the result records, the quoting of a submission's text, the parse of Python
source), and the report modules depending on the result records (and that quoting) only. The languages' wings stand above
the machinery they use, which reaches them only through grader.tracks.wing. Every import
counts, those inside functions too, so a late import cannot hide a cycle.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "grader"

# The layer of each top-level part of grader/: a module may import its own part and the
# parts of lower layers.
LAYERS = {
    "grader": 0,  # the package itself holds only __version__
    "grader.errors": -1,  # errors written for people: below the other leaves (tracks raises one)
    "grader.cache": -1,  # small JSON caches on the machine, below the other leaves (tracks keeps one)
    "grader.timing": 0,  # the one timed loop, run on both sides of the trust boundary
    "grader.shown_clock": 0,  # the clock of every time a student sees: hidden work left out
    "grader.placement": 0,  # where that loop's tensors lie, moved on both sides alike
    "grader.tensor_buffer": 0,  # the tensors a message of the wire carries
    "grader.device_memory": 0,  # ... or their bytes, in GPU memory the two processes share
    "grader.install": 0,  # `python -m grader.install`: the standard library only
    "grader.tracks": 0,  # the tile languages, a record each: every layer reads them
    "grader.results": 0,  # the result records: written where decided, read by the reports
    "grader.quoting": 0,  # text from a submission, quoted: every layer that words a message
    "grader.syntax": 0,  # Python source parsed one at a time: threads may parse at once
    "grader.protocol": 1,  # the wire between the grader and its processes
    "grader.problems": 1,
    "grader.backends": 1,
    "grader.course": 2,
    "grader.replay": 3,  # the grader's own run of the submission's kernels
    "grader.sandbox": 4,
    "grader.judge": 5,
    "grader.intake": 5,  # the student's files before they run: track, TODOs, screening
    "grader.speed": 6,
    # The tile languages' packages (grader.tracks.contract): each uses the machinery below it, which
    # reaches a wing only through grader.tracks.wing (importlib, by the record's module path).
    "grader.languages": 6,
    "grader.report": 7,
    "grader.grading": 7,  # one request resolved, each stage opened and checked through pytest
    "grader.checks": 8,
    "grader.checks.plugin": 8,  # `pytest --pyargs grader.checks`: grading driven from pytest
    "grader.instructor": 8,
    "grader.doctor": 8,
    "grader.cli": 10,  # the `grade` command: click only, a module per group of commands
    "grader.__main__": 11,
}
# What a report module may import besides its own part: the result records, and the one
# wording of text from a submission that the messages in those records already use.
REPORTS_READ = ("grader.results", "grader.quoting")
LARGEST = 350  # lines per module


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def resolve(name: str) -> str:
    """The grader module an import statement names."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports(name: str) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names taken from it) for every grader import of a module."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names if a.name.split(".")[0] == "grader"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            if base.split(".")[0] != "grader":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:  # `from grader.sandbox import child`: the module itself
                    found.append((node.lineno, sub, []))
                else:
                    found.append((node.lineno, base, [alias.name]))
    return found


def layer_of(name: str) -> tuple[str, int]:
    """The part of grader/ a module belongs to, and its layer; a module of no listed part
    (a new top-level module or package) has none: it must be given one here."""
    part = name
    while part not in LAYERS:
        part = part.rpartition(".")[0]
        if part == "grader" and name != "grader":
            raise LookupError(f"{name} belongs to no part of LAYERS in tests/test_layout.py")
    return part, LAYERS[part]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_has_a_layer(name):
    layer_of(name)


def test_a_new_top_level_module_needs_a_layer():
    with pytest.raises(LookupError, match="grader.helpers belongs to no part"):
        layer_of("grader.helpers")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_run_one_way(name):
    part, layer = layer_of(name)
    wrong = []
    for line, target, _ in imports(name):
        target = resolve(target)
        other, other_layer = layer_of(target)
        if other == part:
            continue
        if other_layer >= layer:
            wrong.append(f"line {line}: {name} ({part}, layer {layer}) imports {target} "
                         f"({other}, layer {other_layer})")
        if part == "grader.report" and other not in REPORTS_READ:
            wrong.append(f"line {line}: a report module imports {target}; reports are made "
                         "from the result records alone")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    graph = {name: sorted({resolve(t) for _, t, _ in imports(name)} - {name}) for name in MODULES}
    state: dict[str, str] = {}
    cycles = []

    def visit(node, trail):
        state[node] = "open"
        for nxt in graph[node]:
            # A package's __init__ importing its own submodules (and their importing
            # siblings through it) is how a package re-exports; not a cycle of code.
            if node == nxt.rpartition(".")[0] and MODULES[node].name == "__init__.py":
                continue
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(trail[trail.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = "done"

    for name in graph:
        if name not in state:
            visit(name, [name])
    assert not cycles, "\n".join(cycles)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_names_taken_from_another_module(name):
    taken = [f"line {line}: {name} takes {n} from {target}"
             for line, target, names in imports(name) for n in names
             if n.startswith("_") and not n.startswith("__")]
    assert not taken, "\n".join(taken)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_small(name):
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= LARGEST, f"{MODULES[name]} has {lines} lines; split it by concept"


def test_no_grab_bag_modules():
    bags = [p for p in MODULES.values() if p.stem in ("utils", "util", "helpers", "misc", "common")]
    assert not bags


def test_the_check_finds_a_backward_import(tmp_path, monkeypatch):
    # The rule itself must be able to fail: a course module that imports the judge.
    fake = PACKAGE / "course" / "model.py"
    monkeypatch.setitem(MODULES, "grader.course.model", tmp_path / "model.py")
    (tmp_path / "model.py").write_text(fake.read_text() + "\nfrom grader.judge import compare\n")
    with pytest.raises(AssertionError, match="imports grader.judge.compare"):
        test_imports_run_one_way("grader.course.model")


def test_every_subpackage_is_in_the_distribution():
    """pyproject.toml lists the packages a wheel carries: a subpackage left out installs a
    grader that fails on its first import."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")}
    assert found == listed


def test_every_file_the_grader_reads_is_in_the_distribution():
    """pyproject.toml's package-data lists the files besides the modules that a wheel
    carries (the result's schema, the pages' templates): one left out installs a grader that
    fails when it reads it."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    from fnmatch import fnmatch

    data = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    files = [p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")
             and "__pycache__" not in p.parts]
    assert any(p.suffix == ".j2" for p in files)
    left_out = []
    for path in files:
        package = path.parent
        while not (package / "__init__.py").is_file():
            package = package.parent
        name = ".".join(package.relative_to(PACKAGE.parent).parts)
        inside = path.relative_to(package).as_posix()
        if not any(fnmatch(inside, pattern) for pattern in data.get(name, [])):
            left_out.append(f"{path.relative_to(PACKAGE.parent)} (package {name})")
    assert not left_out, "not in package-data: " + ", ".join(left_out)


MOST_PARAMETERS = 8  # more, and the values belong together in a typed record
# Functions that stand for a tile language's own API take that API's parameters.
API_MIRRORS = ("grader.languages.cutile.simulator",)


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


@pytest.mark.parametrize("name", sorted(n for n in MODULES if not n.startswith(API_MIRRORS)))
def test_no_function_takes_more_than_eight_parameters(name):
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    long = [f"line {n.lineno}: {n.name} takes {len(_parameters(n))}" for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and len(_parameters(n)) > MOST_PARAMETERS]
    assert not long, "\n".join(long)
