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


def rows(result: dict) -> list[tuple[str, ...]]:
    """One row per speed case of one grading's JSON."""
    found = []
    for stage in result.get("stages", []):
        for case in ((stage.get("speed") or {}).get("cases") or []):
            verdict = "pass" if case["passed"] else (case.get("failure") or "fail")
            found.append((stage["id"], case["id"], verdict, f"{case['speedup']:.3f}",
                          str(case["repeats"]), f"{100 * case['spread']:.1f}%",
                          f"{case['unexplained_ms']:.3f}", str(case.get("trials_rejected", 0))))
    return found


def table(lines: list[tuple[str, ...]]) -> str:
    widths = [max(len(c), *(len(r[i]) for r in lines)) for i, c in enumerate(COLUMNS)]
    out = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths))]
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in lines]
    return "\n".join(out)


def totals(name: str, lines: list[tuple[str, ...]]) -> tuple[str, int]:
    """The file's line of totals, and how many of its cases failed."""
    failed = sum(r[2] != "pass" for r in lines)
    rejected = sum(int(r[7]) for r in lines)
    worst = max((float(r[6]) for r in lines), default=0.0)
    batches = sum(int(r[4]) for r in lines)
    return (f"{name}: {len(lines)} speed cases, {failed} failed, {rejected} trials rejected "
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
        lines = rows(result)
        print(f"--- {path}\n{table(lines) if lines else '(no speed cases)'}")
        line, failed = totals(path.name, lines)
        summary.append(line)
        failed_in_all += failed
    print("\n".join(summary))
    return 1 if failed_in_all and not args.failing_ok else 0


if __name__ == "__main__":
    sys.exit(main())
