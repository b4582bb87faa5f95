#!/usr/bin/env bash
# One call on a GPU machine that checks everything the GPU can check, with logs under $OUT.
#   - the machine: GPU, driver, Python, torch, triton
#   - `grade all --solutions` on the real Triton backend (every case must pass)
#   - `grade all` on the untouched exercises (every stage must be NOT STARTED)
#   - `--backend auto` must pick the GPU
# Usage: OUT=some/folder scripts/device-check.sh   (the device tool sets OUT itself)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=python3
OUT=${OUT:-device-results}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
status=0

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "| torch", torch.__version__, "| triton", triton.__version__, "| cuda", torch.version.cuda)'
} 2>&1 | tee "$OUT/machine.txt"

echo "== grade all --solutions --backend triton"
start=$(date +%s)
"$PY" -m grader all --solutions --backend triton --json "$OUT/solutions.json" 2>&1 | tee "$OUT/solutions.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "(first run, cold compile caches: $(( $(date +%s) - start )) s)"

echo "== grade all --solutions (auto, warm caches)"
start=$(date +%s)
"$PY" -m grader all --solutions --json "$OUT/solutions-auto.json" > "$OUT/solutions-auto.log" 2>&1 || status=1
grep -q '"backend": "triton"' "$OUT/solutions-auto.json" || { echo "auto did not pick triton"; status=1; }
echo "auto picked: $(grep -m1 backend_reason "$OUT/solutions-auto.json"); warm run $(( $(date +%s) - start )) s"

echo "== grade all (untouched exercises)"
"$PY" -m grader all --json "$OUT/exercises.json" > "$OUT/exercises.log" 2>&1
[ $? -eq 1 ] || { echo "exercises: expected exit 1"; status=1; }
n=$(grep -c '"status": "NOT STARTED"' "$OUT/exercises.json")
echo "exercises NOT STARTED: $n"

echo "device-check: $([ $status -eq 0 ] && echo OK || echo FAILED)"
exit $status
