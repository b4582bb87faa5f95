"""The smallest cuTile kernel: compiled once by the toolchain probe to see that tileiras works.

Imported only when cuda-tile is installed (cuTile resolves a kernel's globals from its
module, so the kernel lives at module level).
"""

import cuda.tile as ct


@ct.kernel
def tiny_kernel(x, TILE: ct.Constant[int]):
    ct.store(x, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(TILE,)) + 1)
