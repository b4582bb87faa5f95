"""Stores each tile with `ct.scatter(..., check_bounds=False)` at row and column indices that
run past the edge of the output in the last tiles, with no mask: cuTile leaves an index out
of bounds undefined when its bounds are not checked, and on a GPU the element is written at
the address the index gives. In a row-major output a column index n + j of row i is the
address of element (i + 1, j): the edge tiles write their padding lanes over the next rows'
first elements, and the last row's over memory past the end.

The simulator drops those lanes, and the watch of the loads and stores counted only the
lanes in bounds, so no finding was made and every case passed. Now a gather or scatter with
check_bounds=False with a lane outside the array that its mask leaves on fails the case at
its line, as a Triton store without its mask does; the cases whose M and N are multiples
of the tile keep their points.

expect: FAIL
points: 2.73
message: wrote outside a tensor
"""

import cuda.tile as ct
import torch

__all__ = ["fused_gelu"]


@ct.kernel
def fused_gelu_kernel(
    x, weight, bias, out,
    TILE_M: ct.Constant[int], TILE_N: ct.Constant[int],
):
    tiles_n = ct.cdiv(x.shape[1], TILE_N)
    bid_m = ct.bid(0) // tiles_n
    bid_n = ct.bid(0) % tiles_n

    zero = ct.PaddingMode.ZERO
    xt = ct.load(x, index=(bid_m, bid_n), shape=(TILE_M, TILE_N), padding_mode=zero)
    xt = xt.astype(ct.float32)
    w = ct.load(weight, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    b = ct.load(bias, index=(bid_n,), shape=(TILE_N,), padding_mode=zero).astype(ct.float32)
    z = xt * w[None, :] + b[None, :]
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    y = z / (1.0 + ct.exp2(u * (-2.0 * 1.4426950408889634)))

    rows = bid_m * TILE_M + ct.arange(TILE_M, dtype=ct.int32)
    cols = bid_n * TILE_N + ct.arange(TILE_N, dtype=ct.int32)
    # every lane of the tile, past the edge too: no mask, bounds unchecked
    ct.scatter(out, (rows[:, None], cols[None, :]), y.astype(out.dtype), check_bounds=False)


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Return GELU_tanh(x * weight + bias) for x [M, N] and weight, bias [N]."""
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    TILE_M, TILE_N = 16, 64
    grid = (ct.cdiv(M, TILE_M) * ct.cdiv(N, TILE_N),)
    ct.launch(
        torch.cuda.current_stream(), grid, fused_gelu_kernel,
        (x, weight, bias, out, TILE_M, TILE_N),
    )
    return out
