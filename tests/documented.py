"""The commands of README.md and docs/*.md, read as the documents write them.

A fenced block of shell (```bash, ```sh, ```shell or ```console) follows a directive, an
HTML comment that a rendered page does not show, saying where its commands run and what they
promise. Its first line holds the block's keys; each further line names one command of the
block, as written there without its comment, and after `->` the keys of that command alone:

    <!-- run: in=clone, course=small, prepare=class
    grade calibrate --write -> needs=gpu
    grade batch submissions/ --out grades/ -> says="ada: graded", says="bob: graded"
    -->

in=clone        the folder the commands run in: a fresh copy of the checkout, whose `.venv`
                is the environment that runs the tests (required)
course=small    that copy's course.toml cut to stage 1 with one small case (n = 1000), where
                the whole course would take minutes on a CPU
prepare=WHAT    what the folder holds before the first command, several joined by `+`:
                `class` (submissions/ with ada/, a checkout with stage 1 solved on the Triton
                track, and bob.zip, a drag-and-drop upload of cuTile's stage 1), `export`
                (export/: a Gradescope bulk export, with SID 12345), `autograder`
                (autograder.zip, as `grade autograder autograder.zip` writes it)
needs=WHAT      what must be there to run it, several joined by `+`: `gpu`; `network` (it
                installs packages); `ci` (it is the test suite itself: .ci/run must run it,
                which the test checks). Where it is missing, the command is reported
                skipped, and why.
slow            run only by `pytest -m slow` (a whole block: a command may need the ones
                before it)
exit=N          the exit code it promises (default 0)
says="TEXT"     a part of what it prints (stdout and stderr together); repeatable

The first line may also give a command's keys, for every command of the block. In a
```console block the commands are the lines that begin with `$ `, and the lines below one
are output it promises.
Every other fence names its language (```python, ```toml, ```text): a fence without one is
an error, as is a shell block without a directive, so that no command slips in unread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELLS = {"bash", "sh", "shell", "console"}
FOLDERS = {"clone"}
COURSES = {"small"}
PREPARED = {"class", "export", "autograder"}
NEEDS = {"gpu", "network", "ci"}
BLOCK_KEYS = {"in", "course", "prepare", "slow"}
COMMAND_KEYS = {"needs", "exit", "says"}
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
# One `key=value` of a directive, the value quoted where it holds a comma.
PAIR = re.compile(r"""\s*(\w+)(?:=("[^"]*"|'[^']*'|[^,]*))?\s*(?:,|$)""")


@dataclass(frozen=True)
class Command:
    text: str  # as typed, its comment and continued lines included
    line: int
    exit: int = 0
    says: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The command without its comments, on one line: how a directive names it."""
        return " ".join(without_comment(part).strip().rstrip("\\").strip()
                        for part in self.text.splitlines())


@dataclass(frozen=True)
class Block:
    doc: str  # relative to the checkout
    line: int
    folder: str = ""
    course: str = ""
    prepare: tuple[str, ...] = ()
    slow: bool = False
    commands: tuple[Command, ...] = field(default=())


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def read_all(root: Path = ROOT) -> tuple[list[Block], list[str]]:
    """Every shell block of the documents, and what is wrong with any of them."""
    blocks, problems = [], []
    for path in documents(root):
        found, wrong = read(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())
        blocks += found
        problems += wrong
    return blocks, problems


def read(text: str, doc: str) -> tuple[list[Block], list[str]]:
    """The shell blocks of one document, with their directives applied."""
    lines = text.splitlines()
    blocks, problems, number = [], [], 0
    while number < len(lines):
        opened = FENCE.match(lines[number])
        if not opened:
            number += 1
            continue
        end = next((i for i in range(number + 1, len(lines))
                    if lines[i].strip() == "```"), len(lines))
        where, language = f"{doc}:{number + 1}", opened.group(2)
        if not language:
            problems.append(f"{where}: a fence names no language: ```text for output, "
                            "```bash (with a directive) for commands")
        elif language in SHELLS:
            body = [line.removeprefix(opened.group(1)) for line in lines[number + 1:end]]
            try:
                blocks.append(_block(doc, number + 1, directive(lines, number), body, language))
            except ValueError as wrong:
                problems.append(f"{where}: {wrong}")
        number = end + 1
    return blocks, problems


def directive(lines: list[str], fence: int) -> list[str]:
    """The lines of the `<!-- run: ... -->` comment just above the fence, `run:` removed."""
    end = fence - 1
    if end < 0 or not lines[end].rstrip().endswith("-->"):
        raise ValueError("a shell block without a `<!-- run: ... -->` directive just above it "
                         "(tests/documented.py says what it holds)")
    start = next((i for i in range(end, -1, -1) if "<!--" in lines[i]), None)
    if start is None or not lines[start].lstrip().startswith("<!-- run:"):
        raise ValueError("the comment above the block is not a `<!-- run: ... -->` directive")
    held = [line.strip() for line in lines[start:end + 1]]
    held[0] = held[0].removeprefix("<!-- run:")
    held[-1] = held[-1].removesuffix("-->")
    return [line.strip() for line in held if line.strip()]


def _block(doc: str, line: int, said: list[str], body: list[str], language: str) -> Block:
    keys = pairs(said[0] if said else "")
    unknown = set(keys) - BLOCK_KEYS - COMMAND_KEYS
    if unknown:
        raise ValueError(f"unknown key {sorted(unknown)}: the keys are "
                         f"{sorted(BLOCK_KEYS | COMMAND_KEYS)}")
    if keys.get("in", [""])[0] not in FOLDERS:
        raise ValueError(f"in= names the folder: one of {sorted(FOLDERS)}")
    block = Block(doc, line, keys["in"][0], _one_of(keys, "course", COURSES),
                  _several(keys, "prepare", PREPARED), "slow" in keys)
    default = _command(Command("", 0), {k: v for k, v in keys.items() if k in COMMAND_KEYS})
    commands = [replace(default, text=text, line=line + 1 + offset, says=default.says + shown)
                for offset, text, shown in _commands(body, language)]
    for annotation in said[1:]:
        _annotate(commands, annotation)
    return replace(block, commands=tuple(commands))


def _annotate(commands: list[Command], annotation: str) -> None:
    """Give the command that `COMMAND -> key=value, ...` names its keys."""
    name, arrow, rest = annotation.partition(" -> ")
    chosen = [i for i, c in enumerate(commands) if c.name == name.strip()]
    if not arrow or len(chosen) != 1:
        raise ValueError(f"the directive's line {annotation!r} names no one command of the "
                         "block (write it as `COMMAND -> key=value, ...`)")
    keys = pairs(rest)
    if set(keys) - COMMAND_KEYS:
        raise ValueError(f"{annotation!r}: a command's keys are {sorted(COMMAND_KEYS)}")
    commands[chosen[0]] = _command(commands[chosen[0]], keys)


def _command(command: Command, keys: dict[str, list[str]]) -> Command:
    exit_code = keys.get("exit", [str(command.exit)])[-1]
    if not exit_code.isdigit():
        raise ValueError(f"exit={exit_code}: an exit code is a number")
    return replace(command, exit=int(exit_code), says=command.says + tuple(keys.get("says", ())),
                   needs=command.needs + _several(keys, "needs", NEEDS))


def _commands(body: list[str], language: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line offset, text, the output shown under it) of each command of a block."""
    if language == "console":
        found = []
        for offset, line in enumerate(body):
            if line.startswith("$ "):
                found.append((offset, line[2:], []))
            elif found and line.strip():
                found[-1][2].append(line.strip())
        return [(offset, text, tuple(shown)) for offset, text, shown in found]
    found, pending = [], None
    for offset, line in enumerate(body):
        if pending is None and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if pending is None:
            pending = [offset, line]
        else:
            pending[1] += "\n" + line
        if not without_comment(line).rstrip().endswith("\\"):
            found.append((*pending, ()))
            pending = None
    return found + ([(*pending, ())] if pending else [])


def pairs(text: str) -> dict[str, list[str]]:
    """`key=value, key` as {key: [value, ...]} (a bare key's value is empty)."""
    found, position, text = {}, 0, text.strip()
    while position < len(text):
        matched = PAIR.match(text, position)
        if not matched or matched.end() == position:
            raise ValueError(f"cannot read {text[position:]!r}: write key=value, key=value")
        value = (matched.group(2) or "").strip()
        if value[:1] in "\"'" and len(value) > 1:
            value = value[1:-1]
        found.setdefault(matched.group(1), []).append(value)
        position = matched.end()
    return found


def _one_of(keys: dict[str, list[str]], key: str, allowed: set[str]) -> str:
    value = keys.get(key, [""])[-1]
    if value and value not in allowed:
        raise ValueError(f"{key}={value}: one of {sorted(allowed)}")
    return value


def _several(keys: dict[str, list[str]], key: str, allowed: set[str]) -> tuple[str, ...]:
    values = tuple(v for value in keys.get(key, ()) for v in value.split("+") if v)
    wrong = set(values) - allowed
    if wrong:
        raise ValueError(f"{key}={'+'.join(sorted(wrong))}: each of {sorted(allowed)}")
    return values


def without_comment(line: str) -> str:
    """`line` up to a `#` that begins a shell comment (outside quotes, at a word's start)."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line
