"""What Slurm says about the tasks of an array: Slurm's accounting (sacct) where the cluster
keeps it, else the controller's queue (squeue).

sacct is the record a cluster keeps of every job, finished ones too, with why each ended
("CANCELLED by 1234", "TIMEOUT", "NODE_FAIL"). Without slurmdbd there is no such record
(sacct answers "accounting storage is disabled"); then squeue --states=all, which lists
finished jobs too, for as long as the controller keeps them (MinJobAge, 300 s by
default: the login node looks far more often than that). A task that neither knows
for a few looks in a row is reported as forgotten, never waited for forever.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "BOOT_FAIL",
         "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"}
FORGET_AFTER = 3  # looks in a row without a word of a task before it counts as forgotten


@dataclass(frozen=True)
class TaskState:
    name: str  # PENDING, RUNNING, COMPLETED, TIMEOUT, CANCELLED, ...
    text: str  # as Slurm wrote it, with its reason: "CANCELLED by 0", "PENDING (Priority)"

    @property
    def ended(self) -> bool:
        return self.name in ENDED


FORGOTTEN = TaskState("FORGOTTEN", "Slurm no longer knows this task (the cluster keeps no "
                                   "accounting, so finished tasks are forgotten after MinJobAge)")


def task_ids(field: str) -> list[str]:
    """`123_4` as it is; `123_[0-3,7%2]` (tasks not started yet, in one line) one by one."""
    found = re.fullmatch(r"(\d+)_\[([\d,\-]+)(?:%\d+)?\]", field)
    if not found:
        return [field]
    job, ranges = found.groups()
    ids = []
    for part in ranges.split(","):
        first, _, last = part.partition("-")
        ids += [f"{job}_{i}" for i in range(int(first), int(last or first) + 1)]
    return ids


def parse_sacct(text: str) -> dict[str, TaskState]:
    """`sacct --parsable2 -n -X --format=JobID,State` lines."""
    states = {}
    for line in text.splitlines():
        if "|" not in line:
            continue
        job, state = line.split("|")[:2]
        for task in task_ids(job):
            states[task] = TaskState(state.split()[0].rstrip("+"), state)
    return states


def parse_squeue(text: str) -> dict[str, TaskState]:
    """`squeue -h -r --states=all -o %i|%T|%r` lines."""
    states = {}
    for line in text.splitlines():
        if line.count("|") < 2:
            continue
        job, state, reason = line.split("|", 2)
        shown = state if reason in ("", "None") else f"{state} ({reason})"
        for task in task_ids(job):
            states[task] = TaskState(state, shown)
    return states


class SlurmStateReader:
    """Reads the tasks' states; counts the looks that missed a task."""

    def __init__(self):
        self.accounting: bool | None = None  # unknown until sacct has been asked once
        self.misses: dict[str, int] = {}

    def read(self, jobs: list[str]) -> dict[str, TaskState]:
        queue = {k: v for job in jobs for k, v in self._squeue(job).items()}
        # sacct learns of a job's end a moment after the controller: of the two, the one
        # that has seen the end tells, and sacct otherwise (it says why: "CANCELLED by 0").
        record = self._sacct(jobs) if self.accounting is not False else {}
        for task, state in record.items():
            if state.ended or not queue.get(task, state).ended:
                queue[task] = state
        return queue

    def state(self, states: dict[str, TaskState], task: str) -> TaskState | None:
        """The task's state in `states`, FORGOTTEN after FORGET_AFTER misses in a row."""
        if task in states:
            self.misses.pop(task, None)
            return states[task]
        self.misses[task] = self.misses.get(task, 0) + 1
        return FORGOTTEN if self.misses[task] >= FORGET_AFTER else None

    def _sacct(self, jobs: list[str]) -> dict[str, TaskState]:
        done = subprocess.run(["sacct", "--parsable2", "-n", "-X", "--format=JobID,State",
                               "-j", ",".join(jobs)], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            # "Slurm accounting storage is disabled", or slurmdbd down: the queue tells.
            self.accounting = False if "disabled" in done.stderr else self.accounting
            return {}
        self.accounting = True
        return parse_sacct(done.stdout)

    def _squeue(self, job: str) -> dict[str, TaskState]:
        done = subprocess.run(["squeue", "-h", "-r", "--states=all", "-o", "%i|%T|%r",
                               "-j", job], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        # A job the controller has forgotten makes squeue fail ("Invalid job id"): no news,
        # so one job is asked at a time, and a forgotten one hides none of the others.
        return parse_squeue(done.stdout) if done.returncode == 0 else {}
