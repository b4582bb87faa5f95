"""Workers ready at once (grader.sandbox.spares): forks of a template that imported and ran
nothing else, adopted by the grader, never one that ran anything before, nor one forked for
another thread or environment."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from grader.sandbox import spares
from grader.sandbox.confined import probe


@pytest.fixture
def template(monkeypatch):
    """The template now (none from other tests; warm from the start; ended afterwards)."""
    monkeypatch.setattr(spares, "_template", None)
    spares.keep_warm()
    yield lambda: spares._template
    if spares._template is not None:
        spares._template.discard()


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(") ", 1)[1].split()[1])


def test_each_spare_is_a_new_fork_of_the_template_and_a_child_of_the_grader(template):
    first, second = spares.take(), spares.take()
    try:
        pids = {first.process.pid, second.process.pid}
        assert len(pids) == 2 and template().process.pid not in pids  # never the template
        assert {_parent(p) for p in pids} == {os.getpid()}  # adopted: waited for here
        assert first.process.poll() is None
    finally:
        first.discard()
        second.discard()
    assert first.process.returncode == -signal.SIGKILL  # its end is seen as a started one's


def test_a_template_does_not_fit_once_the_environment_changed(template, monkeypatch):
    spares.take().discard()
    before = template()
    monkeypatch.setenv("TRITON_DEBUG", "1")  # one a kernel language reads
    spares.take().discard()
    assert template() is not before
    assert before.process.poll() is not None  # ended, not kept
    # What no child is given (a CI token, say) leaves the template as it is.
    kept = template()
    monkeypatch.setenv("GITHUB_TOKEN", "secret")
    spares.take().discard()
    assert template() is kept


def test_threads_share_the_template_and_it_outlives_the_thread_that_wanted_it(template):
    taken = []
    thread = threading.Thread(target=lambda: taken.append(spares.take()))
    thread.start()
    thread.join()  # a grading thread of `grade batch --jobs` ends
    first = template()
    time.sleep(0.5)
    try:
        assert first.process.poll() is None and taken[0].process.poll() is None
        spares.take().discard()
        assert template() is first
    finally:
        taken[0].discard()


def test_a_dead_template_is_replaced(template):
    spares.take().discard()
    dead = template()
    dead.process.kill()
    dead.process.wait()
    taken = spares.take()
    try:
        assert taken.process.poll() is None
        assert template() is not dead
    finally:
        taken.discard()


def test_a_spare_confines_itself_as_a_started_process_does(template):
    spares.keep_warm(False)
    started = {p.name: p.in_force for p in probe()}
    spares.keep_warm()
    forked = {p.name: p.in_force for p in probe()}
    assert started == forked
    assert "sandbox" not in forked  # it started and confined itself


def test_templates_and_spares_end_with_the_grader(tmp_path):
    pids = tmp_path / "pids"
    # os._exit: no clean-up at exit runs, as when the grader is killed
    script = (f"import os; from grader.sandbox import spares; spares.keep_warm(); "
              f"s = spares.take(); t = [spares._template]; "
              f"open({str(pids)!r}, 'w').write(' '.join(str(x.process.pid) for x in [s, *t])); "
              f"os._exit(0)")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([sys.executable, "-c", script], check=True, cwd=root, timeout=120)
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(p) for p in started):
        time.sleep(0.2)
    assert not any(_alive(p) for p in started)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_worker_imports_its_own_roles_class_alone():
    """Each role's class is imported by role once confined, none with the spares' imports: a
    builder never imports the child's module (which imports the replay's and the builder's)."""
    script = ("import sys; from grader.sandbox import worker; "
              "assert not any(m.startswith('grader.sandbox.child') for m in worker.WARM_IMPORTS); "
              "assert {r: type(worker._worker(r, 'triton')).role for r in ('builder', 'replay')}"
              " == {'builder': 'builder', 'replay': 'replay'}; "
              "assert 'grader.sandbox.child' not in sys.modules, 'child imported'; "
              "assert type(worker._worker('child', 'triton')).role == 'child'")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([sys.executable, "-c", script], check=True, cwd=root, timeout=120)


def test_a_template_whose_imports_initialised_cuda_declines_and_workers_start_cold(
        template, monkeypatch):
    """A fork does not carry the CUDA driver's state: a template that initialised it exits
    with TEMPLATE_DECLINED, and from then on each worker is started when wanted, no other
    template tried (each would cost its imports again)."""
    from grader.sandbox import processes

    monkeypatch.setattr(spares, "_declined", False)
    real_start, starts = spares._start, []

    def start(env, how):
        starts.append(how)
        if how == "template":  # one whose imports initialised CUDA (worker.main)
            parent, child = spares.socket.socketpair()
            process = subprocess.Popen(
                [sys.executable, "-c", f"import os; os._exit({processes.TEMPLATE_DECLINED})"],
                pass_fds=[child.fileno()])
            child.close()
            return spares.Spare(process, parent, env)
        return real_start(env, how)

    monkeypatch.setattr(spares, "_start", start)
    taken = [spares.take(), spares.take()]
    try:
        assert starts == ["template", "cold", "cold"]
        assert all(t.process.poll() is None for t in taken) and template() is None
    finally:
        for t in taken:
            t.discard()


class _Driver:
    def __init__(self, answer):
        self.answer = answer

    def cuDeviceGetCount(self, count):  # noqa: N802 - the driver's name
        return self.answer


@pytest.mark.parametrize("driver, initialised", [
    (OSError("not loaded"), False),  # no driver in the process: nothing initialised it
    (_Driver(3), False),  # CUDA_ERROR_NOT_INITIALIZED
    (_Driver(0), True),  # it answers: cuInit ran
    (_Driver(100), True),  # CUDA_ERROR_NO_DEVICE: cuInit ran and found none
])
def test_the_template_sees_whether_its_imports_initialised_cuda(monkeypatch, driver,
                                                                 initialised):
    import ctypes

    from grader.sandbox import worker

    def cdll(name, mode):
        assert name == "libcuda.so.1" and mode & os.RTLD_NOLOAD  # never loads it itself
        if isinstance(driver, Exception):
            raise driver
        return driver

    monkeypatch.setattr(ctypes, "CDLL", cdll)
    assert worker._cuda_initialised() is initialised


def test_a_spares_triton_cache_is_in_its_scratch_folder(tmp_path):
    """Triton reads HOME once, as it is imported: a spare imported it in its template, whose
    HOME names no folder. The environment a worker is given (its plan's) names TRITON_HOME
    too, which Triton reads whenever it looks for its cache: a spare on a GPU compiles into
    its own scratch folder, not into the template's nowhere (a read-only error there)."""
    script = ("import os, sys; from grader.sandbox import processes, spares; "
              "os.environ.clear(); os.environ.update(spares._environment()); "
              "import triton; "
              "os.environ.clear(); os.environ.update(processes.worker_env(sys.argv[1])); "
              "print(triton.knobs.cache.dir)")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, cwd=root,
                           timeout=120, capture_output=True, text=True).stdout.strip()
    assert found.startswith(str(tmp_path) + os.sep), found


@pytest.mark.parametrize("interpret, warmed", [("0", True), ("1", False), ("", False)])
def test_a_template_for_the_gpu_computes_tritons_digest_once_for_every_spare(interpret, warmed):
    """Every compile's cache key holds a digest of Triton itself, which each process
    otherwise computes at its first compile (Triton's sources and library read and hashed):
    a template for Triton on the GPU computes it before it forks, without initialising
    CUDA; one for the interpreter, or for another track, which compiles nothing with
    Triton, does not."""
    script = ("import os; os.environ['TRITON_INTERPRET'] = os.sys.argv[1]; "
              "os.environ['TRITON_INTERPRET'] or os.environ.pop('TRITON_INTERPRET'); "
              "from grader.sandbox import worker; worker._warm(); "
              "from triton.runtime.cache import triton_key; "
              "assert not worker._cuda_initialised(); "
              "print(triton_key.cache_info().currsize)")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = subprocess.run([sys.executable, "-c", script, interpret], check=True, cwd=root,
                           timeout=120, capture_output=True, text=True).stdout.strip()
    assert found == ("1" if warmed else "0")
