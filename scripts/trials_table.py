"""How the speed trials of gradings went: every speed case of each `grade --json` file, with
what tells an honest timing from a troubled one.

A grading of the references should pass every speed case in one trial each. For each case:
its verdict (or the kind of its failure), the speed-up, the batches counted, their spread,
the worst batch's time per call beyond the reported times and the grader's own work around
them (`unexplained_ms`, against the allowance of grader/speed/allowance.py), and the trials
rejected for that excess and timed again (`trials_rejected`). Then a line per file: the
cases that failed, the trials rejected, the worst excess and the batches in all, the figures
BENCHMARKS.md compares across machines.

Exit code 1 when a case failed (the references must pass; give --failing-ok for a grading
of other kernels).

Usage:  python -m scripts trials RESULT.json [RESULT.json ...] [--failing-ok]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

COLUMNS = ("stage", "case", "verdict", "speed-up", "batches", "spread", "excess ms/call",
           "trials rejected")


def cases(result: dict) -> list[tuple[str, dict]]:
    """Each speed case of one grading's JSON, with its stage's id."""
    return [(stage["id"], case) for stage in result.get("stages", [])
            for case in ((stage.get("speed") or {}).get("cases") or [])]


def row(stage: str, case: dict) -> tuple[str, ...]:
    verdict = "pass" if case["passed"] else (case.get("failure") or "fail")
    return (stage, case["id"], verdict, f"{case['speedup']:.3f}", str(case["repeats"]),
            f"{100 * case['spread']:.1f}%", f"{case['unexplained_ms']:.3f}",
            str(case.get("trials_rejected", 0)))


def table(found: list[tuple[str, dict]]) -> str:
    lines = [row(stage, case) for stage, case in found]
    widths = [max(len(c), *(len(r[i]) for r in lines)) for i, c in enumerate(COLUMNS)]
    out = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths))]
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in lines]
    return "\n".join(out)


def totals(name: str, found: list[tuple[str, dict]]) -> tuple[str, int]:
    """The file's line of totals, and how many of its cases failed."""
    failed = sum(not case["passed"] for _, case in found)
    rejected = sum(case.get("trials_rejected", 0) for _, case in found)
    worst = max((case["unexplained_ms"] for _, case in found), default=0.0)
    batches = sum(case["repeats"] for _, case in found)
    return (f"{name}: {len(found)} speed cases, {failed} failed, {rejected} trials rejected "
            f"and timed again, worst excess {worst:.2f} ms per call, {batches} batches"), failed


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts trials", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", type=Path, help="`grade --json` files")
    parser.add_argument("--failing-ok", action="store_true",
                        help="exit 0 even when a case failed (kernels other than the references)")
    args = parser.parse_args()
    failed_in_all, summary = 0, []
    for path in args.results:
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"python -m scripts trials: cannot read {path}: {exc}", file=sys.stderr)
            return 2
        found = cases(result)
        print(f"--- {path}\n{table(found) if found else '(no speed cases)'}")
        line, failed = totals(path.name, found)
        summary.append(line)
        failed_in_all += failed
    print("\n".join(summary))
    return 1 if failed_in_all and not args.failing_ok else 0


if __name__ == "__main__":
    sys.exit(main())
