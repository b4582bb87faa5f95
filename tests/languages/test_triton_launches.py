"""Triton's launches in the child (grader.languages.triton.launches): a grid that is not a
tuple, which Triton refuses on a GPU, is refused at the student's launch line and named."""

from __future__ import annotations

import pytest
from conftest import broken, failure_text

from grader.results import Status

GRID = "grid = (triton.cdiv(n_elements, BLOCK_SIZE),)"
LAUNCH = "vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)"


@pytest.mark.parametrize("grid, says", [
    ("grid = triton.cdiv(n_elements, BLOCK_SIZE)", "the launch's grid is an int, not a tuple"),
    ("grid = lambda meta: triton.cdiv(n_elements, meta['BLOCK_SIZE'])",
     "the launch's grid function returns an int, not a tuple"),
    ("grid = None", "the launch gives no grid: Triton takes the grid as a tuple"),
    ("grid = lambda meta: None", "the launch's grid function returns no grid (is its `return` "
                                 "missing?)"),
], ids=["number", "function", "none", "function-none"])
def test_a_grid_that_is_not_a_tuple_is_named_at_the_launch_line(grid, says, grade_source):
    source = broken("triton", "stage1_vector_add.py", GRID, grid)
    line = next(i for i, text in enumerate(source.splitlines(), 1) if LAUNCH in text)
    result = grade_source("vector_add", source)
    text = failure_text(result)
    assert result.status is Status.FAIL
    assert f"line {line} (`{LAUNCH}`): {says}" in text
    assert "(n,) with the trailing comma" in text
    assert "could not be run" not in text and "no kernel launch was given" not in text
    assert "NoneType" not in text
