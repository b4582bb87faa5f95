"""The console every command prints to: its own module, since `grade list` prints a table
and needs none of the scorecard's."""

from __future__ import annotations

from rich.console import Console


def make_console(stderr: bool = False) -> Console:
    """A console for the scorecard: the terminal's width, or 120 columns in a CI log."""
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else max(probe.width, 120)
    return Console(stderr=stderr, highlight=False, width=width)
