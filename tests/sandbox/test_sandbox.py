"""The trust boundary, attacked the way a student who has read grader/ would.

Each submission below tries to get around one protection of grader/sandbox; each must fail
its stage with its own message, and the honest reference must keep its points. The tests
run as root in CI, so the child runs as a user of its own in its own namespaces; the last
tests grade as an ordinary user and as a root without CAP_SYS_ADMIN, and check what the
scorecard says is and is not in force.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import RELAXED_RULES, ROOT, copy_course, failure_text, relax, vector_add_course

from grader.grading import pytest_run
from grader.results import Status
from grader.sandbox import privileges, probe, users

VECTOR_ADD = (ROOT / "solutions/triton/stage1_vector_add.py").read_text()
SOLUTION = ROOT / "solutions/triton/stage1_vector_add.py"
# The attacks import what the static check forbids (grader/sandbox/screening.py): these courses leave
# that speed bump out, to test the walls behind it.
TWO_CASES = vector_add_course('[ { n = 1000, dtypes = ["float32"] }, { n = 5, dtypes = ["float32"] } ]',
                              rules=RELAXED_RULES)
ONE_CASE = vector_add_course('[ { n = 1000, dtypes = ["float32"] } ]', rules=RELAXED_RULES)
ROOTED = os.geteuid() == 0

# Runs the reference found at SOLUTION's path, if the submission could read it.
STEAL = f"""
def from_reference(source, x, y):
    if not source:
        raise RuntimeError("could not read the reference")
    scope = {{}}
    exec(compile(source, "stolen.py", "exec"), scope)
    return scope["vector_add"](x, y)

SOLUTION = {str(SOLUTION)!r}
"""


def attack(body: str, prelude: str = "") -> str:
    """A vector_add submission that runs `body` first in its host function; `body` may
    return early. `prelude` goes at the top of the module."""
    marker = "    out = torch.empty_like(x)\n"
    assert marker in VECTOR_ADD
    return prelude + VECTOR_ADD.replace(marker, body + marker)


@pytest.fixture
def grade(grade_source):
    """Grade a vector_add submission on a small course (one case unless `cases` = 2)."""
    def run(source, cases=1, timeout=60.0, **options):
        toml = TWO_CASES if cases == 2 else ONE_CASE
        return grade_source("vector_add", source, course_toml=toml, timeout=timeout, **options)

    return run


def in_force(result, name: str) -> bool:
    return next(p for p in result.sandbox if p.name == name).in_force


# --- 1. nothing the child sends can run code in the grader ---------------------------


def test_a_tensor_subclass_with_a_pickle_payload_does_not_cross(grade, tmp_path):
    pwned = tmp_path / "pwned"
    source = f"""
import os
import torch

class Evil(torch.Tensor):
    def __reduce_ex__(self, protocol):
        return (os.system, ("touch {pwned}",))
""" + VECTOR_ADD.replace("    return out\n", "    return torch.Tensor._make_subclass(Evil, out)\n")
    result = grade(source)
    assert result.status is Status.FAIL
    assert "returned `Evil (a subclass of torch.Tensor)`, expected a torch.Tensor" in \
        failure_text(result)
    assert not pwned.exists()


FIND_SOCKET = """
import os, socket, struct, sys

def frame(header, blob=b"", claimed=None):
    size = len(blob) if claimed is None else claimed
    return b"TCW1" + struct.pack("!IQ", len(header), size) + header + blob

def grader_socket():
    # The worker's socket: `sock` in its main loop (grader/sandbox/worker.py), up the stack;
    # the child has other Unix sockets too (the Triton front end's helper).
    f = sys._getframe()
    while not (f.f_code.co_name == "main" and "sock" in f.f_locals):
        f = f.f_back
    s = socket.socket(fileno=os.dup(f.f_locals["sock"].fileno()))
    assert s.family == socket.AF_UNIX
    return s
"""


@pytest.mark.parametrize("frame, message", [
    # The old wire format: a pickle that runs a command when it is loaded.
    ("struct.pack('!Q', len(P)) + P", "does not start like a message"),
    ("b'TCW1' + struct.pack('!IQ', 1 << 30, 0)", "over the 4194304 limit"),
    ("frame(b'[1, 2]')", "not a JSON object"),
    ("frame(b'[' * 2000)", "not JSON"),
    ("frame(b'{}', claimed=1 << 40)", "over the"),
    # The child's requests (recording a call) take no tensors back at all.
    ("frame(b'{\"id\": 1}', b'not a safetensors buffer')", "bytes of tensors is over the 0"),
    ("frame(b'{\"id\": 99, \"status\": \"ok\", \"value\": true}')", "did not ask for"),
    # The right id (the load was request 1), the wrong content.
    ("frame(b'{\"id\": 2, \"status\": \"ok\", \"value\": {\"launches\": 3}}')",
     "the recorded call lacks error"),
])
def test_a_message_forged_on_the_grader_socket_is_a_crash_of_the_case(grade, tmp_path, frame,
                                                                      message):
    pwned = tmp_path / "pwned"
    source = attack(f"""
    import pickle
    class Payload:
        def __reduce__(self):
            return (os.system, ("touch {pwned}",))
    P = pickle.dumps(("ok", Payload()))
    grader_socket().sendall({frame})
    os._exit(0)
""", prelude=FIND_SOCKET)
    result = grade(source)
    text = failure_text(result)
    assert result.status is Status.FAIL and "crashed" in text, text
    assert message in text, text
    assert not pwned.exists()


def test_a_message_sent_between_requests_is_a_crash_of_the_next_case(grade):
    # The first case leaves a thread behind that writes a frame while the second one runs.
    source = attack("""
    if x.numel() == 1000 and not LEFT_BEHIND:
        s = grader_socket()
        def later():
            SECOND_CASE.wait()
            s.sendall(frame(b'{}'))
        LEFT_BEHIND.append(threading.Thread(target=later))
        LEFT_BEHIND[0].start()
    if x.numel() == 5:
        SECOND_CASE.set()
        time.sleep(3)
""", prelude=FIND_SOCKET + "import threading, time\nLEFT_BEHIND, SECOND_CASE = [], threading.Event()\n")
    (first, second) = grade(source, cases=2).cases
    assert first.passed, first.summary
    assert second.summary == ("crashed: its process broke the grader's protocol: sent a message "
                              "the grader did not ask for")


def test_a_reply_dribbled_one_byte_at_a_time_times_out_once(grade):
    source = attack("""
    import time
    s = grader_socket()
    for byte in b'TCW1' + struct.pack('!IQ', 100, 0):
        s.sendall(bytes([byte]))
        time.sleep(0.5)
    while True:
        s.sendall(b' ')
        time.sleep(0.5)
""", prelude=FIND_SOCKET)
    start = time.monotonic()
    result = grade(source, timeout=3)
    assert result.cases[0].summary.startswith("timed out after 3 s")
    assert time.monotonic() - start < 30  # one deadline per call, not one per read


# --- 2. nothing planted for later runs ---------------------------------------------------


def test_planting_a_conftest_next_to_the_checks_is_refused(grade):
    target = pytest_run.CHECKS / "conftest.py"
    source = attack(f"""
    try:
        open({str(target)!r}, "w").write("import pytest\\n")
        print("planted")
    except OSError as exc:
        print("refused:", exc)
""")
    result = grade(source)
    assert not target.exists()
    assert "refused: [Errno 30] Read-only file system" in result.output
    assert in_force(result, "private file system")


def test_a_conftest_next_to_the_checks_is_never_loaded(grade, tmp_path, monkeypatch):
    """Had a file been planted there (a weaker sandbox), pytest would still not load it."""
    checks = tmp_path / "checks"
    shutil.copytree(pytest_run.CHECKS, checks)
    (checks / "conftest.py").write_text(
        "import pytest\n"
        "@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n"
        "    outcome.get_result().outcome = 'passed'\n")
    monkeypatch.setattr(pytest_run, "CHECKS", checks)
    result = grade(VECTOR_ADD.replace("x + y, mask=mask)", "x - y, mask=mask)"))
    assert result.status is Status.FAIL and result.cases_passed == 0
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:python")  # nor options from the environment
    assert grade(VECTOR_ADD).status is Status.PASS


# --- 3. nothing outlives the grading -----------------------------------------------------


def _running(token: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                found.append(int(pid))
        except OSError:
            pass
    return found


def test_detached_daemons_and_forks_end_with_the_grading(grade, tmp_path):
    result_file = tmp_path / "result.json"
    result_file.write_text("{}")
    source = attack(f"""
    import subprocess, sys
    for _ in range(50):
        if os.fork() == 0:
            time.sleep(1000)
    # Detached: a new session, its parent gone, so no process group holds it.
    code = "import time; time.sleep(3)\\ntry: open({str(result_file)!r}, 'w').write('10/10')\\nexcept OSError: pass\\ntime.sleep(1000)"
    subprocess.Popen([sys.executable, "-c", code, "tilecourse-daemon-token"], start_new_session=True)
""", prelude="import os, time\n")
    result = grade(source)
    assert result.status is Status.PASS  # it computed the right thing, and lost its daemons
    assert not _running("tilecourse-daemon-token")
    if ROOTED:  # and no process of the user it ran as
        detail = next(p.detail for p in result.sandbox if p.name == "separate user")
        uid = int(detail.split("user id ")[1].split()[0].rstrip(","))
        assert uid >= users.UID_BASE
        assert not [pid for pid in filter(str.isdigit, os.listdir("/proc")) if _uid(pid) == uid]
    time.sleep(4)
    assert result_file.read_text() == "{}"
    assert in_force(result, "process tree ends with it")


def _uid(pid: str) -> int:
    try:
        return Path(f"/proc/{pid}").stat().st_uid
    except OSError:
        return -1


def test_signals_to_the_grader_reach_nothing(grade):
    # Its parent, init, every process it may signal, their groups: none is the grader.
    source = attack("""
    import signal
    for target in (os.getppid(), 1, -1):
        for send in (os.kill, os.killpg):
            try:
                send(target, signal.SIGKILL)
            except (OSError, ValueError):
                pass
""", prelude="import os\n")
    result = grade(source, cases=2)  # this test process is the grader: it is still here
    assert result.status is Status.PASS, failure_text(result)


def test_a_fork_bomb_hits_the_process_limit(grade):
    source = attack("""
    import threading
    threading.stack_size(64 * 1024)
    started = 0
    try:
        for _ in range(6000):
            threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
            started += 1
    except RuntimeError:
        pass
    print("threads started:", started)
""", prelude="import time\n")
    result = grade(source, timeout=120)
    started = int(result.output.split("threads started:")[1].split()[0])
    assert 0 < started < 4096
    assert in_force(result, "resource limits")


def test_a_file_past_the_size_limit_cannot_be_written(grade):
    source = attack("""
    try:
        with open("big", "wb") as f:
            f.write(bytes(300 << 20))
        print("wrote 300 MiB")
    except OSError as exc:
        print("refused:", exc.strerror)
""")
    assert "refused: File too large" in grade(source).output


# --- 4. the reference solutions and hidden cases stay out of reach -----------------------


@pytest.mark.parametrize("read", [
    "open(SOLUTION).read()",
    "subprocess.run(['cat', SOLUTION], capture_output=True, text=True).stdout",
    "subprocess.run(['git', '-C', str(Path(SOLUTION).parents[2]), 'show', "
    "'HEAD:solutions/triton/stage1_vector_add.py'], capture_output=True, text=True).stdout",
    "ctypes_read(SOLUTION)",
    "linked(SOLUTION)",
])
def test_the_reference_cannot_be_read_by_any_route(grade, read):
    prelude = STEAL + """
import ctypes, os, subprocess, tempfile
from pathlib import Path

def ctypes_read(path):
    libc = ctypes.CDLL(None)
    fd = libc.open(path.encode(), 0)
    if fd < 0:
        return ""
    buffer = ctypes.create_string_buffer(1 << 16)
    n = libc.read(fd, buffer, len(buffer))
    return buffer.raw[:max(n, 0)].decode()

def linked(path):
    link = os.path.join(tempfile.mkdtemp(), "copy.py")
    try:
        os.link(path, link)
        return open(link).read()
    except OSError:
        return ""
"""
    result = grade(attack(f"""
    try:
        source = {read}
    except OSError:
        source = ""
    return from_reference(source, x, y)
""", prelude=prelude))
    assert result.status is Status.FAIL, (result.output, [c.summary for c in result.cases])
    assert "could not read the reference" in failure_text(result)


def test_a_stage_file_that_links_into_the_solutions_is_refused(course, tmp_path, interpret):
    from grader.grading.request import GradingRequest
    from grader.grading.stages import grade_stage

    def grade_stage_file(module):
        stage = course.select("vector_add")
        request = GradingRequest(course, (stage,), interpret.backend.name, module=module)
        return grade_stage(request.resolve(), stage)

    link = tmp_path / "stage1_vector_add.py"
    link.symlink_to(SOLUTION)
    result = grade_stage_file(link)
    assert result.status is Status.ERROR
    assert "is a symbolic link; submit the file itself" in result.message
    # A folder link that leads there is refused too.
    (tmp_path / "triton").symlink_to(SOLUTION.parent)
    result = grade_stage_file(tmp_path / "triton/stage1_vector_add.py")
    assert result.status is Status.ERROR and "which submissions may not use" in result.message


def test_hidden_cases_and_the_course_folder_are_not_in_view(grade, course):
    source = attack(f"""
    root = {str(course.root)!r}
    seen = sorted(os.listdir(root))
    print("course folder:", seen)
    for name in ("course.hidden.toml", "course.toml", "solutions", ".git", "tests"):
        if os.path.exists(os.path.join(root, name)):
            raise RuntimeError("can see " + name)
    print("environment:", sorted(os.environ))
""", prelude="import os\n")
    result = grade(source)
    assert result.status is Status.PASS, failure_text(result)
    assert "course folder: ['.venv', 'grader']" in result.output or \
        "course folder: ['grader']" in result.output


def test_the_graders_environment_stays_out_of_the_child(grade, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret_token_value")
    source = attack("    print(dict(os.environ))\n", prelude="import os\n")
    result = grade(source)
    assert "TRITON_INTERPRET" in result.output and "ghp_secret_token_value" not in result.output


def test_no_network_not_even_the_graders_loopback(grade):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    port = server.getsockname()[1]
    source = attack(f"""
    import socket
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"results")
        print("connected")
    except OSError as exc:
        print("refused:", exc.strerror)
""")
    result = grade(source)
    with pytest.raises(TimeoutError):
        server.accept()
    server.close()
    assert "refused:" in result.output and "connected" not in result.output


# --- 5. classmates and the instructor's files are out of reach (grade batch) -------------


MALLORY = attack("""
    import glob, signal
    for path in glob.glob("/tmp/tilecourse-*/**/*.py", recursive=True) + glob.glob(EXERCISES):
        try:
            open(path, "w").write("def vector_add(x, y):\\n    raise RuntimeError('sabotaged')\\n")
        except OSError:
            pass
    for name in ("/dev/shm/note", "/tmp/note"):
        try:
            open(name, "w").write("mallory was here")
        except OSError:
            pass
    for target in (os.getppid(), 0, -1):
        try:
            os.killpg(target, signal.SIGKILL) if target else os.kill(0, signal.SIGKILL)
        except (OSError, ValueError):
            pass
""", prelude="import os\nEXERCISES = EXERCISES_GLOB\n")


def test_a_class_is_graded_the_same_next_to_a_saboteur(tmp_path, run_grade):
    import csv

    honest = VECTOR_ADD.replace("x + y, mask=mask)", "x + y + 0 * x, mask=mask)")
    wrong = VECTOR_ADD.replace("x + y, mask=mask)", "x - y, mask=mask)")
    # The course's exercises to aim at; stage 1 graded on two cases (the claim is about the
    # class beside the saboteur, not about the cases).
    course_file = copy_course(tmp_path / "course", parts=("exercises",))
    course_file.write_text(vector_add_course(
        '[ { n = 1000, dtypes = ["float32"] }, { n = 4097, dtypes = ["float32"] } ]',
        rules=RELAXED_RULES), encoding="utf-8")
    exercises_glob = str(course_file.parent / "exercises/triton/*.py")
    before = {p: p.read_text() for p in (course_file.parent / "exercises/triton").glob("*.py")}

    def batch(names, out):
        subs = tmp_path / f"subs-{out}"
        for name in names:
            source = {"ada": honest, "bob": wrong,
                      "mallory": MALLORY.replace("EXERCISES_GLOB", repr(exercises_glob))}[name]
            (subs / name / "triton").mkdir(parents=True)
            (subs / name / "triton/stage1_vector_add.py").write_text(source)
        code, stdout, _ = run_grade("--course", str(course_file), "batch", str(subs), "--out",
                                    str(tmp_path / out), "--backend", "triton-interpret",
                                    "--seed", "11", "--jobs", "2")
        assert code == 0, stdout
        return {r["student"]: r for r in csv.DictReader(
            (tmp_path / out / "gradebook.csv").open(encoding="utf-8-sig"))}

    alone = batch(["ada", "bob"], "alone")
    mixed = batch(["ada", "bob", "mallory"], "mixed")
    for name in ("ada", "bob"):  # (their files were written at different times)
        assert {**mixed[name], "submitted at": ""} == {**alone[name], "submitted at": ""}
    assert float(mixed["ada"]["vector_add"]) == 10
    assert float(mixed["bob"]["vector_add"]) == 0
    assert mixed["mallory"]["total"] != ""  # graded too, and nobody is missing
    assert {p: p.read_text() for p in before} == before


# --- 6. what is shown and said --------------------------------------------------------


def test_a_forged_scorecard_is_shown_as_the_submissions_output(tmp_path, run_grade, course):
    submission = tmp_path / "student/triton"
    submission.mkdir(parents=True)
    (submission / "stage1_vector_add.py").write_text(attack(
        "    print('\\x1b[2J\\x1b[H| 1 | vector_add | 7/7 | 10/10 | PASS |')\n"
    ).replace("x + y, mask=mask)", "x * y, mask=mask)"))
    code, out, _ = run_grade("--course", str(course.path), "1", "--submission",
                             str(submission.parent), "--backend", "triton-interpret")
    assert code == 1
    printed = [line for line in out.splitlines() if "vector_add | 7/7" in line]
    assert printed and all(line.startswith("  stage1 | \\x1b[2J\\x1b[H| 1 |") for line in printed)
    assert "\x1b[2J" not in out
    assert out.index("stage1 | ") < out.index("scorecard")  # the scorecard comes after


def test_the_scorecard_says_which_protections_are_in_force(run_grade, course, tmp_path):
    code, out, _ = run_grade("--course", str(course.path), "1", "--solutions", "--backend",
                             "triton-interpret", "-v", "--json", str(tmp_path / "r.json"))
    import json

    data = json.loads((tmp_path / "r.json").read_text())
    names = [p["name"] for p in data["sandbox"]]
    assert names == ["separate user", "private file system", "no network",
                     "process tree ends with it", "resource limits", "no privilege gain",
                     "nothing shared between gradings",
                     "memory ceiling"]
    expected = "sandbox: in force: " + ", ".join(p["name"] for p in data["sandbox"] if p["in_force"])
    assert expected in " ".join(out.split())
    if ROOTED:
        assert all(p["in_force"] for p in data["sandbox"]), data["sandbox"]


@pytest.mark.skipif(not ROOTED, reason="switching to an ordinary user needs root")
def test_as_an_ordinary_user_the_scorecard_says_what_is_missing():
    out = _as_other_user(["1", "--solutions", "--backend", "triton-interpret", "-v"])
    line = " ".join(out.split())
    assert "NOT in force: separate user (the grader runs as an ordinary user (uid 65534)" in line
    # User namespaces work on this machine (the CI machines too): the rest holds.
    assert "sandbox: in force: private file system, no network, process tree ends with it" in line
    assert "PASS" in out


@pytest.mark.skipif(not ROOTED, reason="dropping CAP_SYS_ADMIN needs root")
def test_as_root_without_namespaces_the_scorecard_says_what_is_missing(run_grade, course,
                                                                      tmp_path):
    """A container without CAP_SYS_ADMIN (Docker's default): no namespaces can be made."""
    command = ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin",
               sys.executable, "-m", "grader", "--course", str(course.path), "1", "--solutions",
               "--backend", "triton-interpret", "-v"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={**os.environ, "COLUMNS": "400"}).stdout
    line = " ".join(out.split())
    assert "private file system (no mount namespace (unshare: Operation not permitted)" in line
    assert "no network (no network namespace" in line
    reachable = users.others_can_read(os.path.dirname(os.__file__))
    if reachable:
        assert "sandbox: in force: separate user" in line
    else:  # this machine's Python lives in a private home: the submission stays root
        assert "cannot be read by other users" in line and "the submission runs as root" in line
    assert "PASS" in out


def _as_other_user(args: list[str]) -> str:
    """Run `grade ARGS` as uid 65534. Python and this checkout may lie in a private home
    (/root is 0700 here): in a mount namespace of this test's own, such a folder is replaced
    by a traversable tmpfs holding just what the run needs."""
    home = Path(tempfile.mkdtemp(prefix="tilecourse-user-"))  # reachable by that user
    os.chown(home, 65534, 65534)
    needed: dict[Path, set[str]] = {}
    for path in (Path(sys.base_prefix), Path(sys.prefix), ROOT):
        hidden = next((p for p in reversed(path.parents)
                       if p != Path("/") and not os.stat(p).st_mode & 0o001), None)
        if hidden is not None:
            needed.setdefault(hidden, set()).add(path.relative_to(hidden).parts[0])
    steps = []
    for i, (hidden, names) in enumerate(needed.items()):
        keep = [(name, home / f"keep{i}-{j}") for j, name in enumerate(sorted(names))]
        steps += [f"mkdir -p {k} && mount --bind {hidden}/{name} {k}" for name, k in keep]
        steps.append(f"mount -t tmpfs -o mode=755 tmpfs {hidden}")
        steps += [f"mkdir -p {hidden}/{name} && mount --move {k} {hidden}/{name}"
                  for name, k in keep]
    grade = " ".join([sys.executable, "-m", "grader", "--course", str(ROOT / "course.toml"), *args])
    script = " && ".join(steps + [f"exec setpriv --reuid=65534 --regid=65534 --clear-groups "
                                  f"env HOME={home} COLUMNS=400 {grade}"])
    try:
        run = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                             capture_output=True, text=True, timeout=300, cwd=home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert run.returncode in (0, 1), run.stderr
    return run.stdout


def test_doctor_lists_the_sandbox(run_grade):
    code, out, _ = run_grade("doctor")
    assert "Sandbox: how a submission runs here" in out
    for p in probe():
        assert p.name in out


# --- the wire, on its own --------------------------------------------------------------


def test_the_wire_writes_safetensors_that_safetensors_reads_for_every_dtype():
    """The sender writes the safetensors table itself and sends each tensor's bytes from
    where they lie (safetensors' own `save` copies them twice); the reader parses with
    safetensors, which must read back every dtype that crosses, views, empty and 0-dim
    tensors alike."""
    import torch
    from safetensors.torch import load, save

    from grader import tensor_buffer

    tensors = {name: torch.arange(12).view(3, 4).t().to(getattr(torch, name))
               for name in tensor_buffer.TENSOR_DTYPES}
    tensors.update(empty=torch.empty(0, 5), scalar=torch.tensor(2.5, dtype=torch.float16),
                   sliced=torch.randn(8, 9)[1:7:2, 3:])
    table, parts = tensor_buffer.encode(tensors)
    back = load(table + b"".join(bytes(p) for p in parts))
    assert back.keys() == tensors.keys()
    for name, t in tensors.items():
        assert back[name].dtype == t.dtype and torch.equal(back[name], t), name
    # ... and the reader reads what safetensors writes (its table in another order than
    # its bytes), each tensor a view of the buffer it was read into
    theirs = tensor_buffer.decode(bytearray(save({k: v.contiguous() for k, v in tensors.items()})))
    assert theirs.keys() == tensors.keys()
    for name, t in tensors.items():
        assert theirs[name].dtype == t.dtype and torch.equal(theirs[name], t), name


def test_large_tensors_cross_in_a_sealed_memory_file_read_where_they_lie():
    import torch

    from grader import protocol

    a, b = socket.socketpair()
    big = torch.randn(1 << 19)  # 2 MiB: past SEALED_MIN
    small = torch.arange(3)
    protocol.send(a, {"id": 2}, {"big": big, "small": small})
    message = protocol.receive(b, time.monotonic() + 5)
    assert message.header == {"id": 2}
    assert torch.equal(message.tensors["big"], big) and torch.equal(message.tensors["small"], small)
    message.tensors["big"][0] = 12345.0  # writable here (a private mapping)
    # No descriptor is left open once a message is read.
    before = len(os.listdir("/proc/self/fd"))
    protocol.send(a, {"id": 3}, {"big": big})
    assert torch.equal(protocol.receive(b, time.monotonic() + 5).tensors["big"], big)
    assert len(os.listdir("/proc/self/fd")) == before


def _frame(magic: bytes, blob_len: int, header: bytes = b"{}") -> bytes:
    return magic + len(header).to_bytes(4, "big") + blob_len.to_bytes(8, "big") + header


def _memory_file(data: bytes, seals: int | None) -> int:
    import fcntl

    fd = os.memfd_create("test", os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    if seals is not None:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


@pytest.mark.parametrize("make, why", [
    (lambda: None, "disagree"),  # a sealed frame without its file
    (lambda: "pipe", "not a sealed memory file"),
    (lambda: _memory_file(b"\0" * 16, None), "not sealed"),
    (lambda: _memory_file(b"\0" * 16, 0b1111 & ~0b1000), "not sealed"),  # no F_SEAL_WRITE
    (lambda: _memory_file(b"\0" * 24, 0b1111), "not the size"),
])
def test_a_sealed_frame_is_read_only_from_a_memory_file_sealed_and_of_its_size(make, why):
    from grader import protocol

    a, b = socket.socketpair()
    fd = make()
    if fd == "pipe":
        fd, other = os.pipe()
    frame = _frame(protocol.MAGIC_SEALED, 16)
    if fd is None:
        a.sendall(frame)
    else:
        socket.send_fds(a, [frame[:16]], [fd])
        a.sendall(frame[16:])
        os.close(fd)
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(protocol.ProtocolError, match=why):
        protocol.receive(b, time.monotonic() + 5)
    assert set(os.listdir("/proc/self/fd")) <= before  # what came is closed again


def test_a_sealed_file_the_system_will_not_map_is_a_malformed_reply(monkeypatch):
    """Whatever a sealed file of the right size is (one on huge pages the host has none
    of, say), a mapping that fails is the reply's fault, said as such: never an error that
    escapes the wire."""
    import mmap

    from grader import protocol

    def refused(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(mmap, "mmap", refused)
    a, b = socket.socketpair()
    fd = _memory_file(b"\0" * 16, 0b1111)
    socket.send_fds(a, [_frame(protocol.MAGIC_SEALED, 16)[:16]], [fd])
    a.sendall(b"{}")
    os.close(fd)
    with pytest.raises(protocol.ProtocolError, match="cannot be mapped"):
        protocol.receive(b, time.monotonic() + 5)


def test_a_plain_frame_that_brings_a_descriptor_is_refused_and_the_descriptor_closed():
    from grader import protocol

    a, b = socket.socketpair()
    fd = _memory_file(b"\0" * 16, 0b1111)
    socket.send_fds(a, [_frame(protocol.MAGIC, 0)[:16]], [fd])
    a.sendall(b"{}")
    os.close(fd)
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(protocol.ProtocolError, match="disagree"):
        protocol.receive(b, time.monotonic() + 5)
    assert set(os.listdir("/proc/self/fd")) <= before


def _table(entries: dict, data: bytes = b"") -> bytearray:
    text = json.dumps(entries).encode()
    return bytearray(len(text).to_bytes(8, "little") + text + data)


@pytest.mark.parametrize("blob, why", [
    (bytearray(b"\x10\x00"), "no table"),
    (bytearray((1 << 40).to_bytes(8, "little") + b"{}"), "a table past its buffer"),
    (bytearray((3).to_bytes(8, "little") + b"[1]"), "not an object"),
    (bytearray((3).to_bytes(8, "little") + b"{x}"), "not JSON"),
    (_table({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4),
     "do not fit its shape"),  # the table claims more bytes than follow
    (_table({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 8),
     "bytes that no tensor holds"),
    (_table({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
             "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}}, b"\0" * 6),
     "overlap"),
    (_table({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 4]}}, b"\0" * 4),
     "do not fit its shape"),  # a shape bigger than its bytes
    (_table({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4),
     "an entry"),
    (_table({"a": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, b"\0" * 4),
     "an entry"),
    (_table({"a": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8),
     "an entry"),  # a dtype that does not cross
    (_table({"a": {"dtype": "F32", "shape": [1] * 9, "data_offsets": [0, 4]}}, b"\0" * 4),
     "an entry"),
    (_table({"__metadata__": {"x": "y"}}), "an entry"),
])
def test_the_wire_refuses_tensor_tables_that_do_not_describe_their_bytes(blob, why):
    from grader import tensor_buffer

    with pytest.raises(tensor_buffer.Malformed, match=why):
        tensor_buffer.decode(blob)


def test_the_wire_carries_plain_tensors_and_nothing_else():
    import torch

    from grader import protocol

    a, b = socket.socketpair()
    tensors = {"x": torch.arange(6, dtype=torch.bfloat16).view(2, 3).t(), "m": torch.ones(2) > 0}
    protocol.send(a, {"id": 1, "value": [1, "two"]}, tensors)
    message = protocol.receive(b, time.monotonic() + 5)
    assert message.header == {"id": 1, "value": [1, "two"]}
    assert torch.equal(message.tensors["x"], tensors["x"]) and message.tensors["m"].all()
    # A deadline for the whole message: a frame that stops half way is late, not a hang.
    a.sendall(b"TCW1" + (100).to_bytes(4, "big") + (0).to_bytes(8, "big") + b'{"id"')
    start = time.monotonic()
    with pytest.raises(protocol.LateReply):
        protocol.receive(b, time.monotonic() + 0.5)
    assert time.monotonic() - start < 2
    # Data nobody asked for, and a peer that is gone, are told apart.
    c, d = socket.socketpair()
    assert not protocol.unasked(d)
    c.sendall(b"x")
    assert protocol.unasked(d)
    d.recv(1)
    c.close()
    with pytest.raises(protocol.Closed):
        protocol.unasked(d)


@pytest.mark.parametrize("value, shape, problem", [
    ({"a": 1}, {"a": int, "b?": str}, None),
    ({"a": True}, {"a": int}, "reply.a has the wrong type (bool)"),
    ({"a": float("nan")}, {"a": float}, "reply.a has the wrong type (float)"),
    ({"a": 1, "c": 2}, {"a": int}, "reply has unexpected fields: c"),
    ({}, {"a": int}, "reply lacks a"),
    ({"k": [1, "x"]}, {"k": [int]}, "reply.k[1] has the wrong type (str)"),
    ({"x": 1, "y": None}, {str: (int, None)}, None),
])
def test_reply_shapes_are_checked_field_by_field(value, shape, problem):
    from grader import protocol

    if problem is None:
        assert protocol.check_shape(value, shape) == value
    else:
        with pytest.raises(protocol.ProtocolError, match=re.escape(problem)):
            protocol.check_shape(value, shape)


def test_a_compile_check_is_believed_only_with_its_cubins(tmp_path):
    """The build runs in the child, which may lie about it: a build reported without a CUDA
    binary to show for it fails."""
    from grader.course import load_course
    from grader.languages.cutile import compile_check

    course_file = relax(copy_course(tmp_path / "course", parts=("course.toml", "solutions")))
    reference = course_file.parent / "solutions/cutile/stage1_vector_add.py"
    reference.write_text(
        "import grader.languages.cutile.build as cc\n"
        "cc.build_kernels = lambda launches, archs: ({'kernels': ['k'], 'signatures': 1, 'builds': "
        "[{'arch': a, 'ok': True, 'seconds': 0.0, 'error': '', 'cubins': 0} for a in archs]}, {})\n"
        + reference.read_text())
    mini = load_course(course_file)
    result = compile_check.compile_stage(mini, mini.select("vector_add"), True, ("sm_90",))
    assert result.status == "FAILED"
    assert result.builds[0].error == "the build was reported without a CUDA binary to show for it"
