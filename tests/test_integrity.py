"""The bad-submission corpus: each submission below tries to get points it has not earned, or
breaks in a way that must not take the grader down. Each must fail with a message that
names the problem, while the reference passes (see test_broken_kernels.py for the faults a
student makes by accident: masks, grid, max subtraction, fp16 accumulator, causal mask).

GPU-only members of the corpus (a patched CUDA timer, a kernel that faults on the GPU, the
memory growth of flash attention) run on the H200 through scripts/device-check.sh.
"""

from pathlib import Path

import pytest
from conftest import RELAXED_RULES, failing, failure_text, vector_add_course

from grader.results import Failure, Status

ROOT = Path(__file__).resolve().parents[1]
VECTOR_ADD = (ROOT / "solutions/triton/stage1_vector_add.py").read_text()
MATMUL = (ROOT / "solutions/triton/stage4_matmul.py").read_text()

# Without the static check's lists (grader/sandbox/screening.py): what is tested here is the wall
# behind that speed bump.
ONE_CASE = vector_add_course('[ { n = 1000, dtypes = ["float32"] }, { n = 5, dtypes = ["float32"] } ]',
                             rules=RELAXED_RULES)


def wrapped(body: str) -> str:
    """The reference vector_add with `body` run first inside the host function."""
    marker = "    out = torch.empty_like(x)\n"
    assert marker in VECTOR_ADD
    return VECTOR_ADD.replace(marker, body + marker)


@pytest.fixture
def grade_small(grade_source):
    """Grade a vector_add submission on a two-case course, with a short time limit."""
    return lambda source, timeout=120.0, **options: grade_source(
        "vector_add", source, course_toml=ONE_CASE, timeout=timeout, **options)


def test_the_reference_passes_on_the_small_course(grade_small):
    assert grade_small(VECTOR_ADD).status is Status.PASS


def test_a_torch_fallback_without_a_kernel_fails(grade_source):
    source = VECTOR_ADD.replace("    out = torch.empty_like(x)\n", "    return x + y\n", 1)
    result = grade_source("vector_add", source)
    assert result.status is Status.FAIL and result.cases_passed == 0 and result.cases
    assert all("launched no Triton kernel" in c.summary for c in result.cases)


def test_a_kernel_launch_as_cover_for_a_torch_result_fails(grade_source):
    source = MATMUL.replace("    return c\n", "    return torch.matmul(a, b)\n")
    result = grade_source("matmul", source)
    assert result.status is Status.FAIL and result.cases_passed == 0 and result.cases
    # what the host watch saw in the child, quoted under the grader's sentence
    assert all(c.summary == "its wrapper worked on the host, as the host watch saw it:"
               for c in result.cases)
    assert all(c.details[0].startswith("┆ it called torch.matmul on the host")
               for c in result.cases)


def test_a_result_cache_launches_nothing_the_second_time(grade_small):
    # The first call is recorded with its launches and replayed honestly; the second,
    # answered from the cache, proposes no launch: nothing of the first call carries over.
    source = wrapped(
        "    global _cache\n"
        "    _cache = globals().get('_cache') or []\n"
        "    if _cache:\n"
        "        return _cache[0]\n"
    ).replace("    return out\n", "    _cache.append(out)\n    return out\n")
    result = grade_small(source)
    assert result.status is Status.FAIL and result.cases_passed == 1
    assert "launched no Triton kernel" in failure_text(result, details=False)


def test_a_kernel_that_writes_its_inputs_fails(grade_small):
    source = VECTOR_ADD.replace("    tl.store(out_ptr + offsets, x + y, mask=mask)\n",
                                "    tl.store(out_ptr + offsets, x + y, mask=mask)\n"
                                "    tl.store(x_ptr + offsets, y, mask=mask)\n")
    assert source != VECTOR_ADD
    result = grade_small(source)
    assert result.status is Status.FAIL
    # the replay saw the store into `x`, at its line (its watch's words, quoted)
    case = failing(result)[0]
    assert case.summary == "modified its input, as the watch of its loads and stores saw:"
    assert case.details[0].startswith("┆ line ") and "stores into the input `x`" in case.details[0]


def test_an_endless_loop_times_out_and_grading_goes_on(grade_small):
    """With --keep-going, a fresh process grades the next case; without, it is not run."""
    source = wrapped("    if x.numel() == 1000:\n        while True:\n            pass\n")
    result = grade_small(source, timeout=2, keep_going=True)
    (looping, other) = result.cases
    assert not looping.passed and looping.summary.startswith("timed out after 2 s")
    assert other.passed, other.summary  # a fresh process graded the next case
    (looping, other) = grade_small(source, timeout=2).cases
    assert looping.failure is Failure.TIMED_OUT and other.failure is Failure.NOT_RUN


def test_a_crash_fails_the_case_and_grading_goes_on(grade_small):
    source = wrapped("    if x.numel() == 1000:\n        import os, signal\n"
                     "        os.kill(os.getpid(), signal.SIGSEGV)\n")
    result = grade_small(source)
    (crashed, other) = result.cases
    assert not crashed.passed
    assert crashed.summary == "crashed: the process running it died (signal SIGSEGV)"
    assert other.passed, other.summary


def test_patching_the_checks_changes_nothing(grade_small):
    source = (
        "import torch, pytest\n"
        "torch.allclose = lambda *a, **k: True\n"
        "torch.equal = lambda *a, **k: True\n"
        "import grader.judge.compare\n"
        "grader.judge.compare.compare = lambda *a, **k: None\n"
        + VECTOR_ADD.replace("x + y, mask=mask)", "x - y, mask=mask)")
    )
    result = grade_small(source)
    assert result.status is Status.FAIL and result.cases_passed == 0
    assert "elements mismatch" in failure_text(result, details=False)


def test_printing_fake_results_changes_nothing(grade_small, capfd):
    source = wrapped("    print('PASS  10/10  100/100  all cases passed')\n"
                     "    print('1 passed, 0 failed')\n").replace("x + y, mask=mask)", "x * y, mask=mask)")
    result = grade_small(source)
    assert result.status is Status.FAIL and result.points == 0
    assert "all cases passed" in result.output  # it did print: into its own output
    assert "all cases passed" not in capfd.readouterr().out  # not into the grader's


def test_importing_the_reference_solution_finds_nothing(grade_source, course):
    """The solutions are not in the submission's view of the file system (see
    test_sandbox.py for every other route to them)."""
    solution = course.module_path(course.select("vector_add"), "triton", solutions=True)
    source = (
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('ref', {str(solution)!r})\n"
        "ref = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(ref)\n"
        "vector_add = ref.vector_add\n"
    )
    result = grade_source("vector_add", source, course_toml=ONE_CASE)
    assert result.status is Status.ERROR
    assert "FileNotFoundError" in result.message and str(solution) in result.message
