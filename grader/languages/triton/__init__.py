"""The Triton track: its record (track.py, the `triton` entry point of `tilecourse.tracks`)
and a module per part of its code, each answering one contract of grader.tracks.contract
and imported when first asked for:

    backend.py     BackendProbe: its backends' probes, the interpreter's mode set before a load
    bootstrap.py   WorkerBootstrap: Triton imported before the submission, helpers started
    launches.py    LaunchRecorder: the child's hook on every launcher's `run`: proposed, not run
    reader.py      KernelReader: what a kernel file may spell (spellings.py), its decorators
                   (decorators.py), constants (constants.py) and kernels' parameters
    source.py      CpuRunner: a launch checked by the front end (frontend.py), run by the
                   interpreter (in the case's program order, program_order.py; with a
                   GPU's arithmetic, fidelity.py, and CUDA's libdevice, libdevice.py), its
                   loads and stores watched (watch.py)
    binary.py      GpuBuilder: a launch compiled by the builder, loaded by the replay
"""
