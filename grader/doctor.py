"""`grade doctor`: what this machine can grade, and how to fix what it cannot.

PyTorch is imported by the diagnosis, the first thing it asks about: loading the command
(for its help, say) needs none of it.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grader import sandbox
from grader.backends import selection as backends
from grader.languages.cutile import toolchain
from grader.languages.cutile.toolchain import ARCHS
from grader.replay import machine_code

# The architecture to compile-check for when there is no GPU to ask.
DEFAULT_ARCH = "sm_90"

_TRITON_SMOKE = """
import torch, triton, triton.language as tl
@triton.jit
def k(x, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)
x = torch.ones(5)
k[(1,)](x, 5, B=8)
assert x.tolist() == [2.0] * 5, x
"""


@dataclass
class BackendStatus:
    name: str
    available: bool
    detail: str  # why it can run, or why not and the fix


@dataclass
class Diagnosis:
    facts: list[tuple[str, str]] = field(default_factory=list)
    backends: list[BackendStatus] = field(default_factory=list)
    sandbox: list[sandbox.Protection] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def can_grade(self) -> bool:
        return any(b.available for b in self.backends)


def diagnose() -> Diagnosis:
    import torch

    d = Diagnosis()
    info = backends.machine_info()
    d.facts.append(("Python", f"{platform.python_version()} ({sys.executable})"))
    d.facts.append(("torch", f"{torch.__version__} (CUDA build: {torch.version.cuda or 'none, CPU only'})"))
    d.facts.append(("triton", info["triton"] or "not installed"))
    if info["triton"]:
        d.facts.append(("Triton interpreter", _interpreter_works()))
    tc = toolchain.inspect_toolchain()
    d.facts.append(("cuda-tile", tc.cuda_tile or "not installed"))
    d.facts.append(("tileiras", f"{tc.tileiras} ({tc.tileiras_version})" if tc.tileiras else "not found"))
    home = f"{tc.cuda_home} (CUDA {tc.cuda_home_version or 'version unknown'})" if tc.cuda_home else "not set"
    d.facts.append(("CUDA_HOME", home))
    arch = backends.gpu_arch()
    if arch:
        major, minor = torch.cuda.get_device_capability()
        d.facts.append(("GPU", torch.cuda.get_device_name()))
        d.facts.append(("compute capability", f"{major}.{minor} ({arch})"))
        d.facts.append(("driver", _driver_version()))
        d.facts.append(("CUDA runtime (torch)", torch.version.cuda or "?"))
    else:
        d.facts.append(("GPU", "none found by torch"))
    # On a GPU every built kernel is read for clock reads first (grader.replay.machine_code).
    readers = machine_code.disassemblers()
    d.facts.append(("nvdisasm", readers[0] if readers else "not found"))
    if arch and not readers:
        d.notes.append("nvdisasm was not found: on this GPU every kernel would be 'not graded', "
                       "since the grader reads each built kernel's machine code before it runs "
                       "it. Install Triton (it ships nvdisasm) or the CUDA toolkit, or put "
                       "nvdisasm on PATH.")

    if tc.cuda_tile and tc.tileiras:
        result = toolchain.probe(arch or DEFAULT_ARCH)
        verdict = "yes" if result.ok else f"no: {result.error}"
        d.facts.append((f"tileiras compiles for {result.arch}", verdict))
        if result.drop_cuda_home:
            d.notes.append(
                f"tileiras fails with CUDA_HOME={tc.cuda_home} set (CUDA {tc.cuda_home_version or '?'}) "
                "and works without it: that toolkit's ptxas/libnvvm are older than tileiras needs, "
                "which makes every compile fail with 'failed to compile Tile IR program'. The grader "
                "ignores CUDA_HOME for cuTile; to fix it for your own scripts, `unset CUDA_HOME` or "
                f"point it at {toolchain.TILEIRAS_CUDA}."
            )
        elif not arch and result.ok:
            d.notes.append("cuTile kernels cannot run here, but they compile: `grade compile` "
                           f"checks that every cuTile stage builds for {', '.join(ARCHS)}.")

    for name, backend in backends.BACKENDS.items():
        why_not = backend.probe()
        d.backends.append(BackendStatus(name, why_not is None, why_not or backend.summary))
    d.sandbox = sandbox.probe()
    return d


def _interpreter_works() -> str:
    # A child process: the interpreter mode is fixed when triton is imported.
    try:
        run = subprocess.run([sys.executable, "-c", _TRITON_SMOKE], capture_output=True,
                             text=True, timeout=120, env={**os.environ, "TRITON_INTERPRET": "1"})
    except (OSError, subprocess.SubprocessError) as exc:
        return f"could not be tried: {exc}"
    if run.returncode == 0:
        return "works"
    last = (run.stderr.strip().splitlines() or ["no output"])[-1]
    return f"fails: {last}"


def _driver_version() -> str:
    if shutil.which("nvidia-smi"):
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    return "unknown (nvidia-smi not found)"


def _yes_no_table(title: str, columns: tuple[str, str, str], rows) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for name, yes, detail in rows:
        table.add_row(name, "[green]yes[/]" if yes else "[red]no[/]", escape(detail))
    return table


def render(d: Diagnosis, console: Console) -> None:
    facts = Table(title="This machine", title_justify="left", show_header=False)
    facts.add_column(style="bold")
    facts.add_column()
    for key, value in d.facts:
        facts.add_row(key, escape(value))
    console.print(facts)
    console.print(_yes_no_table("Backends", ("backend", "can grade", "why / fix"),
                                [(b.name, b.available, b.detail) for b in d.backends]))
    console.print(_yes_no_table("Sandbox: how a submission runs here",
                                ("protection", "in force", "how / why not"),
                                [(p.name, p.in_force, p.detail) for p in d.sandbox]))
    for note in d.notes:
        console.print(f"note: {escape(note)}")
    if d.can_grade:
        chosen = backends.select(backends.AUTO)
        console.print(f"`grade` will use [bold]{chosen.backend.name}[/]: {escape(chosen.reason)}")
    else:
        console.print("[bold red]No backend can grade on this machine[/]: see the fixes above.")
