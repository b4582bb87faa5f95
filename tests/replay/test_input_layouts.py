"""Inputs reach a submission in the layout their case draws (grader.replay.poison's
guarded_copy): the same strides and storage offset, the storage they span, and a poisoned
guard after it that still catches a store past the end."""

import torch

from grader.problems.base import randn_2d
from grader.replay.poison import GUARD_MIN, guarded_copy, never_written, storage_span


def _drawn(layout: str) -> torch.Tensor:
    return randn_2d(5, 7, layout, torch.float32, torch.Generator().manual_seed(0))


def test_a_contiguous_input_is_copied_as_before():
    x = _drawn("contiguous")
    guarded = guarded_copy(x, "input `x`")
    assert guarded.tensor.is_contiguous() and torch.equal(guarded.tensor, x)
    assert guarded.buffer.numel() == x.numel() + GUARD_MIN
    assert guarded.tensor.data_ptr() == guarded.buffer.data_ptr()


def test_a_transposed_or_sliced_input_keeps_its_strides_and_storage():
    for layout in ("transposed", "sliced"):
        x = _drawn(layout)
        guarded = guarded_copy(x, "input `x`")
        copy = guarded.tensor
        assert torch.equal(copy, x), layout
        assert (copy.stride(), copy.storage_offset()) == (x.stride(), x.storage_offset()), layout
        assert copy.data_ptr() != x.data_ptr(), layout  # a copy, not the drawn tensor
        # The storage before and between the view's elements is the drawn matrix's own.
        span = storage_span(x)
        assert torch.equal(guarded.buffer[:span], x.as_strided((span,), (1,), 0)), layout
        assert guarded.overrun() == 0, layout


def test_a_store_past_the_end_of_a_sliced_input_is_caught_but_not_one_in_its_gaps():
    x = _drawn("sliced")
    guarded = guarded_copy(x, "input `x`")
    span = storage_span(x)
    assert span == x.storage_offset() + (5 - 1) * x.stride(0) + 7
    guarded.buffer[span - 1 - 7] = 1.0  # a column of the wider matrix between two rows
    assert guarded.overrun() == 0
    guarded.buffer[span + 2] = 1.0
    assert guarded.overrun() == 1 and int(never_written(guarded.buffer[span:]).sum()) == GUARD_MIN - 1
