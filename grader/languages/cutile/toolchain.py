"""The cuTile toolchain: is cuda-tile installed, does tileiras compile, and is CUDA_HOME stale.

cuTile kernels are compiled by `tileiras`, a separate program. A working `import cuda.tile`
says nothing about whether that compiler is present or works, so the grader compiles a tiny
kernel once (the probe) and caches the answer per toolchain, GPU architecture and
CUDA_HOME.

Known field failure: a tileiras found on PATH or under CUDA_HOME uses the ptxas and libnvvm of
CUDA_HOME when it is set; an older toolkit there (CUDA 13.0, say) makes every compile fail with
"failed to compile Tile IR program". When the probe fails with CUDA_HOME set and passes
without it, the grader drops CUDA_HOME from its own environment and says so.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from grader import cache

CACHE_FILE = cache.ROOT / "cutile-probe.json"
# The architectures a cuTile stage is compiled for without a GPU (`grade compile`).
ARCHS = ("sm_80", "sm_90", "sm_100", "sm_120")
# The CUDA toolkit a CUDA_HOME must hold for tileiras (its ptxas and libnvvm).
TILEIRAS_CUDA = "CUDA 13.3 or newer"
INSTALL_FIX = "python -m grader.install cutile  (or: pip install 'cuda-tile[tileiras]')"


@dataclass(frozen=True)
class Toolchain:
    """What is known about the cuTile compiler on this machine."""

    cuda_tile: str | None  # package version, None when not installed
    tileiras: str | None  # path of the tileiras binary
    tileiras_version: str | None
    cuda_home: str | None
    cuda_home_version: str | None


@dataclass(frozen=True)
class Probe:
    """The result of compiling a tiny kernel for one architecture."""

    arch: str
    ok: bool
    error: str = ""  # the compiler's message, when not ok
    drop_cuda_home: bool = False  # compiles only once CUDA_HOME is removed


def cuda_tile_version() -> str | None:
    if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.tile") is None:
        return None
    try:
        return importlib.metadata.version("cuda-tile")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def inspect_toolchain() -> Toolchain:
    version = cuda_tile_version()
    tileiras = _tileiras_path() if version else shutil.which("tileiras")
    cuda_home = os.environ.get("CUDA_HOME") or None
    return Toolchain(
        cuda_tile=version,
        tileiras=tileiras,
        tileiras_version=_tool_version(tileiras) if tileiras else None,
        cuda_home=cuda_home,
        cuda_home_version=_cuda_home_version(cuda_home) if cuda_home else None,
    )


def _tileiras_path() -> str | None:
    try:
        from cuda.tile._compile import _find_compiler_bin  # private: the path cuTile will use

        return _find_compiler_bin().path
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a changed private API: fall back to PATH
        return shutil.which("tileiras")


def _tool_version(path: str) -> str | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if "release" in line.lower() or line.lower().startswith("cuda"):
            return line.strip()
    return out.strip().splitlines()[-1] if out.strip() else None


def _cuda_home_version(cuda_home: str) -> str | None:
    version_file = Path(cuda_home) / "version.json"
    try:
        return json.loads(version_file.read_text())["cuda"]["version"]
    except (OSError, ValueError, KeyError, TypeError):
        nvcc = Path(cuda_home) / "bin" / "nvcc"
        return _tool_version(str(nvcc)) if nvcc.exists() else None


def compile_tiny_kernel(arch: str) -> None:
    """Compile a one-line kernel to a cubin for `arch`; raises what the compiler raised."""
    import torch
    from cuda.tile.compilation import export_kernel

    from grader.languages.cutile import build  # late: it imports torch
    from grader.languages.cutile.probe_kernel import tiny_kernel

    (kernel, sigs), = build.signatures([(tiny_kernel, (torch.empty(16), 16))]).values()
    build.build(export_kernel, kernel, sigs, arch)


@functools.cache
def probe(arch: str, compile_fn=compile_tiny_kernel) -> Probe:
    """Whether tileiras compiles for `arch` here; cached in memory and on disk."""
    toolchain = inspect_toolchain()
    key = json.dumps([arch, toolchain.cuda_tile, toolchain.tileiras, toolchain.tileiras_version,
                      toolchain.cuda_home])
    cached = cache.lookup(CACHE_FILE, key)
    if cached:
        return Probe(**cached)
    result = _run_probe(arch, toolchain, compile_fn)
    if result.ok:  # failures are probed again: the user may be fixing them right now
        cache.remember(CACHE_FILE, key, asdict(result))
    return result


def _run_probe(arch: str, toolchain: Toolchain, compile_fn) -> Probe:
    if toolchain.cuda_tile is None:
        return Probe(arch, False, "cuda-tile is not installed")
    if toolchain.tileiras is None:
        return Probe(arch, False, "tileiras was not found")
    try:
        compile_fn(arch)
        return Probe(arch, True)
    except Exception as exc:  # noqa: BLE001 - any compiler failure is the answer
        error = _first_lines(exc)
    if not toolchain.cuda_home:
        return Probe(arch, False, error)
    saved = os.environ.pop("CUDA_HOME")
    try:
        compile_fn(arch)
        return Probe(arch, True, error, drop_cuda_home=True)
    except Exception:  # noqa: BLE001
        return Probe(arch, False, error)
    finally:
        os.environ["CUDA_HOME"] = saved


def apply(result: Probe) -> None:
    """Make this process compile the way the probe found to work."""
    if result.drop_cuda_home:
        os.environ.pop("CUDA_HOME", None)


def _first_lines(exc: BaseException, n: int = 3) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: " + " / ".join(lines[:n])
