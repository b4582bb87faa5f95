"""The verdict on each case of a stage: what the wrapper proposes, and the grader's replay.

The child records one call of the wrapper as a proposal (its kernel launches and host steps,
as data); the replay runs that proposal on fresh inputs drawn from another seed, and only
its output is judged, against the reference computed here. The replay's other traces
(compile errors, out-of-bounds writes, modified inputs) decide before the numbers do; the
host watch's findings explain a failure, never make one. Hidden cases keep only whether
they passed, and none of their time. (The memory check is grader.judge.memory_growth.)

Every text that comes from the submission's processes (what a call raised, a compiler's
message, the host watch's and the replay's findings, a returned type's name) is quoted in
the verdict (grader.quoting): the grader's sentence, then the text as a block of its own.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from grader import shown_clock
from grader.backends.selection import Selection, dtype_unsupported
from grader.course import Case, Stage
from grader.judge.compare import Expected, Verdict, compare, drawn
from grader.judge.experiments import shown
from grader.judge.hidden import HiddenInputs, withheld
from grader.judge.misconduct import HOST_WORK, proposal_misconduct, replay_misconduct
from grader.problems import DTYPES
from grader.quoting import is_quoted, quoted, said
from grader.replay import order, variants
from grader.results import CaseResult, CheckResult, Failure
from grader.sandbox import ChildProcess, Outcome
from grader.sandbox.ahead import Build
from grader.tracks import TRACKS

# The replay draws its inputs from another seed than the recorded call: what the wrapper
# saw of the inputs it was given cannot be what the grader judges.
REPLAY_DRAW = 0x5EED
# The most probe replays (grader.judge.experiments) one stage may run for its failing cases:
# each costs a recorded and a replayed call.
PROBES = 3
# The most grid-order replays (grader.judge.experiments.order_dependent) one stage may run
# for its failing cases: each costs a replayed call.
ORDER_PROBES = 3
BINARIES = "of the replay: waiting for its binaries"  # grade --profile, on a GPU
COMPILES = "compiles for a GPU"  # the stage-wide check that a GPU compiler saw the kernels
# Elements of an output from which a GPU judges it first: with a later stage's builders
# compiling beside the cases, judging the outputs took 5.2 / 5.6 s of a grading on the
# H200 (Triton / cuTile) from 2^20 elements, 3.6 / 3.1 s from 2^16 (two runs, BENCHMARKS.md).
GPU_JUDGED_MIN = 1 << 16
# Failures decided before the numbers whose output is still worth a picture: the loads and
# stores that left their tensor, or wrote an input, mark the elements their programs stored.
DRAWN = (Failure.READ_OUT_OF_BOUNDS, Failure.OUT_OF_BOUNDS, Failure.MODIFIED_INPUTS)
# Failures of the values a kernel computed or where it stored them: what a case's lesson
# claims are about, so their report says which claims the case tests.
CLAIMED = (Failure.WRONG_RESULT, Failure.READ_OUT_OF_BOUNDS, Failure.OUT_OF_BOUNDS)


class StageCheck:
    """Checks the cases of one stage against one submission running in a child process."""

    def __init__(self, stage: Stage, selection: Selection, child: ChildProcess, run_seed: int = 0,
                 keep_going: bool = False):
        self.stage = stage
        self.keep_going = keep_going  # go on after a case timed out
        self.timed_out: Case | None = None  # the first case that did
        self.selection, self.backend = selection, selection.backend
        self.child = child
        self.run_seed = run_seed
        self.results: dict[str, CaseResult] = {}
        self.unchecked: str | None = None  # why no front end saw a shown case's kernels
        self.hidden = HiddenInputs(child)  # where the hidden cases' inputs went
        # (changes, dtype) -> the probed parameters, in words, where the probe passed
        self.probes: dict[tuple, str | None] = {}
        self.order_probes = 0  # grid-order replays run (ORDER_PROBES at most)
        self.phases: dict[str, float] = {}  # where the cases' seconds went (grade --profile)
        self.built_ahead = False  # its calls recorded and their builds begun (build_ahead)

    def build_ahead(self, phases: dict[str, float] | None = None) -> None:
        """On a GPU: the calls the stage will replay, recorded now in the child, in the order
        they come (each shown case, the memory check's two sizes, the speed cases), and their
        proposals compiled ahead, side by side (ReplayProcess.build_ahead), while the cases
        are judged one by one; each later `record` of one of these calls takes it as
        recorded here. Hidden cases are left to their turn (their inputs reach the
        processes only then), and so is every call after one that gave no proposal (one
        that hangs costs one time limit). The recording's seconds go to `phases` (a stage
        readied beside an earlier one keeps them apart), else to the cases' own."""
        if self.backend.device == "cpu" or self.built_ahead:
            return
        self.built_ahead = True  # once: the stage may have been readied beside an earlier one
        problem, builds = self.stage.problem, []
        memory = self.stage.memory_growth
        calls = [(c, c.seed_in_run(self.run_seed), REPLAY_DRAW) for c in self.stage.cases
                 if not c.hidden]
        calls += [(c, self.run_seed, 0) for c in ((memory.small, memory.large) if memory else ())]
        calls += [(c, c.seed_in_run(self.run_seed), 0)
                  for c in (self.stage.speed.cases if self.stage.speed else ())]
        for case, seed, replay_draw in calls:
            if dtype_unsupported(case.dtype, self.backend.device):
                continue
            with shown_clock.phase(self.phases if phases is None else phases, "record the call"):
                proposed = self.child.record_ahead(problem.id, dict(case.params), case.dtype,
                                                   seed)
            if proposal_misconduct(proposed, self.backend.track) or not proposed.proposal:
                break
            builds.append(Build(problem.id, dict(case.params), case.dtype, seed ^ replay_draw,
                                proposed.proposal))
        self.child.replay_process.build_ahead(builds)

    def judge(self, case: Case) -> Verdict:
        if not case.hidden:  # after a hidden one (cases run in another order): new processes
            self.forget_hidden()
            return self._checked(case)
        # Its time would tell its inputs (a call can sleep in proportion to a size).
        with self.hidden.case(self.phases):
            return self._checked(case)

    def _checked(self, case: Case) -> Verdict:
        start = shown_clock.now()
        seed = case.seed_in_run(self.run_seed)
        unsupported = dtype_unsupported(case.dtype, self.backend.device)
        if self._held_back(case):
            # One hang costs one time limit, not one per case: the next case would hang too.
            verdict = Verdict(False, f"not run: an earlier case ({self.timed_out.id}) timed "
                              "out; make that one finish first (or grade with --keep-going)",
                              kind=Failure.NOT_RUN)
        elif unsupported:
            verdict = Verdict(False, f"not graded on this GPU: {unsupported}",
                              kind=Failure.NOT_GRADED)
        else:
            verdict = self._judged(case, seed)
            if verdict.kind is Failure.TIMED_OUT:
                self.timed_out = case
        if case.hidden:
            verdict = withheld(verdict, not_graded_here=bool(unsupported))
        self.results[case.id] = CaseResult(
            id=case.id,
            dtype=case.dtype,
            params={} if case.hidden else dict(case.params),
            seed=0 if case.hidden else seed,  # the run's --seed reproduces it for instructors
            passed=verdict.passed,
            summary=verdict.summary,
            details=self._with_claims(case, verdict),
            stats=verdict.stats,
            picture=verdict.picture,
            # a hidden case's time is withheld (its clock stood still: grader.judge.hidden)
            seconds=0.0 if case.hidden else round(shown_clock.now() - start, 3),
            hidden=bool(case.hidden),
            failure=None if verdict.passed else verdict.kind,
        )
        return verdict

    def _held_back(self, case: Case) -> bool:
        """Whether the case is not run, for an earlier case that timed out. A hidden case's
        time-out holds back only the hidden cases after it: a shown one that said so would
        tell the kind of the hidden case's failure (its processes are new by then)."""
        return (self.timed_out is not None and not self.keep_going
                and (case.hidden or not self.timed_out.hidden))

    def _with_claims(self, case: Case, verdict: Verdict) -> list[str]:
        """A failed case's details, led by what the lesson promised that this case tests:
        the student learns which promise their kernel breaks. Only a failure of the values
        (CLAIMED) says it: a crash, a refusal or a timeout breaks no promise of the lesson's.
        Hidden cases say nothing more."""
        tested = self.stage.tested_by(case)
        if verdict.passed or case.hidden or not tested or verdict.kind not in CLAIMED:
            return verdict.details
        # After the quoted text that finishes the summary's sentence, before the analysis.
        lead = next((i for i, line in enumerate(verdict.details) if not is_quoted(line)),
                    len(verdict.details))
        return [*verdict.details[:lead], f"this case tests: {'; '.join(tested)}",
                *verdict.details[lead:]]

    def forget_hidden(self) -> None:
        """End the processes if they were given a hidden case (HiddenInputs.forget)."""
        self.hidden.forget()

    def compile_check(self) -> CheckResult | None:
        """The "compiles for a GPU" check where a shown case's kernel went unchecked (not
        graded): why, in the words of the replay's process (quoted). A hidden case's says
        nothing: the case failed, and why is the kind of its failure."""
        if self.unchecked:
            return CheckResult(COMPILES, False, False, said(
                "not graded: its kernels could not be given to a GPU compiler's front end:",
                self.unchecked))
        return None

    def _judged(self, case: Case, seed: int) -> Verdict:
        return self._replayed(dict(case.params), case.dtype, seed, case)

    def _probe(self, case: Case, seed: int):
        """The probe replays a failing case's hypotheses may ask for: the case's parameters
        changed, the same seed, judged like a case: the parameters in words where it passed,
        None where it failed or was not run (a hidden case, the stage's probes spent,
        parameters the problem refuses). One probe a dtype serves every case."""
        problem = self.stage.problem

        def run(changes: dict) -> str | None:
            params = {**case.params, **changes}  # a case holds every parameter, defaults too
            if case.hidden:  # not even a probe another case ran: a hidden case gets none
                return None
            if grows(case.params, changes):
                return None
            key = (tuple(sorted(changes.items())), case.dtype)
            if key not in self.probes:
                if len(self.probes) >= PROBES or \
                        (problem.check is not None and problem.check(params)):
                    return None
                passed = self._replayed(params, case.dtype, seed, None).passed
                self.probes[key] = f"{shown(params)}, {case.dtype}" if passed else None
            return self.probes[key]

        return run

    def _in_grid_order(self, case: Case, params: dict, dtype: str, replay_seed: int,
                       proposal: dict, call, judged: Expected):
        """The experiment that tells a kernel whose output depends on the order its programs
        run in (grader.judge.experiments.order_dependent): the case's inputs replayed again,
        the programs in grid order, judged plainly. It gives the case's own order in words
        where that replay passed; None where it failed or was not run (a GPU, whose order
        the grader does not choose; a hidden case; the stage's ORDER_PROBES spent)."""
        problem, replay = self.stage.problem, self.child.replay_process

        def run() -> str | None:
            if self.backend.device != "cpu" or case.hidden or self.order_probes >= ORDER_PROBES:
                return None
            self.order_probes += 1
            outcome = replay.call(problem.id, dict(params), dtype, replay_seed, call.tensors(),
                                  judged.reference.nbytes, proposal,
                                  variants.Replay(in_grid_order=True))
            verdict = replay_misconduct(call, outcome, problem, self.backend.device) or \
                compare(outcome, judged)
            words = TRACKS[self.backend.track].words.program
            return order.for_case(replay_seed).words(words) if verdict.passed else None

        return run

    def _replayed(self, params: dict, dtype: str, seed: int, case: Case | None) -> Verdict:
        """The wrapper's proposal, recorded in the child on inputs drawn from `seed`, then
        replayed by the grader on fresh inputs: only the replay's output is judged. A failing
        `case` is explained (its hypotheses may ask for probes); a probe (no case) is not."""
        problem = self.stage.problem
        # where a case's seconds go; a probe's count in the case's "judge the output"
        phases = self.phases if case is not None else {}
        with shown_clock.phase(phases, "record the call"):
            proposed = self.child.record(problem.id, dict(params), dtype, seed)
        refused = proposal_misconduct(proposed, self.backend.track)
        if refused:
            return refused
        replay_seed = seed ^ REPLAY_DRAW
        with shown_clock.phase(phases, "inputs and the reference"):
            call = problem.draw(params, dtype, replay_seed)
            expected = problem.reference(call.to(self.backend.device))
        replay = self.child.replay_process
        installing = replay.installing
        with shown_clock.phase(phases, "replay"):
            outcome = replay.call(problem.id, dict(params), dtype, replay_seed, call.tensors(),
                                  expected.nbytes, proposed.proposal)
        if replay.installing > installing:  # of the replay: its binaries, built ahead or not
            shown_clock.add_seconds(phases, BINARIES, replay.installing - installing)
        # A probe (no case) is judged without the stage-wide check: the case it serves
        # already went through it, and a probe that fails only leaves its cause unnamed.
        if outcome.unchecked and case is not None and not case.hidden:
            self.unchecked = self.unchecked or outcome.unchecked
        track = self.backend.track
        # The replay's output comes back to the grader on its CPU, wherever it ran.
        explained = case is not None
        judged_plainly = Expected(expected, DTYPES[dtype], "cpu", self.stage.tolerance[dtype])
        judged = Expected(expected, DTYPES[dtype], "cpu", self.stage.tolerance[dtype],
                          TRACKS.get(track), self.stage.tiles.get(track),
                          problem.explain if explained else None, call,
                          self.stage.hypotheses if explained else (), problem.experiments,
                          self._probe(case, seed) if explained else None,
                          self._in_grid_order(case, params, dtype, replay_seed,
                                              proposed.proposal, call, judged_plainly)
                          if explained else None)
        with shown_clock.phase(phases, "judge the output"):  # its probes' replays included
            verdict = self._verdict(call, outcome, judged)
        if verdict.passed and variants.count(proposed.proposal) > 1:
            verdict = self._every_configuration(proposed.proposal, params, dtype, replay_seed,
                                                call, expected, judged, phases) or verdict
        if not verdict.passed and proposed.host:
            # What the host watch saw is a fact about the wrapper; it explains, never decides.
            # It was seen in the submission's own process: quoted, as what the watch said.
            verdict = Verdict(False, HOST_WORK, [*quoted("\n".join(proposed.host)),
                                                 f"the replay's result: {verdict.summary}",
                                                 *verdict.details], verdict.stats,
                              Failure.HOST_WORK if verdict.kind is Failure.WRONG_RESULT
                              else verdict.kind, verdict.picture)
        return verdict

    def _verdict(self, call, outcome: Outcome, judged: Expected) -> Verdict:
        """The replay's outcome judged: what it did wrong beyond its output first, then the
        output against the reference."""
        verdict = replay_misconduct(call, outcome, self.stage.problem, self.backend.device)
        if verdict is None:
            return passed_on_gpu(outcome, judged, self.backend.device) or \
                compare(outcome, judged)
        if verdict.kind in DRAWN and (picture := drawn(outcome, judged)):
            verdict.picture = picture  # what the strays did to the output
        return verdict

    def _every_configuration(self, proposal: dict, params: dict, dtype: str, seed: int, call,
                             expected, judged: Expected, phases: dict) -> Verdict | None:
        """A passing case whose proposal launches an autotuned kernel, replayed under each
        of its configurations (grader.replay.variants): the verdict of the first that fails,
        saying which; None where every one passes. On a CPU the case's own replay ran the
        first."""
        total = variants.count(proposal)
        replay = self.child.replay_process
        first = 1 if self.backend.device == "cpu" else 0
        # (the grid-order experiment replays the case's own configuration, not this one's)
        judged = replace(judged, grid_order=None)
        for index in range(first, total):
            with shown_clock.phase(phases, "replay"):
                outcome = replay.call(self.stage.problem.id, dict(params), dtype, seed,
                                      call.tensors(), expected.nbytes, proposal,
                                      variants.Replay(configuration=index))
            with shown_clock.phase(phases, "judge the output"):
                verdict = self._verdict(call, outcome, judged)
            if not verdict.passed:
                which = variants.described(Path(self.child.path), variants.autotuned(proposal),
                                           index, total)
                return replace(verdict, summary=f"under the autotuner's {which} (a GPU may "
                                                f"pick any of them): {verdict.summary}")
        return None


def passed_on_gpu(outcome: Outcome, judged: Expected, device: str) -> Verdict | None:
    """The verdict of an output of GPU_JUDGED_MIN elements or more where it passes, judged
    on the GPU beside the reference (on the CPU, the elementwise checks of a 256 MB output
    took up to a second while the builders compiled); None where it fails, or is smaller,
    or there is no GPU: the CPU judges it then, with every explanation."""
    if device == "cpu" or outcome.output is None or outcome.output.numel() < GPU_JUDGED_MIN:
        return None
    verdict = compare(replace(outcome, output=outcome.output.to(device)),
                      replace(judged, device=device, explain=None, hypotheses=(), probe=None))
    return verdict if verdict.passed else None


def grows(params: dict, changes: dict) -> bool:
    """Whether a probe's changes make a size of the case larger. A probe shrinks a case,
    never grows it: a size taken from the launch (a BLOCK_N the submission chose) must not
    size the inputs the grader draws in its own process."""
    return any(type(v) is int and type(params.get(k)) is int and v > params[k]
               for k, v in changes.items())
