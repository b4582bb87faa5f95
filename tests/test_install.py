"""`python -m grader.install`, the README's set-up: PyTorch's CPU build without an NVIDIA GPU
(from PyTorch's index, or from pip's own sources where that cannot be reached), then the
checkout with torch pinned. pip itself is replaced here by a recorder."""

import re
import subprocess
import sys

import pytest
import documented

from grader import install

INDEX_ANSWER = """torch (2.15.0)
Available versions: 2.15.0, 2.14.1, 2.13.0+cpu, 2.13.0, 2.9.1+cpu
  INSTALLED: 2.13.0+cpu
"""


class FakePip:
    """Records each pip command; answers `index versions` with INDEX_ANSWER, and makes
    `install torch==V` install V."""

    def __init__(self, monkeypatch, fail: str | None = None):
        self.commands, self.fail, self.torch, self.slimmed = [], fail, None, 0
        monkeypatch.setattr(install, "pip", self)
        monkeypatch.setattr(install, "installed_torch", lambda: self.torch)
        monkeypatch.setattr(install, "slim", self.slim)  # never this environment's own files

    def slim(self, locate=None):
        self.slimmed += 1
        return 600 << 20

    def __call__(self, *args, quiet=False):
        self.commands.append(list(args))
        failed = self.fail is not None and self.fail in " ".join(args)
        if args[0] == "install" and not failed:
            pinned = [a for a in args if a.startswith("torch==")]
            self.torch = pinned[0].split("==")[1] if pinned else self.torch or "2.15.0"
        answer = INDEX_ANSWER if args[:2] == ("index", "versions") else ""
        return subprocess.CompletedProcess(args, 1 if failed else 0, answer, "")


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(install, "has_nvidia_gpu", lambda: False)


def test_without_a_gpu_the_cpu_build_comes_from_pytorchs_index(monkeypatch, no_gpu, capsys):
    monkeypatch.setattr(install, "reachable", lambda url, seconds=10: True)
    pip = FakePip(monkeypatch)
    assert install.main(["cutile", "test"]) == 0
    index = ["--index-url", install.CPU_INDEX]
    assert pip.commands == [
        ["index", "versions", "torch", *index],
        ["install", "torch==2.13.0+cpu", *index],
        ["install", "-e", f"{install.ROOT}[cutile,test]", "torch==2.13.0+cpu"],
    ]
    out = capsys.readouterr().out
    assert "installing PyTorch's CPU build, torch 2.13.0+cpu" in out
    assert pip.slimmed == 1 and "removed 600 MiB that a machine without a GPU never loads" in out


def test_keep_all_keeps_what_a_cpu_machine_never_loads(monkeypatch, no_gpu):
    monkeypatch.setattr(install, "reachable", lambda url, seconds=10: True)
    pip = FakePip(monkeypatch)
    assert install.main(["--keep-all"]) == 0
    assert pip.slimmed == 0


def test_slim_removes_the_listed_paths_and_keeps_the_rest(tmp_path):
    for relative in ("torch/test/atest", "torch/bin/test_api", "torch/bin/torch_shm_manager",
                     "torch/lib/libtorch_cpu.so", "triton/backends/nvidia/lib/cupti/libcupti.so",
                     "triton/backends/nvidia/lib/libdevice.10.bc", "triton/_C/libproton.so",
                     "triton/_C/libtriton.so"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_bytes(b"x" * 10)
    freed = install.slim(lambda distribution, relative: tmp_path / relative)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["torch/bin/torch_shm_manager", "torch/lib/libtorch_cpu.so",
                    "triton/_C/libtriton.so", "triton/backends/nvidia/lib/libdevice.10.bc"]
    assert freed == 40
    assert install.slim(lambda distribution, relative: None) == 0  # not installed: nothing


def test_where_pytorchs_index_is_unreachable_pips_own_sources_are_searched(monkeypatch, no_gpu,
                                                                          capsys):
    monkeypatch.setattr(install, "reachable", lambda url, seconds=10: False)
    pip = FakePip(monkeypatch)
    assert install.main([]) == 0
    assert pip.commands == [["index", "versions", "torch"], ["install", "torch==2.13.0+cpu"],
                            ["install", "-e", str(install.ROOT), "torch==2.13.0+cpu"]]
    assert "cannot be reached from here" in capsys.readouterr().out


def test_with_a_gpu_the_default_build_is_installed_and_kept(monkeypatch):
    monkeypatch.setattr(install, "has_nvidia_gpu", lambda: True)
    pip = FakePip(monkeypatch)
    assert install.main(["cutile"]) == 0
    assert pip.commands == [["install", "torch"],
                            ["install", "-e", f"{install.ROOT}[cutile]", "torch==2.15.0"]]
    assert pip.slimmed == 0  # a GPU's build keeps everything


def test_an_installed_torch_is_kept_and_a_conflict_is_explained(monkeypatch, no_gpu, capsys):
    pip = FakePip(monkeypatch, fail="-e")
    pip.torch = "2.13.0+cpu"
    assert install.main(["cutile"]) == install.EXIT_FAILED
    assert pip.commands == [["install", "-e", f"{install.ROOT}[cutile]", "torch==2.13.0+cpu"],
                            ["install", "-e", str(install.ROOT), "torch==2.13.0+cpu",
                             *install.CUTILE_BESIDE_TORCH]]
    out, err = capsys.readouterr()
    assert "torch 2.13.0+cpu (CPU build) is already installed: keeping it" in out
    assert "could not install the course next to torch 2.13.0+cpu" in err


def test_where_the_cutile_extra_clashes_with_torch_its_compiler_goes_beside_it(monkeypatch,
                                                                               capsys):
    """PyPI's CUDA torch pins one CUDA toolkit and cuda-tile[tileiras] another: the extra
    fails with torch pinned, and cuTile's compiler packages are installed instead."""
    monkeypatch.setattr(install, "has_nvidia_gpu", lambda: True)
    pip = FakePip(monkeypatch, fail="[cutile,test]")
    pip.torch = "2.14.1"
    assert install.main(["cutile", "test"]) == 0
    assert pip.commands == [
        ["install", "-e", f"{install.ROOT}[cutile,test]", "torch==2.14.1"],
        ["install", "-e", f"{install.ROOT}[test]", "torch==2.14.1", "cuda-tile>=1.4",
         "nvidia-cuda-tileiras==13.4.*", "nvidia-cuda-nvcc==13.4.*", "nvidia-nvvm==13.4.*",
         "nvidia-cuda-crt==13.4.*"],
    ]
    assert "installing cuTile and its compiler's own packages instead" in capsys.readouterr().out


def test_an_unknown_extra_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        install.main(["cuda"])
    assert stop.value.code == 2 and "no extra cuda: the extras are cutile, test" in \
        capsys.readouterr().err


PYPROJECT = """[project]
name = "course"
dependencies = ["torch"]

[project.optional-dependencies]
# a comment
cutile = ["cuda-tile[tileiras]>=1.4"]
toy = []
test = [
    "pytest-xdist>=3.5",
]

[project.scripts]
grade = "grader.cli:main"
"""


@pytest.mark.parametrize("tomllib", [True, False], ids=["tomllib", "python3.10"])
def test_the_extras_are_the_ones_pyproject_declares(tmp_path, monkeypatch, tomllib):
    """A new language's extra is installable once pyproject.toml declares it: the list is
    read from there, with tomllib or, on Python 3.10 before anything is installed, without."""
    if not tomllib:
        monkeypatch.setitem(sys.modules, "tomllib", None)  # its import fails
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    assert install.extras(tmp_path / "pyproject.toml") == ("cutile", "toy", "test")
    assert {"cutile", "test"} <= set(install.extras())  # this course's own


def test_cpu_builds_are_read_from_pips_answer():
    assert install.cpu_builds(INDEX_ANSWER) == ["2.13.0+cpu", "2.9.1+cpu"]
    assert install.cpu_builds("ERROR: No matching distribution found for torch") == []


def test_a_gpu_is_what_nvidia_smi_lists(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not install.has_nvidia_gpu()  # no nvidia-smi at all
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-1)'\n")
    smi.chmod(0o755)
    assert install.has_nvidia_gpu()
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed: no driver'\nexit 9\n")
    assert not install.has_nvidia_gpu()


def test_it_runs_before_the_course_is_installed():
    """The module imports nothing beyond the standard library (and grader/__init__)."""
    found = subprocess.run([sys.executable, "-S", "-c", "import sys; sys.path[:0] = ['.']; "
                            "import grader.install; print(sorted(m for m in sys.modules "
                            "if m.split('.')[0] in ('torch', 'click', 'rich', 'triton')))"],
                           capture_output=True, text=True, cwd=install.ROOT)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "[]"


def test_the_readmes_commands_set_up_with_it_and_ci_runs_the_test_command():
    """The two commands, which download, are left to CI by tests/test_documented_commands.py:
    each is marked needs=network, and .ci/run runs the second as written."""
    readme = (install.ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    [block], _ = documented.read(section, "README.md")
    commands = [c.name for c in block.commands]
    assert len(commands) == 2 and all(c.needs == ("network",) for c in block.commands)
    assert all(re.match(r"python3 -m venv \.venv && ", c) for c in commands)
    assert all(c.split(" && ")[1].startswith(".venv/bin/python -m grader.install")
               for c in commands)
    assert commands[1].split(" && ")[1].endswith("grader.install cutile test")
    assert commands[1] in (install.ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
