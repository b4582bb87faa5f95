"""A tile language as data: the record (`Track`) a language's package holds, and its words.

A record says what a kernel file imports, how a file shows which language it is in, how a
kernel is marked, how the language speaks of programs, masks and padding (every message to a
student about its kernels uses these words), its install extra, which backends run it and
how grader.backends words them, and where each part of its code lives (`Parts`).

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
class Parts:
    """Where a language's code lives: one module per process that asks (their contracts are
    grader.tracks.contract's), each imported when first asked for, so that naming a
    language imports neither it nor PyTorch. `gpu` None: the language has no GPU backend."""

    backends: str  # the grading process: can its backends run here (contract.BackendProbe)
    worker: str  # every worker, before the submission (contract.WorkerBootstrap)
    recorder: str  # the child, which records the wrapper's launches (contract.LaunchRecorder)
    reader: str  # a kernel file read and rebuilt (contract.KernelReader)
    cpu: str  # the replay on a CPU: kernels run from source (contract.CpuRunner)
    gpu: str | None = None  # the builder and the replay on a GPU (contract.GpuBuilder)

    @classmethod
    def named_in(cls, package: str) -> "Parts":
        """The parts of a package that names its modules as the course's own languages do:
        backend.py, bootstrap.py, launches.py, reader.py, source.py and binary.py."""
        return cls(*(f"{package}.{module}" for module in
                     ("backend", "bootstrap", "launches", "reader", "source", "binary")))


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
    parts: Parts
    # How grader.backends words its backends: each in a line, and what runs its kernels on
    # the CPU ("Triton's interpreter").
    gpu_summary: str
    cpu_summary: str
    cpu_runner: str
    # Modules a spare worker imports before it has a plan: slow imports every worker pays.
    preload: tuple[str, ...] = ()
    # An environment variable, and its value, with which the language itself runs on the
    # CPU: `auto` with no track named then picks its CPU backend, and says why.
    forced_by: tuple[str, str] | None = None
    # `auto` with no track named tries the GPU backends of the tracks it ranks, lowest first,
    # and falls back to the highest ranked one's CPU backend; None: never picked so.
    auto_rank: int | None = None

    def summary(self, device: str) -> str:
        """Its backend on `device` ("cuda" or "cpu"), in a line."""
        return self.gpu_summary if device == "cuda" else self.cpu_summary

    def owns(self, module: str) -> bool:
        """Whether `module` (a class's __module__) is part of this language's package."""
        return module == self.module or module.startswith(self.module + ".")

    def words_for(self, grid: tuple[int, ...]) -> Words:
        """The track's words, programs named by their place in `grid` (trailing 1s dropped)."""
        grid = tuple(grid)
        used = max((i + 1 for i, g in enumerate(grid) if g > 1), default=1)
        return replace(self.words, grid=grid[:used])


