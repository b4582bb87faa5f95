"""Causes confirmed by experiment (grader.judge.experiments, grader.judge.causes): a cause is
named only when its experiments hold, and it carries what confirmed it."""

import torch

from grader.course import Hypothesis
from grader.judge import causes, experiments
from grader.problems import PROBLEMS, Call
from grader.problems.evidence import RECOMPUTED, Evidence


def evidence(got, want, call=None, traffic=()) -> Evidence:
    return Evidence(got, want, call, torch.float32, 1e-5, 1e-5, {}, list(traffic))


WANT = torch.arange(1.0, 9.0)
TWICE = Hypothesis("twice", "doubled", experiment="double", probe={"K": 1})
RECOMPUTES = {"double": lambda ev: 2 * ev.want}


def test_a_hypothesis_is_named_when_its_recompute_and_its_probe_hold():
    asked = []

    def probe(changes):
        asked.append(changes)
        return "K = 1, float32"

    found = experiments.confirmed(evidence(2 * WANT, WANT), [TWICE], RECOMPUTES, probe)
    assert [c.key for c in found] == ["twice"] and found[0].text == "doubled"
    assert RECOMPUTED in found[0].experiment
    assert "with K = 1 (K = 1, float32) is right" in found[0].experiment
    assert asked == [{"K": 1}]


def test_parameters_are_worded_one_way_leaving_out_those_left_unset():
    assert experiments.shown({"K": 1, "layout": "contiguous"}) == "K = 1, layout = contiguous"
    assert experiments.shown({"N": 64, "causal": False, "sm_scale": None}) == \
        "N = 64, causal = false"


def test_a_hypothesis_is_not_named_when_its_probe_fails_or_does_not_run():
    for probe in (lambda changes: None, None):
        assert experiments.confirmed(evidence(2 * WANT, WANT), [TWICE], RECOMPUTES, probe) == []


def test_no_probe_is_run_for_an_output_the_recompute_does_not_match():
    asked = []
    found = experiments.confirmed(evidence(3 * WANT, WANT), [TWICE], RECOMPUTES,
                                  lambda changes: asked.append(changes) or "ran")
    assert found == [] and asked == []


def test_a_hypothesis_whose_recompute_does_not_apply_is_not_named():
    hypothesis = Hypothesis("none", "never", experiment="nothing")
    assert experiments.confirmed(evidence(2 * WANT, WANT), [hypothesis],
                                 {"nothing": lambda ev: None}, None) == []


def test_every_experiment_the_course_names_is_one_its_problem_defines(course):
    for stage in course.stages:
        for hypothesis in stage.hypotheses:
            assert hypothesis.experiment is None or \
                hypothesis.experiment in stage.problem.experiments, (stage.id, hypothesis)
            assert hypothesis.experiment or hypothesis.probe, (stage.id, hypothesis)


def test_matmul_recomputes_tell_the_accumulator_added_twice_from_the_last_tile():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(4, 70, generator=gen), torch.randn(70, 3, generator=gen)
    want = a @ b
    twice = torch.zeros(4, 3)
    for start in range(0, 70, 32):
        twice = 2 * twice + a[:, start:start + 32] @ b[start:start + 32]
    ev = Evidence(twice, want, Call((a, b)), torch.float32, 1e-4, 1e-4, {"BLOCK_K": 32})
    recomputes = PROBLEMS["matmul"].experiments
    assert ev.matches(recomputes["accumulator_added_twice"](ev))
    assert not ev.matches(recomputes["last_k_tile_only"](ev))
    one_tile = Evidence(want, want, Call((a[:, :32], b[:32])), torch.float32, 1e-4, 1e-4,
                        {"BLOCK_K": 32})
    assert recomputes["accumulator_added_twice"](one_tile) is None  # nothing to tell it by


def test_a_short_prefix_is_a_short_grid_only_where_the_grid_is_short():
    written = torch.zeros(10, dtype=torch.bool)
    written[:4] = True
    ev = evidence(torch.zeros(10), torch.ones(10))
    short = causes.from_traffic(ev, written, 2, [(2,)])
    assert [c.key for c in short] == ["grid_short"] and short[0].experiment
    # five programs of 2 cover the ten elements: they overlap, the grid is not short
    overlapping = causes.from_traffic(ev, written, 2, [(5,)])
    assert [c.key for c in overlapping] == [""] and "observed" in overlapping[0].text
    # where the watch saw programs store the same elements, that is the cause it confirms
    seen = evidence(torch.zeros(10), torch.ones(10),
                    traffic=[{"kind": "overlap", "text": "stored by more than one program"}])
    assert [c.key for c in causes.from_traffic(seen, written, 2, [(5,)])] == ["programs_overlap"]


def test_a_short_prefix_without_a_grid_is_observed_without_a_count():
    written = torch.zeros(10, dtype=torch.bool)
    written[:4] = True
    ev = evidence(torch.zeros(10), torch.ones(10))
    (seen,) = causes.from_traffic(ev, written, 2)  # no launch's grid was read
    assert seen.key == "" and seen.text == ("observed (no single cause confirmed): the "
                                            "programs wrote the first 4 elements, whole "
                                            "blocks of 2, and nothing after")
    overlap = evidence(torch.zeros(10), torch.ones(10),
                       traffic=[{"kind": "overlap", "text": "stored by more than one program"}])
    (cause,) = causes.from_traffic(overlap, written, 2)  # the watch confirms it, grid or not
    assert cause.key == "programs_overlap" and "None" not in cause.text
    assert "the first 4 elements and nothing after: several programs" in cause.text


def test_inputs_never_read_at_all_name_no_pointer():
    x, y = torch.ones(4), torch.ones(4)
    never = [{"kind": "never_read", "text": f"4 of the 4 elements of `{n}` were never read"}
             for n in "xy"]
    ev = evidence(torch.zeros(4), torch.ones(4), Call((x, y)), never)
    found = causes.from_traffic(ev, None, None)
    assert [c.key for c in found] == [""] and "no load ran" in found[0].text
    one = causes.from_traffic(evidence(torch.zeros(4), torch.ones(4), Call((x, y)), never[:1]),
                              None, None)
    assert [c.key for c in one] == ["input_not_read"] and "check which pointer" in one[0].text


def _stepped_in_elements(flat_a, a, flat_b, b, tile, shifted):
    """C as a Triton kernel computes it, read element by element from the inputs' memory,
    whose pointers into the inputs named in `shifted` step `tile` elements along K, not
    `tile` times their stride along K; lanes past K masked."""
    (m, k), n = a.shape, b.shape[1]
    out = torch.zeros(m, n, dtype=torch.float64)
    for start in range(0, k, tile):
        for lane in range(min(tile, k - start)):
            step_a = start if "A" in shifted else start * a.stride(1)
            step_b = start if "B" in shifted else start * b.stride(0)
            column = flat_a[a.storage_offset() + torch.arange(m) * a.stride(0)
                            + lane * a.stride(1) + step_a]
            row = flat_b[b.storage_offset() + lane * b.stride(0)
                         + torch.arange(n) * b.stride(1) + step_b]
            out += torch.outer(column.double(), row.double())
    return out.float()


def test_matmul_recomputes_a_k_loop_that_steps_its_pointers_in_elements():
    """A pointer into B (rows along K) or into a transposed A (columns along K) moved
    BLOCK_K elements each step, not BLOCK_K times its stride along K: the recompute tells
    which input's, and a right kernel, or one stepping a pointer whose stride along K is 1,
    is not taken for it."""
    from grader.problems.evidence import experiment

    gen = torch.Generator().manual_seed(3)
    m, n, k, tile = 5, 7, 70, 32
    flat_a, flat_b = torch.randn(m * k, generator=gen), torch.randn(k * n, generator=gen)
    contiguous_a = flat_a.view(m, k)
    transposed_a = flat_a.view(k, m).t()
    b = flat_b.view(k, n)
    recompute = experiment(PROBLEMS["matmul"].experiments["k_step_in_elements"])

    def named(a, shifted):
        got = _stepped_in_elements(flat_a, a, flat_b, b, tile, shifted)
        ev = Evidence(got, a @ b, Call((a, b)), torch.float32, 1e-4, 1e-4, {"BLOCK_K": tile})
        return [(f.facts["inputs"], f.facts["along"]) for f in recompute.findings(ev)
                if f.holds(ev)]

    assert named(contiguous_a, "B") == [("B", "32 rows of B")]
    assert named(transposed_a, "B") == [("B", "32 rows of B")]
    assert named(transposed_a, "A") == [("A", "32 columns of A")]
    assert named(transposed_a, "A and B") == [("A and B", "32 columns of A and 32 rows of B")]
    assert named(contiguous_a, "A") == []  # its stride along K is 1: the step is right
    assert named(contiguous_a, "") == []  # a right kernel
