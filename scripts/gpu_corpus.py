"""The GPU-only part of the bad-submission corpus; run on a GPU machine, prints one table.

Points and times come from the grader's replay of the launches a submission's wrapper
proposes, in a process where no student host code ran (grader.replay): whatever the child
process does to its own clocks, timers or timing loop changes nothing. Each submission is
graded on the Triton GPU backend and must get the verdict listed (the CPU part of the
corpus is tests/attacks/ and tests/faults/, graded by tests/test_attack_files.py):

- flash attention that also allocates an N x N buffer: the memory growth check, measured on
  the replay, fails;
- vector add that patches the CUDA event timer and launches its kernel 20 times: too slow
  (the replay runs the 20 launches), or its timing rejected: no speed point;
- vector add that patches the grader's timing loop in its process, or leaves GPU work running
  after a batch (kept from settling or not): its honest speed (the child times nothing);
- vector add that launches three times on a side stream: too slow (the replay runs all three);
- matmul that launches twice on a side stream behind a GPU sleep: too slow;
- vector add that replays a cached output, or answers from a cache filled in the warm-up:
  its honest speed (the trial times the proposal of one recorded call, on fresh inputs);
- vector add that hands the timed size to PyTorch: the call at this size launched no kernel;
- vector add that slows PyTorch's own add in its process: no effect (it passes);
- vector add whose kernel faults on the GPU for one case: that case fails, the next passes;
- the plain (untuned) Triton softmax and matmul, each also with its CUDA-event times forged
  (x0.7 on softmax, x0.9 on matmul) and with every clock of its process forged (the grader's
  timing loop, time.perf_counter, CUDA events): each forgery earns what the honest plain
  kernel earns (speed-ups within FORGED_WITHIN of it, no speed point more; where they
  differ, the honest twin is graded again once and the forgery judged against that: a
  twin timed once on a disturbed machine was seen to be the outlier);
- the same plain kernels forging the replay's clock (its timing loop and CUDA events x0.7)
  by each route by which a file's Python could reach the process that builds or times its
  kernels: a constant's evaluation, only the wrapper using it (host code: it runs in the
  child alone, and the forgery earns exactly the honest speed points, its speed-ups within
  FORGED_ROUTE_WITHIN); a constant a kernel uses, a decorator's option, a constexpr that
  holds a function the kernel calls at compile time, a module attribute the kernel reads
  (each refused before any kernel is built: no points);
- honest autotuned Triton kernels (tests/honest/triton/): every point, speed included.
- flash attention that computes its scores on the fp8 tensor cores at the timed size only
  (tests/attacks/triton/stage5_fp8_scores_at_the_timed_size.py): every element within the
  tolerance there, but its timed calls' outputs are judged wrong as a whole (their error over
  the output's size beyond the stage's rtol).
- vector add that tries to read the reference and to plant a file next to the grader's
  checks: it finds neither, and still runs on the GPU with every sandbox protection in force.
- vector add launched without one of its kernel's arguments
  (tests/faults/triton/stage1_launch_without_n_elements.py): the builder names the missing
  parameter at the launch's line, as the CPU backends do (grader.replay.arguments).

Usage:  python -m scripts corpus [WORD ...]   (only submissions whose name contains a WORD;
        exit code 1 if any verdict is not as expected)
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path


from grader.backends import selection as backends
from grader.course import Case, Course, Threshold
from grader.grading.request import GradingRequest, Limits
from grader.grading.stages import grade_stage
from grader.instructor.skeletons import make_plain_solution
from scripts import common
from scripts.common import ROOT

# Vector add and torch.add both stream at the copy bandwidth (1.00x on the H200): a speed-up
# above this means the baseline was slowed and the slowing believed.
FLATTERED = 1.03
# A forged submission's speed-up against the same kernel's honest one: the same replay, timed
# in other batches of the same run.
FORGED_WITHIN = 0.05
# A forgery by a route the grader leaves in the child (host code) against its honest twin.
FORGED_ROUTE_WITHIN = 0.02
REFUSED = "its kernels are refused before they run"
VECTOR_ADD = (ROOT / "solutions/triton/stage1_vector_add.py").read_text()
ATTENTION = (ROOT / "solutions/triton/stage5_flash_attention.py").read_text()
MATMUL = (ROOT / "solutions/triton/stage4_matmul.py").read_text()
FP8_SCORES = (ROOT / "tests/attacks/triton/stage5_fp8_scores_at_the_timed_size.py").read_text()
LAUNCH_SHORT = (ROOT / "tests/faults/triton/stage1_launch_without_n_elements.py").read_text()


def plain(stage_file: str) -> str:
    path = ROOT / "solutions/triton" / stage_file
    return make_plain_solution(path.read_text(), str(path))


PLAIN_SOFTMAX, PLAIN_MATMUL = plain("stage3_softmax.py"), plain("stage4_matmul.py")


def event_times_times(factor: float, source: str) -> str:
    """`source` with its process's CUDA-event times scaled by `factor`."""
    return ("import torch\n"
            "_elapsed = torch.cuda.Event.elapsed_time\n"
            f"torch.cuda.Event.elapsed_time = lambda self, end: _elapsed(self, end) * {factor}\n"
            + source)


def every_clock_forged(source: str) -> str:
    """`source` with every clock of its process running at 70%: the grader's timing loop,
    time.perf_counter and the CUDA events."""
    return ("import time, torch\n"
            "import grader.timing as _t\n"
            "_run, _perf = _t.run_batch, time.perf_counter\n"
            "_t0 = _perf()\n"
            "def _fast(prepare, call, count, flush):\n"
            "    times, outputs = _run(prepare, call, count, flush)\n"
            "    return [t * 0.7 for t in times], outputs\n"
            "_t.run_batch = _fast\n"
            "time.perf_counter = lambda: _t0 + (_perf() - _t0) * 0.7\n"
            "_elapsed = torch.cuda.Event.elapsed_time\n"
            "torch.cuda.Event.elapsed_time = lambda self, end: _elapsed(self, end) * 0.7\n"
            + source)


# Scales the times of whatever process evaluates it: the grader's timing loop and CUDA events.
FORGE = """
def _forge(value):
    import torch

    timing = torch.sys.modules.get("grader.timing")
    if timing is not None and not getattr(timing, "forged", False):
        run = timing.run_batch

        def fast(prepare, call, count, flush):
            times, outputs = run(prepare, call, count, flush)
            return [t * 0.7 for t in times], outputs

        timing.run_batch, timing.forged = fast, True
        elapsed = torch.cuda.Event.elapsed_time
        torch.cuda.Event.elapsed_time = lambda self, end: elapsed(self, end) * 0.7
    return value

"""


def forged_by(route: str, source: str) -> str:
    """`source` (a plain Triton kernel file) forging the replay's clock by `route`: "wrapper
    constant" (a top-level constant only the wrapper uses), "kernel constant", "decorator",
    "compile-time function", "module attribute"."""
    head = "import triton\nimport triton.language as tl\n"
    kernel_line = re.search(r"^( +)\w+ = tl\.program_id\(.*\)\n", source, re.M)
    indent = kernel_line.group(1)

    def in_kernel(statement: str) -> str:
        at = kernel_line.end()
        return source[:at] + indent + statement + "\n" + source[at:]

    if route == "wrapper constant":
        return FORGE + "SCALE = max(1, 1, key=_forge)\n" + source
    if route == "kernel constant":
        return head + FORGE + "ONE = tl.constexpr(max(1, 1, key=_forge))\n" + in_kernel(
            "tl.static_assert(ONE == 1)")
    if route == "decorator":
        return FORGE + source.replace("@triton.jit\n",
                                      "@triton.jit(debug=max(False, False, key=_forge))\n", 1)
    if route == "compile-time function":
        return head + FORGE + "HOOK = tl.constexpr(_forge)\n" + in_kernel("HOOK(0)")
    if route == "module attribute":
        return head + in_kernel("tl.static_assert(triton.testing.do_bench is not None)")
    raise ValueError(route)


HONEST = {name: (ROOT / "tests/honest/triton" / f"{name}.py").read_text()
          for name in ("stage1_autotuned", "stage4_autotuned")}


def small_course(real: Course, folder: Path) -> Course:
    """The course's vector_add stage alone, rooted in `folder` (where the submissions are
    written): two small float32 cases, one 16 M-element speed case timed for 2 s, and a
    looser threshold, on Triton only. Seeds are the ones course.toml would give these cases."""
    stage = real.select("vector_add")

    def case(n: int, key: str) -> Case:
        return Case({"n": n}, "float32", zlib.crc32(f"vector_add/{key}".encode()))

    speed = dataclasses.replace(stage.speed, seconds=2.0, cases=(case(2**24, "speed/0"),),
                                thresholds={backends.gpu_arch(): {"triton": Threshold(min_speedup=0.7)}})
    stage = dataclasses.replace(stage, tiles={}, tolerance={"float32": stage.tolerance["float32"]},
                                cases=(case(1000, "0"), case(5, "1")), speed=speed)
    # Without the static check's lists: the corpus goes around that speed bump to test the
    # walls behind it (tests/replay/test_kernel_work.py covers the static check itself).
    rules = dataclasses.replace(real.rules, forbidden_imports=(), forbidden_calls=())
    return dataclasses.replace(real, path=folder / "course.toml", title="gpu corpus",
                               stages=(stage,), hidden_file=None, rules=rules)


def submissions() -> list[tuple[str, str, str, str | tuple[str, ...]]]:
    """(name, stage, source, text the verdict must contain, or the texts one of which
    it must)."""
    # Also allocates B x H x N x N floats: what flash attention exists to avoid.
    alloc = "    out = torch.empty_like(q)\n"
    assert alloc in ATTENTION
    quadratic = ATTENTION.replace(alloc, alloc + "    scores = torch.empty(*q.shape[:3], q.shape[2], "
                                                 "device=q.device)\n", 1)
    timer = (
        "import torch\n"
        "torch.cuda.Event.elapsed_time = lambda self, end: 1e-6\n"
        + VECTOR_ADD.replace("    return out\n",
                             "    for _ in range(19):\n"
                             "        vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n"
                             "    return out\n")
    )
    patched_loop = (
        "import grader.timing as _t\n"
        "_run = _t.run_batch\n"
        "def _fast(prepare, call, count, flush):\n"
        "    times, outputs = _run(prepare, call, count, flush)\n"
        "    return [t / 10 for t in times], outputs\n"
        "_t.run_batch = _fast\n" + VECTOR_ADD
    )
    side_stream = (
        "import torch\n"
        "_side = []\n" + VECTOR_ADD.replace(
            "    vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n",
            "    if not _side:\n"
            "        _side.append(torch.cuda.Stream())\n"
            "    _side[0].wait_stream(torch.cuda.current_stream())\n"
            "    with torch.cuda.stream(_side[0]):\n"
            "        for _ in range(3):\n"
            "            vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n")
    )
    replay = (
        "import torch\n"
        "_seen = {}\n" + VECTOR_ADD.replace(
            "    out = torch.empty_like(x)\n",
            "    if x.numel() in _seen and x.numel() > 100000:\n"
            "        torch.cuda._sleep(200000)  # about a kernel's time at 1.98 GHz\n"
            "        return _seen[x.numel()].clone()\n"
            "    out = torch.empty_like(x)\n").replace(
            "    return out\n", "    _seen[x.numel()] = out\n    return out\n")
    )
    warm_cache = (
        "_done = {}\n" + VECTOR_ADD.replace(
            "    out = torch.empty_like(x)\n",
            "    if _done.get(x.numel(), 0) >= 3:\n"
            "        return _done['out']\n"
            "    out = torch.empty_like(x)\n").replace(
            "    return out\n",
            "    _done[x.numel()] = _done.get(x.numel(), 0) + 1\n    _done['out'] = out\n"
            "    return out\n")
    )
    # At the timed size, a kernel twice as slow as the reference (it runs twice) on a side
    # stream, while the timed stream sleeps for about one reference call (0.18 ms at
    # 1.98 GHz): it reports cuBLAS's time and hides ~0.2 ms per call, ~2 ms per batch of ten.
    # Both of the reference's launches are doubled: the plain one, and the tuned one that
    # fp16 and bf16 take on Hopper.
    def twice_on_a_side_stream(source: str, launch: str) -> str:
        assert launch in source, launch
        pad = launch[:len(launch) - len(launch.lstrip())]
        return source.replace(launch, "".join(pad + line + "\n" for line in (
            "big = M >= 2048",
            "if big and not _side:",
            "    _side.append(torch.cuda.Stream())",
            "if big:",
            "    _side[0].wait_stream(torch.cuda.current_stream())",
            "    torch.cuda._sleep(350000)",
            "for _ in range(2 if big else 1):",
            "  with torch.cuda.stream(_side[0]) if big else contextlib.nullcontext():",
            "    " + launch.strip())))

    hidden_matmul = "_side = []\n" + MATMUL
    for launch in ("    matmul_kernel[grid](\n", "        matmul_tma_kernel[(programs,)](\n"):
        hidden_matmul = twice_on_a_side_stream(hidden_matmul, launch)
    hidden_matmul = hidden_matmul.replace("import torch\n", "import contextlib\n\nimport torch\n", 1)
    # The inputs of a batch's last call die as the child's batch loop (timing.run_batch)
    # returns, after its final device synchronisation: the frame that frees them is the
    # child's time_batch (checked on the CPU; a watched call's inputs outlive it, held by
    # the host watch). Work launched then runs on while the child replies, unseen by its
    # batch clock (about 3 ms at 1.98 GHz).
    left_running = (
        "import traceback, weakref\n"
        "_side = []\n"
        "def _after_batch():\n"
        "    frames = [f for f in traceback.extract_stack()\n"
        "              if not f.filename.endswith('weakref.py') and f.name != '_after_batch']\n"
        "    if frames and frames[-1].name == 'time_batch':\n"
        "        if not _side:\n"
        "            _side.append(torch.cuda.Stream())\n"
        "        with torch.cuda.stream(_side[0]):\n"
        "            torch.cuda._sleep(6000000)\n" + VECTOR_ADD.replace(
            "    out = torch.empty_like(x)\n",
            "    if x.numel() > 100000:\n"
            "        weakref.finalize(x, _after_batch)\n"
            "    out = torch.empty_like(x)\n"))
    # The same, kept from settling: every other batch of ten calls runs 10 us longer a call
    # (a fifth of the kernel), so the batch means spread ~20% and the trial runs to its time
    # budget. Its batches after the fifth are checked one time in three, so most of them
    # hand the GPU, spin still running, straight to the grader's next baseline batch.
    unsettled = left_running.replace(
        "    if x.numel() > 100000:\n        weakref.finalize(x, _after_batch)\n",
        "    if x.numel() > 100000:\n        weakref.finalize(x, _after_batch)\n"
        "        _calls.append(1)\n"
        "        if len(_calls) // 10 % 2:\n"
        "            torch.cuda._sleep(20000)\n").replace("_side = []\n", "_side = []\n_calls = []\n", 1)
    assert unsettled.count("_calls") == 3
    torch_when_timed = VECTOR_ADD.replace(
        "    out = torch.empty_like(x)\n",
        "    if x.numel() > 100000:\n        return torch.add(x, y)\n    out = torch.empty_like(x)\n")
    slow_baseline = (
        "import time, torch\n"
        "_add = torch.add\n"
        "def _slow_add(*args, **kwargs):\n"
        "    time.sleep(0.002)\n"
        "    return _add(*args, **kwargs)\n"
        "torch.add = _slow_add\n" + VECTOR_ADD
    )
    launch = "    vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n"
    assert launch in VECTOR_ADD
    # For one case, a grid that runs 8 G elements past a 1000-element vector: a GPU fault.
    fault = VECTOR_ADD.replace(launch, "    if n_elements == 1000:\n"
                                       "        n_elements = 1 << 33\n"
                                       "        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)\n" + launch)
    snoop = (
        "import os\n"
        f"SECRETS = [{str(ROOT / 'solutions')!r}, {str(ROOT / 'grader/checks/conftest.py')!r}]\n"
        + VECTOR_ADD.replace("    return out\n",
                             "    try:\n"
                             "        open(SECRETS[1], 'w').write('planted')\n"
                             "    except OSError:\n"
                             "        pass\n"
                             "    if os.path.exists(SECRETS[0]):\n"
                             "        return out * 0\n"
                             "    return out\n")
    )
    return [
        ("confined, on the GPU", "vector_add", snoop, ""),
        ("N x N buffer in flash attention", "flash_attention", quadratic, "N x N is being stored"),
        # Too slow, or its timing rejected (on a machine whose batches were disturbed, the
        # clock rejected both trials before a speed-up was judged): no speed point either way.
        ("patched CUDA timer, 20x the work", "vector_add", timer,
         ("too slow", "timing rejected")),
        ("patched grader timing loop", "vector_add", patched_loop, "PASS"),
        ("work on a side stream", "vector_add", side_stream, "too slow"),
        ("slow matmul on a side stream, asleep", "matmul", hidden_matmul, "too slow"),
        ("GPU work left running after a batch", "vector_add", left_running,
         ("its time alone counts", "timing rejected")),
        ("GPU work left running, trial unsettled", "vector_add", unsettled,
         ("its time alone counts", "timing rejected")),
        ("GPU sleep and a replayed output", "vector_add", replay, "PASS"),
        ("result cached in the warm-up", "vector_add", warm_cache, "PASS"),
        ("PyTorch at the timed size", "vector_add", torch_when_timed, "launched no Triton kernel"),
        ("PyTorch's add slowed down", "vector_add", slow_baseline, ""),
        ("kernel faults on the GPU", "vector_add", fault, ""),
        ("plain softmax, honest", "softmax", PLAIN_SOFTMAX, "honest"),
        ("plain softmax, event times x0.7", "softmax", event_times_times(0.7, PLAIN_SOFTMAX),
         "plain softmax, honest"),
        ("plain softmax, every clock forged", "softmax", every_clock_forged(PLAIN_SOFTMAX),
         "plain softmax, honest"),
        ("plain matmul, honest", "matmul", PLAIN_MATMUL, "honest"),
        ("plain matmul, event times x0.9", "matmul", event_times_times(0.9, PLAIN_MATMUL),
         "plain matmul, honest"),
        ("plain softmax, wrapper constant forges", "softmax",
         forged_by("wrapper constant", PLAIN_SOFTMAX), "plain softmax, honest, exactly"),
        ("plain matmul, wrapper constant forges", "matmul",
         forged_by("wrapper constant", PLAIN_MATMUL), "plain matmul, honest, exactly"),
        *((f"plain {stage}, {route} forges", stage, forged_by(route, source), REFUSED)
          for route in ("kernel constant", "decorator", "compile-time function",
                        "module attribute")
          for stage, source in (("softmax", PLAIN_SOFTMAX), ("matmul", PLAIN_MATMUL))),
        ("honest autotuned vector add", "vector_add", HONEST["stage1_autotuned"], "PASS"),
        ("honest autotuned matmul", "matmul", HONEST["stage4_autotuned"], "PASS"),
        ("fp8 scores at the timed size", "flash_attention", FP8_SCORES,
         "the timed calls returned a wrong result: every element is within the tolerance, but "
         "the error over the whole output"),
        ("launch without an argument", "vector_add", LAUNCH_SHORT,
         "line 42 (`vector_add_kernel[grid](x, y, out, BLOCK_SIZE=BLOCK_SIZE)`): the launch "
         "gives no value for n_elements"),
    ]


def said(texts: list[str], expected: str | tuple[str, ...]) -> list[str]:
    """The grader's texts that hold the expected words (any of them, for a tuple)."""
    words = (expected,) if isinstance(expected, str) else expected
    return [t for t in texts if t and any(w in t for w in words)]


def speedups(result) -> list[float]:
    return [c.speedup for c in result.speed.cases]


def like_honest(result, honest, within: float = FORGED_WITHIN) -> tuple[bool, str]:
    """A forgery earns what its honest kernel earns: the same speed verdicts, each speed-up
    within `within` of the honest one."""
    if honest is None:
        return False, "its honest kernel was not graded in this run"
    pairs = list(zip(speedups(result), speedups(honest)))
    close = bool(pairs) and all(h and abs(f / h - 1) <= within for f, h in pairs)
    same = [c.passed for c in result.speed.cases] == [c.passed for c in honest.speed.cases]
    shown = ", ".join(f"{f:.3f}x vs {h:.3f}x" for f, h in pairs)
    return close and same, f"{shown}; speed points {result.speed.points:g} vs {honest.speed.points:g}"


def like_twin(result, twin, exactly: bool) -> tuple[bool, str]:
    """A forgery against its honest twin (like_honest): a forgery by a route the grader
    leaves in the child (`exactly`) must also earn exactly the twin's speed points."""
    ok, got = like_honest(result, twin, FORGED_ROUTE_WITHIN if exactly else FORGED_WITHIN)
    return ok and (not exactly or result.speed.points == twin.speed.points), got


def texts_of(result) -> list[str]:
    """Everything the grader said of a stage: its cases, its checks, its speed cases, its
    message and why speed was or was not graded."""
    return [c.summary for c in result.cases] + [c.message for c in result.checks] \
        + [c.summary for c in result.speed.cases] + [result.message, result.speed.reason]


def judge(name: str, expected: str | tuple[str, ...], result, graded: dict,
          regrade: Callable[[str], object]) -> tuple[bool, str]:
    """Whether an entry's result is what `expected` asks (its texts, any of them for a
    tuple, or one of the verdicts named below), and what was seen. `graded`: the results
    of the entries graded before (an honest twin); `regrade(name)` grades one again."""
    texts = texts_of(result)
    if name == "confined, on the GPU":
        held = [p.name for p in result.sandbox if p.in_force]
        planted = (ROOT / "grader/checks/conftest.py").exists()
        ok = result.status.value == "PASS" and len(held) == len(result.sandbox) > 0 \
            and not planted
        return ok, f"in force: {', '.join(held)}" + ("; PLANTED A FILE" if planted else "")
    if name == "PyTorch's add slowed down":  # timed in the grader, untouched
        fast = [c for c in result.speed.cases if c.passed and c.speedup > 0.7]
        ok = result.status.value == "PASS" and len(fast) == len(result.speed.cases) > 0
        return ok, "; ".join(c.summary[:120] for c in result.speed.cases)
    if name.startswith("GPU work left running"):
        # Caught (its baseline's time alone counts, or the clock rejects it), or without
        # effect: both kernels stream at the copy bandwidth, so a speed-up above FLATTERED
        # means the baseline was slowed and believed.
        speeds = [c.speedup for c in result.speed.cases if c.speedup]
        hit = said(texts, expected)
        ok = bool(hit) or (bool(speeds) and max(speeds) <= FLATTERED)
        return ok, (hit or [c.summary[:150] for c in result.speed.cases] or ["(nothing)"])[0]
    if name == "launch without an argument":  # the builder's words, quoted in the entry
        hit = [d for c in result.cases for d in c.details if expected in d]
        return bool(hit) and result.points == 0, first_said(hit, texts)
    if name == "kernel faults on the GPU":
        if len(result.cases) != 2:
            return False, f"{len(result.cases)} cases, not 2: {first_said([], texts)}"
        first, second = result.cases
        return not first.passed and second.passed, (
            f"case 1: {first.summary[:120]} | case 2: "
            f"{'PASS' if second.passed else second.summary}")
    if isinstance(expected, str):  # a verdict named by a word of its own
        if expected == "honest":
            ok = result.status.value in ("PASS", "FAIL") and bool(result.speed.cases)
            return ok, "; ".join(c.summary[:80] for c in result.speed.cases)
        if expected.endswith((", honest", ", honest, exactly")):
            return judged_as_twin(result, expected, graded, regrade)
        if expected == REFUSED:
            hit = [t for t in texts if t and REFUSED in t]
            return bool(hit) and result.points == 0, first_said(hit, texts)
        if expected == "PASS":
            return result.status.value == "PASS", \
                "; ".join(c.summary[:100] for c in result.speed.cases) or result.message
    # Words the grader must say (one of them, for a tuple: and no speed point either way).
    hit = said(texts, expected)
    return bool(hit) and (isinstance(expected, str) or result.speed.points == 0), \
        first_said(hit, texts)


def first_said(hit: list[str], texts: list[str]) -> str:
    """What to show of a verdict: the first text that matched, else the first said."""
    return (hit or [t for t in texts if t] or ["(nothing)"])[0][:200]


def judged_as_twin(result, expected: str, graded: dict, regrade: Callable[[str], object]
                   ) -> tuple[bool, str]:
    """A forgery against its honest twin, the entry `expected` names (", exactly": by a
    route left in the child, so the same points too)."""
    twin = expected.removesuffix(", exactly")
    ok, got = like_twin(result, graded.get(twin), twin != expected)
    if not ok and twin in graded:  # the twin, timed once, may be the outlier
        ok, got = like_twin(result, regrade(twin), twin != expected)
        got += " (the honest twin graded again)"
    return ok, got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("words", nargs="*", help="only the submissions whose name holds one")
    wanted = parser.parse_args().words  # before the GPU is asked for: --help works anywhere
    selection = backends.select("triton")
    real = common.course()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        small = small_course(real, tmp)
        relaxed = dataclasses.replace(real, rules=small.rules)
        graded = {}
        entries = submissions()
        sources = {name: (stage_id, source) for name, stage_id, source, _ in entries}

        def grade(name: str):
            stage_id, source = sources[name]
            module = tmp / f"{stage_id}_submission.py"
            module.write_text(source)
            course = small if stage_id == "vector_add" else relaxed
            stage = course.select(stage_id)
            request = GradingRequest(course, (stage,), selection.backend.name, module=module,
                                     limits=Limits(timeout=120))
            graded[name] = grade_stage(request.resolve(), stage)
            return graded[name]

        for name, _, _, expected in entries:
            if wanted and not any(word in name for word in wanted):
                continue
            result = grade(name)
            ok, got = judge(name, expected, result, graded, grade)
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name:<34} {result.status.value:<11} {got}", flush=True)
            if not ok:  # everything the grader said, so that a run on a GPU tells why
                for text in (t for t in texts_of(result) if t):
                    print("     | " + text.replace("\n", "\n     | ")[:2000], flush=True)
    print(f"gpu corpus: {'OK' if not failures else f'{failures} unexpected verdicts'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
