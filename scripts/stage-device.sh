#!/usr/bin/env bash
# Gathers, on a machine with network access, what a GPU machine without it needs to run
# scripts/device-check.sh: the cuTile toolchain bundle (made by the script CUTILE_BUNDLER
# names, which is not part of this repository) and the wheels of the grader's
# dependencies that the GPU machine's Python lacks (safetensors, pydantic with its own
# dependencies, PyYAML), all in the git-ignored .device/ folder. scripts/device-check.sh installs
# the wheels there.
# Usage: scripts/stage-device.sh; copy the course's folder with .device/ to the GPU machine,
#   and begin the command there with `source .device/env.sh;`.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
# The cuTile toolchain bundle comes from the script named by CUTILE_BUNDLER (it writes
# .device/cutile-tc.tar.xz and .device/env.sh).
[ -s .device/cutile-tc.tar.xz ] || "${CUTILE_BUNDLER:?set CUTILE_BUNDLER to the script that stages the cuTile toolchain}"
# Compressed again with xz's x86 filter, which turns the executables' relative call
# addresses into absolute ones that repeat: 55.0 MB where the bundle came as 59.6 MB, less
# to copy to the GPU machine with the course's folder (about 3.5 minutes, once).
if [ ! -e .device/cutile-tc.x86 ]; then
  xz -dc .device/cutile-tc.tar.xz | xz --x86 --lzma2=preset=9e,dict=256MiB -T1 > .device/cutile-tc.tar.xz.part
  mv .device/cutile-tc.tar.xz.part .device/cutile-tc.tar.xz
  touch .device/cutile-tc.x86
fi
mkdir -p .device/wheels
if ! ls .device/wheels/safetensors-*.whl >/dev/null 2>&1; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    -d .device/wheels "safetensors>=0.4"
fi
if ! ls .device/wheels/pydantic-*.whl >/dev/null 2>&1; then
  python3 -m pip download -q --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    -d .device/wheels "pydantic>=2.6"
fi
if ! ls .device/wheels/[Pp]y[Yy][Aa][Mm][Ll]-*.whl >/dev/null 2>&1; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    -d .device/wheels "pyyaml>=6"
  # Only the pure-Python part: PyYAML falls back to it without its compiled speed-ups
  # (2.7 MB), and .device/ stays small beside the 57 MiB toolchain bundle.
  python3 - .device/wheels/[Pp]y[Yy][Aa][Mm][Ll]-*.whl <<'PY'
import sys, zipfile
from pathlib import Path
built = Path(sys.argv[1])
version = built.name.split("-")[1]
pure = built.with_name(f"pyyaml-{version}-py3-none-any.whl")
with zipfile.ZipFile(built) as src, zipfile.ZipFile(pure, "w", zipfile.ZIP_DEFLATED) as dst:
    for item in src.infolist():
        if item.filename.endswith(".so"):
            continue
        data = src.read(item)
        if item.filename.endswith(".dist-info/RECORD"):
            data = b"".join(l for l in data.splitlines(True) if b".so," not in l)
        elif item.filename.endswith(".dist-info/WHEEL"):
            lines = [l for l in data.decode().splitlines() if l and not l.startswith("Tag:")]
            lines = [l.replace("Root-Is-Purelib: false", "Root-Is-Purelib: true") for l in lines]
            data = ("\n".join(lines) + "\nTag: py3-none-any\n").encode()
        dst.writestr(item, data)
built.unlink()
PY
fi
du -sh .device
