"""Validation of course.toml, strict on purpose: a typo in an instructor's course.toml must
not silently drop a case or a tolerance. Every error names the file and the key path (for
example `stages[3].cases[1].N`) and says what was expected."""

from __future__ import annotations

import dataclasses
import zlib
from pathlib import Path

from grader.course.model import (TRACKS, WHOLE_DIM, Case, Course, MemoryGrowth, Speed, Stage,
                                 SubmissionRules, Threshold, Tolerance)
from grader.errors import CourseError
from grader.problems import DTYPES, PROBLEMS, Problem


class Checker:
    """Walks the parsed TOML, collecting every problem with its key path."""

    def __init__(self, path: Path):
        self.path = path
        self.errors: list[str] = []

    def error(self, where: str, message: str) -> None:
        self.errors.append(f"{where}: {message}")

    def raise_if_errors(self) -> None:
        if self.errors:
            listed = "\n".join(f"  - {e}" for e in self.errors)
            raise CourseError(f"{self.path} is invalid:\n{listed}")

    def table(self, value, where: str, required: dict, optional: dict | None = None) -> dict:
        """Check a table's keys and value types; returns the values that are well typed."""
        optional = optional or {}
        if not isinstance(value, dict):
            self.error(where, f"expected a table, found {_kind(value)}")
            return {}
        allowed = {**required, **optional}
        for key in value:
            if key not in allowed:
                self.error(f"{where}.{key}", f"unknown key; expected one of: {', '.join(allowed)}")
        out = {}
        for key, kinds in allowed.items():
            if key not in value:
                if key in required:
                    self.error(f"{where}.{key}", "missing")
                continue
            if not _is(value[key], kinds):
                self.error(f"{where}.{key}", f"expected {_names(kinds)}, found {_kind(value[key])}")
                continue
            out[key] = value[key]
        return out

    def course(self, raw: dict) -> Course:
        top = self.table(raw, "(top level)", {"course": dict, "stages": list, "submissions": dict})
        head = self.table(top.get("course", {}), "course", {"title": str}, {"description": str})
        rules = self.rules(top["submissions"]) if "submissions" in top else None
        stages = tuple(
            s
            for i, entry in enumerate(top.get("stages", []))
            if (s := self.stage(entry, i)) is not None
        )
        if "stages" in top and not stages and not self.errors:
            self.error("stages", "the course has no stages")
        ids = [s.id for s in stages]
        for dup in sorted({i for i in ids if ids.count(i) > 1}):
            self.error("stages", f"stage id '{dup}' appears more than once")
        return Course(path=self.path.resolve(), title=head.get("title", ""), stages=stages,
                      rules=rules)

    def rules(self, raw: dict) -> SubmissionRules:
        keys = [f.name for f in dataclasses.fields(SubmissionRules)]
        found = self.table(raw, "submissions", {key: list for key in keys})
        lists = {}
        for key in keys:
            values = found.get(key, [])
            for j, value in enumerate(values):
                if not isinstance(value, str) or not value:
                    self.error(f"submissions.{key}[{j}]", "expected a non-empty string")
            lists[key] = tuple(v for v in values if isinstance(v, str))
        return SubmissionRules(**lists)

    def stage(self, raw, index: int) -> Stage | None:
        where = f"stages[{index}]"
        required = {"id": str, "title": str, "points": (int, float), "modules": dict,
                    "tolerance": dict, "cases": list}
        s = self.table(raw, where, required,
                       optional={"tiles": dict, "speed": dict, "memory_growth": dict})
        problem = PROBLEMS.get(s.get("id", ""))
        if "id" in s and problem is None:
            self.error(f"{where}.id", f"unknown stage id '{s['id']}'; known: {', '.join(PROBLEMS)}")
        if "points" in s and s["points"] < 0:
            self.error(f"{where}.points", "must not be negative")
        tracks = {t: str for t in TRACKS}
        modules = self.table(s.get("modules", {}), f"{where}.modules", required=tracks)
        tiles = self.table(s.get("tiles", {}), f"{where}.tiles", {}, {t: list for t in TRACKS})
        for track, spec in tiles.items():
            for j, dim in enumerate(spec):
                if not (_is(dim, int) and dim >= 1) and not (isinstance(dim, str) and dim):
                    self.error(f"{where}.tiles.{track}[{j}]",
                               f"expected a constexpr name, '{WHOLE_DIM}' or a positive integer")
        tolerance = self.tolerances(s.get("tolerance", {}), f"{where}.tolerance")
        cases = []
        for j, case in enumerate(s.get("cases", [])):
            cases += self.cases(case, f"{where}.cases[{j}]", problem, tolerance, s.get("id"), j)
        if "cases" in s and not s["cases"]:
            self.error(f"{where}.cases", "a stage needs at least one case")
        ids = [c.id for c in cases]
        for dup in sorted({i for i in ids if ids.count(i) > 1}):
            self.error(f"{where}.cases", f"case {dup} appears more than once")
        speed = self.speed(s["speed"], f"{where}.speed", problem, tolerance, s.get("id")) \
            if "speed" in s else None
        growth = self.memory_growth(s["memory_growth"], f"{where}.memory_growth", problem,
                                    tolerance, s.get("id")) if "memory_growth" in s else None
        if problem is None or any(key not in s for key in required):
            return None
        return Stage(
            number=index + 1,
            id=s["id"],
            title=s["title"],
            points=float(s["points"]),
            problem=problem,
            modules=modules,
            tiles={k: tuple(v) for k, v in tiles.items()},
            tolerance=tolerance,
            cases=tuple(cases),
            speed=speed,
            memory_growth=growth,
        )

    def speed(self, raw: dict, where: str, problem: Problem | None, tolerance, stage_id) -> Speed | None:
        from grader.backends.selection import BACKENDS  # late: it imports torch

        required = {"points": (int, float), "baseline": str, "cases": list, "thresholds": dict}
        s = self.table(raw, where, required, {"seconds": (int, float)})
        if problem is not None and "baseline" in s and s["baseline"] not in problem.baselines:
            self.error(f"{where}.baseline", f"unknown baseline '{s['baseline']}'; "
                       f"known for {problem.id}: {', '.join(problem.baselines)}")
        gpu_backends = {name: dict for name, b in BACKENDS.items() if b.device == "cuda"}
        thresholds = {}
        tables = self.table(s.get("thresholds", {}), f"{where}.thresholds", {}, gpu_backends)
        for backend, value in tables.items():
            here = f"{where}.thresholds.{backend}"
            t = self.table(value, here, {}, {"min_speedup": (int, float), "min_fraction": (int, float)})
            if not value:
                self.error(here, "give min_speedup, min_fraction or both")
            for key, number in t.items():
                if number <= 0:
                    self.error(f"{here}.{key}", "must be positive")
            thresholds[backend] = Threshold(**{k: float(v) for k, v in t.items()})
        cases = []
        for j, case in enumerate(s.get("cases", [])):
            cases += self.cases(case, f"{where}.cases[{j}]", problem, tolerance, f"{stage_id}/speed", j)
        if "cases" in s and not s["cases"]:
            self.error(f"{where}.cases", "a speed table needs at least one case")
        if problem is None or any(key not in s for key in required):
            return None
        return Speed(points=float(s["points"]), baseline=s["baseline"],
                     seconds=float(s.get("seconds", 3.0)), cases=tuple(cases),
                     thresholds=thresholds)

    def memory_growth(self, raw: dict, where: str, problem: Problem | None, tolerance,
                      stage_id) -> MemoryGrowth | None:
        required = {"small": dict, "large": dict, "dtype": str, "max_growth": (int, float)}
        m = self.table(raw, where, required)
        if "max_growth" in m and m["max_growth"] <= 1:
            self.error(f"{where}.max_growth", "must be above 1")
        sizes = [self.cases({**m[key], "dtypes": [m["dtype"]]}, f"{where}.{key}", problem,
                            tolerance, f"{stage_id}/memory", 0)
                 for key in ("small", "large") if key in m and "dtype" in m]
        if problem is None or len(m) < len(required) or not all(sizes):
            return None
        return MemoryGrowth(sizes[0][0], sizes[1][0], float(m["max_growth"]))

    def tolerances(self, raw: dict, where: str) -> dict[str, Tolerance]:
        tables = self.table(raw, where, required={}, optional={d: dict for d in DTYPES})
        out = {}
        for dtype, value in tables.items():
            t = self.table(value, f"{where}.{dtype}", {"atol": (int, float), "rtol": (int, float)})
            if len(t) == 2:
                out[dtype] = Tolerance(float(t["atol"]), float(t["rtol"]))
        return out

    def cases(self, raw, where, problem: Problem | None, tolerance, stage_id, index) -> list[Case]:
        if problem is None:
            return []
        params = {p.name: (float, int) if p.type is float else p.type for p in problem.params}
        c = self.table(raw, where, required={"dtypes": list},
                       optional={"seed": int, **params})
        for p in problem.params:
            if p.required and isinstance(raw, dict) and p.name not in raw:
                self.error(f"{where}.{p.name}", f"missing ({p.doc or p.name})")
            if p.type is int and p.name in c and c[p.name] < 1:
                self.error(f"{where}.{p.name}", "must be at least 1")
        dtypes = c.get("dtypes", [])
        for dtype in dtypes:
            if dtype not in DTYPES:
                self.error(f"{where}.dtypes", f"unknown dtype {dtype!r}; known: {', '.join(DTYPES)}")
            elif dtype not in tolerance:
                self.error(f"{where}.dtypes",
                           f"{dtype} has no tolerance; add [stages.tolerance.{dtype}] to this stage")
        if "dtypes" in c and not dtypes:
            self.error(f"{where}.dtypes", "list at least one dtype")
        values = {p.name: c.get(p.name, None if p.required else p.default) for p in problem.params}
        values = {k: (float(v) if problem.param(k).type is float and v is not None else v)
                  for k, v in values.items()}
        # A stable default seed: the same case draws the same inputs on every machine.
        seed = c.get("seed", zlib.crc32(f"{stage_id}/{index}".encode()))
        return [Case(params=values, dtype=d, seed=seed) for d in dtypes if d in DTYPES]


def _is(value, kinds) -> bool:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if isinstance(value, bool) and bool not in kinds:
        return False  # TOML booleans are not numbers
    return isinstance(value, kinds)


def _names(kinds) -> str:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    words = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             dict: "a table", list: "an array"}
    return " or ".join(dict.fromkeys(words[k] for k in kinds))


def _kind(value) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            dict: "a table", list: "an array"}.get(type(value), type(value).__name__)
