"""Pairs of a class's kernels that are unusually alike: evidence for a person to read, never
a finding.

For each stage file, every two students' files (the stage files `grade batch` kept of each,
grader.instructor.handed_in) are compared as MOSS compares programs:

1. Normalised. Python's tokenizer reads the file; comments, docstrings and the layout are
   dropped; every name the code chooses becomes one placeholder, so that renaming a
   variable changes nothing, while keywords, builtins and attribute names (`tl.load`)
   stay as written; every literal becomes its kind (a number, a string).
2. The handout taken out. The lines of the handout's skeleton (the course's exercises/ file
   of that stage, normalised alike) that the student kept are removed, line for line as a
   diff pairs them, and so is every run of K tokens that the skeleton holds anywhere:
   starter code that every student has does not count.
3. Fingerprinted. Every run of K tokens of what is left is hashed, and winnowing keeps the
   smallest hash of each WINDOW consecutive ones (Schleimer, Wilkerson and Aiken, 2003):
   two files that share a run of K + WINDOW - 1 tokens share at least one fingerprint,
   wherever it stands in each.
4. Scored. A pair's score is the number of fingerprints the two share over the mean of
   their counts (0: nothing in common, 1: the same fingerprints); each file's share is
   the shared fingerprints over its own.

A pair is unusual for its class when its score is at least FLOOR and at least MARGIN above
the median pair of that stage file (the median counts where the file has MIN_PAIRS pairs
or more): where every solution is alike (a short kernel, one obvious way to write it), only
the pairs far above the rest stand out. A file with fewer than MIN_PRINTS fingerprints of
its own (the skeleton barely filled in) is too short to compare.
"""

from __future__ import annotations

import builtins
import difflib
import io
import keyword
import statistics
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grader.course import Course
from grader.instructor import handed_in
from grader.intake.upload import stage_paths
from grader.report.class_view import AlikeFile, AlikePair

K = 15  # tokens hashed together: about a statement and a half
WINDOW = 6  # consecutive hashes of which winnowing keeps the smallest
FLOOR = 0.5  # the least score flagged, whatever the class
MARGIN = 0.3  # above the median pair of the stage file
MIN_PAIRS = 3  # pairs a stage file needs for its median to count
MIN_PRINTS = 8  # fingerprints a file needs of its own to be compared
SHOWN = 20  # pairs on the page

PLACEHOLDER = "ID"  # every name the code chooses
KINDS = {tokenize.NUMBER: "NUM", tokenize.STRING: "STR"}
if hasattr(tokenize, "FSTRING_START"):  # Python 3.12: an f-string is several tokens
    KINDS[tokenize.FSTRING_START] = "STR"
LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER,
          getattr(tokenize, "FSTRING_MIDDLE", -1), getattr(tokenize, "FSTRING_END", -1)}
STATEMENT_START = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
KEPT_NAMES = frozenset(keyword.kwlist) | frozenset(dir(builtins))


@dataclass(frozen=True)
class Token:
    """A token as compared: its normal form, and the lines (0-based) it spans in its file."""

    text: str
    line: int
    last: int


@dataclass(frozen=True)
class Handout:
    """The skeleton of a stage file, normalised: its lines of tokens, and every K-gram hash."""

    lines: list[tuple[str, ...]]
    grams: frozenset[int]


@dataclass(frozen=True)
class Printed:
    """One student's file of one stage, fingerprinted."""

    student: str
    text: str
    tokens: list[Token]  # the student's own: the handout's lines left out
    grams: list[int | None]  # each K-gram's hash by where it starts (None: the handout's)
    prints: frozenset[int]  # the fingerprints winnowing keeps, the handout's left out


@dataclass(frozen=True)
class Scored:
    path: str
    score: float
    typical: float
    first: Printed
    second: Printed


# --- normalising ---------------------------------------------------------------------------


def tokens(source: str) -> list[Token]:
    """`source` as compared: no comments, docstrings or layout; chosen names one placeholder;
    literals by kind. A file that does not tokenize to its end gives what came before."""
    raw = _raw(source)
    found: list[Token] = []
    starts = True  # the next token begins a statement
    for index, tok in enumerate(raw):
        if tok.type in STATEMENT_START:
            starts = True
            continue
        if tok.type in LAYOUT:
            continue
        if tok.type == tokenize.STRING and starts and _ends_statement(raw, index):
            continue  # a docstring, or a string standing alone as one
        starts = False
        found.append(Token(_normal(tok, found), tok.start[0] - 1, tok.end[0] - 1))
    return found


def _raw(source: str) -> list[tokenize.TokenInfo]:
    found = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            found.append(tok)
    except (tokenize.TokenError, SyntaxError):
        pass  # an unclosed bracket, a bad dedent: the tokens before it still count
    return found


def _ends_statement(raw: list[tokenize.TokenInfo], index: int) -> bool:
    for tok in raw[index + 1:]:
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            return tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER)
    return True


def _normal(tok: tokenize.TokenInfo, before: list[Token]) -> str:
    if tok.type == tokenize.NAME:
        attribute = bool(before) and before[-1].text == "."
        return tok.string if attribute or tok.string in KEPT_NAMES else PLACEHOLDER
    return KINDS.get(tok.type, tok.string)


def lines(found: list[Token]) -> list[list[Token]]:
    """Tokens grouped by the line each begins on."""
    grouped: list[list[Token]] = []
    for token in found:
        if grouped and grouped[-1][0].line == token.line:
            grouped[-1].append(token)
        else:
            grouped.append([token])
    return grouped


# --- the handout taken out, fingerprints ---------------------------------------------------


def handout(source: str, vocabulary: dict[str, int]) -> Handout:
    found = tokens(source)
    return Handout([_key(line) for line in lines(found)],
                   frozenset(grams(found, vocabulary)))


def own(found: list[Token], skeleton: Handout) -> list[Token]:
    """The tokens of `found` less its lines that pair with the skeleton's in a diff."""
    grouped = lines(found)
    matcher = difflib.SequenceMatcher(None, [_key(line) for line in grouped], skeleton.lines,
                                      autojunk=False)
    kept = [True] * len(grouped)
    for block in matcher.get_matching_blocks():
        kept[block.a:block.a + block.size] = [False] * block.size
    return [token for line, keep in zip(grouped, kept) if keep for token in line]


def _key(line: list[Token]) -> tuple[str, ...]:
    return tuple(token.text for token in line)


def grams(found: list[Token], vocabulary: dict[str, int]) -> list[int]:
    """The hash of each run of K tokens, by where it starts (the same in every file of a run:
    tokens are numbered by `vocabulary`, and a tuple of numbers hashes alike every time)."""
    ids = [vocabulary.setdefault(token.text, len(vocabulary)) for token in found]
    return [hash(tuple(ids[i:i + K])) for i in range(len(ids) - K + 1)]


def winnow(hashes: list[int]) -> set[int]:
    """The smallest hash of each WINDOW consecutive ones."""
    if len(hashes) <= WINDOW:
        return {min(hashes)} if hashes else set()
    return {min(hashes[i:i + WINDOW]) for i in range(len(hashes) - WINDOW + 1)}


def printed(student: str, source: str, skeleton: Handout,
            vocabulary: dict[str, int]) -> Printed:
    mine = own(tokens(source), skeleton)
    hashes = grams(mine, vocabulary)
    kept = [None if h in skeleton.grams else h for h in hashes]
    return Printed(student, source, mine, kept, frozenset(winnow(hashes) - skeleton.grams))


# --- scoring a class ------------------------------------------------------------------------


def scored(path: str, files: list[Printed]) -> list[Scored]:
    """Every pair of `files` that is unusual for them, by the rule above."""
    usable = [f for f in files if len(f.prints) >= MIN_PRINTS]
    pairs = [(_score(a, b), a, b) for i, a in enumerate(usable) for b in usable[i + 1:]]
    if not pairs:
        return []
    typical = statistics.median(s for s, _, _ in pairs) if len(pairs) >= MIN_PAIRS else 0.0
    bar = max(FLOOR, typical + MARGIN)
    return [Scored(path, s, typical, a, b) for s, a, b in pairs if s >= bar]


def _score(a: Printed, b: Printed) -> float:
    return 2 * len(a.prints & b.prints) / (len(a.prints) + len(b.prints))


def alike(out: Path, course: Course, names: Iterable[str]) -> tuple[list[AlikePair], int]:
    """The class's pairs of files that are unusually alike, most alike first (at most
    SHOWN), and how many more there are; from the files kept in OUT/files/."""
    kept = {name: handed_in.read(out, name) for name in names}
    vocabulary: dict[str, int] = {}
    found: list[Scored] = []
    for path in stage_paths(course):
        texts = [(name, files[path]) for name, files in kept.items() if path in files]
        if len(texts) < 2:
            continue
        skeleton = handout(_skeleton_text(course, path), vocabulary)
        found += scored(path, [printed(n, text, skeleton, vocabulary) for n, text in texts])
    found.sort(key=lambda p: (-p.score, p.path, p.first.student, p.second.student))
    return [pair(p) for p in found[:SHOWN]], max(0, len(found) - SHOWN)


def _skeleton_text(course: Course, path: str) -> str:
    skeleton = course.root / "exercises" / path
    try:
        return skeleton.read_text(encoding="utf-8")
    except OSError:  # a course of its solutions only: nothing is taken out
        return ""


# --- the pair on the page -------------------------------------------------------------------


def pair(found: Scored) -> AlikePair:
    """A pair as the class report shows it: both files whole, the lines they share marked."""
    a, b = found.first, found.second
    common = (set(a.grams) & set(b.grams)) - {None}
    shared = len(a.prints & b.prints)
    return AlikePair(found.path, found.score, found.typical,
                     _shown(a, common, shared), _shown(b, common, shared))


def _shown(file: Printed, common: set, shared: int) -> AlikeFile:
    marked: set[int] = set()
    for start, h in enumerate(file.grams):
        if h in common:
            for token in file.tokens[start:start + K]:  # not the handout's lines between
                marked.update(range(token.line, token.last + 1))
    text = [line.removesuffix("\r") for line in file.text.split("\n")]
    return AlikeFile(file.student, tuple(text), frozenset(marked),
                     shared / len(file.prints) if file.prints else 0.0)
