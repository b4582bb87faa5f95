"""Broken kernels fail, each with a diagnostic that points at its fault.

Each broken kernel is a reference solution with one fault put in by a text substitution;
the substitution must still apply, so these tests fail loudly if a solution is rewritten.
"""

import re

from conftest import broken, case_text, failing, without_shortcuts

from grader.results import Failure, Status


def hint(result) -> str:
    """The one hint printed under a stage's failures, up to its first colon."""
    assert len(result.hints) == 1, result.hints
    return result.hints[0].split(":")[0]


def test_missing_tail_mask_is_caught_as_an_out_of_bounds_store(grade_source):
    source = broken("triton", "stage1_vector_add.py", "mask = offsets < n_elements", "mask = None")
    result = grade_source("vector_add", source)
    assert hint(result) == "The last block reaches past the end of the vector"
    assert result.status is Status.FAIL
    # Every case with a tail fails (the case of whole tiles, n = 2^16, needs no mask).
    tails = [c for c in result.cases if c.params["n"] % 1024]
    assert failing(result) == tails and len(tails) == len(result.cases) - 1
    for case in tails:
        # The replay saw the first unmasked access leave its tensor, at its line.
        # Its loads of x and y and its store all pass the end: the summary says both.
        assert case.summary == ("read and wrote outside a tensor, as the watch of its loads and "
                                "stores saw:")
        seen = case.details[0]  # the watch's finding, quoted
        assert seen.startswith("┆ line ")
        assert "past the end of `x`" in seen and "it needs a mask (and `other=`)" in seen
        assert case.failure is Failure.OUT_OF_BOUNDS


def test_loads_without_their_mask_read_out_of_bounds_and_get_the_stage_s_hint(grade_source):
    """The store keeps its mask: the kind says the kernel read past the end, not that it
    wrote there, and the stage's hint for either still shows."""
    source = broken("triton", "stage1_vector_add.py", "x = tl.load(x_ptr + offsets, mask=mask)",
                    "x = tl.load(x_ptr + offsets)")
    result = grade_source("vector_add", source)
    assert hint(result) == "The last block reaches past the end of the vector"
    tails = [c for c in result.cases if c.params["n"] % 1024]
    assert failing(result) == tails
    assert all(c.failure is Failure.READ_OUT_OF_BOUNDS for c in tails)
    assert all(c.summary.startswith("read outside a tensor") for c in tails)


def test_grid_rounded_down_leaves_the_tail_never_written(grade_source):
    source = broken("triton", "stage1_vector_add.py", "triton.cdiv(n_elements, BLOCK_SIZE)",
                    "n_elements // BLOCK_SIZE")
    result = grade_source("vector_add", source)
    assert hint(result) == "The last elements were never written"
    # every case with a tail: rounded down, a grid of whole tiles is whole
    assert result.status is Status.FAIL
    assert failing(result) == [c for c in result.cases if c.params["n"] % 1024]
    case = next(c for c in result.cases if c.params["n"] == 4097 and c.dtype == "float32")
    assert case.stats["never_written"] == 1 and case.stats["mismatched"] == 1
    report = case_text(case)
    assert "1 element was never written (first at [4096])" in report
    assert "no store reached them; the grid or a store mask does not cover them" in report
    assert "tile (4,): out[4096:4097], 1 bad (the last tile along dim 0)" in report
    assert "BLOCK_SIZE=1024 per tile" in report


def test_softmax_without_max_subtraction_overflows_on_large_inputs(grade_source):
    source = broken("triton", "stage3_softmax.py", "m_new = tl.maximum(m_i, tl.max(x, axis=0))",
                    "m_new = tl.full((), 0.0, dtype=tl.float32)")
    source = without_shortcuts("triton", "stage3_softmax.py", source)
    result = grade_source("softmax", source)
    assert hint(result) == "NaN only for large inputs"
    assert result.status is Status.FAIL
    bad = failing(result)
    # Unit-scale inputs still pass; every large-magnitude case fails with NaN (the falling
    # rows reach 120 too).
    assert bad and all(c.params["scale"] == 100.0 or c.params["rows"] == "falling_max"
                       for c in bad)
    for case in bad:
        assert case.stats["nan"] > 0
        assert "NaN where a number was expected" in case_text(case)
        assert f"1 x {case.params['N']} per tile" in case_text(case)


def test_fp16_accumulator_fails_the_long_reduction(grade_source):
    source = broken("triton", "stage4_matmul.py", 'acc = tl.dot(a, b, acc, input_precision="tf32")',
                    "acc = (acc.to(tl.float16) + tl.dot(a, b, out_dtype=tl.float16)).to(tl.float32)")
    source = without_shortcuts("triton", "stage4_matmul.py", source)
    result = grade_source("matmul", source)
    # The accumulator, not the loop over K, though the failing case has a long K too.
    assert hint(result) == "Only half-precision cases with a long K fail, and the error grows with K"
    assert result.status is Status.FAIL
    bad = failing(result)
    assert all(c.dtype == "float16" for c in bad)
    case = next(c for c in bad if c.params["K"] == 4096)
    assert case.stats["max_abs_error"] > 0.1 and case.stats["nan"] == 0
    assert "max abs error" in case_text(case) and "max rel error" in case_text(case)


def test_missing_causal_mask_fails_exactly_the_causal_cases(grade_source):
    source = broken("triton", "stage5_flash_attention.py",
                    "visible = visible & (offs_n[None, :] <= offs_m[:, None])", "visible = visible")
    result = grade_source("flash_attention", source)
    assert hint(result) == "Only causal cases fail"
    assert result.status is Status.FAIL
    bad = failing(result)
    # N = 1 has nothing to mask; every other causal case must fail, no other case may.
    expected = [c.id for c in result.cases if c.params["causal"] and c.params["N"] > 1]
    assert [c.id for c in bad] == expected and expected
    for case in bad:
        assert case.stats["mismatched"] > case.stats["total"] // 2
        assert "BLOCK_M=" in case_text(case)



def test_a_load_past_the_end_of_an_input_is_named_with_its_fix(grade_source):
    """The two-pass softmax kernel without its load mask: the replay watches the load reach
    past the end of x and fails the case at that line, with the fix, whatever the output."""
    source = broken("triton", "stage3_softmax.py",
                    'x = tl.load(x_row + cols * stride_xn, mask=cols < n_cols, other=-float("inf"))',
                    "x = tl.load(x_row + cols * stride_xn)")
    result = grade_source("softmax", without_shortcuts("triton", "stage3_softmax.py", source))
    assert result.status is Status.FAIL
    # Its store keeps its mask: the kind says it read out of bounds, not that it wrote there.
    bad = [c for c in failing(result) if c.failure is Failure.READ_OUT_OF_BOUNDS]
    assert bad and not [c for c in failing(result) if c.failure is Failure.OUT_OF_BOUNDS]
    for case in bad:
        assert case.summary.startswith("read outside a tensor, as the watch")
        assert "(`x = tl.load(x_row + cols * stride_xn)`): reads" in case_text(case)
        assert "past the end of `x`" in case_text(case)
        assert "no lane of this load was switched off: it needs a mask (and `other=`)" in \
            case_text(case)


def test_masked_lanes_without_other_read_as_nan_and_are_named_at_their_line(grade_source):
    """Triton leaves the lanes a mask switches off undefined without other= (the interpreter
    gives 0, as today's GPUs happen to): the grader reads them as NaN, so the softmax whose
    padding lanes reach the row's max fails, told at the load's line."""
    source = broken("triton", "stage3_softmax.py",
                    'x = tl.load(x_row + cols * stride_xn, mask=cols < n_cols, other=-float("inf"))',
                    "x = tl.load(x_row + cols * stride_xn, mask=cols < n_cols)")
    result = grade_source("softmax", without_shortcuts("triton", "stage3_softmax.py", source))
    assert result.status is Status.FAIL
    for case in failing(result):
        text = case_text(case)
        assert "a load with a mask and no other= read NaN into the lanes" in text
        assert "(`x = tl.load(x_row + cols * stride_xn, mask=cols < n_cols)`): a load with a " \
               "mask and no other=" in text


def test_undetermined_padding_in_cutile_is_named_with_its_fix(grade_source):
    source = broken("cutile", "stage3_softmax.py",
                    "xt = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)",
                    "xt = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.UNDETERMINED)")
    result = grade_source("softmax", source, backend="cutile-sim")
    bad = [c for c in failing(result) if c.stats.get("nan")]
    assert result.status is Status.FAIL and bad
    for case in bad:
        text = case_text(case)
        assert "with padding_mode UNDETERMINED, the default" in text, text
        assert "say what they read as with padding_mode" in text


def test_an_error_inside_a_kernel_points_at_the_kernel_line(grade_source):
    """A shape error on a kernel line (not at the launch in the wrapper): the report names
    that line and shows it, with the error of the operation, not the interpreter's wrapper."""
    line = "x = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)"
    source = broken("triton", "stage2_fused_gelu.py", line, line + "\n    x = tl.reshape(x, (3, 7))")
    number = source.splitlines().index("    x = tl.reshape(x, (3, 7))") + 1
    result = grade_source("fused_gelu", source)
    assert result.status is Status.FAIL
    for case in result.cases:
        # the grader's sentence, then the error at the line, quoted from the replay
        assert case.summary.endswith(":") and case.details[0].startswith("┆ "), case_text(case)
        assert f"line {number}: x = tl.reshape(x, (3, 7)))" in case.details[0], case.details
        assert "InterpreterError" not in case_text(case)


KERNEL_FILE = """\
import triton
import triton.language as tl


@triton.jit
def kern(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.dot(x, x)
    tl.store(x_ptr + offs, y, mask=offs < n)


def run(x):
    kern[(1,)](x, x.numel(), BLOCK=128)
"""


class CompilationError(Exception):
    """What Triton's compiler raises (on a GPU, or in the compile check): the kernel's
    source from its `def`, and the AST node that failed, numbered from there."""

    def __init__(self, src, lineno):
        super().__init__(f"at {lineno}:8:\n... input and other must have equal ranks >= 2")
        self.src, self.node = src, type("Node", (), {"lineno": lineno})()


def test_a_compile_error_points_at_the_kernel_line_not_the_launch(tmp_path):
    """On a GPU a compile error is raised from the launch line in the wrapper; the report
    names the kernel line that the compiler rejected, found in the student's file."""
    from grader.replay.locate import describe

    path = tmp_path / "stage.py"
    path.write_text(KERNEL_FILE)
    kernel_src = KERNEL_FILE[KERNEL_FILE.index("def kern"):KERNEL_FILE.index("\n\n\ndef run")]
    try:
        try:
            # A frame at line 15 of the student's file, where the wrapper would launch.
            exec(compile("\n" * 14 + "raise_it()", str(path), "exec"),  # noqa: S102
                 {"raise_it": lambda: (_ for _ in ()).throw(CompilationError(kernel_src, 4))})
        except CompilationError as exc:
            raise RuntimeError("launch failed") from exc
    except RuntimeError as exc:
        text = describe(exc, path)
    assert "(at stage.py, line 9: y = tl.dot(x, x))" in text  # not the launch, line 15
    # A kernel source the file does not hold (edited since) points at no kernel line.
    other = CompilationError(kernel_src.replace("tl.dot(x, x)", "tl.dot(x, y)"), 4)
    assert "line 9" not in describe(other, path)


def test_a_single_step_over_k_gets_the_loop_hint(grade_source):
    source = broken("triton", "stage4_matmul.py", "for k0 in range(0, K, BLOCK_K):",
                    "for k0 in range(0, min(K, BLOCK_K), BLOCK_K):")
    result = grade_source("matmul", without_shortcuts("triton", "stage4_matmul.py", source))
    assert result.status is Status.FAIL
    assert hint(result) == "Every case with K above one element fails"


def test_no_hint_when_the_failures_share_no_signature(grade_source):
    """Wrong everywhere (bias left out): no common mistake fits, so no hint is guessed."""
    source = broken("triton", "stage2_fused_gelu.py", "z = x * w[None, :] + b[None, :]", "z = x * w[None, :]")
    result = grade_source("fused_gelu", source)
    assert result.status is Status.FAIL and result.hints == []


def test_hints_name_causes_not_code(course):
    """Course content: a hint says what is wrong and where to look, not the line to type."""
    for stage in course.stages:
        assert stage.hints, stage.id
        for h in stage.hints:
            assert not re.search(r"\b(tl|ct|torch)\.\w+\(|=\s*\w+\(", h.hint), (stage.id, h.hint)


def test_a_load_whose_mask_lets_lanes_past_the_end_is_not_told_to_get_a_mask(grade_source):
    """A load with a mask that is one lane too loose has a mask: the finding says so, and
    does not ask for one."""
    source = broken("triton", "stage1_vector_add.py", "mask = offsets < n_elements",
                    "mask = offsets <= n_elements")
    result = grade_source("vector_add", source)
    # Where n is one short of a whole number of tiles, `offsets <= n` switches no lane off at
    # all: the watch sees what it would see of no mask, and says what a missing mask needs.
    bad = [c for c in failing(result) if c.failure is Failure.OUT_OF_BOUNDS
           and c.params["n"] % 1024 != 1023]
    assert bad
    for case in bad:
        assert "this line has a mask" in case_text(case)
        assert "no lane of this load was switched off" not in case_text(case)
