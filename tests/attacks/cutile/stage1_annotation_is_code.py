"""A kernel parameter annotated with a string of Python: cuTile reads a kernel's
annotations with typing.get_type_hints, which evaluates a string annotation, so the string
would run inside the replay while it builds the kernel (and here replace its launcher).

Annotations are read as data, by spelling: only the language's own annotations
(ct.Constant[int], ...) are taken, and a string is refused at its line.

expect: FAIL
points: 0
message: its kernels are refused before they run
message: is not an annotation the grader reads
"""

import cuda.tile as ct
import torch


@ct.kernel
def vector_add_kernel(x, y, out, TILE_SIZE: "[setattr(__import__('importlib').import_module('grader.tracks').wing('cutile').cpu, 'launch', lambda step, kernel, args, kwargs: args[2].copy_(args[0] + args[1])), ct.Constant[int]][1]"):  # noqa: E501
    ct.load(x, index=(ct.bid(0),), shape=(TILE_SIZE,), padding_mode=ct.PaddingMode.ZERO)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(x.numel(), 1024),), vector_add_kernel,
              (x, y, out, 1024))
    return out
