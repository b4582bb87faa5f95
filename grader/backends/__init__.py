"""Where a stage's kernels run: the backends, how one is picked, and the cuTile toolchain.

    selection.py     the backends (track, device, probe), `auto`, the machine's versions
    toolchain.py     tileiras and CUDA_HOME: found, probed with a tiny kernel, the answer cached
    build.py         cuTile kernels built to cubins per architecture (no GPU needed)
    probe_kernel.py  the tiny kernel the probe builds
"""
