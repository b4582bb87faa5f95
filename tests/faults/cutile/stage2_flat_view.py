"""Assumes a contiguous x: flattens it with x.view(-1) and runs a 1-D kernel over it.

expect: FAIL
message: layout=transposed
message: layout=sliced
message: view size is not compatible with input tensor's size and stride
passes: layout=contiguous

Viewing an M x N matrix as M * N consecutive values is only possible when its rows are
adjacent in memory. The lesson promises that any layout works (cuTile's loads follow the
array's strides), so a transposed or sliced x must work too; here it cannot be viewed.
"""

import cuda.tile as ct
import torch

__all__ = ["fused_gelu"]


@ct.kernel
def fused_gelu_kernel(x, weight, bias, out, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    xt = ct.load(x, index=(pid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO).astype(ct.float32)
    cols = (pid * TILE + ct.arange(TILE, dtype=ct.int32)) % weight.shape[0]
    w = ct.gather(weight, cols).astype(ct.float32)
    b = ct.gather(bias, cols).astype(ct.float32)
    z = xt * w + b
    u = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    y = z / (1.0 + ct.exp2(u * (-2.0 * 1.4426950408889634)))
    ct.store(out, index=(pid,), tile=y.astype(out.dtype))


def fused_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    TILE = 1024
    flat_x, flat_out = x.view(-1), out.view(-1)
    grid = (ct.cdiv(M * N, TILE),)
    ct.launch(torch.cuda.current_stream(), grid, fused_gelu_kernel,
              (flat_x, weight, bias, flat_out, TILE))
    return out
