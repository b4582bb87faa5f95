"""docs/architecture.md stays true: it opens with its glossary, and every path, module and
class it cites in backticks exists. A name the page gives that the code no longer has fails
here, naming the line."""

import importlib
import re

import pytest
from conftest import ROOT

PAGE = ROOT / "docs" / "architecture.md"
CITED = re.compile(r"`([^`\n]+)`")
FILE = re.compile(r"[\w./-]+\.(?:py|toml|md|json|sh|j2|ini)|[\w./-]+/")
DOTTED = re.compile(r"(?<![\w/])grader(?:\.\w+)+(?<!\.py)")
CLASS = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*")
# Where a path the page cites may lie: a table row of a part names its modules bare.
HOMES = ("", "grader/", "tests/", "scripts/")
# Files and folders an instructor or a run makes, which the repository does not hold.
MADE = ("course.hidden.toml", "OUT/")


def cited() -> list[tuple[int, str]]:
    return [(number, token) for number, line in enumerate(PAGE.read_text().splitlines(), 1)
            for token in CITED.findall(line)
            if not any(mark in token for mark in "*<>")]  # a pattern: `exercises/<track>/`


def _found_file(token: str) -> bool:
    if token.startswith(MADE):
        return True
    if "/" not in token.rstrip("/"):  # a bare module or folder, named in its part's row
        return any(any(ROOT.glob(f"{home}**/{token.rstrip('/')}")) for home in HOMES[1:]) \
            or (ROOT / token).exists()
    return any((ROOT / home / token).exists() for home in HOMES)


def _found_dotted(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def _classes() -> set[str]:
    found = set()
    for path in (ROOT / "grader").rglob("*.py"):
        found |= set(re.findall(r"^\s*class (\w+)", path.read_text(encoding="utf-8"), re.M))
    return found


def test_the_page_opens_with_its_glossary():
    headings = [line for line in PAGE.read_text().splitlines() if line.startswith("## ")]
    assert headings[0] == "## Glossary", headings[:2]


def test_every_path_the_page_cites_exists():
    missing = [f"line {n}: {m}" for n, token in cited()
               for m in FILE.findall(token) if not _found_file(m)]
    assert not missing, "\n".join(missing)


def test_every_module_and_name_the_page_cites_exists():
    missing = [f"line {n}: {name}" for n, token in cited()
               for name in DOTTED.findall(token) if not _found_dotted(name)]
    assert not missing, "\n".join(missing)


def test_every_class_the_page_cites_exists():
    classes = _classes()
    missing = [f"line {n}: {token}" for n, token in cited()
               if CLASS.fullmatch(token) and token not in classes]
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("token,found", [("grader/tracks/contract.py", True),
                                         ("grader/tracks.py", False),
                                         ("confined.py", True), ("serve.py", False)])
def test_the_path_check_can_fail(token, found):
    assert _found_file(token) is found


def test_the_name_checks_can_fail():
    assert _found_dotted("grader.tracks.wing") and not _found_dotted("grader.tracks.Wingz")
    assert "StageCheck" in _classes() and "Wing2" not in _classes()
