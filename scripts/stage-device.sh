#!/usr/bin/env bash
# Stages, on this machine, what a GPU run through the device tool needs and the GPU machine
# lacks (it has no network): the cuTile bundle (../shared/device/stage-cutile.sh) and the
# wheels of the grader's dependencies that its Python does not have (safetensors, pydantic
# with its own dependencies), all in
# the git-ignored .device/ folder. scripts/device-check.sh installs the wheels there.
# Usage: scripts/stage-device.sh, then carry [".device"] and begin the device command with
#   source .device/env.sh;
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
[ -s .device/cutile-tc.tar.xz ] || ../shared/device/stage-cutile.sh
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
du -sh .device
