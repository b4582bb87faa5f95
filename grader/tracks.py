"""The tile languages a course is taught in: one record per language, and the contract its
code keeps with the grader.

A record (`Track`) says what a kernel file imports, how a file shows which language it is
in, how a kernel is marked, how the language speaks of programs, masks and padding (every
message to a student about its kernels uses these words), its install extra and which
backends run it. The code particular to a language is its wing, a package below
grader/languages/ whose `WING` implements `Wing`: everything the grader asks of a language,
grouped by the process that asks. The record names its wing's module, and `wing` imports it
by that name when first asked: the layers below the wings (the backends, the replay, the
sandbox, the judge) reach a language only so, never by an import or by its name.

Standard library only: every layer of the grader reads it.
"""

from __future__ import annotations

import abc
import importlib
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, ContextManager, Mapping


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
    wing: str  # the module of its code, whose `WING` is its Wing

    def owns(self, module: str) -> bool:
        """Whether `module` (a class's __module__) is part of this language's package."""
        return module == self.module or module.startswith(self.module + ".")

    def words_for(self, grid: tuple[int, ...]) -> Words:
        """The track's words, programs named by their place in `grid` (trailing 1s dropped)."""
        grid = tuple(grid)
        used = max((i + 1 for i, g in enumerate(grid) if g > 1), default=1)
        return replace(self.words, grid=grid[:used])


class Unavailable(Exception):
    """The language's compiler, in this version, offers its front end in no form the grader
    knows how to call (`Wing.front_end`): the check is not made, and grading says so."""


class Wing(abc.ABC):
    """Everything the grader asks of a tile language, grouped by the process that asks.

    The grader's own types are named in annotations by their modules' paths: this module
    stands below every layer, and imports none of them. A wing's methods import the wing's
    own modules when first called, so loading a wing imports neither the kernel language nor
    PyTorch.
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """Its track's name, the key of its record in TRACKS (its launches carry it)."""

    # --- the grading process: the backends that run it (grader.backends.selection) -----

    @abc.abstractmethod
    def summary(self, device: str) -> str:
        """Its backend on `device` ("cuda" or "cpu"), in a line."""

    @abc.abstractmethod
    def probe(self, device: str) -> str | None:
        """Why its backend on `device` cannot run on this machine, with the fix; None: it can."""

    @abc.abstractmethod
    def prepare(self, backend: "grader.backends.selection.Backend") -> None:
        """Set up this process, and the workers it starts, for `backend` (one of its two),
        before any kernel is loaded."""

    @abc.abstractmethod
    def note(self, backend: "grader.backends.selection.Backend") -> str | None:
        """What the reason for a backend named with `--backend` adds (a repair of the
        environment the grader made for it, say); None: nothing."""

    @abc.abstractmethod
    def reason(self, device: str) -> str:
        """Why `--backend auto` grades the track on `device`: "cuda" where its GPU backend
        runs, "cpu" where it does not and the CPU backend does."""

    @abc.abstractmethod
    def forced(self) -> str | None:
        """With no track named, why the environment asks `auto` for its CPU backend (a
        variable the language itself reads); None: it does not."""

    @abc.abstractmethod
    def unavailable(self, missing: str) -> str:
        """`auto`'s message where neither of its backends runs (`missing`: what the CPU
        backend's probe said)."""

    @abc.abstractmethod
    def versions(self) -> dict[str, str | None]:
        """The versions its results depend on, among the machine's facts (a key of the result
        schema -> the version, None where it is not installed); read without importing it."""

    @abc.abstractmethod
    def readable(self) -> list[str]:
        """Folders its tools read that are not Python's own (a compiler's toolchain): a
        worker's view of the file system shows them (grader.sandbox.filesystem)."""

    # --- a worker's bootstrap, before the submission (grader.sandbox.worker) -----------

    @property
    @abc.abstractmethod
    def preload(self) -> tuple[str, ...]:
        """Modules a spare worker imports before it has a plan: slow imports that every
        worker, of any role, pays."""

    def warm(self) -> None:
        """What a spare's template does once its imports are done, before it forks a worker:
        work every worker of the language would otherwise repeat. No CUDA may be
        initialised here, and no submission is near. Nothing, unless a language says so."""

    @abc.abstractmethod
    def bind(self, role: str, device: str) -> None:
        """Import the language before the submission can, and set up how the process of this
        `role` ("child", "replay" or "builder") runs it on `device`: on the CPU, its
        interpreter or simulator; in the replay, its helpers (started early)."""

    # --- the child, which records the wrapper's launches (grader.sandbox) --------------

    @abc.abstractmethod
    def hook_launches(self) -> None:
        """Hook the language's launch API (called once, once the language is imported):
        inside a recording session (grader.sandbox.launches.current) a launch is proposed
        to it, or captured, and not run; outside one it launches."""

    @abc.abstractmethod
    def dtype_name(self, value: Any) -> str | None:
        """The name of `value` when it is one of the language's dtypes, passed to a kernel
        as an argument (a proposal holds it by that name); None for anything else."""

    @abc.abstractmethod
    def build_offline(self, launches: list[tuple[Any, tuple]],
                      archs: tuple[str, ...]) -> tuple[dict, dict]:
        """`grade compile`, in the child: the captured launches (kernel, arguments) built for
        each architecture without a GPU; the reply and its binaries, by name. Raises
        NotImplementedError for a language that builds only on the GPU it runs on."""

    # --- a kernel file, read in the replay and the builder (grader.replay) -------------

    @property
    @abc.abstractmethod
    def spellings(self) -> "grader.replay.spellings.Spellings":
        """What a kernel file of the language may spell: its modules, decorators and
        their options, annotations, built-ins and API."""

    @property
    @abc.abstractmethod
    def helpers_are_tile_code(self) -> bool:
        """Whether a top-level function without a decorator that a kernel calls is tile
        code, checked and built as the kernels are (else the kernel may not call it)."""

    @abc.abstractmethod
    def decorate(self, function: Callable, spelling: str, options: dict,
                 node: "ast.expr", interpreted: bool) -> Any:
        """`function`, a bare `def` of the file, under its decorator spelled `spelling`
        (one the spellings name), with `options` read as data; `interpreted`: made for the
        CPU backend. Raises grader.replay.literals.NotData at `node` for what it refuses."""

    @property
    @abc.abstractmethod
    def constructors(self) -> Mapping[str, Callable[..., Any]]:
        """The calls a constant may be written with, by spelling (`tl.constexpr(64)`): each
        takes (reader, call node, spelling), reads the arguments as data
        (grader.replay.literals.Reader) and makes the value."""

    @abc.abstractmethod
    def dtype(self, name: str) -> Any:
        """The language's dtype `name`, as a kernel is given it; None if it has none."""

    @abc.abstractmethod
    def parameters(self, kernel: Any) -> list[str]:
        """The names of a kernel's parameters, in order."""

    @abc.abstractmethod
    def optional(self, kernel: Any) -> set[str]:
        """The parameters a launch of `kernel` may leave out: those with a default, and those
        the kernel's decorator sets itself (every configuration of Triton's autotuner)."""

    # --- the replay on a CPU: kernels built from source (grader.replay) ----------------

    @abc.abstractmethod
    def front_end(self, step: "grader.replay.proposal.Launch", kernel: Any, args: tuple,
                  kwargs: dict, path: "pathlib.Path") -> str | None:
        """The real compiler's front end on this launch of a kernel of `path`, with its
        arguments: the compiler's rejection, or None. Raises Unavailable."""

    @abc.abstractmethod
    def launch(self, step: "grader.replay.proposal.Launch", kernel: Any, args: tuple,
               kwargs: dict) -> None:
        """Run one launch of a kernel built from source, on the CPU backend."""

    @abc.abstractmethod
    def watch(self, watch: "grader.replay.watch.Watch",
              launch: "grader.replay.traffic.LaunchWatch", grid: tuple[int, int, int],
              notes: dict) -> ContextManager[None]:
        """While one launch runs on the CPU, every load and store handed to `launch`
        (`watch.line()` says where in the file); `notes`: findings of the language's own,
        grader.replay.watch.Note -> how many accesses made it."""

    @abc.abstractmethod
    def runtime(self, filename: str) -> str | None:
        """How a message names the language's own runtime (its interpreter or simulator)
        when `filename`, a frame of a traceback, is part of it; None when it is not."""

    # --- on a GPU: the builder compiles, the replay loads (grader.replay.binaries) ------

    @abc.abstractmethod
    def build(self, kernel: Any, args: tuple, kwargs: dict,
              grid: tuple[int, ...]) -> tuple[list[dict], dict[str, bytes]]:
        """Compile one launch: its records (JSON; one per configuration of an autotuned
        kernel) and the files they name."""

    def disassemblers(self) -> list[str]:
        """The nvdisasm programs its toolchain ships, which read the cubins `build` makes
        (grader.replay.machine_code reads them for clock reads); none by default."""
        return []

    @abc.abstractmethod
    def load_binary(self, record: dict, files: dict, folder: "pathlib.Path", kept: dict,
                    name: str) -> Any:
        """One record of the builder's loaded in the replay, without compiling: an object
        whose `launch(grid, args, kwargs)` launches it. `folder` is the process's own for
        files; `kept`, the wing's objects kept between loads (by kernel `name`, say)."""

    @property
    @abc.abstractmethod
    def skipped(self) -> tuple[str, ...]:
        """The names of the errors that make an autotuner pass over a configuration (one
        that does not fit this GPU) rather than fail the launch."""


TRITON = Track(
    name="triton", title="Triton", module="triton",
    imports=re.compile(r"^\s*(import|from)\s+triton\b", re.M),
    decorator="@triton.jit",
    words=Words("program", "programs", "offsets", "tl.program_id",
                # said where no lane of the line was switched off: with no mask, or one that
                # switches nothing off here (a mask the watch cannot tell from none)
                "no lane of this load was switched off: it needs a mask (and `other=`) that "
                "keeps every lane inside the tensor",
                "no lane of this store was switched off: it needs a mask that keeps every lane "
                "inside the tensor", "store mask"),
    nan_fix=("give that `tl.load` a `mask=` and `other=` a value that changes nothing (0 for a "
             "sum, -inf for a max)"),
    extra=None, gpu_backend="triton", cpu_backend="triton-interpret",
    wing="grader.languages.triton",
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
    wing="grader.languages.cutile",
)
TRACKS: dict[str, Track] = {t.name: t for t in (TRITON, CUTILE)}
# `--backend auto` with no track named: the first of these whose GPU backend runs here; else
# the last one, on the CPU if no GPU runs it.
AUTO_ORDER = ("cutile", "triton")
_loaded: dict[str, Wing] = {}


def wing(track: str | Track) -> Wing:
    """The wing of a track (its record, or its name), imported by the module path its record
    holds the first time it is asked for: how the layers below the wings reach a language."""
    record = TRACKS[track] if isinstance(track, str) else track
    found = _loaded.get(record.wing)
    if found is None:
        found = importlib.import_module(record.wing).WING
        if not isinstance(found, Wing) or found.name != record.name:
            raise TypeError(f"{record.wing}.WING is not the Wing of the {record.name} track")
        _loaded[record.wing] = found
    return found
