"""What makes a case fail before its numbers are looked at: a recorded call that gives
nothing to replay (`proposal_misconduct`: it raised, launched no kernel of the track, or
launched what cannot be replayed), and a replay that went wrong besides its output's values
(`replay_misconduct`: it crashed or timed out, a kernel does not compile, stray loads and
stores, a modified input, a returned value that is not a tensor on the inputs' device).

Every text that comes from the submission's processes is quoted (grader.quoting).
"""

from __future__ import annotations

import torch

from grader.judge.compare import Verdict
from grader.problems import Call, Problem
from grader.quoting import inline, quoted
from grader.results import Failure
from grader.sandbox import Outcome
from grader.sandbox.outcomes import Proposed
from grader.tracks import TRACKS


def proposal_misconduct(proposed: Proposed, track: str) -> Verdict | None:
    """Why a recorded call gives nothing to replay: it failed, no kernel of the track was
    launched, or what it launched cannot be replayed."""
    if proposed.failure:  # the grader's own finding: it timed out or its process died
        return told(proposed.error, proposed.failure)
    if proposed.error:  # what the child reported its call raised
        return Verdict(False, "the wrapper raised an exception:", quoted(proposed.error),
                       kind=Failure.RAISED)
    launched = [s for s in proposed.proposal.get("steps", []) if isinstance(s, dict)
                and s.get("op") == "launch" and s.get("language") == track]
    cannot = [CANNOT, *quoted(proposed.refused or "")]
    if proposed.refused_launch or not proposed.host:  # the launch itself is the cause
        refused = Verdict(False, cannot[0], cannot[1:] + _watched(proposed.host),
                          kind=Failure.NOT_REPLAYABLE)
    else:  # host code made what it launched or returned: the watch says what
        refused = Verdict(False, HOST_WORK, [*quoted("\n".join(proposed.host)), *cannot],
                          kind=Failure.HOST_WORK)
    if proposed.refused and proposed.launches:  # it launched, in a way that cannot be replayed
        return refused
    if not launched:
        language = TRACKS[track].title if track in TRACKS else track
        return Verdict(False, f"launched no {language} kernel: the stage must be computed by "
                              "a kernel, not by PyTorch", _watched(proposed.host),
                       kind=Failure.NO_KERNEL)
    if proposed.refused:
        return refused
    return None


HOST_WORK = "its wrapper worked on the host, as the host watch saw it:"
CANNOT = "its launches cannot be replayed:"


def told(message: str | None, kind: Failure) -> Verdict:
    """A failure the grader found (a timeout, a crash), in its message's words: the first
    line the grader's sentence, the rest (what the process said, quoted) below it."""
    first, *rest = (message or kind.value).split("\n")
    return Verdict(False, first, rest, kind=kind)


def _watched(host: list[str]) -> list[str]:
    """The host watch's findings under a line of the grader's, when there are any."""
    return ["what the host watch saw:", *quoted("\n".join(host))] if host else []


def _each(messages: list[str]) -> list[str]:
    """Several messages quoted one after another, each block under a line of its own."""
    lines = quoted(messages[0])
    for more in messages[1:]:
        lines += ["and:", *quoted(more)]
    return lines


def replay_misconduct(call: Call, outcome: Outcome, problem: Problem,
                      device: str) -> Verdict | None:
    """Everything wrong with the replay besides the numbers it returned."""
    if outcome.failure:  # the grader's own finding: it timed out or its process died
        return told(outcome.error, outcome.failure)
    if outcome.error:
        return Verdict(False, "its kernels failed when the grader ran them:",
                       quoted(outcome.error), kind=Failure.RAISED)
    if outcome.compile_errors:
        # The compiler's front end checks each launch before it runs (on the CPU backends
        # too): a kernel it refuses never ran.
        return Verdict(False, "a kernel does not compile; the compiler said:",
                       _each(outcome.compile_errors), kind=Failure.DOES_NOT_COMPILE)
    if outcome.unchecked:
        # A kernel body that only an interpreter would run must earn nothing: without
        # the front end's word the case is not graded, however right its output.
        return Verdict(False, "not graded: its kernel could not be checked by a GPU "
                              "compiler's front end:", quoted(outcome.unchecked),
                       kind=Failure.NOT_GRADED)
    failing = [f for f in outcome.traffic if f["fails"]]  # grader.replay.traffic
    seen = quoted("\n".join(f["text"] for f in failing))  # one finding a line
    if failing and failing[0]["kind"] == "store_to_input":
        return Verdict(False, "modified its input, as the watch of its loads and stores "
                              "saw:", seen, kind=Failure.MODIFIED_INPUTS)
    if failing and all(f["kind"] == "race" for f in failing):
        return Verdict(False, "its programs race: in one launch, one reads or stores again "
                              "an element another stores, as the watch of its loads and stores "
                              "saw (here the programs ran one by one, in an order drawn for the "
                              "case; a GPU runs them at once, in any order):", seen, kind=Failure.WRONG_RESULT)
    if failing:
        # What the findings saw, and no more: a kernel that only read past an edge is not
        # told it wrote there (its hidden cases show the kind alone).
        kinds = {f["kind"] for f in failing}
        wrote, read = "store_out_of_bounds" in kinds, "load_out_of_bounds" in kinds
        did = {(True, True): "read and wrote", (True, False): "read",
               (False, True): "wrote"}.get((read, wrote), "read or wrote")
        return Verdict(False, f"{did} outside a tensor, as the watch of its loads and stores "
                              "saw:", seen,
                       kind=Failure.READ_OUT_OF_BOUNDS if read and not wrote
                       else Failure.OUT_OF_BOUNDS)
    if outcome.overruns:
        return Verdict(False, "wrote out of bounds, past the end of a tensor:",
                       [*quoted("\n".join(outcome.overruns)),
                        "a load or store is missing its mask, or its mask is too loose"],
                       kind=Failure.OUT_OF_BOUNDS)
    names = problem.tensor_names(call)
    for name, before, after in zip(names, call.tensors(), outcome.inputs_after):
        if not torch.equal(before, after):
            return Verdict(False, f"modified its input `{name}`: a kernel must not write its inputs",
                           kind=Failure.MODIFIED_INPUTS)
    if outcome.output is None:
        return Verdict(False, f"returned {inline(outcome.returned)}, expected a torch.Tensor",
                       kind=Failure.WRONG_RETURN)
    if outcome.output_device != torch.device(device).type:
        return Verdict(False, f"returned a tensor on {inline(outcome.output_device)}, expected "
                              f"it on {device} like the inputs",
                       kind=Failure.WRONG_RETURN)
    return None
