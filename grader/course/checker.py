"""Validation of course.toml, strict on purpose: a typo in an instructor's course.toml must
not silently drop a case or a tolerance. The file's shape (keys, types, bounds, what is
required) is the records' own, validated straight into them (grader.course.schema); what the
values mean together is checked here, and a stage is made of its records, its place in the
file and its problem. Every error names the file and the key path (for example
`stages[3].cases[1].N`) and says what was expected, and all of them are listed at once."""

from __future__ import annotations

import string
import zlib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from grader.backends.selection import BACKENDS
from grader.course import schema
from grader.course.model import (WHOLE_DIM, Case, Course, FromLaunch, MemoryGrowth, Speed, Stage)
from grader.course.policy import Policy
from grader.course.wording import describe, kind_of
from grader.errors import CourseError
from grader.problems import DTYPES, PROBLEMS, Problem
from grader.problems.evidence import experiment

GPU_BACKENDS = tuple(name for name, backend in BACKENDS.items() if backend.device == "cuda")


class Checker:
    """Validates the parsed TOML, collecting every problem with its key path."""

    def __init__(self, path: Path):
        self.path = path
        self.errors: list[str] = []

    def error(self, where: str, message: str) -> None:
        self.errors.append(f"{where}: {message}")

    def raise_if_errors(self) -> None:
        if self.errors:
            listed = "\n".join(f"  - {e}" for e in self.errors)
            raise CourseError(f"{self.path} is invalid:\n{listed}")

    def validate(self, raw: Any, kind: Any, where: str = ""):
        """`raw` read as the table `kind` (grader.course.schema), or None with its errors
        recorded."""
        try:
            return schema.validator(kind).validate_python(raw)
        except ValidationError as exc:
            self.errors += [describe(e, kind, where) for e in exc.errors()]
            return None

    def course(self, raw: dict) -> Course:
        top = self.validate(raw, schema.CourseFile)
        if top is None:
            return Course(path=self.path.resolve(), title="", stages=(), rules=None)
        stages = tuple(s for i, entry in enumerate(top["stages"])
                       if (s := self.stage(entry, i)) is not None)
        if not top["stages"]:
            self.error("stages", "the course has no stages")
        ids = [s.id for s in stages]
        for dup in sorted({i for i in ids if ids.count(i) > 1}):
            self.error("stages", f"stage id '{dup}' appears more than once")
        head = top["course"]
        return Course(path=self.path.resolve(), title=head["title"], stages=stages,
                      rules=top.get("submissions"), handout=head.get("handout", ""),
                      policy=self.policy(top.get("policy", Policy()), ids))

    def policy(self, p: Policy, stage_ids: list[str]) -> Policy:
        """[policy], whose values must make sense together: a late penalty counts from a
        due date, and a due date names its time zone (a class spans several)."""
        if p.due is not None and p.due.utcoffset() is None:
            self.error("policy.due", f"{p.due.isoformat()} has no time zone; add the offset "
                       f"of the class's own time, as in {p.due.isoformat()}-08:00 (or Z for UTC)")
        if p.late is not None and p.due is None and not p.stage_due:
            self.error("policy.late", "a late penalty counts from a due date: add policy.due "
                       "(due = 2026-12-18T23:59:00-08:00), or remove [policy.late]")
        if p.late is not None and p.late.percent_per_day == 0:
            self.error("policy.late.percent_per_day", "give the percent of the total taken "
                       "off per day late (percent_per_day = 10); without a penalty, remove "
                       "[policy.late]")
        for table, dates in (("extensions", p.extensions), ("stage_due", p.stage_due)):
            for key, due in dates.items():
                if due.utcoffset() is None:
                    self.error(f"policy.{table}.{key}", f"{due.isoformat()} has no time zone; "
                               f"add the offset, as in {due.isoformat()}-08:00")
        if p.extensions and p.due is None and not p.stage_due:
            self.error("policy.extensions", "an extension moves a due date: add policy.due")
        for stage in sorted(set(p.stage_due) - set(stage_ids)):
            self.error(f"policy.stage_due.{stage}", f"no stage has the id '{stage}' (the "
                       f"course's: {', '.join(stage_ids)})")
        return p

    def stage(self, raw, index: int) -> Stage | None:
        """The stage of a [[stages]] entry: its records as the file gives them, its number,
        its problem, and a case per dtype of each case entry (None: errors recorded)."""
        where = f"stages[{index}]"
        problem = self.problem(raw, where)
        s = problem and self.validate(raw, schema.stage_table(problem, GPU_BACKENDS), where)
        if not s:
            return None
        for track, spec in s.get("tiles", {}).items():
            for j, dim in enumerate(spec):
                positive = type(dim) is int and dim >= 1  # noqa: E721 - TOML booleans are ints
                if not positive and not (isinstance(dim, str) and dim):
                    self.error(f"{where}.tiles.{track}[{j}]",
                               f"expected a constexpr name, '{WHOLE_DIM}' or a positive integer")
        tolerance = s["tolerance"]
        cases = self.cases(s["cases"], f"{where}.cases", problem, tolerance, s["id"])
        if not s["cases"]:
            self.error(f"{where}.cases", "a stage needs at least one case")
        self.claims(s, where)
        speed = s.get("speed") and self.speed(s["speed"], f"{where}.speed", problem, tolerance,
                                              s["id"])
        growth = s.get("memory_growth") and self.memory_growth(
            s["memory_growth"], f"{where}.memory_growth", problem, tolerance, s["id"])
        for j, h in enumerate(s.get("hints", ())):
            self.dtypes(h.when.dtypes, f"{where}.hints[{j}].when.dtypes", tolerance)
        for j, h in enumerate(s.get("hypotheses", ())):
            self.hypothesis(h, f"{where}.hypotheses[{j}]", problem, cases, s["id"])
        return Stage(**{**s, "number": index + 1, "problem": problem, "cases": tuple(cases),
                        "speed": speed, "memory_growth": growth})

    def claims(self, s: dict, where: str) -> None:
        """A stage with a `claims` table: every case names the claims it tests, each one of
        the table's, and every claim has a case (a claim no case tests is a promise the
        grader does not hold a kernel to)."""
        claims, stage_id = s.get("claims", {}), s["id"]
        known = ", ".join(claims) or "none"
        for j, case in enumerate(s["cases"]):
            at = f"{where}.cases[{j}]"
            if claims and not case.get("claims"):
                self.error(at, f"stage '{stage_id}': the case names no claim; say which of the "
                           f"lesson's claims it tests (claims = [\"...\"]; known: {known})")
            for name in case.get("claims", ()):
                if name not in claims:
                    self.error(f"{at}.claims", f"stage '{stage_id}': unknown claim {name!r}; "
                               f"known: {known} (a claim is added to the stage's claims "
                               "table with the lesson's words for it)")
        named = {name for case in s["cases"] for name in case.get("claims", ())}
        for name in claims:
            if name not in named:
                self.error(f"{where}.claims.{name}", f"stage '{stage_id}': no case tests the "
                           f"claim {name!r} ({claims[name]}); add a case with "
                           f"claims = [\"{name}\"] or remove the claim")

    def hypothesis(self, h, where: str, problem: Problem, cases, stage_id: str) -> None:
        self.probe(h.probe, f"{where}.probe", problem, cases, f"stage '{stage_id}', hypothesis "
                   f"{h.cause!r}")
        if h.experiment is not None and h.experiment not in problem.experiments:
            known = ", ".join(problem.experiments) or \
                f"none (the problem {problem.id} defines no recompute; give a probe)"
            self.error(f"{where}.experiment", f"unknown experiment {h.experiment!r}; known: {known}")
        elif h.experiment is None and not h.probe:
            self.error(where, "give an `experiment` or a `probe` (or both): a hypothesis is "
                       "named only when an experiment confirms it")
        else:
            self.says(h, f"{where}.says", problem)

    def says(self, h, where: str, problem: Problem) -> None:
        """A hypothesis's words may name, in braces, only the facts its experiment finds
        ({tile}: the tile width it found the mistake at); a brace itself is written twice."""
        facts = experiment(problem.experiments[h.experiment]).facts if h.experiment else ()
        try:
            named = [field for _, field, _, _ in string.Formatter().parse(h.says)
                     if field is not None]
        except ValueError as exc:
            self.error(where, f"{exc}; write a brace as {{{{ or }}}}")
            return
        unknown = [f for f in named if f not in facts]
        for field in unknown:
            found = (f"experiment {h.experiment!r} finds " +
                     (", ".join(facts) if facts else "no facts to name")) if h.experiment \
                else "a hypothesis without an experiment has no facts to name"
            self.error(where, f"names {{{field}}}, but {found}; write a brace as {{{{ or }}}}")
        if not unknown:
            try:  # a format inside the braces ({factor:.4g}) must be one Python reads
                h.says.format_map({f: 1 for f in facts})
            except (KeyError, ValueError, IndexError) as exc:
                self.error(where, f"a brace's format cannot be read ({exc}); write a fact "
                           "as {name} or {name:.4g}")

    def probe(self, probe, where: str, problem: Problem, cases, named: str) -> None:
        """A probe replays a failing case with its parameters changed: the parameters it makes
        of each of the stage's cases must be ones the problem takes, or the probe would be
        refused whenever that case fails and its hypothesis never named. A value the launch
        gives is known only once a case ran: the case's own value stands in for it here."""
        if not probe or problem.check is None:
            return
        seen = set()
        for case in cases:
            params = {**case.params, **{k: v for k, v in probe.items()
                                        if not isinstance(v, FromLaunch)}}
            key = tuple(params.items())
            if key in seen:  # one case's dtypes, or cases the probe makes alike
                continue
            seen.add(key)
            for message in problem.check(params):
                self.error(where, f"{named}: the probe would replay the case {case.id} with "
                           f"parameters the problem refuses: {message}")

    def problem(self, raw, where: str, known: dict | None = None,
                course_file: str | None = None) -> Problem | None:
        """The problem a stage table names by its id (None, with the error recorded): one the
        grader knows, or with `known`, one of the stages of `course_file`."""
        known = PROBLEMS if known is None else known
        if not isinstance(raw, dict):
            self.error(where, f"expected a table, found {kind_of(raw)}")
        elif "id" not in raw:
            self.error(f"{where}.id", "missing")
        elif not isinstance(raw["id"], str):
            self.error(f"{where}.id", f"expected a string, found {kind_of(raw['id'])}")
        elif raw["id"] not in known:
            unknown = f"no stage '{raw['id']}' in {course_file}" if course_file else \
                f"unknown stage id '{raw['id']}'"
            self.error(f"{where}.id", f"{unknown}; known: {', '.join(known)}")
        else:
            return known[raw["id"]]
        return None

    def speed(self, s: dict, where: str, problem: Problem, tolerance, stage_id: str) -> Speed:
        thresholds = s["thresholds"]
        for arch, per_backend in thresholds.items():
            for backend, t in per_backend.items():
                at = f"{where}.thresholds.{arch}.{backend}"
                if t.min_speedup is None and t.min_fraction is None:
                    self.error(at, "give min_speedup, min_fraction or both")
                if t.copied_from is not None and t.copied_from not in thresholds:
                    self.error(f"{at}.copied_from", f"names {t.copied_from!r}, which has no "
                               f"thresholds of its own here; known: {', '.join(thresholds)}")
                if t.baseline is not None and t.baseline not in problem.baselines:
                    self.error(f"{at}.baseline", f"names {t.baseline!r}, which is not a baseline "
                               f"of {problem.id}; its baselines: {', '.join(problem.baselines)}")
        cases = self.cases(s["cases"], f"{where}.cases", problem, tolerance, f"{stage_id}/speed")
        if not s["cases"]:
            self.error(f"{where}.cases", "a speed table needs at least one case")
        return Speed(**{**s, "cases": tuple(cases)})

    def memory_growth(self, m: dict, where: str, problem: Problem, tolerance,
                      stage_id: str) -> MemoryGrowth:
        """The rule's two cases: its sizes (the problem's defaults where it gives none), in
        its dtype, with one seed."""
        self.dtypes([m["dtype"]], f"{where}.dtype", tolerance)
        seed = zlib.crc32(f"{stage_id}/memory/0".encode())
        small, large = (Case(_params(problem, m[size]), m["dtype"], seed)
                        for size in ("small", "large"))
        return MemoryGrowth(small, large, m["max_growth"])

    def cases(self, cases, where: str, problem: Problem, tolerance, stage_id: str) -> list[Case]:
        """Each validated case entry once per dtype; a stable default seed per entry: the same
        case draws the same inputs on every machine."""
        out = []
        for j, c in enumerate(cases):
            self.dtypes(c["dtypes"], f"{where}[{j}].dtypes", tolerance)
            if not c["dtypes"]:
                self.error(f"{where}[{j}].dtypes", "list at least one dtype")
            values = _params(problem, c)
            for message in (problem.check(values) if problem.check else []):
                self.error(f"{where}[{j}]", message)
            seed = c.get("seed", zlib.crc32(f"{stage_id}/{j}".encode()))
            out += [Case(params=values, dtype=d, seed=seed, claims=c.get("claims", ()))
                    for d in c["dtypes"] if d in DTYPES]
        ids = [c.id for c in out]
        for dup in sorted({i for i in ids if ids.count(i) > 1}):
            self.error(where, f"case {dup} appears more than once")
        return out

    def dtypes(self, dtypes, where: str, tolerance) -> None:
        for dtype in dtypes:
            if dtype not in DTYPES:
                self.error(where, f"unknown dtype {dtype!r}; known: {', '.join(DTYPES)}")
            elif dtype not in tolerance:
                self.error(where, f"{dtype} has no tolerance; add [stages.tolerance.{dtype}] "
                           "to this stage")


def _params(problem: Problem, entry: dict) -> dict[str, Any]:
    """A case entry's parameters in the problem's order, its defaults where it gives none."""
    return {p.name: entry.get(p.name, p.default) for p in problem.params}
