"""The cuTile track: its record (track.py, the `cutile` entry point of `tilecourse.tracks`)
and a module per part of its code, each answering one contract of grader.tracks.contract
and imported when first asked for:

    backend.py        BackendProbe: probes, the toolchain's repair (toolchain.py: tileiras and
                      CUDA_HOME found, probed with a tiny kernel, probe_kernel.py)
    bootstrap.py      WorkerBootstrap: cuda.tile imported before the submission; the simulator on a CPU
    launches.py       LaunchRecorder: the child's hook on ct.launch: proposed (or captured), not
                      run; `grade compile`'s builds per architecture (build.py,
                      compile_check.py), believed only with cubins
    reader.py         KernelReader: what a kernel file may spell (spellings.py, kernel_api.py),
                      ct.ByTarget(...) of data (constants.py), kernels' parameters
    source.py         CpuRunner: a launch checked by cuTile's front end (frontend.py, Tile
                      IR without a GPU), run by the simulator (simulator/), watched (watch.py)
    binary.py         GpuBuilder: a launch compiled by the builder, loaded by the replay
"""
