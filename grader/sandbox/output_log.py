"""What a submission's processes print: one unnamed file per process, which only the grader can
open, shown later as the submission's output, never mixed into the grader's own.

Once the child is given a hidden case, what it prints is withheld until that child ends: it
could print the case's inputs then, or remember them and print them at any later call. A
one-line note stands for what was left out, whether or not anything was: a note only where
something was printed would be a bit the submission chooses.
"""

from __future__ import annotations

import os
import tempfile

SHOWN = 20_000  # bytes of the submission's output kept for the scorecard
WITHHELD = "(output printed during hidden cases is withheld)"


class OutputLog:
    def __init__(self):
        self.file = tempfile.TemporaryFile()  # unnamed: the child can only write its own fd
        # Spans [start, end) of the file not shown; end None: their child is still running.
        self._withheld: list[list[int | None]] = []

    def withhold(self) -> None:
        """Leave out what the child prints from now until `child_ended`."""
        if not self._withheld or self._withheld[-1][1] is not None:
            self._withheld.append([self._size(), None])

    def child_ended(self) -> None:
        """No process that saw a hidden case is left: what a new child prints is shown."""
        if self._withheld and self._withheld[-1][1] is None:
            self._withheld[-1][1] = self._size()

    def text(self) -> str:
        """What was printed (the start and the end of it, if long), less what was withheld."""
        kept = self._shown_spans()
        size = sum(end - start for start, end in kept)
        if size <= SHOWN:
            text = self._read(kept, 0, size)
        else:
            head, tail = SHOWN * 3 // 4, SHOWN // 4
            text = (self._read(kept, 0, head) + f"\n... ({size - head - tail} more bytes) ...\n"
                    + self._read(kept, size - tail, size))
        if self._withheld:
            text += ("" if not text or text.endswith("\n") else "\n") + WITHHELD + "\n"
        return text

    def _size(self) -> int:
        self.file.flush()
        return os.fstat(self.file.fileno()).st_size  # no seek: the child shares the offset

    def _shown_spans(self) -> list[tuple[int, int]]:
        """The spans of the file that may be shown."""
        size = self._size()
        kept, at = [], 0
        for start, end in self._withheld:
            end = size if end is None else end
            kept.append((at, start))
            at = end
        kept.append((at, size))
        return [(start, end) for start, end in kept if end > start]

    def _read(self, spans: list[tuple[int, int]], first: int, last: int) -> str:
        """Bytes `first` to `last` of the spans laid end to end, as text."""
        parts, at = [], 0
        for start, end in spans:
            lo, hi = max(first - at, 0), min(last - at, end - start)
            if lo < hi:
                self.file.seek(start + lo)
                parts.append(self.file.read(hi - lo))
            at += end - start
        return b"".join(parts).decode(errors="replace")
