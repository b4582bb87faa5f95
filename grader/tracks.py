"""The tile languages a course is taught in: one record per language, the one place that says
what the grader needs to know of it.

A record says what a kernel file imports, how a file shows which language it is in, how a
kernel is marked, how the language speaks of programs, masks and padding (every message to
a student about its kernels uses these words), its install extra and which backends run
it. The code that is particular to a language (the hook that records its launches in the
child, the hooks that watch its loads and stores in the replay, its compiler's front end)
lives with its concern, in a table keyed by the track's name; docs/architecture.md ("add a
tile language") lists each such table.

Standard library only: every layer of the grader reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Words:
    """How a track speaks of programs and their bounds (grader.replay.traffic findings)."""

    program: str
    programs: str
    offsets: str
    pid: str
    bound_load: str
    bound_store: str
    bound_store_word: str
    grid: tuple[int, ...] = (1,)

    def name(self, program: int) -> str:
        """A program by its place in `grid` (x fastest), as the language numbers it."""
        if len(self.grid) < 2:
            return str(program)
        index, rest = [], program
        for size in self.grid:
            index.append(rest % size)
            rest //= size
        return str(tuple(index))


@dataclass(frozen=True)
class Track:
    """A tile language, as the grader meets it."""

    name: str  # course.toml's `modules` and `tiles` key, `--track`, tests/<corpus>/<name>/
    title: str  # as a student reads it
    module: str  # what a kernel file imports; its kernels' classes live below it
    imports: re.Pattern  # a file written in it (a bare uploaded stage file tells its track so)
    decorator: str  # how a kernel is defined, as messages name it
    words: Words
    nan_fix: str  # how to keep a load past the end of an input from reading the grader's NaNs
    extra: str | None  # the pyproject extra that installs it (None: a core dependency)
    gpu_backend: str  # the backends that run it (grader.backends.selection.BACKENDS)
    cpu_backend: str

    def owns(self, module: str) -> bool:
        """Whether `module` (a class's __module__) is part of this language's package."""
        return module == self.module or module.startswith(self.module + ".")

    def words_for(self, grid: tuple[int, ...]) -> Words:
        """The track's words, programs named by their place in `grid` (trailing 1s dropped)."""
        grid = tuple(grid)
        used = max((i + 1 for i, g in enumerate(grid) if g > 1), default=1)
        return replace(self.words, grid=grid[:used])


TRITON = Track(
    name="triton", title="Triton", module="triton",
    imports=re.compile(r"^\s*(import|from)\s+triton\b", re.M),
    decorator="@triton.jit",
    words=Words("program", "programs", "offsets", "tl.program_id",
                "give this tl.load a mask (and `other=`) that keeps every lane inside the tensor",
                "give the tl.store a mask that keeps every lane inside the tensor", "store mask"),
    nan_fix=("give that `tl.load` a `mask=` and `other=` a value that changes nothing (0 for a "
             "sum, -inf for a max)"),
    extra=None, gpu_backend="triton", cpu_backend="triton-interpret",
)
CUTILE = Track(
    name="cutile", title="cuTile", module="cuda.tile",
    imports=re.compile(r"^\s*(import|from)\s+cuda\.tile\b|^\s*from\s+cuda\s+import\s+tile\b",
                       re.M),
    decorator="@ct.kernel",
    words=Words("block", "blocks", "tile indices", "ct.bid",
                "load with a tile index inside the array's tile space",
                "store with a tile index inside the array's tile space", "tile index"),
    nan_fix=("load with `padding_mode=ct.PaddingMode.ZERO` (or NEG_INF before a max), not "
             "UNDETERMINED"),
    extra="cutile", gpu_backend="cutile", cpu_backend="cutile-sim",
)
TRACKS: dict[str, Track] = {t.name: t for t in (TRITON, CUTILE)}
