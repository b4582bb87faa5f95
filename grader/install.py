"""Set up this checkout in the running Python environment: `python -m grader.install [EXTRA...]`.

`pip install -e .` alone gives a machine without an NVIDIA GPU the CUDA build of PyTorch
(PyPI's torch for Linux: several GB of CUDA libraries it cannot use). So PyTorch is
installed first, on its own: the CPU build where `nvidia-smi` finds no GPU, from PyTorch's
CPU index, or where that cannot be reached from any CPU build pip's own sources hold (a
wheel folder, a mirror); PyPI's CUDA build where there is a GPU. Then the checkout and its
extras (`cutile`, `test`) are installed with torch pinned to the version just installed,
so that no other requirement makes pip replace it; where the cutile extra's CUDA toolkit
pins clash with torch's, cuTile's compiler packages are installed beside torch instead.
With PyTorch's CPU build, the files that such a machine never loads are removed last.

Standard library only: it runs before anything else is installed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# The cutile extra (cuda-tile[tileiras]) pins the CUDA toolkit's meta-package to 13.2-13.4,
# and PyPI's CUDA builds of torch pin another version of it (torch 2.14.1: cuda-toolkit
# 13.0.3): pip cannot hold both, and would replace torch. What cuTile takes from the toolkit
# is its compiler, whose own packages sit beside torch's; these are the versions the extra
# installs.
CUTILE_BESIDE_TORCH = ("cuda-tile>=1.4", "nvidia-cuda-tileiras==13.4.*",
                       "nvidia-cuda-nvcc==13.4.*", "nvidia-nvvm==13.4.*", "nvidia-cuda-crt==13.4.*")
# What a machine without a GPU never loads of PyTorch's CPU build and of Triton: C++ test
# programs, tools and headers (for building C++ extensions and torch.compile's code, which
# the grader runs only on a GPU), CUDA's profiling libraries (for Triton's profiler on a
# GPU), and the AMD code generator (the interpreter and the NVIDIA front end, which the
# grader uses on a CPU, do without it). Paths inside each distribution; a folder's name
# ending in "/*" means its files except those kept.
CPU_NEVER_LOADS = {
    "torch": ("torch/test", "torch/bin/*", "torch/include"),
    "triton": ("triton/backends/nvidia/lib/cupti", "triton/backends/nvidia/lib/cupti-blackwell",
               "triton/_C/libproton.so", "triton/backends/amd/lib/libtriton_amd_codegen.so"),
}
KEPT = {"torch_shm_manager"}  # PyTorch's shared-memory helper for DataLoader workers
ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
EXIT_FAILED, EXIT_INTERRUPTED = 1, 130


def extras(pyproject: Path = PYPROJECT) -> tuple[str, ...]:
    """The extras pyproject.toml declares (a track's own, `test`): a new tile language's
    extra is installable once it is written there."""
    text = pyproject.read_text(encoding="utf-8")
    try:
        import tomllib
    except ImportError:  # Python 3.10, before anything is installed: the table's keys
        table = re.search(r"^\[project\.optional-dependencies\]\n(.*?)(?=^\[|\Z)", text,
                          re.M | re.S)
        return tuple(re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*=", table.group(1) if table
                                else "", re.M))
    return tuple(tomllib.loads(text).get("project", {}).get("optional-dependencies", {}))


def has_nvidia_gpu() -> bool:
    """Whether nvidia-smi is here and lists a GPU (it fails without a driver or a GPU)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return listed.returncode == 0 and "GPU" in listed.stdout


def reachable(url: str, seconds: float = 10) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=seconds):
            return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


def installed_torch() -> str | None:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def is_cpu_build(version: str) -> bool:
    return version.endswith("+cpu")


def cpu_builds(pip_output: str) -> list[str]:
    """The CPU builds of torch (version+cpu) in `pip index versions torch`'s answer, newest
    first, as pip lists them."""
    match = re.search(r"Available versions:\s*(.+)", pip_output)
    versions = [v.strip() for v in match.group(1).split(",")] if match else []
    return [v for v in versions if is_cpu_build(v)]


def pip(*args: str, quiet: bool = False) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pip", *args]
    if quiet:
        return subprocess.run(command, capture_output=True, text=True)
    print("$ " + " ".join(command[2:]), flush=True)
    return subprocess.run(command)


def torch_source(index: list[str]) -> str | None:
    """The newest CPU build of torch that pip can install from its sources plus `index`."""
    found = pip("index", "versions", "torch", *index, quiet=True)
    builds = cpu_builds(found.stdout) if found.returncode == 0 else []
    return builds[0] if builds else None


def install_torch(want_cpu: bool) -> str | None:
    """Install PyTorch, the CPU build if `want_cpu` and one can be found; returns the version
    installed, or None when pip failed."""
    if want_cpu:
        index = ["--index-url", CPU_INDEX] if reachable(f"{CPU_INDEX}/torch/") else []
        if not index:
            print(f"{CPU_INDEX} cannot be reached from here: looking for a CPU build of "
                  "torch in pip's own sources (its configured wheel folders and mirrors)")
        version = torch_source(index)
        if version:
            print(f"no NVIDIA GPU here: installing PyTorch's CPU build, torch {version}")
            if pip("install", f"torch=={version}", *index).returncode == 0:
                return installed_torch()
            return None
        print("warning: no CPU build of torch found; installing PyPI's default build, which "
              "carries CUDA libraries this machine cannot use (several GB)")
    else:
        print("an NVIDIA GPU is here: installing PyTorch's CUDA build")
    return installed_torch() if pip("install", "torch").returncode == 0 else None


def checkout_requirement(extras: list[str]) -> str:
    return f"{ROOT}[{','.join(extras)}]" if extras else str(ROOT)


def install_checkout(extras: list[str], torch_version: str) -> bool:
    """This checkout, editable, with its extras; torch stays the version installed."""
    pinned = f"torch=={torch_version}"
    if pip("install", "-e", checkout_requirement(extras), pinned).returncode == 0:
        return True
    if "cutile" in extras:
        print(f"the cutile extra's CUDA toolkit cannot sit beside torch {torch_version}: "
              "installing cuTile and its compiler's own packages instead")
        others = [e for e in extras if e != "cutile"]
        if pip("install", "-e", checkout_requirement(others), pinned,
               *CUTILE_BESIDE_TORCH).returncode == 0:
            return True
    print(f"pip could not install the course next to torch {torch_version} (above: which "
          "requirement conflicts with it). Without the extras that conflict, run "
          "`python -m grader.install` again; `grade doctor` then says what is missing.",
          file=sys.stderr)
    return False


def never_loaded(locate=None) -> list[Path]:
    """The installed files and folders of CPU_NEVER_LOADS; `locate(distribution, path)` finds
    a path of an installed distribution (None where it is not installed)."""
    locate = locate or _locate
    found = []
    for distribution, paths in CPU_NEVER_LOADS.items():
        for relative in paths:
            path = locate(distribution, relative.removesuffix("/*"))
            if path is None or not path.exists():
                continue
            if relative.endswith("/*"):
                found += [p for p in sorted(path.iterdir()) if p.name not in KEPT]
            else:
                found.append(path)
    return found


def _locate(distribution: str, relative: str) -> Path | None:
    try:
        return Path(metadata.distribution(distribution).locate_file(relative))
    except metadata.PackageNotFoundError:
        return None


def slim(locate=None) -> int:
    """Remove what a machine without a GPU never loads; the bytes freed."""
    freed = 0
    for path in never_loaded(locate):
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        freed += sum(p.stat().st_size for p in files if not p.is_symlink())
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    return freed


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m grader.install",
        description="Install this course into the running Python environment, with the "
                    "CPU build of PyTorch on a machine without an NVIDIA GPU.")
    declared = extras()
    parser.add_argument("extras", nargs="*", metavar="EXTRA",
                        help=f"also install these extras: {', '.join(declared)}")
    parser.add_argument("--torch", choices=("auto", "cpu", "cuda"), default="auto",
                        help="which PyTorch build to install where torch is not installed yet "
                             "(auto: cuda when nvidia-smi lists a GPU, else cpu)")
    parser.add_argument("--keep-all", action="store_true",
                        help="with PyTorch's CPU build, keep the files a machine without a GPU "
                             "never loads (removed by default: C++ test programs and headers, "
                             "CUDA's profiling libraries, the AMD code generator)")
    options = parser.parse_args(argv)
    unknown = [e for e in options.extras if e not in declared]
    if unknown:
        parser.error(f"no extra {', '.join(unknown)}: the extras are {', '.join(declared)}")
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    want_cpu = options.torch == "cpu" or (options.torch == "auto" and not has_nvidia_gpu())
    try:
        version = installed_torch()
        if version:  # an earlier run, or chosen by hand: pip would not swap builds anyway
            build = "CPU" if is_cpu_build(version) else "default"
            print(f"torch {version} ({build} build) is already installed: keeping it "
                  "(`pip uninstall torch` first to have this choose again)")
        else:
            version = install_torch(want_cpu)
        if version is None or not install_checkout(options.extras, version):
            return EXIT_FAILED
        if is_cpu_build(version) and not options.keep_all:
            freed = slim()
            if freed:
                print(f"removed {freed / 2**20:.0f} MiB that a machine without a GPU never "
                      "loads (C++ test programs and headers, CUDA's profiling libraries, the "
                      "AMD code generator); --keep-all keeps them")
    except KeyboardInterrupt:
        print("interrupted: run the same command again to finish", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"installed: torch {version}; `grade doctor` says what this machine can grade")
    return 0


if __name__ == "__main__":
    sys.exit(main())
