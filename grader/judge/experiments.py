"""Causes confirmed by experiment: the stage's hypotheses (course.toml's
[[stages.hypotheses]], grader.course.Hypothesis) tried on a failing case.

A hypothesis is named only when every experiment it gives holds: one of the problem's
experiments, by name (mostly: the output matches the reference recomputed under the mistake;
its findings may carry facts the hypothesis's words name, such as the tile width), and a
replay of the same kernel on the case's inputs changed as the hypothesis says (`probe`: K = 1,
not causal, a unit scale; or a value the case's own launch gives, N within one key tile of
the BLOCK_N it was launched with) passes. The cause carries the experiments that confirmed
it, and the case's result records them. A probe is run by whoever replays the case (Probe):
it may refuse (a hidden case, the stage's budget of probes spent), and a hypothesis whose
probe did not run is not named. One probe serves every case of its dtype that resolves it
alike: the kernel right on one set of changed parameters is what it shows.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from grader.course import FromLaunch
from grader.problems.evidence import Cause, Evidence, EvidenceFinding, experiment

# Given a probe's parameter changes: the parameters of the replay, in words, where it passed;
# None where it failed or was not run.
Probe = Callable[[dict], "str | None"]


def confirmed(ev: Evidence, hypotheses: Sequence, experiments: Mapping[str, Any],
              probe: Probe | None) -> list[Cause]:
    """The first hypothesis whose experiments all hold, as a Cause in its words with the
    facts its experiment found filled in; else nothing."""
    for hypothesis in hypotheses:
        finding, done = EvidenceFinding(), []
        if hypothesis.experiment:
            declared = experiments.get(hypothesis.experiment)
            found = experiment(declared).findings(ev) if declared is not None else []
            finding = next((f for f in found if f.holds(ev)), None)
            if finding is None:
                continue
            done.append(finding.how)
        if hypothesis.probe:
            changes, words = resolved(hypothesis.probe, ev.constants)
            passed = probe(changes) if probe is not None and changes is not None else None
            if not passed:
                continue
            done.append(f"your kernel replayed with {shown(changes, words)} ({passed}) "
                        "is right")
        return [Cause(hypothesis.cause, _said(hypothesis.says, finding.facts), "; ".join(done))]
    return []


def _said(says: str, facts: Mapping[str, Any]) -> str:
    """The course's words with the facts filled in (checked when the course loaded: they name
    only these facts); a format that does not fit a fact's kind leaves the words as written."""
    try:
        return says.format_map(facts)
    except (KeyError, ValueError, TypeError, IndexError):
        return says


def resolved(changes: Mapping[str, Any],
             constants: Mapping[str, Any]) -> tuple[dict | None, dict[str, str]]:
    """A probe's parameter changes for one case, and where each value the launch gives
    (FromLaunch) came from, in words: it is taken from the constants the case's kernels
    were launched with. No changes (None) where one of those is missing."""
    found, words = {}, {}
    for name, value in changes.items():
        if isinstance(value, FromLaunch):
            given = value.of(constants)
            if given is None:
                return None, {}
            value, words[name] = given
        found[name] = value
    return found, words


def shown(params: Mapping[str, Any], words: Mapping[str, str] | None = None) -> str:
    """Parameters in words, a probe's changes or the whole replay's: `K = 1, layout =
    contiguous`, a value the launch gave with where it came from (`N = 31 (BLOCK_N - 1)`).
    One left unset (None: its default depends on the others) is left out."""
    words = words or {}
    return ", ".join(f"{name} = {str(value).lower() if isinstance(value, bool) else value}"
                     + (f" ({words[name]})" if name in words else "")
                     for name, value in params.items() if value is not None)


# Given nothing: the order the case ran its programs in, in words, where the same inputs
# replayed with the programs in grid order gave the right output; None where they did not,
# or the experiment was not run (grader.judge.stage).
GridOrderProbe = Callable[[], "str | None"]


def order_dependent(probe: GridOrderProbe | None, words: Any = None) -> list[Cause]:
    """The output depends on the order the programs ran in, where the experiment says so: the
    case's own replay (programs in the case's order, grader.replay.order) was wrong, and the
    same inputs replayed in grid order are right. Else nothing."""
    used = probe() if probe is not None else None
    if used is None:
        return []
    program, programs = (words.program, words.programs) if words else ("program", "programs")
    return [Cause("program_order",
                  f"the output depends on the order the {programs} run in: this case ran them "
                  f"in {used} and its output is wrong, while in grid order ({program} 0 "
                  f"first) the same inputs give the right output. A GPU runs the {programs} "
                  f"of a launch in any order, and none waits for another: a {program} may "
                  f"use only what it loads from the inputs, what it stores itself, and what "
                  f"an earlier launch stored (never what another {program} of the same launch "
                  f"stores, not even through an atomic)",
                  f"the same inputs replayed with the {programs} in grid order are right")]
