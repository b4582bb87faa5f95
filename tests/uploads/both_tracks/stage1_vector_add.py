"""A vector add that imports both tile languages: its track cannot be told from its imports."""

import torch
import triton
import cuda.tile as ct

__all__ = ["vector_add"]


def vector_add(x, y):
    return x + y
