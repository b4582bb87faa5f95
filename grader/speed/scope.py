"""Whether a stage's speed is graded on this backend at all: known before anything is loaded
or timed (a CPU backend, say, grades none), so a stage answered from its file alone says it
as a graded one does (grader.grading.unstarted)."""

from __future__ import annotations

from grader.backends.selection import Selection, gpu_arch, gpu_name
from grader.course import Stage


def not_graded_reason(stage: Stage, selection: Selection) -> str | None:
    """Why speed cannot be graded for this stage and backend (None: it can)."""
    if selection.backend.device != "cuda":
        return "needs a GPU"
    if stage.speed is None:
        return "no speed cases in course.toml"
    arch = gpu_arch()
    if stage.speed.threshold(arch, selection.backend.name) is None:
        return (f"no thresholds for {gpu_name()} ({arch}) with {selection.backend.name} in "
                f"course.toml; run `grade calibrate --write` on this GPU")
    return None
