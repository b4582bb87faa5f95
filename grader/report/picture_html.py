"""`grade --picture DIR`: each failing case's output drawn on one self-contained page.

The judge's record of a failing case (grader.judge.picture.draw, `CaseResult.picture`)
drawn as a grid at the output's own shape: one cell per element where the output is small,
else one per block of elements, coloured by the worst kind inside it, the tiles outlined.
Hovering over a cell, or focusing it (the grid takes the keyboard focus; the arrow keys move
it), shows which program stored it, its index, and the value got against the one expected
(or the block's counts). Nothing comes from the network; the one script and the one style
are inline, and the page's Content-Security-Policy (grader.report.content_policy) lets
nothing else run, apply or load. The page is templates/picture.html.j2's, drawn from the
records here: every string from a submission is escaped, as every value a template prints
is, and the quoted lines of a case's report keep their mark on every visual line they take
(grader.report.quoted_html).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.report import quoted_html
from grader.report.pages import page as drawn_page
from grader.report.picture_programs import edges_of, labels, owners, owners_said, stored
from grader.results import CaseResult, Report

# mark -> (CSS class, colour, what it means, said short in a cell's text); in the judge's
# order of precedence
KINDS = {".": ("ok", "#cfeccf", "right", "right"),
         "X": ("bad", "#e8504a", "wrong", "wrong"),
         "_": ("unw", "#ffffff", "never written", "never written"),
         "2": ("two", "#f0a830", "written by more than one program", "written more than once"),
         "R": ("oob", "#7b4bc4", "written by a program that read or wrote out of bounds",
               "by a program that went out of bounds")}
COUNTED = ["X", "_", "2", "R"]  # the order of a cell's counts in the record
NEVER = "repeating-linear-gradient(45deg,#fff 0 3px,#aaa 3px 4px)"  # never written: hatched
# The error's size on a wrong cell (grader.judge.picture's scale digit: its worst element's
# error against the output's size), light to dark; and the words of the key.
SCALE = {1: "#f6c4bb", 2: "#ee9282", 3: "#e0503f", 4: "#b52a1f", 5: "#5e0f09"}
SCALE_WORDS = {1: "under 0.1%", 2: "under 1%", 3: "under 10%", 4: "under 100%",
               5: "as large or larger (NaN, Inf)"}
CELL_PX = (6, 22)  # the smallest and largest cell drawn, in CSS pixels
WIDTH_PX = 1000  # the widest a grid is drawn
STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:76em;color:#111}"
    "table.pic{border-collapse:collapse;margin:.4em 0;border:2px solid #222}"
    "table.pic td{width:var(--s);height:var(--s);min-width:var(--s);padding:0;"
    "border:1px solid rgba(0,0,0,.12);box-sizing:border-box}"
    # where the program that stored the cells changes (dashed), under the tiles' outlines:
    # a dashed line that no tile edge covers is a program storing across its tile's edge
    "table.pic td.ol{border-left:2px dashed #06c}table.pic td.ot{border-top:2px dashed #06c}"
    "table.pic td.l{border-left:2px solid #222}table.pic td.t{border-top:2px solid #222}"
    "table.pic td{position:relative}"
    "table.pic td span.who{position:absolute;left:1px;top:0;z-index:1;font:10px/1.1 monospace;"
    "white-space:nowrap;pointer-events:none;background:rgba(255,255,255,.85);color:#036;"
    "padding:0 2px}"
    ".rel{font-weight:bold}"
    "table.pic td:hover,table.pic td:focus{outline:2px solid #06c;outline-offset:-1px}"
    "table.pic:focus-within{box-shadow:0 0 0 3px #9cf}"
    ".scroll{overflow:auto;max-width:100%}"
    ".info{min-height:1.4em;font-family:monospace;background:#f4f4f4;padding:.3em .5em}"
    ".key span{display:inline-block;width:14px;height:14px;border:1px solid #777;"
    "margin:0 .3em 0 1em;vertical-align:middle}"
    + "".join(f"td.{c},.key span.{c}{{background:{colour}}}" for c, colour, *_ in KINDS.values())
    + f"td.unw,.key span.unw{{background:{NEVER}}}td.none{{background:#eee}}"
    + "".join(f"td.bad.e{d},.key span.e{d}{{background:{colour}}}" for d, colour in SCALE.items())
    # a grid's cell size, by a data attribute: the policy lets no style attribute apply
    + "".join(f"table.pic[data-cell='{n}']{{--s:{n}px}}"
              for n in range(CELL_PX[0], CELL_PX[1] + 1))
    + quoted_html.STYLE)  # a case's report: its quoted lines keep their mark as they wrap
# Hover and keyboard focus show a cell's text under its grid; the arrow keys move the focus.
SCRIPT = """
document.querySelectorAll('table.pic').forEach(function (grid) {
  var info = document.getElementById(grid.dataset.info);
  function show(cell) {
    if (cell && cell.hasAttribute('aria-label')) info.textContent = cell.getAttribute('aria-label');
  }
  grid.addEventListener('mouseover', function (e) { show(e.target.closest('td')); });
  grid.addEventListener('focusin', function (e) { show(e.target.closest('td')); });
  grid.addEventListener('keydown', function (e) {
    var step = {ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0]}[e.key];
    var cell = e.target.closest('td');
    if (!step || !cell) return;
    var row = grid.rows[cell.parentElement.rowIndex + step[0]];
    var next = row && row.cells[cell.cellIndex + step[1]];
    if (next && next.hasAttribute('aria-label')) {
      e.preventDefault(); cell.tabIndex = -1; next.tabIndex = 0; next.focus();
    }
  });
});
"""


@dataclass(frozen=True)
class Cell:
    """One cell of a grid: its classes; its text (None: no element of the output is here,
    a cell of a wrapped vector's last row past its end); whether it takes the Tab key; the
    name of the program drawn on it, if any."""

    classes: str
    label: str | None = None
    tab: bool = False
    who: str | None = None


@dataclass(frozen=True)
class DrawnCase:
    """A failing case as the page draws it (templates/picture.html.j2)."""

    number: int  # its place on the page, from 1: the grid's and its text's ids
    id: str
    said: str  # the verdict's sentence, and the line it introduces
    relation: str  # how the values are wrong ("" where no relation holds)
    about: str  # what the grid is, in words
    present: list[tuple[str, str, str]]  # each kind drawn: its class, name, how many cells
    scale: list[tuple[int, str]]  # the shades of the wrong cells drawn, and what each means
    owners: str  # what the names on the grid are
    size: int  # a cell's side, in CSS pixels
    rows: list[list[Cell]]
    report: str  # the case's whole report


def page(report: Report) -> str:
    stages, number = [], 0
    for stage in report.stages:
        failed = stage.failures
        if not failed:
            continue
        drawn = []
        for case in failed:
            if case.picture:
                number += 1
                drawn.append(_case(case, number))
        # the undrawn: no output came back to draw (it raised, timed out, returned
        # something else)
        stages.append({"number": stage.number, "title": stage.title, "drawn": drawn,
                       "undrawn": [c for c in failed if not c.picture]})
    return drawn_page("picture.html.j2", SCRIPT, STYLE, course=report.course, stages=stages,
                      drawn=number, kinds=KINDS.values())


def _case(case: CaseResult, number: int) -> DrawnCase:
    picture = case.picture
    marks, cols = picture["marks"], picture["grid"][1]
    return DrawnCase(
        number, case.id, _said(case), picture.get("relation") or "", _about(picture),
        [(css, name, _many(marks.count(m), "cell")) for m, (css, _, name, _) in KINDS.items()
         if m in marks],
        [(d, SCALE_WORDS[d]) for d in _shades(picture)], owners_said(picture),
        max(CELL_PX[0], min(CELL_PX[1], WIDTH_PX // max(cols, 1))), _grid(picture),
        "\n".join([case.summary, *case.details]))


def _shades(picture: dict) -> list[int]:
    """The shades of the wrong cells drawn here: how far off each is."""
    scale, marks = picture.get("scale") or "", picture["marks"]
    return sorted({int(d) for d, m in zip(scale, marks) if m == "X" and d != "0"})


def _about(picture: dict) -> str:
    shape = " x ".join(map(str, picture["shape"])) or "a scalar"
    rows, cols = picture["grid"]
    h, w = picture["cell"]
    drawn = f"wrapped into rows of {picture['cols']} elements, " \
        if len(picture["shape"]) < 2 and rows > 1 else ""
    per = "one cell per element" if (h, w) == (1, 1) else \
        f"each cell a block of {h} x {w} elements, coloured by the worst inside it"
    tiles = (f"; tiles of {' x '.join(map(str, picture['tile']))} elements outlined"
             if picture.get("tile") else "")
    return f"The output, {shape}: {drawn}{_many(rows, 'row')} of {_many(cols, 'cell')}, " \
        f"{per}{tiles}."


def _many(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _said(case: CaseResult) -> str:
    """The verdict's sentence, and the line it introduces (a finding, quoted) if it ends
    in a colon: the rest of the report is one click away."""
    lines = [case.summary]
    if case.summary.endswith(":") and case.details:
        lines.append(case.details[0])
    return "\n".join(lines)


def _grid(picture: dict) -> list[list[Cell]]:
    rows, cols = picture["grid"]
    marks, edges = picture["marks"], picture.get("edges") or ""
    scale = picture.get("scale") or ""
    owner = owners(picture)
    named = (labels(picture, owner) if owner else None) or {}
    # only one cell at a time takes the Tab key (the script moves it with the arrow keys)
    focus = next((i for i, m in enumerate(marks) if m != " "), -1)
    grid = []
    for r in range(rows):
        cells = []
        for c in range(cols):
            i = r * cols + c
            mark = marks[i]
            edge = int(edges[i]) if i < len(edges) else 0
            kind = KINDS[mark][0] if mark in KINDS else "none"
            shade = [f"e{scale[i]}"] if mark == "X" and i < len(scale) and scale[i] != "0" else []
            classes = " ".join([kind] + shade + edges_of(owner, i, cols)
                               + ["l"] * (edge & 1) + ["t"] * (edge >> 1 & 1))
            cells.append(Cell(classes, _label(picture, i), i == focus, named.get(i))
                         if mark in KINDS else Cell(classes))
        grid.append(cells)
    return grid


def _label(picture: dict, i: int) -> str:
    """A cell's text: where it is, what it holds (or its counts), who stored it."""
    where, count = _where(picture, i)
    mark = picture["marks"][i]
    values = picture.get("values")
    if count == 1:
        what = KINDS[mark][3]
        if values and values[i]:
            got, want = values[i]
            if got is None:  # never written: no value to show
                what += f", expected {want}" if mark == "_" else f": never written, expected {want}"
            else:
                what += f": got {got}, expected {want}"
        parts = [f"{where}: {what}"]
    else:
        counts = picture["counts"].get(str(i))
        told = [f"{n} {KINDS[m][3]}" for m, n in zip(COUNTED, counts or []) if n]
        parts = [f"{where} ({count} elements): " + ("; ".join(told) if told else "all right")]
    parts.append(stored(picture, i))
    return "; ".join(p for p in parts if p)


def _where(picture: dict, i: int) -> tuple[str, int]:
    """The cell's place in the output (an index, or a range per dimension) and how many
    elements it holds."""
    shape, width, cols = picture["shape"], picture["cols"], picture["grid"][1]
    h, w = picture["cell"]
    numel = 1
    for s in shape:
        numel *= s
    r, c = divmod(i, cols)
    first_row, first_col = r * h, c * w
    last_row = min(first_row + h, -(-numel // width)) - 1
    last_col = min(first_col + w, width) - 1
    across = last_col - first_col + 1
    count, last = (last_row - first_row + 1) * across, last_row * width + last_col
    left = numel - last_row * width  # elements in the grid's last row (a wrapped vector's)
    if left < width:  # this cell reaches into that row: only part of it is there
        there = max(0, min(last_col + 1, left) - first_col)
        count -= across - there
        last = last_row * width + first_col + there - 1 if there else \
            (last_row - 1) * width + last_col
    flats = [first_row * width + first_col, last]
    first, last = _index(flats[0], shape), _index(flats[1], shape)
    if count == 1:
        return f"out[{', '.join(map(str, first))}]", 1
    spans = [a if a == b else f"{a}:{b + 1}" for a, b in zip(first, last)]
    size = 1
    for a, b in zip(first, last):
        size *= b - a + 1
    if size == count:
        return f"out[{', '.join(map(str, spans))}]", count
    return f"out[{', '.join(map(str, first))}] to out[{', '.join(map(str, last))}]", count


def _index(flat: int, shape: list[int]) -> list[int]:
    index = []
    for size in reversed(shape):
        flat, at = divmod(flat, max(size, 1))
        index.append(at)
    return index[::-1]


def write_picture(report: Report, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "failures.html"
    path.write_text(page(report), encoding="utf-8")
    return path
