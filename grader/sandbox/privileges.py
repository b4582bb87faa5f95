"""The least privilege the operating system can give the worker, and what it says it gave.

The worker process confines itself before any student code is imported (`confine`), in
three processes:

    bootstrap   started by the grader; makes the namespaces, then waits. Killing it (the
      |         grader's close) ends everything below it.
    init        PID 1 of the worker's own PID namespace: builds the file system view
      |         (grader.sandbox.filesystem), reaps, and ends the namespace when the worker
      |         ends; the kernel then kills every process the submission started.
    worker      drops to an unprivileged user (or, for an ordinary user, drops the
                capabilities of its user namespace), sets resource limits and no_new_privs,
                and only then loads the submission.

Each layer is tried; one the kernel refuses (a container without CAP_SYS_ADMIN, a kernel
without unprivileged user namespaces) falls back to a weaker one, and `Protection` records
say which are in force. The worker reports them before any student code runs, so the
report is the grader's own code speaking.
"""

from __future__ import annotations

import os
import platform
import resource
import signal
import sys
from dataclasses import asdict, dataclass, field

from grader.sandbox import filesystem, linux, mounts, processes, users

LIMITS = {  # resource -> (value, how the scorecard says it)
    "RLIMIT_NPROC": (4096, "4096 processes and threads"),
    "RLIMIT_NOFILE": (4096, "4096 open files"),
    "RLIMIT_FSIZE": (256 << 20, "256 MiB per file"),
    "RLIMIT_CORE": (0, "no core dumps"),
}
# Without these, one student's code could read another's submission or outlive its grading:
# `grade batch` refuses to grade a class without them unless told otherwise.
NEEDED_FOR_A_CLASS = ("private file system", "process tree ends with it",
                      "nothing shared between gradings")
_NAMESPACES = linux.CLONE_NEWNS | linux.CLONE_NEWPID | linux.CLONE_NEWNET | linux.CLONE_NEWIPC \
    | linux.CLONE_NEWUTS


class StartRefused(Exception):
    """The view was built but could not be sealed (grader.sandbox.mounts): the worker says
    so instead of starting."""


@dataclass
class Protection:
    name: str
    in_force: bool
    detail: str  # how it is enforced, or why not and how to get it


@dataclass
class PrivilegePlan:
    """What the parent asks of the worker: its view, and where its folders are."""

    view: filesystem.View
    essential: list[str] = field(default_factory=list)  # must stay readable after the drop

    def to_json(self) -> dict:
        return {"view": self.view.to_json(), "essential": self.essential}

    @classmethod
    def from_json(cls, data: dict) -> "PrivilegePlan":
        return cls(filesystem.View.from_json(data["view"]), data["essential"])


def essential_paths() -> list[str]:
    """What the worker cannot run without: the standard library, site-packages, the grader."""
    import grader

    return sorted({os.path.dirname(os.__file__), os.path.dirname(grader.__file__),
                   *(p for p in sys.path if p.endswith("-packages"))})


class _Confinement:
    def __init__(self, plan: PrivilegePlan):
        self.plan = plan
        self.root = os.geteuid() == 0
        self.flags = 0  # the namespaces this child lives in
        self.uid: int | None = None
        self.protections: dict[str, Protection] = {}
        self.notes: list[str] = []
        self.refusal: str | None = None  # why the view, once built, could not be used
        self.keys: str | None = None  # why the key calls could not be refused, if so

    def say(self, name: str, in_force: bool, detail: str) -> None:
        self.protections[name] = Protection(name, in_force, detail)

    # --- bootstrap ---------------------------------------------------------------------

    def namespaces(self) -> None:
        if self.root:
            self.uid = users.own_uid(os.getpid())
        tries = [_NAMESPACES, linux.CLONE_NEWNS | linux.CLONE_NEWPID]
        if not self.root:
            tries = [f | linux.CLONE_NEWUSER for f in tries]
        reasons = []
        for flags in tries:
            try:
                linux.unshare(flags)
            except OSError as exc:
                reasons.append(f"unshare: {os.strerror(exc.errno)}" if exc.errno else str(exc))
                continue
            self.flags = flags
            if flags & linux.CLONE_NEWUSER:
                try:
                    users.map_own_ids()
                except OSError as exc:  # e.g. AppArmor's restriction of user namespaces
                    self.notes.append(f"the user namespace is restricted: {exc.strerror}")
            return
        self.notes.append("; ".join(dict.fromkeys(reasons)))

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)

    # --- init --------------------------------------------------------------------------

    def view(self) -> bool:
        """Build the file system view; False when this child sees the host's."""
        view = self.plan.view
        owner = self.uid if self.uid is not None else os.getuid()
        if self.has(linux.CLONE_NEWNS):
            try:
                filesystem.build(view, owner)
                return True
            except mounts.Unsealed as exc:  # the root is switched: there is no way back
                self.refusal = str(exc)
                return True
            except OSError as exc:  # what was mounted stays in this namespace, unused
                self.notes.insert(0, f"the view could not be built: {exc}")
        # No view: the scratch folder is a plain folder of the host.
        os.makedirs(view.scratch, mode=0o700, exist_ok=True)
        if self.uid is not None:
            os.chown(view.scratch, self.uid, self.uid)
        return False

    # --- worker ------------------------------------------------------------------------

    def limits(self) -> list[str]:
        applied = []
        for name, (value, said) in LIMITS.items():
            if name == "RLIMIT_NPROC" and not self._nproc_counts_only_this_child():
                continue
            kind = getattr(resource, name)
            _, hard = resource.getrlimit(kind)
            if hard != resource.RLIM_INFINITY and hard < value:
                value, said = hard, f"{said} (lowered to {hard} by this machine)"
            resource.setrlimit(kind, (value, value))
            applied.append(said)
        return applied

    def _nproc_counts_only_this_child(self) -> bool:
        # The count is per user: only a user of its own, or a user namespace of its own on
        # a kernel that counts per namespace (5.14+), keeps other processes out of it.
        if self.uid is not None:
            return True
        release = tuple(int(p) for p in platform.release().split(".")[:2] if p.isdigit())
        return self.has(linux.CLONE_NEWUSER) and release >= (5, 14)

    def drop(self) -> str | None:
        """Give up every privilege; returns why the user could not be changed, if so."""
        why_not = None
        if self.uid is not None:
            unreachable = [p for p in self.plan.essential if not users.others_can_read(p)]
            if unreachable:
                why_not = (f"{unreachable[0]} cannot be read by other users, and without a "
                           "mount namespace the grader cannot show it to one")
                self.uid = None
            else:
                os.setgroups(users.device_groups())
                os.setgid(self.uid)
                os.setuid(self.uid)
        elif self.root:
            why_not = "no user id could be picked"
        if self.has(linux.CLONE_NEWUSER):
            linux.drop_capabilities()
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        try:
            linux.refuse_key_calls()
        except OSError as exc:
            self.keys = exc.strerror
        return why_not

    def report(self, viewed: bool, limits: list[str], why_not_user: str | None) -> list[Protection]:
        who = os.getuid()
        if self.uid is not None:
            self.say("separate user", True, f"the submission runs as user id {self.uid}, which "
                     "owns nothing on this machine but its scratch folder")
        elif why_not_user:
            self.say("separate user", False, f"{why_not_user}: the submission runs as root")
        else:
            self.say("separate user", False, f"the grader runs as an ordinary user (uid {who}), "
                     "so the submission runs as you; run grade as root (CI, a container) to "
                     "give it a user of its own")
        weak = self.notes[0] if self.notes else "refused"
        if viewed:
            self.say("private file system", True, "it sees the system folders, Python and the "
                     "grader read-only, its own submission and a private scratch folder; "
                     "solutions/, course.hidden.toml, other submissions and results are not there")
        elif self.uid is not None:
            exposed = [h for h in self.plan.view.hidden
                       if os.path.exists(h) and users.others_can_read(h)]
            reach = (f"{', '.join(exposed)} can be read by every user, so by the submission too "
                     "(chmod them 600)" if exposed else "nothing hidden is readable by other users")
            self.say("private file system", False, f"no mount namespace ({weak}): it can read what "
                     f"every user can and write where every user can (such as /tmp); {reach}")
        else:
            self.say("private file system", False, f"no mount namespace ({weak}): it can read and "
                     "write whatever the grader can")
        if self.has(linux.CLONE_NEWNET):
            self.say("no network", True, "its own network namespace, without interfaces")
        else:
            self.say("no network", False, f"no network namespace ({weak})")
        if self.has(linux.CLONE_NEWPID):
            self.say("process tree ends with it", True, "its own PID namespace: every process it "
                     "starts is killed when grading ends, before any result is written")
        elif self.uid is not None:
            self.say("process tree ends with it", True, "every process of its user id is killed "
                     "when grading ends, before any result is written")
        else:
            self.say("process tree ends with it", False, "its processes are collected and killed "
                     "at the end, but one that kills the grader's helper first can outlive it")
        self.say("resource limits", bool(limits), ", ".join(limits))
        self.say("no privilege gain", True, "no_new_privs: set-user-id programs give it nothing")
        self._shared(viewed)
        return list(self.protections.values())

    def _shared(self, viewed: bool) -> None:
        """Whether anything one grading leaves could reach another: the kernel objects that
        outlive a process or are named across processes."""
        shared = [what for flag, what in (
            (linux.CLONE_NEWIPC, "the host's message queues, semaphores and shared memory"),
            (linux.CLONE_NEWNET, "the host's abstract sockets")) if not self.has(flag)]
        if not viewed:
            shared.append("the host's /dev and /tmp")
        if self.keys:
            shared.append(f"keyrings (their calls could not be refused: {self.keys})")
        if shared:
            self.say("nothing shared between gradings", False, "it can reach " + "; ".join(shared))
        else:
            self.say("nothing shared between gradings", True, "its own IPC and network "
                     "namespaces, a /dev of its own without the host's message queues, no "
                     "mount but its own writable, and no keyrings: nothing it leaves outlives "
                     "its grading or reaches another")


def confine(plan: PrivilegePlan) -> list[Protection]:
    """Confine this process (see the module docstring); returns only in the worker."""
    c = _Confinement(plan)
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    c.namespaces()
    init = os.fork()
    if init:
        _supervise(init, c)
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    viewed = c.view()
    if not c.has(linux.CLONE_NEWPID):
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)  # orphans come to init, to be killed
    worker = os.fork()
    if worker:
        _reap(worker, c)
    if c.refusal:
        raise StartRefused(c.refusal)
    limits = c.limits()
    why_not = c.drop()
    parent = os.getppid()
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # a change of user cleared it
    if os.getppid() != parent:
        os._exit(1)
    os.chdir(plan.view.scratch)
    return c.report(viewed, limits, why_not)


def _supervise(init: int, c: _Confinement) -> None:
    """The bootstrap: wait for init; on SIGTERM (the grader closing) end it; never returns."""
    def stop(signum, frame):
        processes.kill(init, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    status = processes.wait(init)
    if not c.has(linux.CLONE_NEWPID) and c.uid is not None:
        processes.kill_user(c.uid)
    os._exit(status)


def _reap(worker: int, c: _Confinement) -> None:
    """Init: reap every child; when the worker ends, end everything; never returns."""
    def stop(signum, frame):
        _end(c, 128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    _kill_on_exit = processes.wait(worker, reap_all=True)
    _end(c, _kill_on_exit)


def _end(c: _Confinement, status: int) -> None:
    if not c.has(linux.CLONE_NEWPID):  # else the kernel ends the namespace with init
        for _ in range(100):
            children = processes.children()
            if not children:
                break
            for pid in children:
                processes.kill(pid, signal.SIGKILL)
            while processes.reap_one():
                pass
    os._exit(status)


def protections_json(protections: list[Protection]) -> list[dict]:
    return [asdict(p) for p in protections]
