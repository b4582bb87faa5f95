"""Experiments on the tiles a kernel loops over: the probe whose value the case's launch gives
(N within one key tile of the BLOCK_N it was launched with), the guard that lets it speak
only where the tiles are what it changes, and attention's recomputes of mistakes in the loop
over key tiles, each checked against that loop run step by step as a kernel runs it."""

import math

import torch

from grader.course import FromLaunch, Hypothesis
from grader.judge import experiments
from grader.problems import PROBLEMS, Call
from grader.problems.evidence import Evidence, across_tiles, experiment, first_only

ONE_TILE = Hypothesis("across_tiles", "{tiles} tiles of {tile}", experiment="several",
                      probe={"K": FromLaunch(("BLOCK_K", "TILE_K"), 1)})
SEVERAL = {"several": lambda ev: across_tiles(ev, ev.call.args[0].shape[1],
                                              ("BLOCK_K", "TILE_K"), "K")}


def matmul_evidence(got, want, constants, k=70):
    a = torch.ones(want.shape[0], k)
    return Evidence(got, want, Call((a, torch.ones(k, want.shape[1]))), torch.float32,
                    1e-4, 1e-4, constants)


def test_a_probe_value_from_the_launch_is_resolved_per_case_and_said_with_its_source():
    asked = []

    def probe(changes):
        asked.append(changes)
        return "K = 31, float32"

    want = torch.ones(4, 3)
    found = experiments.confirmed(matmul_evidence(2 * want, want, {"TILE_K": 32}), [ONE_TILE],
                                  SEVERAL, probe)
    assert asked == [{"K": 31}]
    assert [c.key for c in found] == ["across_tiles"] and found[0].text == "3 tiles of 32"
    assert "your kernel replayed with K = 31 (TILE_K - 1) (K = 31, float32) is right" in \
        found[0].experiment
    assert experiments.shown({"K": 31, "layout": "sliced"}, {"K": "BLOCK_K - 1"}) == \
        "K = 31 (BLOCK_K - 1), layout = sliced"


def test_a_probe_whose_launch_value_is_unknown_is_not_run_and_names_nothing():
    asked = []
    want = torch.ones(4, 3)
    # launched with no K tile the probe names, or one of 1 (K = 0 is no case): no value
    for constants in ({"BLOCK_M": 32}, {"BLOCK_K": 1}):
        assert experiments.resolved(ONE_TILE.probe, constants) == (None, {})
    ev = matmul_evidence(2 * want, want, {"BLOCK_M": 32})
    assert experiments.confirmed(ev, [ONE_TILE], SEVERAL,
                                 lambda changes: asked.append(changes) or "ran") == []
    assert asked == []


def test_the_experiment_behind_a_one_tile_probe_holds_only_where_tiles_are_what_it_changes():
    want = torch.ones(4, 3)
    several = matmul_evidence(2 * want, want, {"BLOCK_K": 32})
    assert across_tiles(several, 70, ("BLOCK_K",), "K").facts == {"tile": 32, "tiles": 3}
    assert across_tiles(several, 32, ("BLOCK_K",), "K") is None  # one tile: nothing to tell
    assert across_tiles(several, 70, ("TILE_K",), "K") is None  # no such launch constant
    overflowed = matmul_evidence(torch.full((4, 3), torch.inf), want, {"BLOCK_K": 32})
    assert across_tiles(overflowed, 70, ("BLOCK_K",), "K") is None  # a shorter K overflows less
    rounded = 1.0 * want
    rounded[0, :2] = 1.5  # a few elements wrong: rounding a shorter K would hide too
    assert across_tiles(matmul_evidence(rounded, want, {"BLOCK_K": 32}), 70,
                        ("BLOCK_K",), "K") is None
    zeros = torch.zeros(4, 3)
    assert across_tiles(matmul_evidence(zeros, want, {"BLOCK_K": 32}), 70,
                        ("BLOCK_K",), "K") is None  # rows of zeros are only observed


def test_only_the_first_slice_written_is_confirmed_with_the_watch_seeing_idle_programs():
    want = torch.randn(2, 3, 5, 4)
    got = torch.full_like(want, torch.nan)
    got[0, 0] = want[0, 0]
    idle = [{"kind": "idle", "text": "4 of the 8 programs stored nothing"}]
    ev = Evidence(got, want, Call((want,)), torch.float32, 1e-3, 1e-3, {}, idle)
    found = first_only(ev, 2)
    assert found.holds(ev) and found.facts == {"others": 5}
    assert first_only(Evidence(got, want, Call((want,)), torch.float32, 1e-3, 1e-3), 2) is None
    other = got.clone()
    other[0, 1] = want[0, 1]  # a second pair written too: not the first alone
    both = Evidence(other, want, Call((want,)), torch.float32, 1e-3, 1e-3, {}, idle)
    assert not first_only(both, 2).holds(both)


def attention_loop(q, k, v, scale, causal, rows, cols, *, update_max=True, masked=-math.inf,
                   keep_n=False):
    """Attention as the kernels' loop over key tiles computes it, query tile by query tile,
    in float32: masked scores `masked`, the key bound `<= N` where `keep_n`, the running
    maximum left at -inf unless `update_max`. Padded keys and values are 0."""
    n = q.shape[-2]
    total = -(-n // cols) * cols
    kp = torch.cat([k, k.new_zeros(*k.shape[:-2], total - n, k.shape[-1])], -2)
    vp = torch.cat([v, v.new_zeros(*v.shape[:-2], total - n, v.shape[-1])], -2)
    out = torch.empty_like(q)
    for start_m in range(0, n, rows):
        qi = q[..., start_m:start_m + rows, :]
        offs_m = torch.arange(start_m, start_m + qi.shape[-2])[:, None]
        m_i = torch.full(qi.shape[:-1] + (1,), -math.inf)
        l_i, acc = torch.zeros_like(m_i), torch.zeros_like(qi)
        hi = min(n, start_m + rows) if causal else n
        for start_n in range(0, hi, cols):
            offs_n = torch.arange(start_n, start_n + cols)[None, :]
            s = qi @ kp[..., start_n:start_n + cols, :].transpose(-1, -2) * scale
            visible = offs_n <= n if keep_n else offs_n < n
            if causal:
                visible = visible & (offs_n <= offs_m)
            s = torch.where(visible, s, torch.tensor(masked))
            m_new = torch.maximum(m_i, s.amax(-1, keepdim=True))
            alpha, p = torch.exp(m_i - m_new), torch.exp(s - m_new)
            l_i = l_i * alpha + p.sum(-1, keepdim=True)
            acc = acc * alpha + p @ vp[..., start_n:start_n + cols, :]
            m_i = m_new if update_max else m_i
        out[..., start_m:start_m + rows, :] = acc / l_i
    return out


def attention_case(n, causal, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 2, n, 16, generator=gen) for _ in range(3))
    call = Call((q, k, v), {"causal": causal})
    return call, attention_loop(q, k, v, 0.25, causal, 64, 32)


def attention_evidence(got, call, want):
    return Evidence(got, want, call, torch.float32, 1e-3, 1e-3,
                    {"BLOCK_M": 64, "BLOCK_N": 32, "HEAD_DIM": 16})


def recompute(name, ev):
    found = list(experiment(PROBLEMS["flash_attention"].experiments[name]).findings(ev))
    return [f for f in found if f.holds(ev)]


def test_attention_with_a_running_maximum_never_updated_keeps_the_last_key_tile_alone():
    for causal in (False, True):
        call, want = attention_case(100, causal)
        q, k, v = call.args
        got = attention_loop(q, k, v, 0.25, causal, 64, 32, update_max=False)
        ev = attention_evidence(got, call, want)
        (found,) = recompute("last_key_tile_only", ev)
        assert found.facts == {"tile": 32}
        assert not recompute("masked_scores_zero", ev) and not recompute("not_divided", ev)
    one_tile, want = attention_case(20, False)
    assert recompute("last_key_tile_only", attention_evidence(want + 1, one_tile, want)) == []


def test_attention_with_masked_scores_of_zero_is_told_apart_from_padding_and_the_causal_mask():
    call, want = attention_case(100, True)
    got = attention_loop(*call.args, 0.25, True, 64, 32, masked=0.0)
    ev = attention_evidence(got, call, want)
    assert recompute("masked_scores_zero", ev)
    assert not recompute("causal_mask_inverted", ev) and not recompute("next_key_seen", ev)
    plain, want = attention_case(100, False)  # no causal mask: every padded key seen
    got = attention_loop(*plain.args, 0.25, False, 64, 32, masked=0.0)
    assert recompute("padded_keys_seen", attention_evidence(got, plain, want))
    assert not recompute("masked_scores_zero", attention_evidence(got, plain, want))


def test_attention_whose_key_bound_keeps_n_sees_one_padded_key_not_all():
    call, want = attention_case(1, False)
    got = attention_loop(*call.args, 0.25, False, 64, 32, keep_n=True)
    ev = attention_evidence(got, call, want)
    assert recompute("one_padded_key_seen", ev) and not recompute("padded_keys_seen", ev)


def test_attention_one_key_tile_probe_speaks_only_without_a_causal_mask_and_for_query_tile_0():
    call, want = attention_case(100, False)
    wrong = want.clone()
    wrong[..., :, :] += 1
    (found,) = recompute("several_key_tiles", attention_evidence(wrong, call, want))
    assert found.facts == {"tile": 32, "tiles": 4}
    causal, causal_want = attention_case(100, True)
    assert recompute("several_key_tiles", attention_evidence(causal_want + 1, causal,
                                                             causal_want)) == []
    later = want.clone()
    later[..., 64:, :] += 1  # only the second query tile wrong: the query tiles' indexing
    assert recompute("several_key_tiles", attention_evidence(later, call, want)) == []


def test_a_probe_never_grows_a_case():
    """A probe's size from the launch (BLOCK_N - 1 of a BLOCK_N the submission chose) that
    would exceed the case's own is not run: it would size the grader's inputs."""
    from grader.judge.stage import grows
    assert grows({"N": 100, "causal": False}, {"N": 1 << 30})
    assert not grows({"N": 100, "causal": False}, {"N": 63, "causal": False})
    assert not grows({"K": 47, "sm_scale": 0.05}, {"K": 1, "sm_scale": 1.0})
