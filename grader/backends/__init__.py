"""Where a stage's kernels run: the backends and how one is picked (each language's wing
probes and prepares its own: grader.tracks.contract.BackendProbe).

    selection.py     the backends (track, device, probe), `auto`, the machine's versions
"""
