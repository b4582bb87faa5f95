"""What a built kernel's machine code may not read: the GPU's clock, and which multiprocessor
or warp slot runs it. On a GPU, every binary the builder made (grader.replay.binaries.build)
is disassembled and read for them before the replay may load it.

The body check (grader.replay.bodies) already refuses the kernel functions that read them,
by each language's reviewed list (grader.replay.kernel_api). This is the wall behind it, on
what the compiler actually made, whichever language or function produced it: a kernel whose
work depends on when or where it runs could skip work at some moments and earn speed it
does not have.

A GPU's special registers are read in SASS by S2R, S2UR and CS2R. Compiling PTX that reads
each one (tests/replay/test_machine_code.py does, with Triton's ptxas for sm_90) shows how
the disassembler names them: `%clock`, `%clock_hi` and `%clock64` as SR_CLOCKLO and
SR_CLOCKHI; `%globaltimer` (and its `_lo`, `_hi`) as SR_GLOBALTIMERLO and SR_GLOBALTIMERHI;
`%smid` as SR_VIRTUALSMID; `%warpid` as SR_VIRTID; the performance counters `%pm0`..`%pm7`
(which count cycles too) as SR_PM0..SR_PM7. Any instruction that names one is refused,
whatever its opcode.

The disassembler is NVIDIA's nvdisasm: a language's toolchain may ship one (its GPU part's
`disassemblers`: Triton's, in triton/backends/nvidia/bin), and the CUDA toolkit has another
(on PATH, or under CUDA_HOME); each is tried until one reads the binary. A binary that none of them can
read is not passed: `CubinUnreadable` makes the launch "not graded" (grader.replay.binaries),
since the student did nothing wrong, and a binary no one read must earn nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.tracks import TRACKS, wing

# What each refused special register reveals, by the start of its name in SASS.
REVEALS = {
    "CLOCK": "the GPU's clock",
    "GLOBALTIMER": "the GPU's clock",
    "PM": "the GPU's performance counters (which count its clock cycles)",
    "VIRTUALSMID": "which multiprocessor (SM) runs it",
    "SMID": "which multiprocessor (SM) runs it",
    "VIRTID": "which warp slot of its multiprocessor runs it",
}
_REFUSED = re.compile(r"\bSR_(CLOCK(?:LO|HI)?|GLOBALTIMER(?:LO|HI)?|PM\d+\w*|VIRTUALSMID|SMID"
                      r"|VIRTID)\b")
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-fA-F]+\*/\s+(.*)$")  # `/*02a0*/  CS2R R2, SR_... ;`
_PLACE = re.compile(r'^\s*//## File "([^"]*)", line (\d+)')  # nvdisasm -g's line information
_ELF = b"\x7fELF"
DISASSEMBLY_SECONDS = 120


class CubinUnreadable(Exception):
    """A binary whose machine code could not be read; the message says why."""


@dataclass(frozen=True)
class Read:
    """One refused special register, read by an instruction of a binary."""

    register: str  # as the disassembler names it: "SR_GLOBALTIMERLO"
    reveals: str  # what it tells the kernel: "the GPU's clock"
    file: str  # the source file the binary's line information names there ("" if none)
    line: int | None


def is_machine_code(name: str, blob: bytes) -> bool:
    """Whether a file the builder made holds machine code: a cubin by its name (Triton's
    `*.cubin`, cuTile's `cubin`) or by its ELF header."""
    return name.endswith("cubin") or blob[:4] == _ELF


def disassemblers() -> list[str]:
    """The nvdisasm programs found here: those the languages' toolchains ship first (each
    reads the cubins its own compiler makes), then the CUDA toolkit's."""
    found = [path for track in TRACKS.values() for path in wing(track).gpu.disassemblers()]
    found.append(shutil.which("nvdisasm") or "")
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            found.append(os.path.join(home, "bin", "nvdisasm"))
    unique = dict.fromkeys(os.path.realpath(p) for p in found if p and os.access(p, os.X_OK))
    return list(unique)


def disassemble(blob: bytes) -> str:
    """The code sections of a cubin, disassembled with line information; raises CubinUnreadable
    where no nvdisasm is found, or none reads it."""
    if blob[:4] != _ELF:
        raise CubinUnreadable("a built binary is not a cubin (no ELF header), so its machine code "
                         "cannot be read")
    programs = disassemblers()
    if not programs:
        raise CubinUnreadable("nvdisasm, NVIDIA's disassembler, was not found (a kernel language's "
                         "toolchain may ship one; the CUDA toolkit has one), so the grader "
                         "cannot read the machine code its compiler made")
    said = ""
    with tempfile.TemporaryDirectory(prefix="tilecourse-sass-") as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(blob)
        for program in programs:
            try:
                done = subprocess.run([program, "--print-code", "--print-line-info", str(path)],
                                      capture_output=True, text=True, errors="replace",
                                      timeout=DISASSEMBLY_SECONDS)
            except (OSError, subprocess.TimeoutExpired) as exc:
                said = f"{type(exc).__name__}: {exc}"
                continue
            if done.returncode == 0:
                return done.stdout
            said = done.stderr.strip()[-500:]
    raise CubinUnreadable(f"nvdisasm could not read a built binary ({said}), so the grader cannot "
                     "read the machine code its compiler made")


def reads(sass: str) -> list[Read]:
    """Every instruction of a disassembly that reads a refused special register."""
    found, file, line = [], "", None
    for text in sass.splitlines():
        place = _PLACE.match(text)
        if place:
            file, line = place.group(1), int(place.group(2))
            continue
        instruction = _INSTRUCTION.match(text)
        if not instruction:
            continue
        for register in _REFUSED.finditer(instruction.group(1)):
            name = register.group(1)
            kind = next(k for k in REVEALS if name.startswith(k))
            found.append(Read(register.group(0), REVEALS[kind], file, line))
    return found


def check_cubins(files: dict[str, bytes], source: Path, api: str) -> str | None:
    """Why the binaries of one launch (`files`: name -> bytes, as the builder made them) may
    not run, for the student (`source`: the kernel file, `api`: its language's functions as
    a student writes them, "tl.*"); None where none reads what it may not. Raises
    CubinUnreadable."""
    for name, blob in sorted(files.items()):
        if not is_machine_code(name, blob):
            continue
        found = reads(disassemble(blob))
        if found:
            return refusal(found[0], source, api)
    return None


def refusal(read: Read, source: Path, api: str) -> str:
    at = (f" (line {read.line} of {source.name})"
          if read.line is not None and Path(read.file).name == source.name else "")
    return (f"a kernel reads {read.reveals}{at}: its compiled code reads the GPU register "
            f"{read.register}. A kernel's work must not depend on when or where it runs (the "
            f"grader times your kernel: one that does less at some moments would earn speed "
            f"it does not have); compute the same result on every run, with {api} operations")
