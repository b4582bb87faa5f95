"""The memory check (flash attention's): the extra GPU memory of one replayed call at two
sizes of the problem, which must grow as the stage intends (linearly, not as N x N)."""

from __future__ import annotations

from grader.backends.selection import Selection
from grader.course import Stage
from grader.judge.misconduct import proposal_misconduct
from grader.results import CheckResult
from grader.sandbox import ChildProcess


def memory_check(stage: Stage, selection: Selection, child: ChildProcess, seed: int) -> CheckResult:
    """The extra memory of a call must grow with the problem as the stage intends."""
    name = "memory growth"
    if selection.backend.device != "cuda":
        return CheckResult(name, False, False, "not graded: needs a GPU")
    rule = stage.memory_growth
    small, large, limit = rule.small.params, rule.large.params, rule.max_growth
    sizes = []
    for case in (rule.small, rule.large):
        proposed = child.record(stage.problem.id, dict(case.params), case.dtype, seed)
        refused = proposal_misconduct(proposed, selection.backend.track)
        if refused:
            return CheckResult(name, True, False, f"could not be measured: {refused.report}")
        used, error = child.replay_process.memory(stage.problem.id, dict(case.params),
                                                  case.dtype, seed, proposed.proposal)
        if error:
            return CheckResult(name, True, False, f"could not be measured: {error}")
        sizes.append(max(used, 1))
    growth = sizes[1] / sizes[0]
    shown = f"{sizes[0] / 2**20:.1f} MiB -> {sizes[1] / 2**20:.1f} MiB ({growth:.1f}x)"
    changed = ", ".join(f"{k} {small[k]} -> {large[k]}" for k in small if small[k] != large[k])
    if growth > limit:
        return CheckResult(name, True, False, f"extra GPU memory grew {shown} for {changed}: more "
                           f"than {limit:g}x means something of size N x N is being stored")
    return CheckResult(name, True, True, f"extra GPU memory grew {shown} for {changed}")
