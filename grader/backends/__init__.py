"""Where a stage's kernels run: the backends and how one is picked (the cuTile toolchain the
cuTile backend probes is grader.languages.cutile's).

    selection.py     the backends (track, device, probe), `auto`, the machine's versions
"""
