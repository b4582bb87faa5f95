"""The lesson's claims in course.toml: every case says which it tests, every claim has a case,
a failing case says what it tests; and the inputs drawn to break kernels that ignore one."""

import math

import pytest
import torch
from conftest import ROOT, RULES

from grader.course import load_course
from grader.errors import CourseError
from grader.judge import experiments
from grader.judge.compare import Verdict
from grader.judge.stage import StageCheck
from grader.problems import PROBLEMS
from grader.problems.evidence import Evidence
from grader.problems.base import randn
from grader.results import Failure

CLAIMED = """
[course]
title = "mini"

""" + RULES + """

[[stages]]
id = "vector_add"
title = "Vector add"
points = 10
modules = { triton = "triton/stage1_vector_add.py", cutile = "cutile/stage1_vector_add.py" }
tolerance.float32 = { atol = 1e-6, rtol = 0 }
claims.tail = "the length need not be a multiple of the block"
claims.grid = "the grid covers every element"
cases = [ { n = 5, claims = ["tail"], dtypes = ["float32"] },
          { n = 3000, claims = ["grid", "tail"], dtypes = ["float32"] } ]
"""


def load_text(tmp_path, text, hidden: str | None = None):
    path = tmp_path / "course.toml"
    path.write_text(text, encoding="utf-8")
    if hidden is not None:
        (tmp_path / "course.hidden.toml").write_text(hidden, encoding="utf-8")
    return load_course(path)


def error_for(tmp_path, text, hidden: str | None = None) -> str:
    with pytest.raises(CourseError) as info:
        load_text(tmp_path, text, hidden)
    return str(info.value)


def test_every_case_of_the_course_names_a_claim_and_every_claim_has_a_case(course):
    for stage in course.stages:
        assert stage.claims, f"{stage.id}: the stage states no claims"
        shown = [c for c in stage.cases if not c.hidden]
        for case in shown:
            assert case.claims and set(case.claims) <= set(stage.claims), (stage.id, case.id)
        assert {name for c in shown for name in c.claims} == set(stage.claims), stage.id


def test_claims_are_loaded_per_stage_and_case(tmp_path):
    (stage,) = load_text(tmp_path, CLAIMED).stages
    assert stage.claims == {"tail": "the length need not be a multiple of the block",
                            "grid": "the grid covers every element"}
    assert [c.claims for c in stage.cases] == [("tail",), ("grid", "tail")]
    assert stage.tested_by(stage.cases[1]) == ["the grid covers every element",
                                               "the length need not be a multiple of the block"]
    assert stage.cases[0].id == "n=5-float32"  # a case's claims are not part of its id


def test_a_case_without_a_claim_is_named_with_its_stage(tmp_path):
    text = CLAIMED.replace('{ n = 5, claims = ["tail"], ', "{ n = 5, ")
    message = error_for(tmp_path, text)
    assert "stages[0].cases[0]: stage 'vector_add': the case names no claim" in message
    assert "known: tail, grid" in message


def test_an_unknown_claim_is_named_with_its_stage_and_case(tmp_path):
    text = CLAIMED.replace('claims = ["tail"]', 'claims = ["tails"]')
    message = error_for(tmp_path, text)
    assert "stages[0].cases[0].claims: stage 'vector_add': unknown claim 'tails'" in message


def test_a_claim_without_a_case_is_named(tmp_path):
    text = CLAIMED.replace('claims = ["grid", "tail"]', 'claims = ["tail"]')
    message = error_for(tmp_path, text)
    assert ("stages[0].claims.grid: stage 'vector_add': no case tests the claim 'grid' "
            "(the grid covers every element)") in message


def test_a_stage_without_claims_needs_none_but_a_claim_it_lacks_is_unknown(tmp_path):
    plain = CLAIMED.replace('claims.tail = "the length need not be a multiple of the block"\n'
                            'claims.grid = "the grid covers every element"\n', "")
    message = error_for(tmp_path, plain)
    assert "unknown claim 'tail'; known: none" in message
    bare = plain.replace('claims = ["tail"], ', "").replace('claims = ["grid", "tail"], ', "")
    (stage,) = load_text(tmp_path, bare).stages
    assert stage.claims == {} and all(c.claims == () for c in stage.cases)


def test_a_hidden_case_names_no_claims(tmp_path):
    # its report never says what it tests: a claim there is an unknown key, not dropped silently
    hidden = ('[[stages]]\nid = "vector_add"\n'
              'cases = [ { n = 7, claims = ["grid"], dtypes = ["float32"] } ]\n')
    message = error_for(tmp_path, CLAIMED, hidden)
    assert "course.hidden.toml" in message
    assert "stages[0].cases[0].claims: unknown key; expected one of: dtypes, seed, n" in message
    stage = load_text(tmp_path, CLAIMED, hidden.replace('claims = ["grid"], ', "")).stages[0]
    assert stage.cases[-1].hidden and stage.cases[-1].claims == ()


def test_a_failing_case_says_what_it_tests_and_a_hidden_one_does_not(tmp_path):
    (stage,) = load_text(tmp_path, CLAIMED).stages
    check = StageCheck.__new__(StageCheck)  # only the stage is needed to word the details
    check.stage = stage
    failed = Verdict(False, "wrong", ["max abs error 1"], kind=Failure.WRONG_RESULT)
    assert check._with_claims(stage.cases[0], failed) == [
        "this case tests: the length need not be a multiple of the block", "max abs error 1"]
    hidden = type(stage.cases[0])({"n": 7}, "float32", 1, hidden=1, claims=("tail",))
    assert check._with_claims(hidden, failed) == ["max abs error 1"]
    stray = Verdict(False, "wrote out of bounds, past the end of a tensor:",
                    ["┆ 4 elements past `out`", "a load or store is missing its mask"],
                    kind=Failure.OUT_OF_BOUNDS)  # the sentence keeps its quote right under it
    assert check._with_claims(stage.cases[0], stray) == [
        "┆ 4 elements past `out`", "this case tests: the length need not be a multiple of "
        "the block", "a load or store is missing its mask"]
    # a failure unrelated to the values breaks no claim: a crash, a refusal, a timeout
    for kind in set(Failure) - {Failure.WRONG_RESULT, Failure.READ_OUT_OF_BOUNDS,
                                Failure.OUT_OF_BOUNDS}:
        other = Verdict(False, "failed:", ["┆ ValueError"], kind=kind)
        assert check._with_claims(stage.cases[0], other) == ["┆ ValueError"], kind


@pytest.mark.parametrize("tile", [16, 256, 1024, 4096, 32768, 39999])
def test_falling_rows_drop_far_below_the_first_tile_whatever_the_tile(tile):
    """A kernel that takes a later tile's max as the row's rescales its sum by exp(drop):
    the drop must overflow float32 (exp(89) does) for every tile narrower than the row."""
    softmax = PROBLEMS["softmax"]
    params = {"M": 1, "N": 40000, "scale": 1.0, "layout": "contiguous", "rows": "falling_max"}
    (x,) = softmax.draw(params, "float32", 7).args
    last = (x.shape[1] - 1) // tile * tile
    drop = x[:, :tile].amax(-1) - x[:, last:].amax(-1)
    assert bool((drop > math.log(torch.finfo(torch.float32).max)).all()), drop


@pytest.mark.parametrize("layout, strides", [("sliced", (308, 1)), ("transposed", (1, 9))])
def test_softmax_draws_x_in_the_layout_asked_with_the_same_values(layout, strides):
    softmax = PROBLEMS["softmax"]
    params = {"M": 9, "N": 301, "scale": 1.0, "layout": layout, "rows": "falling_max"}
    (x,) = softmax.draw(params, "float16", 3).args
    (flat,) = softmax.draw(dict(params, layout="contiguous"), "float16", 3).args
    assert x.stride() == strides and torch.equal(x, flat)


def test_the_earlier_softmax_cases_draw_what_they_drew_before():
    """New parameters at their defaults leave the inputs of the earlier cases alone."""
    params = {"M": 3, "N": 70, "scale": 100.0, "layout": "contiguous", "rows": "random"}
    (x,) = PROBLEMS["softmax"].draw(params, "float16", 11).args
    before = randn((3, 70), torch.float16, torch.Generator().manual_seed(11), scale=100.0)
    assert torch.equal(x, before)


def _evidence(problem: str, params: dict, got_from, constants=None):
    """What `explain` is given when a kernel returned `got_from(x)` on a case's inputs."""
    call = PROBLEMS[problem].draw(params, "float32", 5)
    want = PROBLEMS[problem].reference(call)
    return Evidence(got=got_from(call), want=want, call=call, atol=1e-6, rtol=1e-5,
                    constants=constants or {})


def _causes(problem: str, ev: Evidence):
    """The causes the course's hypotheses for `problem` confirm (no probes), else what its
    `explain` observed: what a failing case's report names."""
    stage = next(s for s in load_course(ROOT / "course.toml").stages if s.problem.id == problem)
    return (experiments.confirmed(ev, stage.hypotheses, stage.problem.experiments, None)
            or stage.problem.explain(ev))


def test_a_running_max_taken_from_each_tile_is_named_on_falling_rows():
    def block_max(call, tile=1024):  # the faulty loop, in float32
        x = call.args[0].float()
        m, total = torch.full((x.shape[0], 1), -torch.inf), torch.zeros(x.shape[0], 1)
        for start in range(0, x.shape[1], tile):
            part = x[:, start:start + tile]
            new = part.amax(-1, keepdim=True)
            total = total * torch.exp(m - new) + torch.exp(part - new).sum(-1, keepdim=True)
            m = new
        return torch.exp(x - m) / total

    params = {"M": 2, "N": 5000, "scale": 1.0, "layout": "contiguous", "rows": "falling_max"}
    ev = _evidence("softmax", params, block_max, {"BLOCK_N": 1024})
    assert torch.isnan(ev.got).any()
    assert [c.key for c in _causes("softmax", ev)] == ["running_max"]


def test_rows_stepped_by_the_number_of_columns_are_named_on_a_sliced_x():
    def rows_of_n(call):
        x = call.args[0]
        return torch.softmax(x.as_strided(x.shape, (x.shape[1], 1), x.storage_offset()).float(), -1)

    params = {"M": 9, "N": 301, "scale": 1.0, "layout": "sliced", "rows": "random"}
    (cause,) = _causes("softmax", _evidence("softmax", params, rows_of_n))
    assert cause.key == "strides" and "(301, 1)" in cause.text and "(308, 1)" in cause.text


def test_a_sigmoid_that_overflows_is_named_at_gelus_extremes():
    def overflowing(call):
        x, w, b = (t.float() for t in call.args)
        z = x * w + b
        e = torch.exp(2 * 0.7978845608028654 * (z + 0.044715 * z ** 3))
        return z * e / (1 + e)

    params = {"M": 33, "N": 70, "layout": "contiguous", "scale": 100.0, "bias": "random"}
    ev = _evidence("fused_gelu", params, overflowing)
    assert torch.isnan(ev.got).any()
    assert [c.key for c in _causes("fused_gelu", ev)] == ["sigmoid_overflow"]


def test_attention_layouts_draw_the_views_the_lesson_promises():
    """Transposed: a [B, N, H, D] tensor seen as [B, H, N, D]; sliced: heads 1..H of a
    [B, H + 1, N, D] tensor. A case whose sizes make the view's strides a contiguous
    tensor's tests nothing, and is refused."""
    problem = PROBLEMS["flash_attention"]
    base = {"B": 2, "H": 3, "N": 5, "D": 4, "causal": False, "sm_scale": None}
    q = problem.draw({**base, "layout": "transposed"}, "float32", 1).args[0]
    assert q.shape == (2, 3, 5, 4) and q.stride() == (60, 4, 12, 1)
    q = problem.draw({**base, "layout": "sliced"}, "float32", 1).args[0]
    assert q.shape == (2, 3, 5, 4) and q.stride() == (80, 20, 4, 1) and q.storage_offset() == 20
    assert problem.check({**base, "layout": "contiguous", "H": 1}) == []
    (refused,) = problem.check({**base, "layout": "transposed", "H": 1})
    assert "layout = 'transposed' needs H of at least 2" in refused
    (refused,) = problem.check({**base, "layout": "sliced", "B": 1})
    assert "layout = 'sliced' needs B of at least 2" in refused
