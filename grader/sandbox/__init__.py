"""The trust boundary: student code runs in a confined child; the grader only reads evidence.

    confined.py    the grader's side of one confined process: start, ask, check, end it
    spares.py      workers ready at once: forks of a template whose imports are done
    child.py       the child: the submission's wrapper, its launches recorded, none run
    replayer.py    the replay: the submission's kernels run on the recorded launches
    builder.py     on a GPU, the builder: the replay's kernels compiled apart from its clock
                   (each of the three: the process's side of every request, the grader's
                   side, and the shape of each reply between them)
    outcomes.py    the records the grader makes of the processes' replies
    worker.py      a process's start: confine itself, then answer requests one at a time
    roles.py       what every role of worker shares (its process's side)
    privileges.py  the least privilege the OS gives: namespaces, user, limits, process tree
    processes.py   a worker's environment; waiting for, reaping and killing processes
    filesystem.py  what a worker sees: a read-only view of the system, no course secrets
    linux.py       the system calls behind them

and, loaded in the child around the submission (the instrumentation):

    submission.py  loading the student's module and recording one call of its wrapper
    launches.py    the session that every launch is proposed to, from each language's hook
    recorder.py    the call written down as a proposal (grader.replay.proposal)
    host.py        the host watch: what PyTorch the host code runs, for its messages
    screening.py   the parent's static check of the source, before it runs

(the wire itself is grader.protocol; the replay's kernels, front ends and poisoned memory
are grader.replay)

Everything outside this package that touches student code goes through `ChildProcess`
(which owns the submission's replay process); the threat model (docs/integrity.md) says what each layer guarantees and what it cannot.
"""

__all__ = ["Outcome", "Protection", "ChildProcess", "keep_warm", "probe"]


def __getattr__(name: str):
    # Lazily: a worker imports this package for its confinement, which needs none of the
    # grader's side (and none of torch's threads where it makes a user namespace).
    if name == "Protection":
        from grader.sandbox.privileges import Protection

        return Protection
    if name == "Outcome":
        from grader.sandbox.outcomes import Outcome

        return Outcome
    if name == "ChildProcess":
        from grader.sandbox.child import ChildProcess

        return ChildProcess
    if name == "keep_warm":
        from grader.sandbox.spares import keep_warm

        return keep_warm
    if name == "probe":
        from grader.sandbox.confined import probe

        return probe
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
