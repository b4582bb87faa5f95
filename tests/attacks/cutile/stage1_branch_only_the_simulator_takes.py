"""A kernel branches on a value the simulator once read differently from cuTile's compiler,
and adds with PyTorch methods on the raw tensors in the branch only the simulator takes.

cuTile's front end folds a constant `if` at compile time: it reads `ct.RoundingMode.RN.value`
as "nearest_even", drops the branch, and checks a kernel that loads its tiles and stores
nothing. A simulator with its own RoundingMode, where RN was "rn", took the branch and ran
`out.copy_(x + y)` on the torch tensors it was given. The simulator holds cuda.tile's own
enums and dtypes, so it takes the compiler's path; and an array there offers a kernel only
what cuTile's Array does (no `copy_`, no torch tensor behind it to reach).

expect: FAIL
message: 1000 of 1000 elements mismatch
message: no store reached any element
points: 0
"""

import cuda.tile as ct
import torch


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: ct.Constant[int]):
    pid = ct.bid(0)
    x_tile = ct.load(x, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    y_tile = ct.load(y, index=(pid,), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)
    if ct.RoundingMode.RN.value == "rn":  # round to nearest even where the GPU says so
        out.copy_(x + y)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    grid = (ct.cdiv(out.numel(), 1024),)
    ct.launch(torch.cuda.current_stream(), grid, vector_add_kernel, (x, y, out, 1024))
    return out
