"""A real single-node Slurm cluster on this machine, for tests/instructor/test_slurm.py.

munged, slurmctld and slurmd run as the current user (root in CI) with every file in one
temporary folder and ports of their own, so two runs on one machine do not meet. Slurm's
commands find the cluster through SLURM_CONF. Nothing here is part of the grader: on a
real cluster `grade batch --slurm` only calls sbatch, squeue, sacct and scancel.

Accounting: without slurmdbd (and a database behind it) sacct has nothing to read, and
Debian's Slurm 22.05 has no file-based accounting store left. The test cluster runs
without one, as the least a cluster can be, so the grader's fallback (squeue, which knows
finished jobs for MinJobAge seconds) is what is exercised here; MinJobAge is raised so
that no finished task is forgotten while a test runs.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CONFIG = """\
ClusterName=tilecourse-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser={user}
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge.socket
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
# No cgroups in a container: processes tracked through their parents, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
# Quick to kill a task past its time limit, and finished tasks kept in memory long enough.
KillWait=2
MinJobAge=3600
MaxArraySize=1000
SlurmctldTimeout=30
SlurmdTimeout=30
# More CPUs than the machine has, so that a class's tasks start together (the tests'
# slow students sleep; only the honest ones compute): Slurm is told to believe the file.
SlurmdParameters=config_overrides
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def missing() -> str | None:
    """Why a cluster cannot be started here, or None."""
    absent = [d for d in (*DAEMONS, "sbatch", "squeue", "scancel", "scontrol")
              if shutil.which(d) is None and not Path("/usr/sbin", d).exists()]
    if absent:
        return (f"Slurm is not installed here ({', '.join(absent)} not found); "
                "`apt-get install slurm-wlm munge` (.ci/run does) to run this test")
    if os.geteuid() != 0:
        return "slurmd must run as root to start tasks as the submitting user; run as root"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _daemon(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


class Cluster:
    """Started by start(), stopped by stop(); `env` is what Slurm's commands need."""

    def __init__(self, root: Path, cpus: int = 4):
        self.root, self.cpus = root, cpus
        self.host = subprocess.run(["hostname", "-s"], capture_output=True, text=True,
                                   check=True).stdout.strip()
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.processes: list[subprocess.Popen] = []

    def start(self, timeout: float = 60) -> None:
        for folder in ("state", "spool", "munge"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "munge", 0o700)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))  # a fresh key: this cluster trusts no other
        os.chmod(key, 0o400)
        self.conf.write_text(CONFIG.format(host=self.host, root=self.root, cpus=self.cpus,
                                           user=os.environ.get("USER") or "root",
                                           ctld_port=_free_port(), d_port=_free_port()))
        self._spawn([_daemon("munged"), "--foreground", "--force",
                     f"--socket={self.root}/munge.socket", f"--key-file={key}",
                     f"--log-file={self.root}/munged.log", f"--pid-file={self.root}/munged.pid",
                     f"--seed-file={self.root}/munge/seed"])
        self._wait(lambda: (self.root / "munge.socket").exists(), timeout, "munged")
        # -i: a fresh state folder has nothing to recover; -D: stay in the foreground.
        self._spawn([_daemon("slurmctld"), "-D", "-i", "-f", str(self.conf)])
        self._wait(lambda: self._ok(["scontrol", "ping"], "UP"), timeout, "slurmctld")
        self._spawn([_daemon("slurmd"), "-D", "-N", self.host, "-f", str(self.conf)])
        self._wait(lambda: self._ok(["sinfo", "-h", "-o", "%t"], "idle"), timeout, "slurmd")

    def _spawn(self, command: list[str]) -> None:
        log = (self.root / f"{Path(command[0]).name}.stdout").open("w")
        self.processes.append(subprocess.Popen(command, env=self.env, stdout=log,
                                               stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL))

    def _ok(self, command: list[str], wanted: str) -> bool:
        done = subprocess.run(command, env=self.env, capture_output=True, text=True)
        return done.returncode == 0 and wanted in done.stdout

    def _wait(self, ready, timeout: float, name: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [p for p in self.processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start: {self.logs()}")
            time.sleep(0.2)

    def logs(self) -> str:
        files = sorted(self.root.glob("*.log")) + sorted(self.root.glob("*.stdout"))
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in files)

    def squeue(self) -> dict[str, str]:
        """Every task the controller knows: {"12_3": "RUNNING", ...}."""
        done = subprocess.run(["squeue", "-h", "-r", "--states=all", "-o", "%i %T"], env=self.env,
                              capture_output=True, text=True, check=True)
        return dict(line.split() for line in done.stdout.splitlines())

    def stop(self) -> None:
        """Cancel what still runs, then stop the daemons in the reverse order of their
        start, and reap them."""
        if self.processes:
            subprocess.run(["scancel", "--full", "--user", str(os.getuid())], env=self.env,
                           capture_output=True)
            deadline = time.monotonic() + 30
            busy = {"RUNNING", "COMPLETING"}
            while time.monotonic() < deadline and busy & set(self.squeue().values()):
                time.sleep(0.5)
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
