"""Which program stored each part of a drawn output (grader.report.picture_html): the
regions one program stored, named at their first cell and parted by dashed lines on the
grid, and said in each cell's text. A wrong output whose every cell is red still shows
where each program put its tile: the clue to an offset or a stride taken from the wrong
tensor is on the grid, not only under the pointer."""

from __future__ import annotations

# Programs named on the grid itself, at the first cell of each region one program stored:
# more would cover the cells they name (hover tells every cell's).
MAX_LABELS = 48


def owners_said(picture: dict) -> str:
    """What the names on the grid are, or why there are none ("" where there is nothing to
    say)."""
    found = owners(picture)
    if found is None:
        return ""
    named = labels(picture, found)
    word = picture.get("word", "program")
    if not named and named is not None:
        return ""  # no cell stored by one program alone: nothing named
    if named is None:
        return (f"Too many regions to name on the grid; hover over a cell for the {word} "
                "that stored it.")
    return (f"Each region one {word} stored is named at its first cell, as in your launch's "
            f"grid; dashed lines part regions stored by different {word}s.")


def owners(picture: dict) -> list[int | None] | None:
    """Per cell, the one program that stored it (None: several, none, or no cell)."""
    writers = picture.get("writers")
    if not writers:
        return None
    return [shown[0] if total == 1 and shown and shown[0] >= 0 else None
            for total, *shown in writers]


def labels(picture: dict, owners: list[int | None]) -> dict[int, str] | None:
    """The cells that begin a region of one program (its neighbours above and to the left
    were stored by another), each with the program's name; None where there are more than
    MAX_LABELS."""
    cols = picture["grid"][1]
    names = picture.get("names") or {}
    found = {}
    for i, owner in enumerate(owners):
        if owner is None:
            continue
        left = owners[i - 1] if i % cols else None
        above = owners[i - cols] if i >= cols else None
        if owner != left and owner != above:
            found[i] = names.get(str(owner), str(owner))
            if len(found) > MAX_LABELS:
                return None
    return found


def edges_of(owners: list[int | None] | None, i: int, cols: int) -> list[str]:
    """The dashed edges of a cell where the program that stored it changes."""
    if not owners:
        return []
    edges = []
    if i % cols and owners[i - 1] != owners[i]:
        edges.append("ol")
    if i >= cols and owners[i - cols] != owners[i]:
        edges.append("ot")
    return edges


def stored(picture: dict, i: int) -> str:
    """Which programs stored a cell, in words (the first SHOW_WRITERS of the judge's
    picture; several, none; how many more)."""
    writers = picture.get("writers")
    if not writers:
        return ""
    total, *shown = writers[i]
    word, names = picture.get("word", "program"), picture.get("names") or {}
    alone = [names.get(str(p), str(p)) for p in shown if p >= 0]
    said = []
    if alone:
        said.append(f"stored by {word}{'s' if len(alone) > 1 else ''} " + ", ".join(alone))
    if picture.get("several") in shown:
        among = [names.get(str(p), str(p)) for p in (picture.get("shared") or {}).get(str(i), [])]
        which = f", among them {', '.join(among)}" if among else ""
        said.append(f"{'some ' if total > 1 else ''}stored by several {word}s{which}")
    if picture.get("nobody") in shown:
        said.append(f"{'some ' if total > 1 else ''}stored by no {word}")
    more = total - len(shown)
    return "; ".join(said) + (f" and {more} more" if more > 0 else "")
