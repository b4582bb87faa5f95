"""What the worker sees of the file system: a new root made of read-only windows on the host.

The parent plans the view (`plan`), the worker builds it inside its own mount namespace
(`build`) before any student code runs:

- an empty tmpfs becomes the root; on it, read-only bind mounts of the system folders
  (/usr, /etc, /opt, ...), of Python (its prefixes and every sys.path entry) and of the
  grader package, each at its own path; the folders above them are created on the tmpfs,
  so a Python under a private home (/root is 0700) is still reachable;
- a /dev of its own (grader.sandbox.devices: the few device nodes a grading uses, the
  GPU's, its own terminals and /dev/shm), a private /tmp, a fresh /proc for the worker's
  own PID namespace;
- the folder holding the copy of the submission, read-only, and a private scratch tmpfs,
  the only place the worker can write;
- nothing else: the course folder itself is not there (only its grader/ and a .venv that
  Python needs), so solutions/, course.hidden.toml, other submissions and results are not
  in the view. Of sys.path, only what Python installed (below its prefixes) and what
  PYTHONPATH names get a window, and never a folder that holds a course (a course.toml, at
  its top or one level down) or a path the parent names as hidden; those are masked too,
  should a window hold one.

The old root is then detached (pivot_root), so nothing outside the view can be reached, and
the mount table the worker sees is read back and sealed (grader.sandbox.mounts): no mount but
the worker's own tmpfs folders is writable, or the sandbox refuses to start.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.sandbox import devices, linux, mounts
from grader.tracks import TRACKS, wing

SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "sys")
_PATH_LISTS = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH")
COURSE_FILE = "course.toml"  # a folder holding one is a course, with its solutions
_PATH_VALUES = ("CUDA_HOME", "CUDA_PATH")
_OWN = ("/proc", "/dev")  # made fresh in the view, never windows on the host
# The worker's tmpfs mounts live in RAM, so they are part of its memory: at most 16 MiB (the
# root) + SCRATCH_SIZE + TMP_SIZE + SHM_SIZE, 848 MiB in all (and /dev's 64 KiB) (it was 4 GiB, counted nowhere),
# which `grade batch --jobs N` must afford N times over. The scratch folder holds the worker's
# HOME and compile caches (a few MiB per kernel); /tmp and /dev/shm are rarely used.
SCRATCH_SIZE = "512m"
TMP_SIZE = "256m"
SHM_SIZE = "64m"


@dataclass
class View:
    root: str  # an empty folder the new root is mounted on
    scratch: str  # the worker's only writable folder
    submission: str  # holds the copy of the submission, read-only
    readable: list[str] = field(default_factory=list)  # host folders shown read-only
    links: list[tuple[str, str]] = field(default_factory=list)  # (path, target) symlinks
    hidden: list[str] = field(default_factory=list)  # never visible

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "View":
        return cls(**{**data, "links": [tuple(link) for link in data["links"]]})


class ViewRefused(Exception):
    """The submission's path leads where submissions may not go."""


def submission_source(path: Path, hidden: list[Path]) -> bytes:
    """The submission's text, read by the parent; never through a link into a hidden place
    (grading a reference solution on purpose names it by its own path)."""
    if path.is_symlink():
        raise ViewRefused(f"{path.name} is a symbolic link; submit the file itself.")
    if not path.is_file():
        raise ViewRefused(f"{path} does not exist.")
    named, real = Path(os.path.abspath(path)), path.resolve()
    for secret in hidden:
        if real.is_relative_to(secret.resolve()) and not named.is_relative_to(secret):
            raise ViewRefused(f"{path} leads into {secret}, which submissions may not use.")
    return real.read_bytes()


def plan(base: Path, hidden: list[Path]) -> View:
    """The view of a child whose folders live under `base` (made by the parent)."""
    secret = [os.path.realpath(h) for h in hidden]
    private = secret + [os.path.realpath(base)]  # the parent's own files live there too
    links, wanted = [], []
    for name in SYSTEM:
        path = f"/{name}"
        if os.path.islink(path):
            links.append((path, os.readlink(path)))
        elif os.path.isdir(path):
            wanted.append(path)
    for path in _python_paths():
        real = os.path.realpath(path)
        if os.path.exists(real) and not _reveals(real, private):
            wanted.append(real)
    return View(root=str(base / "root"), scratch=str(base / "work"),
                submission=str(base / "submission"), readable=_outermost(wanted), links=links,
                hidden=secret)


def _python_paths() -> list[str]:
    """Everything Python, the kernel toolchains and the grader may need to read."""
    import grader

    prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    paths = [*prefixes, os.path.dirname(os.path.realpath(sys.executable)),
             os.path.dirname(os.path.realpath(grader.__file__))]
    # Not the working folder or a test runner's rootdir, which sys.path may also hold.
    installed = [os.path.realpath(p) for p in prefixes]
    paths += [p for p in sys.path if p and any(_inside(os.path.realpath(p), i) for i in installed)]
    for name in _PATH_LISTS:
        paths += [p for p in os.environ.get(name, "").split(os.pathsep) if p]
    paths += [os.environ[name] for name in _PATH_VALUES if os.environ.get(name)]
    paths += [p for track in TRACKS.values() for p in wing(track).backends.readable()]
    return [p for p in paths if os.path.isabs(p)]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _reveals(path: str, secret: list[str]) -> bool:
    """A window at `path` would show a secret or a course, or it is a place the view makes
    its own."""
    if path in ("/", "/tmp") or any(_inside(path, own) for own in _OWN):
        return True
    if any(_inside(s, path) for s in secret):
        return True
    return os.path.isdir(path) and _holds_a_course(path)


def _holds_a_course(folder: str) -> bool:
    if os.path.exists(os.path.join(folder, COURSE_FILE)):
        return True
    try:
        return any(os.path.exists(os.path.join(entry.path, COURSE_FILE))
                   for entry in os.scandir(folder) if entry.is_dir(follow_symlinks=False))
    except OSError:
        return False


def _outermost(paths: list[str]) -> list[str]:
    """The paths without those that lie inside another one (their window shows them)."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


# --- in the worker ------------------------------------------------------------------------


def build(view: View, owner: int) -> None:
    """Make `view` this process's root; `owner` owns the scratch folder. Needs a private mount
    namespace and the right to mount in it (root, or the creator of a user namespace)."""
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    root = view.root
    linux.mount("tmpfs", root, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=0755,size=16m")
    for path, target in view.links:
        os.symlink(target, root + path)
    _tmpfs(root, "/tmp", f"mode=1777,size={TMP_SIZE}")
    for path in view.readable:
        _window(root, path)
    devices.build(root, SHM_SIZE)
    _window(root, view.submission)
    _tmpfs(root, view.scratch, f"mode=0700,uid={owner},gid={owner},size={SCRATCH_SIZE}")
    for secret in view.hidden:
        _mask(root + secret)
    _mkdir(root + "/proc")
    try:
        linux.mount("proc", root + "/proc", "proc",
                    linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    except OSError:  # a container that masks parts of /proc: show the one it has
        linux.mount("/proc", root + "/proc", None, linux.MS_BIND | linux.MS_REC)
    os.chdir(root)
    os.mkdir(".old-root")
    linux.pivot_root(".", ".old-root")
    os.chdir("/")
    try:
        linux.umount("/.old-root")
    except OSError as exc:  # the host would still be reachable: there is no way back
        sys.stderr.write(f"tilecourse sandbox: the old root could not be detached: {exc}\n")
        os._exit(70)
    os.rmdir("/.old-root")
    try:  # the folders made above are fixed from now on
        linux.mount(None, "/", None, linux.MS_REMOUNT | linux.MS_RDONLY | linux.MS_NOSUID
                    | linux.MS_NODEV)
    except OSError:
        pass  # the seal tries again, and refuses the start if it stays writable
    mounts.seal(view.scratch)


def _mkdir(path: str) -> None:
    os.makedirs(path, mode=0o755, exist_ok=True)


def _tmpfs(root: str, path: str, options: str) -> None:
    _mkdir(root + path)
    linux.mount("tmpfs", root + path, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, options)


def _window(root: str, path: str) -> None:
    target = root + path
    if os.path.isdir(path):
        _mkdir(target)
    else:
        _mkdir(os.path.dirname(target))
        open(target, "a").close()
    linux.mount(path, target, None, linux.MS_BIND | linux.MS_REC)
    linux.make_read_only(target)


def _mask(target: str) -> None:
    if os.path.isdir(target):
        linux.mount("tmpfs", target, "tmpfs", linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV,
                    "mode=000,size=4k")
    elif os.path.lexists(target):
        linux.mount("/dev/null", target, None, linux.MS_BIND)
