"""cuTile in a worker, before the submission is loaded (the worker part of the cuTile track,
grader.tracks.contract.WorkerBootstrap)."""

from __future__ import annotations


def bind(role: str, device: str) -> None:
    """Import cuda.tile first; on the CPU, route its launches to the grader's simulator."""
    try:
        import cuda.tile  # noqa: F401
    except ImportError:
        pass  # the submission's own import then says what is missing
    if device == "cpu":
        from grader.languages.cutile import simulator

        simulator.install()  # ct.launch runs kernels in the simulator, on the CPU
