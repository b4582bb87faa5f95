"""cuTile's wing: the code the grader has for cuTile only.

    simulator/        the CPU simulator of cuda.tile (`--backend cutile-sim`), a module per concern
    toolchain.py      tileiras and CUDA_HOME: found, probed with a tiny kernel, the answer cached
    build.py          cuTile kernels built to cubins per architecture (no GPU needed)
    probe_kernel.py   the tiny kernel the probe builds
    compile_check.py  `grade compile`: cuTile builds per architecture, believed only with cubins
"""
