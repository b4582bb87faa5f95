"""What the grader makes of its processes' replies: the records it hands on (each reply's
shape sits with its request: grader.sandbox.child, replayer, builder)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from grader.quoting import single_line
from grader.results import Failure
from grader.replay.execute import LaunchRecord
from grader.replay.traffic import SHARED_ROWS

# Each finding of the replay's watch, and each overrun, is one line of text wherever it is
# shown (causes quote findings inside their own sentences): cut to this, newlines escaped.
FINDING_CHARS = 500
# Errors after which a CUDA context is unusable: the replay process is replaced.
STICKY = ("CUDA error", "illegal memory access", "illegal instruction", "unspecified launch failure",
           "device-side assert")


@dataclass
class Outcome:
    """What one replayed call of the submission did, as the replay reported it."""

    output: Any = None  # a CPU tensor, when the call returned a plain tensor
    returned: str | None = None  # what the call returned instead, described
    output_device: str | None = None
    error: str | None = None  # raised, timed out, or crashed, described for the student
    failure: Failure | None = None  # set by the grader when the call timed out or crashed
    launches: list[LaunchRecord] = field(default_factory=list)
    host: list[str] = field(default_factory=list)  # what its host code did that it may not
    compile_errors: list[str] = field(default_factory=list)  # a GPU compiler's rejections
    unchecked: str | None = None  # why its kernels could not be given to a compiler
    overruns: list[str] = field(default_factory=list)
    # What the replay saw of the kernels' loads and stores (grader.replay.traffic), on a CPU:
    # each a dict of kind, text (at the kernel's line), line and fails; and per output
    # element, bits: written, written by several programs, by one that read out of bounds.
    traffic: list[dict] = field(default_factory=list)
    traffic_map: Any = None
    # per output element, the program that stored it (grader.replay.traffic.Traffic.writers),
    # a program of launches[writer_launch]
    writers: Any = None
    # rows of (flat index, program, program): elements several programs stored, the two
    # lowest of those (grader.replay.traffic.Traffic.shared)
    shared: Any = None
    writer_launch: int | None = None
    inputs_after: list[Any] = field(default_factory=list)

    @property
    def context_lost(self) -> bool:
        """The call broke its CUDA context: the next one needs a fresh replay process."""
        return bool(self.error) and any(s in self.error for s in STICKY)


@dataclass
class Proposed:
    """What one recorded call of the wrapper proposed: made by the child
    (grader.sandbox.submission), sent as its reply, and read back by the grader, one record
    at both ends. The proposal is data the replay checks before it runs any of it."""

    proposal: dict | None = None  # grader.replay.proposal.Proposal, as JSON
    error: str | None = None  # what the wrapper raised, timed out or crashed
    failure: Failure | None = None  # set by the grader when the call timed out or crashed
    refused: str | None = None  # why its launches cannot be replayed
    refused_launch: bool = False  # the reason is one of its launches, not its host code
    launches: int = 0  # launches the wrapper made
    host: list[str] = field(default_factory=list)  # the host watch's findings

    def reply(self) -> dict:
        """The child's reply (grader.sandbox.child.RECORD_REPLY): all but `failure`, which
        only the grader sets."""
        return {"proposal": self.proposal, "error": self.error, "refused": self.refused,
                "refused_launch": self.refused_launch, "launches": self.launches,
                "host": self.host}

    @classmethod
    def from_reply(cls, value: dict) -> "Proposed":
        """A reply read back, its shape already checked."""
        return cls(**{k: value[k] for k in ("proposal", "error", "refused", "refused_launch",
                                             "launches", "host")})


@dataclass
class Batch:
    """What the replay said about one batch of timed calls, and the grader's own clock."""

    times_ms: list[float]  # per call, from the replay's CUDA events
    digests: list[int | None]  # of each output (grader.timing.digest)
    wall_ms: float  # the whole request, by the grader's clock


class TimingFailed(Exception):
    """A timed batch got no acceptable reply; the message is for the student."""


def call_outcome(value: dict, tensors: dict, inputs: list) -> Outcome:
    """The record of a replayed call from its reply (`value`, checked against CALL_REPLY, and
    its tensors); ProtocolError when the tensors are not the ones asked for."""
    import torch

    from grader import protocol

    returned = value["output"]
    after = [tensors.get(f"input.{i}") for i in range(len(inputs))]
    for before, now in zip(inputs, after):
        if now is None or now.shape != before.shape or now.dtype != before.dtype:
            raise protocol.ProtocolError("its reply lacks the inputs as they were after the call")
    if set(tensors) - {f"input.{i}" for i in range(len(inputs))} - {"output", "traffic",
                                                                    "writers", "shared"}:
        raise protocol.ProtocolError("its reply holds tensors nobody asked for")
    output = tensors.get("output")
    traffic_map, writers = tensors.get("traffic"), tensors.get("writers")
    for name, tensor, dtype in (("a traffic map", traffic_map, torch.uint8),
                                ("a map of writers", writers, torch.int32)):
        if tensor is not None and (output is None or tensor.shape != output.shape
                                   or tensor.dtype != dtype):
            raise protocol.ProtocolError(f"its reply holds {name} that is not one of the output")
    launch = value["writer_launch"]
    if (writers is None) != (launch is None) or (
            launch is not None and not 0 <= launch < len(value["launches"])):
        raise protocol.ProtocolError("its reply names the writers of a launch it did not make")
    shared = tensors.get("shared")
    if (shared is None) != (writers is None) or shared is not None and (
            shared.dim() != 2 or shared.shape[1] != 3 or shared.dtype != torch.int32
            or shared.shape[0] > min(writers.numel(), SHARED_ROWS) or shared.numel() and not (
                0 <= int(shared[:, 0].min()) and int(shared[:, 0].max()) < writers.numel())):
        raise protocol.ProtocolError("its reply holds rows of shared writers that are not rows "
                                     "of its output")
    programs = math.prod(value["launches"][launch]["grid"]) if launch is not None else 0
    if writers is not None and writers.numel() and not (
            int(writers.min()) >= -2 and int(writers.max()) < programs and (
                not shared.numel() or 0 <= int(shared[:, 1:].min())
                and int(shared[:, 1:].max()) < programs)):
        # the judge counts per program: a number no program of the launch has is refused
        raise protocol.ProtocolError("its reply names writers that are no program of the launch")
    if ("device" in returned) != (output is not None):
        raise protocol.ProtocolError("its reply describes an output it does not hold")
    return Outcome(
        output=output, output_device=returned.get("device"),
        returned=None if output is not None else returned.get("type", "nothing"),
        error=value["error"], host=value["host"], compile_errors=value["compile_errors"],
        unchecked=value["unchecked"],
        overruns=[single_line(o, FINDING_CHARS) for o in value["overruns"]],
        traffic=[{**f, "text": single_line(f["text"], FINDING_CHARS)} for f in value["traffic"]],
        traffic_map=traffic_map, writers=writers, shared=shared, writer_launch=launch,
        launches=[LaunchRecord(**la) for la in value["launches"]], inputs_after=after)


# The shapes of the replay's replies (grader.protocol.check_shape): a reply of another shape is a
# crash of its case.
RETURNED = {"device?": str, "type?": str}  # describe_output's: a tensor's device, or a type
LAUNCH = {"kernel": str, "grid": [int], "constants": {str: (int, bool)}, "language": str}
CALL_REPLY = {"error": (str, None), "launches": [LAUNCH], "host": [str], "compile_errors": [str],
              "unchecked": (str, None), "overruns": [str], "output": RETURNED,
              "traffic": [{"kind": str, "text": str, "line": (int, None), "fails": bool}],
              "writer_launch": (int, None)}
WARM_REPLY = {"error": (str, None), "launches": [LAUNCH], "host": [str], "compile_errors": [str]}
TIMING_REPLY = {"times": [float], "digests": [(int, None)], "outputs": [RETURNED]}
