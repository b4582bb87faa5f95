"""The trust boundary: student code runs in a confined child; the grader only reads evidence.

    protocol.py    the wire: JSON and raw tensor bytes, size limits, deadlines, reply shapes
    runner.py      the parent's side: start, ask, check each reply, end everything
    outcomes.py    the records the parent makes of the child's replies
    worker.py      the child's side: confine itself, then load and run the submission
    privileges.py  the least privilege the OS gives: namespaces, user, limits, process tree
    processes.py   the child's environment; waiting for, reaping and killing processes
    filesystem.py  what the child sees: a read-only view of the system, no course secrets
    linux.py       the system calls behind them

and, loaded in the child around the submission (the instrumentation):

    submission.py  loading the student's module and calling it under watch
    launches.py    every kernel launch recorded where Triton and cuTile make it
    host.py        the host watch: what PyTorch the host code may run between launches
    poison.py      fresh allocations poisoned and guarded: unwritten or overrun elements show
    frontends.py   the real compilers' front ends on kernels an interpreter ran
    screening.py   the parent's static check of the source, before it runs

Everything outside this package that touches student code goes through `Runner`; the
README's threat model says what each layer guarantees and what it cannot.
"""

__all__ = ["Outcome", "Protection", "Runner", "probe"]


def __getattr__(name: str):
    # Lazily: the child imports this package before it confines itself, and must not import
    # torch (whose threads would stop it from making a user namespace) by then.
    if name == "Protection":
        from grader.sandbox.privileges import Protection

        return Protection
    if name == "Outcome":
        from grader.sandbox.outcomes import Outcome

        return Outcome
    if name in ("Runner", "probe"):
        from grader.sandbox import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
