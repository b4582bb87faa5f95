#!/usr/bin/env bash
# Gradescope autograder setup: runs once, when the autograder image is built.
# /autograder/source holds the autograder zip that `grade autograder autograder.zip` builds:
# the handout (no solutions), course.hidden.toml if the class has hidden cases, and these
# two files.
# On a GPU image, install the cuTile extra too: pip3 install -e "/autograder/source[cutile]".
set -euo pipefail
ROOT=${AUTOGRADER_ROOT:-/autograder}
python3 -m pip install -e "$ROOT/source"
# The submission runs as a user of its own. Where the container allows no mount namespace
# (Docker's default), file permissions are what keep the hidden cases from it.
if [ -f "$ROOT/source/course.hidden.toml" ]; then chmod 600 "$ROOT/source/course.hidden.toml"; fi
