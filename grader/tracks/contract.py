"""What the grader asks of a tile language: one small contract per process that asks.

A language's package answers each contract with one module (its record's `Parts` names
them): the module's functions and values are the members, by the contract's names. A member
this module gives a body to is optional, and that body is the answer of a language that does
not support it ("no front end", "builds only on its GPU", "no dtypes of its own"); a member
marked `@required` has none. When a part is first asked for, its module is imported and each
member it defines is checked against the contract here, as pluggy checks a hook: a function
takes the contract's parameters, by the contract's names (the machinery calls some by
keyword). A part that breaks its contract is refused with the member and the fix named.

The grader's own types are named in annotations by their modules' paths: this module stands
below every layer, and imports none of them.
"""

from __future__ import annotations

import contextlib
import inspect
from types import MappingProxyType, ModuleType, SimpleNamespace
from typing import Any, Callable, ClassVar, Mapping

from grader.tracks.record import Track


class Unavailable(Exception):
    """The language's compiler, in this version, offers its front end in no form the grader
    knows how to call (`CpuRunner.front_end`): the check is not made, and grading says so."""


class NotSupported(Exception):
    """A member the language does not support was called: its message says so in words."""


def required(member: Callable) -> Callable:
    """A method with no default: the part's module must define it."""
    member.required = True
    return member


class _Required:
    """A value with no default (`REQUIRED`): the part's module must define it."""

    required = True

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


_MACHINERY = ("role", "members", "answered_by")


class Contract:
    """A part's contract. Subclasses list members: methods (`self` is the contract, given the
    track for defaults that word an answer) and plain values."""

    role: ClassVar[str]  # the part's name in Parts, and how messages name the process

    def __init__(self, track: Track):
        self.track = track

    @classmethod
    def members(cls) -> list[str]:
        """The contract's members, by name (not the contract's own machinery)."""
        return [n for c in reversed(cls.__mro__[:-2]) for n in vars(c)
                if not n.startswith("_") and n not in _MACHINERY]

    @classmethod
    def answered_by(cls, track: Track, module: ModuleType) -> SimpleNamespace:
        """The part: each member from `module`, checked, or this contract's default."""
        defaults, found, wrong = cls(track), {}, []
        for name in cls.members():
            spec = inspect.getattr_static(cls, name)
            if hasattr(module, name):
                value = getattr(module, name)
                if inspect.isfunction(spec) and _parameters(spec)[1:] != _parameters(value):
                    given, wanted = _parameters(value), _parameters(spec)[1:]
                    wrong.append(f"{module.__name__}.{name} takes ({', '.join(given)}); "
                                 f"the contract's takes ({', '.join(wanted)})")
                found[name] = value
            elif getattr(spec, "required", False):
                wrong.append(f"{module.__name__} defines no `{name}`, which the {cls.role} "
                             f"contract requires (grader.tracks.contract.{cls.__name__})")
            else:
                found[name] = getattr(defaults, name)
        if wrong:
            raise TypeError(f"The {track.name} track's {cls.role} part breaks its contract: "
                            + "; ".join(wrong))
        return SimpleNamespace(**found)


def _parameters(function: Any) -> list[str]:
    try:
        return list(inspect.signature(function).parameters)
    except (TypeError, ValueError):  # not a function: a value where a function belongs
        return ["<not a function>"]


class BackendProbe(Contract):
    """The grading process: whether the language's backends can run on this machine."""

    role = "backends"

    @required
    def probe(self, device: str) -> str | None:
        """Why its backend on `device` ("cuda" or "cpu") cannot run on this machine, with the
        fix; None: it can."""

    def prepare(self, backend: "grader.backends.selection.Backend") -> None:
        """Set up this process, and the workers it starts, for `backend` (one of its two),
        before any kernel is loaded."""

    def gpu_facts(self) -> list[str]:
        """What its GPU backend adds to the reason it was chosen: the compiler's version and
        target, a repair of the environment the grader made for it."""
        return []

    def versions(self) -> dict[str, str | None]:
        """The versions its results depend on, among the machine's facts (a key of the result
        schema -> the version, None where it is not installed); read without importing it."""
        return {}

    def readable(self) -> list[str]:
        """Folders its tools read that are not Python's own (a compiler's toolchain): a
        worker's view of the file system shows them (grader.sandbox.filesystem)."""
        return []


class WorkerBootstrap(Contract):
    """Every worker (the child, the replay, the builder), before the submission."""

    role = "worker"

    @required
    def bind(self, role: str, device: str) -> None:
        """Import the language before the submission can, and set up how the process of this
        `role` ("child", "replay" or "builder") runs it on `device`: on the CPU, its
        interpreter or simulator; in the replay, its helpers (started early)."""

    def warm(self) -> None:
        """What a spare's template does once its imports are done, before it forks a worker:
        work every worker of the language would otherwise repeat. No CUDA may be initialised
        here, and no submission is near."""


class LaunchRecorder(Contract):
    """The child, which records the launches the student's wrapper proposes."""

    role = "recorder"

    @required
    def hook_launches(self) -> None:
        """Hook the language's launch API (called once, once the language is imported):
        inside a recording session (grader.sandbox.launches.current) a launch is proposed to
        it, or captured, and not run; outside one it launches."""

    def dtype_name(self, value: Any) -> str | None:
        """The name of `value` when it is one of the language's dtypes, passed to a kernel as
        an argument (a proposal holds it by that name); None: the language passes none."""
        return None

    def build_offline(self, launches: list[tuple[Any, tuple]],
                      archs: tuple[str, ...]) -> tuple[dict, dict]:
        """`grade compile`, in the child: the captured launches (kernel, arguments) built for
        each architecture without a GPU; the reply and its binaries, by name."""
        raise NotSupported(f"{self.track.title} kernels are built on the GPU that runs them")


class KernelReader(Contract):
    """A kernel file read and its kernels rebuilt, in the replay and the builder."""

    role = "reader"
    # What a kernel file of the language may spell (grader.replay.spellings.Spellings): its
    # modules, decorators and their options, annotations, built-ins and API.
    spellings: "grader.replay.spellings.Spellings" = REQUIRED
    # Whether a top-level function without a decorator that a kernel calls is tile code,
    # checked and built as the kernels are (else the kernel may not call it).
    helpers_are_tile_code: bool = False
    # The calls a constant may be written with, by spelling (`tl.constexpr(64)`): each takes
    # (reader, call node, spelling), reads the arguments as data
    # (grader.replay.literals.LiteralReader) and makes the value.
    constructors: Mapping[str, Callable[..., Any]] = MappingProxyType({})

    @required
    def decorate(self, function: Callable, spelling: str, options: dict,
                 node: "ast.expr", interpreted: bool) -> Any:
        """`function`, a bare `def` of the file, under its decorator spelled `spelling` (one
        the spellings name), with `options` read as data; `interpreted`: made for the CPU
        backend. Raises grader.replay.literals.NotData at `node` for what it refuses."""

    def dtype(self, name: str) -> Any:
        """The language's dtype `name`, as a kernel is given it; None: it has none."""
        return None

    @required
    def parameters(self, kernel: Any) -> list[str]:
        """The names of a kernel's parameters, in order."""

    @required
    def optional(self, kernel: Any) -> set[str]:
        """The parameters a launch of `kernel` may leave out: those with a default, and those
        the kernel's decorator sets itself (every configuration of Triton's autotuner)."""


class CpuRunner(Contract):
    """The replay on a CPU: kernels built from source, run by the language's interpreter or
    simulator under the grader's watch."""

    role = "cpu"

    @required
    def launch(self, step: "grader.replay.proposal.Launch", kernel: Any, args: tuple,
               kwargs: dict) -> None:
        """Run one launch of a kernel built from source, on the CPU backend."""

    def front_end(self, step: "grader.replay.proposal.Launch", kernel: Any, args: tuple,
                  kwargs: dict, path: "pathlib.Path") -> str | None:
        """The real compiler's front end on this launch of a kernel of `path`, with its
        arguments: the compiler's rejection, or None. Raises Unavailable. By default: a
        language no GPU runs has one program, the one its CPU backend runs (None); one a GPU
        runs, with no front end the grader can call, goes unchecked."""
        if self.track.parts.gpu is None:
            return None
        raise Unavailable(f"{self.track.title} has no compiler front end the grader can call")

    def watch(self, watch: "grader.replay.watch.Watch",
              launch: "grader.replay.traffic.LaunchWatch", grid: tuple[int, int, int],
              notes: dict) -> contextlib.AbstractContextManager[None]:
        """While one launch runs on the CPU, every load and store handed to `launch`
        (`watch.line()` says where in the file); `notes`: findings of the language's own,
        grader.replay.watch.Note -> how many accesses made it. None seen by default."""
        return contextlib.nullcontext()

    def runtime(self, filename: str) -> str | None:
        """How a message names the language's own runtime (its interpreter or simulator)
        when `filename`, a frame of a traceback, is part of it; None when it is not."""
        return None


class GpuBuilder(Contract):
    """On a GPU: the builder compiles each launch, the replay loads what it built."""

    role = "gpu"
    # The names of the errors that make an autotuner pass over a configuration (one that
    # does not fit this GPU) rather than fail the launch.
    skipped: tuple[str, ...] = ()

    @required
    def build(self, kernel: Any, args: tuple, kwargs: dict,
              grid: tuple[int, ...]) -> tuple[list[dict], dict[str, bytes]]:
        """Compile one launch: its records (JSON; one per configuration of an autotuned
        kernel) and the files they name."""

    @required
    def load_binary(self, record: dict, files: dict, folder: "pathlib.Path", kept: dict,
                    name: str) -> Any:
        """One record of the builder's loaded in the replay, without compiling: an object
        whose `launch(grid, args, kwargs)` launches it. `folder` is the process's own for
        files; `kept`, the part's objects kept between loads (by kernel `name`, say)."""

    def disassemblers(self) -> list[str]:
        """The nvdisasm programs its toolchain ships, which read the cubins `build` makes
        (grader.replay.machine_code reads them for clock reads)."""
        return []


# Every contract, one per field of Parts, in its order.
CONTRACTS: tuple[type[Contract], ...] = (BackendProbe, WorkerBootstrap, LaunchRecorder,
                                         KernelReader, CpuRunner, GpuBuilder)
