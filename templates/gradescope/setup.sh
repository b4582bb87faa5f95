#!/usr/bin/env bash
# Gradescope autograder setup: runs once, as root, when the autograder image is built on
# Gradescope's Ubuntu base image. $ROOT/source holds the autograder zip that
# `grade autograder autograder.zip` builds: the handout (no solutions), course.hidden.toml
# if the class has hidden cases, and these two scripts.
#
# The course goes into a virtual environment of its own, $ROOT/venv: Ubuntu 23.04 and later
# mark the system's Python as managed by apt (PEP 668), so pip may not install into it, and
# a venv needs no --break-system-packages anywhere. `python -m grader.install` installs
# PyTorch's CPU build on this image without a GPU (1.4 GB, not PyPI's 5.5 GB CUDA build),
# then the course with the cuTile extra: cuTile students are graded on the cuTile simulator.
set -euo pipefail
ROOT=${AUTOGRADER_ROOT:-/autograder}
PYTHON=${AUTOGRADER_PYTHON:-python3}
EXTRAS=${AUTOGRADER_EXTRAS:-cutile}

# A bare Ubuntu image may lack Python's venv module (Debian packages it apart, as
# python3-venv) or Python itself.
if ! "$PYTHON" -c "import venv, ensurepip" >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    python3 python3-venv python3-pip
fi
"$PYTHON" -m venv "$ROOT/venv"
cd "$ROOT/source"
# shellcheck disable=SC2086  # the extras are words
"$ROOT/venv/bin/python" -m grader.install $EXTRAS

# The submission runs as a user of its own. Where the container allows no mount namespace
# (Docker's default), file permissions are what keep the hidden cases from it.
if [ -f "$ROOT/source/course.hidden.toml" ]; then chmod 600 "$ROOT/source/course.hidden.toml"; fi
