"""The diagnostics a student sees for a wrong output."""

import torch

from conftest import ROOT

from grader.course import Tolerance, load_course
from grader.judge.compare import Expected, compare
from grader.replay.execute import LaunchRecord as Launch
from grader.replay.poison import PoisonFreshAllocations, never_written
from grader.sandbox.outcomes import Outcome
from grader.tracks import TRACKS

TOL = Tolerance(atol=1e-3, rtol=1e-3)


def judge(out, ref, tiles=None, launches=(), dtype=None, track=None):
    return compare(Outcome(output=out, launches=list(launches)),
                   Expected(ref, dtype or out.dtype, "cpu", TOL, TRACKS.get(track), tiles))


def test_a_match_passes():
    ref = torch.randn(10)
    verdict = judge(ref.clone(), ref)
    assert verdict.passed and verdict.stats["mismatched"] == 0


def test_errors_are_counted_and_located():
    ref = torch.zeros(4, 8)
    out = ref.clone()
    out[1, 2] = 0.5
    out[3, 7] = -2.0
    verdict = judge(out, ref)
    assert not verdict.passed
    assert verdict.summary.startswith("2 of 32 elements mismatch")
    assert verdict.stats["max_abs_error"] == 2.0
    assert "out[1, 2]: got 0.5, expected 0" in verdict.report
    assert "out[3, 7]: got -2, expected 0" in verdict.report


def _attention(q, k, v, scores_dtype=None):
    """Attention over the keys in float32, its scores made from q and k in `scores_dtype`
    first (fp8: what a kernel on the fp8 tensor cores computes), its output rounded to q's
    dtype with the probabilities rounded to it on the way, as a flash kernel does."""
    qs, ks = (t.to(scores_dtype or t.dtype).float() for t in (q, k))
    scores = qs @ ks.transpose(-1, -2) / q.shape[-1] ** 0.5
    p = torch.exp(scores - scores.amax(-1, keepdim=True))
    return ((p.to(q.dtype).float() @ v.float()) / p.sum(-1, keepdim=True)).to(q.dtype)


def test_an_output_less_precise_than_its_dtype_fails_though_every_element_is_within():
    """Attention over 4096 keys: its elements are about as small as bfloat16's atol (0.02),
    so an output computed with fp8 scores has every element within the tolerance; as a whole
    its error is several percent of the output, the honest kernel's a fraction of one."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 4096, 128).to(torch.bfloat16) for _ in range(3))
    ref = _attention(q.float(), k.float(), v.float())
    bf16 = Tolerance(atol=2e-2, rtol=2e-2)

    def verdict(out):
        return compare(Outcome(output=out), Expected(ref, torch.bfloat16, "cpu", bf16))

    honest = verdict(_attention(q, k, v))
    assert honest.passed and honest.stats["rms_rel_error"] < 0.005
    fp8 = verdict(_attention(q, k, v, torch.float8_e4m3fn))
    assert not fp8.passed and fp8.stats["mismatched"] == 0
    assert fp8.summary.startswith("every element is within the tolerance, but the error over "
                                  "the whole output is 0.0")
    assert "more than the rtol=0.02 the stage allows" in fp8.summary
    assert fp8.stats["rms_rel_error"] > 0.03


def test_a_few_elements_near_zero_are_held_to_atol_not_to_rtol_of_their_size():
    """GELU at z = -3.6 is -5.9e-4, and PyTorch's float32 reference is 7.9e-5 of itself off
    there: a one-element output within atol passes, though its error is more than rtol of
    its size; so does an output whose reference is all zeros."""
    gelu = Tolerance(atol=1e-5, rtol=1e-5)
    ref = torch.tensor([-5.9e-4])

    def verdict(out, want):
        return compare(Outcome(output=out), Expected(want, torch.float32, "cpu", gelu))

    near = verdict(ref * (1 + 7.9e-5), ref)
    assert near.passed and near.stats["rms_rel_error"] > gelu.rtol
    assert verdict(torch.full((4,), 5e-6), torch.zeros(4)).passed


def test_nan_never_matches_even_a_nan_reference():
    ref = torch.tensor([1.0, float("nan")])
    out = torch.tensor([float("nan"), float("nan")])
    verdict = judge(out, ref)
    assert verdict.stats["mismatched"] == 2
    assert "1 element is NaN where a number was expected" in verdict.report


def test_inf_is_reported():
    verdict = judge(torch.tensor([float("inf"), 1.0]), torch.tensor([1.0, 1.0]))
    assert "1 element is Inf" in verdict.report


def test_poison_marks_elements_never_written():
    with PoisonFreshAllocations():
        out = torch.empty(6, dtype=torch.float16)
        out[:4] = 1.0
    mask = never_written(out)
    assert mask.tolist() == [False] * 4 + [True] * 2
    # A NaN the kernel computed is not mistaken for an unwritten element.
    assert not never_written(torch.full((2,), float("nan"), dtype=torch.float16)).any()
    verdict = judge(out, torch.ones(6))
    assert "2 elements were never written (first at [4])" in verdict.report
    assert "out[4]: never written, expected 1" in verdict.report


def test_poison_covers_every_graded_dtype():
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        with PoisonFreshAllocations():
            fresh = [torch.empty(3, dtype=dtype), torch.empty_like(torch.ones(3, dtype=dtype)),
                     torch.ones(3, dtype=dtype).new_empty(3)]
        for t in fresh:
            assert torch.isnan(t).all() and never_written(t).all(), dtype


def test_tiles_come_from_the_launch_constants():
    ref = torch.zeros(8, 8)
    out = ref.clone()
    out[6, 5] = 1.0
    out[7, 7] = 1.0
    launch = Launch("k", (2, 2), {"BLOCK_M": 4, "BLOCK_N": 4}, language="triton")
    verdict = judge(out, ref, tiles=("BLOCK_M", "BLOCK_N"), launches=[launch])
    assert "bad elements lie in 1 of 4 tiles (BLOCK_M=4 x BLOCK_N=4 per tile)" in verdict.report
    assert "tile (1, 1): out[4:8, 4:8], 2 bad (the last tile along dim 0, 1)" in verdict.report


def test_a_tile_constant_past_int64_groups_as_one_tile():
    """A kernel may take any integer its language does (Triton: up to 2**64 - 1) under the
    name course.toml gives the tile: the report groups by it rather than failing (the stage
    showed as the grader's own error, its checks unable to run)."""
    ref = torch.zeros(10)
    verdict = judge(ref + 1, ref, tiles=("BLOCK_SIZE",),
                    launches=[Launch("k", (1,), {"BLOCK_SIZE": 2**63 + 1}, language="triton")])
    assert "10 of 10 elements mismatch" in verdict.summary
    assert f"bad elements lie in 1 of 1 tiles (BLOCK_SIZE={2**63 + 1} per tile)" in verdict.report
    # The picture groups by it too, rather than padding the output to it (exabytes) or
    # looking for its divisors one by one (a hang).
    assert verdict.picture is not None and "the output by tile" in verdict.report


def test_whole_dimension_and_single_index_tiles():
    ref = torch.zeros(3, 10)
    out = ref.clone()
    out[1, 9] = 1.0
    verdict = judge(out, ref, tiles=(1, "*"))
    assert "tile (1, 0): out[1, :], 1 bad" in verdict.report


def test_missing_launch_constant_is_said_not_guessed():
    ref = torch.zeros(4)
    verdict = judge(ref + 1, ref, tiles=("BLOCK_SIZE",),
                    launches=[Launch("k", (1,), {"BLOCK": 4}, language="triton")])
    assert "tiles not shown: no kernel launch passed BLOCK_SIZE" in verdict.report


def test_wrong_type_shape_dtype_device():
    ref = torch.zeros(4)
    assert judge([0.0] * 4, ref, dtype=torch.float32).summary == "returned list, expected a torch.Tensor"
    assert "returned shape (5,), expected (4,)" in judge(torch.zeros(5), ref).summary
    verdict = compare(Outcome(output=torch.zeros(4)), Expected(ref, torch.float16, "cpu", TOL))
    assert verdict.summary == "returned dtype float32, expected float16 (the input dtype)"
    assert "expected it on cuda" in compare(Outcome(output=torch.zeros(4)),
                                            Expected(ref, torch.float32, "cuda", TOL)).summary


def test_an_output_no_store_reached_says_so_and_errors_count_only_finite_elements():
    with PoisonFreshAllocations():
        nothing = torch.empty(8)
        half = torch.empty(8)
        half[:4] = 1.0
    report = judge(nothing, torch.ones(8)).report
    assert "no store reached any element: a missing store" in report
    report = judge(half, torch.ones(8)).report
    # "max abs error 0" must not stand next to four unwritten elements unqualified.
    assert "max abs error 0, max rel error 0 (over the 4 of 8 elements where both are finite)" in report
    assert "4 elements were never written (first at [4]): no store reached them" in report


def test_nan_made_from_the_poison_names_the_load_past_the_end():
    """A value computed from a guard element (quieted poison, as a CPU leaves it) is a load
    past the end of an input; the fix named is in the graded track's words."""
    with PoisonFreshAllocations():
        guard = torch.empty(4)
    computed = guard * 2 + 1  # arithmetic on the poison keeps its payload on a CPU
    assert torch.isnan(computed).all() and not never_written(computed).any()
    out = torch.cat([torch.ones(4), computed])
    triton = judge(out, torch.ones(8), launches=[Launch("k", (1,), language="triton")],
                   track="triton").report
    assert "4 elements are NaN computed from the grader's poison: a load read past the end" in triton
    assert "`mask=` and `other=`" in triton
    cutile = judge(out, torch.ones(8), launches=[Launch("k", (1,), language="cutile")],
                   track="cutile").report
    assert "padding_mode=ct.PaddingMode.ZERO" in cutile
    other = judge(torch.full((4,), float("nan")), torch.ones(4)).report
    assert "NaN where a number was expected: from a load past the end of an input" in other
    assert "or from an overflow" in other


def test_one_factor_on_every_element_is_said_as_observed():
    """A missing constant (sm_scale, log2(e)) scales every element alike: said as what was
    seen, its value named, and no cause guessed."""
    want = torch.linspace(1, 2, 64)
    report = judge(want * 1.4427, want).report
    assert "how the values are wrong: every element is 1.443 (log2(e)) x the expected one" \
        in report
    assert "cause:" not in report and "sm_scale" not in report
    noisy = judge(want + torch.rand(64, generator=torch.Generator().manual_seed(0)), want).report
    assert "how the values are wrong" not in noisy


def test_softmax_rows_that_do_not_sum_to_one_are_observed_not_explained():
    from grader.judge import experiments
    from grader.problems import PROBLEMS
    from grader.problems.evidence import Evidence

    problem = PROBLEMS["softmax"]
    hypotheses = next(s for s in load_course(ROOT / "course.toml").stages
                      if s.problem is problem).hypotheses
    want = torch.softmax(torch.randn(4, 8, generator=torch.Generator().manual_seed(0)), -1)
    got = want.clone()
    got[2] *= 0.5  # one row off: no factor per row confirmed, so no cause is named
    report = compare(Outcome(output=got), Expected(want, torch.float32, "cpu", TOL,
                                                   explain=problem.explain,
                                                   hypotheses=hypotheses,
                                                   experiments=problem.experiments))
    assert "1 of 4 rows do not sum to 1 (row 2 sums to 0.5)" in report.report
    assert report.stats["causes"] == []
    scaled = want * torch.tensor([[2.0], [3.0], [0.5], [4.0]])  # every row by its own factor
    found = experiments.confirmed(Evidence(scaled, want, atol=TOL.atol, rtol=TOL.rtol),
                                  hypotheses, problem.experiments, None)
    assert [c.key for c in found] == ["row_normalisation"]
    assert "(median 2)" in found[0].text  # the course's words, the factor found filled in
    assert "each row's ratio is one constant" in found[0].experiment
    # A named cause's sentence is kept in the stats, as the details print it.
    named = compare(Outcome(output=scaled),
                    Expected(want, torch.float32, "cpu", TOL, explain=problem.explain,
                             hypotheses=hypotheses, experiments=problem.experiments))
    assert named.stats["causes"] == ["row_normalisation"]
    assert named.stats["cause_texts"] == {"row_normalisation": found[0].text}
    assert f"cause: {found[0].text}" in named.report
    assert all(not c.key for c in problem.explain(Evidence(want, want)))


def test_a_large_output_is_judged_on_the_gpu_first_and_explained_on_the_cpu_when_wrong():
    """grader.judge.stage.passed_on_gpu: on a GPU a large output is judged beside its
    reference there; only a pass is taken from it, a failure is judged again on the CPU
    with every explanation. ("cpu:0" stands in for the GPU here: a device that is not the
    plain CPU backend's.)"""
    from grader.judge.stage import GPU_JUDGED_MIN, passed_on_gpu

    ref = torch.randn(GPU_JUDGED_MIN)
    expected = Expected(ref, ref.dtype, "cpu", TOL, explain=lambda *a: ["never asked"])
    verdict = passed_on_gpu(Outcome(output=ref.clone()), expected, "cpu:0")
    assert verdict.passed and verdict.stats["total"] == GPU_JUDGED_MIN
    wrong = ref.clone()
    wrong[7] += 1.0
    assert passed_on_gpu(Outcome(output=wrong), expected, "cpu:0") is None
    assert passed_on_gpu(Outcome(output=ref.clone()), expected, "cpu") is None  # no GPU
    small = torch.randn(10)
    assert passed_on_gpu(Outcome(output=small), Expected(small, small.dtype, "cpu", TOL),
                         "cpu:0") is None
