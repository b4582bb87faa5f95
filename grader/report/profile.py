"""`grade --profile`: where a grading's time went, stage by stage, by the grader's clock.

Each stage's phases (grader.results.StageResult.phases): starting the submission's
processes and loading it, the correctness cases and, below them, their parts (recording the
call, drawing the inputs and the reference, the replay, judging the output, the wait for
what ran beside the cases before the hidden ones, pytest's own work), the compile and
memory checks, the speed trials and their parts (every stage settled, recording the calls,
the baselines timed alone, the GPU's ceilings, building and warming up, the baseline's
warm-up, then the timed batches: the first ones, not counted, the baseline's, the replay's,
the outputs fetched and those checked; pytest's own work), ending the processes; for a
stage readied beside an earlier one (on a GPU), that readying (its processes started, its
calls recorded for their kernels to build ahead), done in the earlier stage's turn and not
counted in its own. Below a phase's parts, what none of them holds (the seconds still to
explain); what no phase holds is the rest of the stage (opening the speed check, the
results). The caption: the whole run, and how long the command had run by then, before the
run (starting Python, imports, choosing the backend, reading the course) and after it (the
results written and shown), which the grader's clock cannot see. Every figure, the
caption's too, leaves out the time of anything done with a hidden case's inputs
(grader.shown_clock), which would tell them.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table

from grader.results import PHASE_PART, READIED, Report

NOT_IN_A_PART = "not in a part"  # a phase's seconds outside the parts it names
ORDER = ("start processes, load", "correctness cases", "compile check", "memory check",
         "speed", "end processes", READIED)


def phase_names(report: Report) -> list[str]:
    """The phases any stage has, in the order grading goes through them, each one's parts
    below it (in the order they were first recorded)."""
    seen = list(dict.fromkeys(name for stage in report.stages for name in stage.phases))
    top = [name for name in ORDER if name in seen]
    top += sorted(name for name in seen if PHASE_PART not in name and name not in top)
    parts = [name for name in seen if PHASE_PART in name]
    return [shown for name in top
            for shown in [name, *(p for p in parts if p.startswith(name + PHASE_PART))]] + \
        [p for p in parts if p.partition(PHASE_PART)[0] not in top]


@dataclass(frozen=True)
class CommandSeconds:
    """The command's own clock (the kernel's record of its process's start): how long it
    had run when the grading began, and by the time the table is shown."""

    before_run: float
    so_far: float


def profile_table(report: Report, command: CommandSeconds | None = None) -> Table:
    """Seconds per phase (rows) and stage (columns), with each stage's whole and the run's;
    `command`: the seconds of the command around the run (None where none are known)."""
    table = Table(title="where the time went (seconds, the grader's clock)", title_justify="left")
    table.add_column("phase")
    for stage in report.stages:
        table.add_column(f"{stage.number} {stage.id}", justify="right")
    table.add_column("all", justify="right")
    names = phase_names(report)
    for index, name in enumerate(names):
        shown = f"  {name.partition(PHASE_PART)[2]}" if PHASE_PART in name else name
        values = [stage.phases.get(name) for stage in report.stages]
        _row(table, shown, values)
        top = name.partition(PHASE_PART)[0]
        following = names[index + 1] if index + 1 < len(names) else ""
        if PHASE_PART in name and not following.startswith(top + PHASE_PART):
            _row(table, f"  {NOT_IN_A_PART}", [_outside_parts(s.phases, top)
                                              for s in report.stages])
    # A stage readied beside an earlier one spent those seconds in the earlier one's turn.
    counted = [sum(v for k, v in s.phases.items() if PHASE_PART not in k and k != READIED)
               for s in report.stages]
    table.add_row("rest of the stage", *(_seconds(max(0.0, s.seconds - c))
                                         for s, c in zip(report.stages, counted)),
                  _seconds(sum(max(0.0, s.seconds - c) for s, c in zip(report.stages, counted))))
    table.add_row("stage", *(_seconds(s.seconds) for s in report.stages),
                  _seconds(sum(s.seconds for s in report.stages)), style="bold")
    table.caption = f"the whole run: {report.seconds:.1f} s"
    if command is not None:
        after = max(0.0, command.so_far - command.before_run - report.seconds)
        table.caption += (f"; the command so far: {command.so_far:.1f} s, "
                          f"{command.before_run:.1f} s of it before the run (starting Python, "
                          "imports, choosing the backend, reading the course) and "
                          f"{after:.1f} s after it (the results written and shown)")
    return table


def _row(table: Table, shown: str, values: list[float | None]) -> None:
    table.add_row(shown, *(_seconds(v) for v in values),
                  _seconds(sum(v for v in values if v is not None)))


def _outside_parts(phases: dict[str, float], top: str) -> float | None:
    """The seconds of phase `top` that none of its parts holds (None: no such phase)."""
    if top not in phases:
        return None
    parts = sum(v for k, v in phases.items() if k.startswith(top + PHASE_PART))
    return max(0.0, phases[top] - parts)


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"
