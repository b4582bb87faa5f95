#!/usr/bin/env bash
# The script that checks everything a GPU can check, in parts, with logs under $OUT:
#   grading: the machine (GPU, driver, Python, torch, triton, cuda-tile), `grade doctor`;
#     `grade all --solutions --profile` (GRADING_STAGES: other selectors; the profile, where
#     each stage's seconds went, after each scorecard) on the Triton GPU backend
#     and on cuTile, every case passing, speed included (pytest-benchmark records in
#     $OUT/<backend>-bench.json); `--backend auto` must pick cuTile when it works; cuTile
#     with a stale CUDA_HOME (the machine's older toolkit) must still grade; then every speed
#     trial of both gradings (`python -m scripts trials`, also in $OUT/trials.txt): no case
#     may fail, and the trials rejected and timed again, the worst excess per call and the
#     batches in all are the figures to compare across machines
#   calibrate: `grade calibrate --write`, speed thresholds from the references on this GPU
#     (the updated course.toml comes back as $OUT/course.toml)
#   exercises: `grade all` on the untouched exercises, every stage NOT STARTED; two stages
#     graded again with warm caches, 5 on cuTile and 4 on Triton (under 30 s each)
#   corpus: the GPU-only part of the bad-submission corpus (`python -m scripts corpus`), the
#     sandbox on the GPU included, the forging routes and honest autotuned kernels
#     (CORPUS_ONLY="WORD ...": only the submissions whose name holds a WORD)
#   fidelity: `python -m scripts fidelity`, every fault, attack and honest file of tests/
#     graded as its stage on each track's GPU backend and on its CPU backend (Triton's interpreter,
#     the cuTile simulator), correctness only: every case's verdict (passed or failed, and the
#     kind of failure) must be the same on both; a file a backend cannot run here is "not
#     graded" and fails the part (the table also in $OUT/fidelity.md; FIDELITY_ARGS: its
#     options, e.g. --track triton, --only WORD, --jobs N)
#   timing: `python -m scripts timing`, the grader's timing of every reference against the
#     in-process CUDA-event figure, matmul graded five times
#   untuned-triton / untuned-cutile: `python -m scripts untuned` on that track, the plain
#     (untuned) solutions against the references with the grader's speed checks: the
#     references must earn every speed point and the plain solutions none
#   repeat: `python -m scripts repeat`, matmul and softmax references graded 5 times each on both
#     tracks, alternating with a copy made 10% slower: same verdict every time, speed-ups
#     within 2%, the slower copy told apart every time (REPEAT_ARGS: its options, e.g.
#     --only matmul --move-every 1 to compare how often a trial moves its memory)
#   placement: `python -m scripts placement`, the matmul references and PyTorch timed on
#     inputs placed anew in each of three processes: whether a kernel's time moves with where
#     its inputs lie or with its process (what the repeat check's spread is made of;
#     PLACEMENT_ARGS: its options, e.g. --stage softmax)
#   batch: `python -m scripts batch`, a class of 8 made from the references (every other
#     student with a fault file in one stage) graded by `grade batch`, two of them graded
#     alone as well: the same points, and the wall time per student (every grading's
#     output in $OUT/batch-logs, the gradings alone with --profile; BATCH_ARGS: its
#     options, e.g. --jobs 2 on a host with two GPUs, --backend cutile, --stages 1 2 3 to
#     stay within one run's time limit)
#   sweep: `python -m scripts sweep`, variants of the references' TUNE places timed side by side with
#     the reference and PyTorch (SWEEP_ARGS: its options, e.g. --track triton)
#   benchmark: `python -m scripts benchmark`, every reference and PyTorch by both clocks (the
#     grader's and do_bench), the table also as Markdown in $OUT/benchmark.md
#   flush: `python -m scripts flush`, the short memory-bound references and their baselines
#     timed after a zeroing and after a reading L2 flush
#   wire: `python -m scripts wire`, a 256 MB output sent between two processes as the replay
#     sends a timed output: in GPU memory, in a sealed memory file, through the socket (a
#     table each)
#   clockgap: `python -m scripts clockgap`, why the grader's clock and do_bench disagree: each
#     shape timed with either flush in either order, SM clock and power sampled
#     (CLOCKGAP_ARGS: its options); the tables also in $OUT/clockgap.md
# Usage: on a GPU machine with the course's folder, `scripts/device-check.sh [PART ...]`;
#   on one without network access, run scripts/stage-device.sh on a machine with it first,
#   copy the course's folder with its .device/ over, and begin with `source .device/env.sh;`.
# The default is every part. Where a run has a time limit, name one or two parts per run:
# on the H200, grading took about 7 minutes with the previous grader (the two `grade all`
# runs 187 s and 192 s; 150 s and 164 s with the replay grader; 67 s and 61 s once kernels
# were compiled ahead; 45 s and 46 s with fetched outputs in GPU memory; 41-54 s and
# 43-51 s with the next stage readied; 40 s and 41 s with every later stage readied, 40 s
# and 32 s with every stage's cases first, 32 s and 32 s with the cuts after it; the whole
# part about 2 minutes), calibrate 3-4,
# exercises 2, corpus 3, fidelity not yet measured (it is meant to stay within 8), timing 5,
# each untuned part 4 (218 s), flush 1 (20 s), repeat
# 1-1.8 (63-105 s) before trials moved their memory and 1.3 since (75 s; matmul alone
# 31-34 s; on an H100 over 2.5, matmul alone 62-65 s), a batch of 8 2.5 with --stages 1
# (140 s) and 4-6 with every stage (242 s, 315 s, 349 s), wire 1, sweep 5 (268 s for every
# stage, both tracks), benchmark under 4 (--seconds 1.5), clockgap 2 (98 s), placement
# under 1 (34 s on an H100).
set -uo pipefail
ALL="grading calibrate exercises corpus fidelity timing untuned-triton untuned-cutile repeat placement batch flush sweep benchmark clockgap wire"
PARTS=${*:-$ALL}
part() { [[ " $PARTS " == *" $1 "* ]]; }
for p in $PARTS; do
  [[ " $ALL " == *" $p "* ]] || { echo "device-check: no part '$p' ($ALL)" >&2; exit 2; }
done
cd "$(dirname "$0")/.."
PY=${PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=python3
OUT=${OUT:-device-results}
mkdir -p "$OUT"
TMP=$(mktemp -d)  # each check's own log; $OUT keeps the few files worth keeping
trap 'rm -rf "$TMP"' EXIT
export PYTHONUNBUFFERED=1
# The grader's dependencies that the GPU machine's Python lacks (staged by scripts/stage-device.sh),
# compiled to bytecode as pip does by default: left to the first import, the first grading's
# processes compiled them, and the first stage measured that.
if ! "$PY" -c "import safetensors, pydantic, yaml" 2>/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --target /tmp/site .device/wheels/*.whl
fi
status=0
words() { eval "WORDS=(${1:-})"; }  # options from a variable, quoted words kept whole (--label 'a b')
grade() { "$PY" -m grader "$@"; }
check() {  # check NAME EXPECTED_EXIT -- ARGS: run `grade ARGS`, append its output to $OUT/logs.txt, compare the exit code
  local name=$1 want=$2; shift 3
  local start=$(date +%s)
  { echo "===== $name: grade $*"; grade "$@"; } > "$TMP/$name.log" 2>&1
  local got=$?
  cat "$TMP/$name.log" >> "$OUT/logs.txt"
  local verdict=ok; [ "$got" -eq "$want" ] || { verdict="FAILED (exit $got, wanted $want)"; status=1; }
  echo "== $name: grade $* -> $verdict, $(( $(date +%s) - start )) s"
}

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "| torch", torch.__version__, "| triton", triton.__version__, "| cuda", torch.version.cuda)'
  "$PY" -c 'import importlib.metadata as m; print("cuda-tile", m.version("cuda-tile"))' 2>&1
} 2>&1

if part grading; then
check doctor 0 -- doctor
for b in triton cutile; do
  check "$b" 0 -- ${GRADING_STAGES:-all} --solutions --backend "$b" --profile --json "$OUT/$b.json" --benchmark-json "$OUT/$b-bench.json"
done
check auto 0 -- 1 --solutions --json "$TMP/auto.json"
"$PY" -c "import json,sys; d=json.load(open('$TMP/auto.json')); print('   auto picked', d['backend'], '-', d['backend_reason']); sys.exit(d['backend'] != 'cutile')" || status=1
if [ -d /usr/local/cuda ]; then
  CUDA_HOME=/usr/local/cuda check stale-cuda-home 0 -- 1 --solutions --backend cutile --json "$TMP/stale.json"
  grep -o '"backend_reason": "[^"]*"' "$TMP/stale.json" | sed 's/^/   /'
fi
for name in triton cutile; do echo "--- $name"; grep -v '^grading\|^timing' "$TMP/$name.log"; done
"$PY" -m scripts trials "$OUT/triton.json" "$OUT/cutile.json" 2>&1 | tee "$OUT/trials.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if part calibrate; then
cp course.toml "$TMP/course.toml.before"
check calibrate 0 -- calibrate --write
cp course.toml "$OUT/course.toml"
diff "$TMP/course.toml.before" course.toml | sed 's/^/   /'
grep -v '^grading\|^timing' "$TMP/calibrate.log"
mv "$TMP/course.toml.before" course.toml  # the later parts grade by the thresholds as written
rm -f course.toml.bak
fi
if part exercises; then
check exercises-triton 1 -- all --backend triton --json "$TMP/ex-triton.json"
check exercises-cutile 1 -- all --backend cutile --json "$TMP/ex-cutile.json"
for f in ex-triton ex-cutile; do
  echo "   $f: $(grep -c '"status": "NOT STARTED"' "$TMP/$f.json") stages NOT STARTED"
done
check warm-stage5-cutile 0 -- 5 --solutions --backend cutile
check warm-stage4-triton 0 -- 4 --solutions --backend triton
fi
if part corpus; then
  echo "== gpu corpus"
  start=$(date +%s)
  "$PY" -m scripts corpus ${CORPUS_ONLY:-} 2>&1 | tee "$TMP/corpus.log" | grep --line-buffered -v "^grading" || status=1
  cat "$TMP/corpus.log" >> "$OUT/logs.txt"
  echo "== gpu corpus: $(( $(date +%s) - start )) s"
fi
if part fidelity; then
  echo "== fidelity check"
  start=$(date +%s)
  words "${FIDELITY_ARGS:-}"; "$PY" -m scripts fidelity --markdown "$OUT/fidelity.md" "${WORDS[@]}" 2>&1 | grep --line-buffered -v "^grading" | tee "$OUT/fidelity.txt" || status=1
  echo "== fidelity check: $(( $(date +%s) - start )) s"
fi
if part flush; then
  echo "== flush check"
  start=$(date +%s)
  "$PY" -m scripts flush 2>&1 | tee "$OUT/flush.txt" || status=1
  echo "== flush check: $(( $(date +%s) - start )) s"
fi
if part timing; then
  echo "== timing check"
  start=$(date +%s)
  "$PY" -m scripts timing --repeat 5 --seconds 2 2>&1 | tee "$OUT/timing.txt" || status=1
  echo "== timing check: $(( $(date +%s) - start )) s"
fi
if part batch; then
  echo "== batch check"
  start=$(date +%s)
  words "${BATCH_ARGS:-}"; "$PY" -m scripts batch --logs "$OUT/batch-logs" "${WORDS[@]}" 2>&1 | tee "$OUT/batch.txt" || status=1
  echo "== batch check: $(( $(date +%s) - start )) s"
fi
if part repeat; then
  echo "== repeat check"
  start=$(date +%s)
  words "${REPEAT_ARGS:-}"; "$PY" -m scripts repeat "${WORDS[@]}" 2>&1 | grep --line-buffered -v "^grading" | tee "$OUT/repeat.txt" || status=1
  echo "== repeat check: $(( $(date +%s) - start )) s"
fi
if part placement; then
  echo "== placement check"
  start=$(date +%s)
  words "${PLACEMENT_ARGS:-}"; "$PY" -m scripts placement "${WORDS[@]}" 2>&1 | tee "$OUT/placement.txt" || status=1
  echo "== placement check: $(( $(date +%s) - start )) s"
fi
if part sweep; then
  echo "== tuning sweep"
  start=$(date +%s)
  words "${SWEEP_ARGS:-}"; "$PY" -m scripts sweep "${WORDS[@]}" 2>&1 | grep --line-buffered -v "^grading" | tee "$OUT/sweep.txt" || status=1
  echo "== tuning sweep: $(( $(date +%s) - start )) s"
fi
if part benchmark; then
  echo "== benchmark"
  start=$(date +%s)
  "$PY" -m scripts benchmark --seconds 1.5 --markdown "$OUT/benchmark.md" 2>&1 | tee "$OUT/benchmark.txt" || status=1
  echo "== benchmark: $(( $(date +%s) - start )) s"
fi
if part wire; then
  echo "== wire check"
  for route in gpu sealed socket; do
    "$PY" -m scripts wire --route $route 2>&1 | tee -a "$OUT/wire.txt" || status=1
  done
fi
if part clockgap; then
  echo "== clock gap check"
  start=$(date +%s)
  words "${CLOCKGAP_ARGS:-}"; "$PY" -m scripts clockgap "${WORDS[@]}" --markdown "$OUT/clockgap.md" 2>&1 | grep --line-buffered -v "^grading" || status=1
  echo "== clock gap check: $(( $(date +%s) - start )) s"
fi
for track in triton cutile; do
  if part "untuned-$track"; then
    echo "== untuned check, $track"
    start=$(date +%s)
    "$PY" -m scripts untuned --track "$track" --keep "$TMP/untuned" 2>&1 | tee "$OUT/untuned-$track.txt" || status=1
    echo "== untuned check, $track: $(( $(date +%s) - start )) s"
  fi
done
echo "device-check: $([ $status -eq 0 ] && echo OK || echo FAILED)"
exit $status
