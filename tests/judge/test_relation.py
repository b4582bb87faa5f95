"""How a wrong output relates to the reference (grader.judge.relation): each relation said
where it holds, and nothing where none does or the output is too small to show one."""

import pytest
import torch

from grader.judge.relation import describe, said

ATOL = RTOL = 1e-5


def _want(rows=37, cols=300):
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(3))


def _said(got, want, extents=(16, 64)):
    return " ".join(said(describe(got, want, ATOL, RTOL, list(extents))))


def _tiles(factors, want, extents=(16, 64)):
    """Each tile of `want` times its own factor."""
    rows, cols = want.shape
    return want * factors.repeat_interleave(extents[0], 0)[:rows] \
        .repeat_interleave(extents[1], 1)[:, :cols]


@pytest.mark.parametrize("make, words", [
    (lambda w: 2 * w, "every element is 2 x the expected one"),
    (lambda w: 0.5 * w, "every element is 0.5 (1/2) x the expected one"),
    (lambda w: -w, "with its sign flipped"),
    (lambda w: w + 0.25, "every element is the expected one + 0.25"),
    (lambda w: 3 * w - 1, "every element is 3 x the expected one - 1"),
    (lambda w: w.abs(), "absolute value"),
    (lambda w: torch.full_like(w, 0.5), "every element holds the same value, 0.5"),
    (lambda w: w * torch.linspace(0.1, 0.9, w.shape[0])[:, None],
     "each row is the expected one times a factor of its own (from 0.1 to 0.9; row 0: 0.1)"),
    (lambda w: w * torch.linspace(1.5, 2.5, w.shape[1])[None, :],
     "each column is the expected one times a factor of its own"),
    (lambda w: w + torch.linspace(-1, 1, w.shape[0])[:, None],
     "each row is the expected one plus an offset of its own (from -1 to 1)"),
    (lambda w: _tiles(torch.linspace(1.5, 3, 15).reshape(3, 5), w),
     "each tile is the expected one times a factor of its own"),
    (lambda w: w[:1].expand_as(w), "every row holds the expected row 0"),
    (lambda w: torch.roll(w, 2, 0), "row i holds the expected row i - 2, counted round"),
    (lambda w: w.flip(1), "each column holds an expected column, not its own"),
    (lambda w: w.T.reshape(w.shape), "in column-major order"),
])
def test_each_relation_is_said_where_it_holds(make, words):
    want = _want()
    assert words in _said(make(want).contiguous(), want)


def test_a_square_transpose_is_said():
    want = _want(40, 40)
    assert "transposed: element [i, j] holds the expected [j, i]" in _said(want.T, want)


def test_where_the_error_lies_is_said_where_no_relation_holds():
    want = _want()
    noise = torch.rand(want.shape, generator=torch.Generator().manual_seed(1))
    past = want.clone()
    past[:, 64:] += noise[:, 64:]
    assert "the first 64 columns (the first tile along each row) are right" in \
        _said(past, want)
    growing = want + noise * torch.linspace(0, 1, want.shape[1])
    assert "the error grows along each row" in _said(growing, want)


def test_nothing_is_said_of_noise_of_a_tiny_output_or_of_nan():
    want = _want()
    noise = torch.rand(want.shape, generator=torch.Generator().manual_seed(2))
    assert _said(want + noise, want) == ""
    tiny = torch.tensor([[1.5]])
    assert _said(2 * tiny, tiny, (1, 1)) == ""  # a 1 x 1 case fits x 2 and + 1.5 alike
    nan = 2 * want
    nan[0, 0] = float("nan")
    assert _said(nan, want) == ""


def test_the_tolerance_decides_a_relation():
    """Within the stage's tolerance: a bfloat16 output rounded to its dtype still shows its
    factor; an output off the relation by more than the tolerance does not."""
    want = _want()
    rounded = (2 * want).to(torch.bfloat16).float()
    assert "is 2 x" in " ".join(said(describe(rounded, want, 1e-2, 2e-2)))
    assert "is 2 x" not in _said(rounded, want)
