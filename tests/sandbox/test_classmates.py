"""Students apart: what one student's grading leaves behind, the next one's cannot find.

Two students hand in tests/attacks/triton/stage1_leaves_traces_for_a_classmate.py, which
looks for a classmate's trace of every kind (files, message queues, semaphores, System V
objects, abstract sockets, processes, keys) and fails its stage if it finds one, then leaves
one of each kind. `grade batch --jobs 1` grades them one after the other on a host like
Docker's or a systemd machine's: /dev/mqueue mounted (the host's message queues, which any
process that sees the folder may create), and a session keyring every process inherits. The
second must find nothing and keep its points. This machine need not be such a host: the
batch runs in a mount and IPC namespace of the test's own, with a /dev copied onto a tmpfs
that holds an mqueue mount, and in a session keyring of its own.
"""

import csv
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import pytest
from conftest import RELAXED_RULES, ROOT, vector_add_course

from grader.sandbox import devices, linux, mounts

ATTACK = ROOT / "tests/attacks/triton/stage1_leaves_traces_for_a_classmate.py"
ROOTED = os.geteuid() == 0
MS_MOVE = 8192
KEYCTL_JOIN_SESSION_KEYRING = 1
# What the first student can always leave in its own sandbox (so the second's finding nothing
# says something): each lives in a namespace or a tmpfs of the first one's own.
ALWAYS_LEFT = ("a file in /tmp", "a file in /dev/shm", "a POSIX message queue",
               "a named semaphore", "System V shared memory", "an abstract socket", "a process")


def _host_like_docker() -> None:
    """Run in the batch's process before it starts: a mount and IPC namespace of its own,
    whose /dev is the machine's with an mqueue mount added, and a session keyring of its own
    (a login's pam_keyinit gives one) that the grader's processes inherit."""
    linux.unshare(linux.CLONE_NEWNS | linux.CLONE_NEWIPC)
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    dev = tempfile.mkdtemp(prefix="tilecourse-dev-")
    linux.mount("tmpfs", dev, "tmpfs", 0, "mode=0755")
    for entry in os.scandir("/dev"):
        target = os.path.join(dev, entry.name)
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), target)
            continue
        if entry.is_dir():
            os.mkdir(target)
        else:
            open(target, "w").close()
        linux.mount(entry.path, target, None, linux.MS_BIND | linux.MS_REC)
    os.makedirs(os.path.join(dev, "mqueue"), exist_ok=True)
    linux.mount("mqueue", os.path.join(dev, "mqueue"), "mqueue",
                linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    linux.mount(dev, "/dev", None, MS_MOVE)
    os.rmdir(dev)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(250, KEYCTL_JOIN_SESSION_KEYRING, b"tilecourse-class") < 0:  # x86_64
        raise OSError(ctypes.get_errno(), "keyctl join")


@pytest.mark.skipif(not ROOTED, reason="making a host with /dev/mqueue mounted needs root")
def test_a_student_finds_nothing_a_classmate_left(tmp_path):
    course = tmp_path / "course.toml"
    course.write_text(vector_add_course('[ { n = 1000, dtypes = ["float32"] } ]',
                                        rules=RELAXED_RULES), encoding="utf-8")
    for name in ("ada", "bob"):  # graded in this order
        (tmp_path / "subs" / name / "triton").mkdir(parents=True)
        (tmp_path / "subs" / name / "triton/stage1_vector_add.py").write_text(ATTACK.read_text())
    out = tmp_path / "grades"
    batch = [sys.executable, "-m", "grader", "--course", str(course), "batch",
             str(tmp_path / "subs"), "--out", str(out), "--backend", "triton-interpret",
             "--seed", "11", "--jobs", "1"]
    # Before and after the batch, in the same namespace: the host's queue folder.
    script = ('echo "mqueue mounts: $(grep -c " /dev/mqueue .* mqueue " /proc/self/mountinfo)"; '
              '"$@" > "$LOG" 2>&1; echo "queues: $(ls -A /dev/mqueue)"')
    run = subprocess.run(["sh", "-c", script, "sh", *batch], cwd=ROOT, capture_output=True,
                         text=True, timeout=600, preexec_fn=_host_like_docker,
                         env={**os.environ, "COLUMNS": "200", "LOG": str(tmp_path / "batch.log")})
    said = dict(line.split(": ", 1) for line in run.stdout.splitlines() if ": " in line)
    log = (tmp_path / "batch.log").read_text()
    assert said.get("mqueue mounts") == "1", f"no /dev/mqueue on the host:\n{run.stdout}{run.stderr}"
    assert said.get("queues") == "", f"a queue outlived the batch: {said.get('queues')}\n{log}"
    rows = {r["student"]: r for r in csv.DictReader(
        (out / "gradebook.csv").open(encoding="utf-8-sig"))}
    printed = {name: json.loads((out / "students" / f"{name}.json").read_text())
               ["stages"][0]["output"] for name in ("ada", "bob")}
    for name in ("ada", "bob"):
        assert "found: nothing" in printed[name], printed[name]
        assert float(rows[name]["vector_add"]) == 10, (rows[name], printed[name])
    left = next(line for line in printed["ada"].splitlines() if "left: " in line)
    assert all(kind in left for kind in ALWAYS_LEFT), left
    assert "a file in /dev/mqueue" not in left and "keyring" not in left, left



def test_the_child_sees_a_dev_of_its_own_and_writes_only_its_own_mounts(grade_source):
    source = (ROOT / "solutions/triton/stage1_vector_add.py").read_text().replace(
        "    out = torch.empty_like(x)\n", """    import os
    print("dev:", " ".join(sorted(os.listdir("/dev"))))
    with open("/proc/self/mountinfo") as table:
        print("writable:", " ".join(sorted(line.split()[4] for line in table
                                           if "rw" in line.split()[5].split(","))))
    out = torch.empty_like(x)
""", 1)
    result = grade_source("vector_add", source, course_toml=vector_add_course(
        '[ { n = 1000, dtypes = ["float32"] } ]', rules=RELAXED_RULES))
    said = dict(line.split(": ", 1) for line in result.output.splitlines() if ": " in line)
    seen = set(said["dev"].split())
    assert {"null", "zero", "urandom", "shm", "fd", "stdout"} <= seen, seen
    others = {n for n in seen if not n.startswith(devices.GPU_PREFIXES)} - set(devices.NODES) \
        - set(devices.LINKS) - {"pts", "ptmx", "shm"}
    assert not others, f"the child's /dev holds {others}"
    writable = set(said["writable"].split())
    assert {"/tmp", "/dev/shm", "/proc"} <= writable, writable
    assert not {p for p in writable if p not in mounts.OWN and not p.endswith("/work")}, writable


def test_a_shared_kind_in_a_window_refuses_the_start(tmp_path):
    """A host mount of message queues turned up inside a folder the child is shown (/opt,
    here in a mount namespace of the test's own): the sandbox does not start, and the stage
    is the grader's error, not the student's."""
    course = tmp_path / "course.toml"
    course.write_text(vector_add_course('[ { n = 1000, dtypes = ["float32"] } ]'))
    assert os.path.isdir("/opt"), "this test mounts a tmpfs over /opt"
    (tmp_path / "student/triton").mkdir(parents=True)
    (tmp_path / "student/triton/stage1_vector_add.py").write_text(
        (ROOT / "solutions/triton/stage1_vector_add.py").read_text())
    grade = [sys.executable, "-m", "grader", "--course", str(course), "1", "--submission",
             str(tmp_path / "student"), "--backend", "triton-interpret", "--json",
             str(tmp_path / "r.json")]
    script = ("mount -t tmpfs tmpfs /opt && mkdir /opt/queues && "
              'mount -t mqueue mqueue /opt/queues && exec "$@"')
    run = subprocess.run(["unshare", "--mount", "--ipc", "--propagation", "private", "sh", "-c",
                          script, "sh", *grade], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "COLUMNS": "300"})
    stage = json.loads((tmp_path / "r.json").read_text())["stages"][0]
    assert stage["status"] == "ERROR", run.stdout + run.stderr
    assert ("the sandbox refused to start: `/opt/queues shows the host's mqueue, which every "
            "process that sees it shares: unmount it on this machine`") in stage["message"]
    assert "Traceback" not in run.stdout + run.stderr


def test_the_mount_table_is_read_as_the_kernel_writes_it(tmp_path):
    table = tmp_path / "mountinfo"
    table.write_text(
        "20 1 0:5 / / ro,nosuid - tmpfs tmpfs rw\n"
        "21 20 0:6 / /tmp rw,nosuid - tmpfs tmpfs rw\n"
        "22 20 8:1 /srv /my\\040folder rw shared:1 master:2 - ext4 /dev/sda1 rw\n"
        "23 20 8:1 /etc /etc ro - ext4 /dev/sda1 rw\n"
        "24 20 8:1 /etc /etc rw - ext4 /dev/sda1 ro\n"  # on top of the last; its block is ro
        "25 20 0:7 / /opt/q rw - mqueue mqueue rw\n")
    found = {m.point: m for m in mounts.table(str(table))}
    assert list(found) == ["/", "/tmp", "/my folder", "/etc", "/opt/q"]
    assert [found[p].writable for p in found] == [False, True, True, False, True]
    assert found["/my folder"].kind == "ext4" and found["/opt/q"].kind == "mqueue"
    assert mounts.own(found["/tmp"], "/s/work") and not mounts.own(found["/my folder"], "/s/work")


def test_a_writable_mount_that_cannot_be_sealed_refuses_the_start(monkeypatch):
    monkeypatch.setattr(mounts, "table", lambda: [mounts.Mount("/", "tmpfs", False),
                                                  mounts.Mount("/srv", "ext4", True)])

    def refused(path):
        raise OSError(1, "remount: Operation not permitted")

    monkeypatch.setattr(mounts.linux, "remount_read_only", refused)
    with pytest.raises(mounts.Unsealed, match="/srv .ext4. is writable and could not be made"):
        mounts.seal("/s/work")
