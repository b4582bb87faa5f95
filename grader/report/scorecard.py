"""The scorecard: a rich table of stage results, then what to fix for each stage that failed."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.quoting import GUTTER, is_quoted, visible
from grader.results import Report, StageResult, Status
from grader.report.text import number, ran, speed_points, versions

STYLES = {
    Status.PASS: "bold green",
    Status.FAIL: "bold red",
    Status.NOT_STARTED: "yellow",
    Status.PARTLY_GRADED: "yellow",
    Status.ERROR: "bold magenta",
}
FAILURES_SHOWN = 2  # per stage, unless --verbose
OUTPUT_LINES = 40  # of what a submission printed, per stage, unless --verbose


def render(report: Report, console: Console, verbose: bool = False) -> None:
    """What each submission printed, then the scorecard, the speed table where speed was
    graded, what to fix, and last the total: whatever a submission's text says above it, the
    last line is the grader's own."""
    for stage in report.stages:
        if stage.output.strip():
            _submission_output(stage, console, verbose)
    console.print(_table(report))
    if any(s.speed.cases for s in report.stages):
        console.print(_speed_table(report))
    _footer(report, console, verbose)
    for stage in report.stages:
        slow = [c for c in stage.speed.cases if not c.passed]
        if stage.status is not Status.PASS or slow:
            _explain(stage, console, verbose)
    for stage in report.stages:
        for check in stage.checks:
            if not check.graded:
                say(console, f"{stage.id}: {check.name} {check.message}", "", "dim")
    verdict = Status.PASS if report.passed else Status.FAIL
    console.print(Text.assemble(f"total: {number(report.points)}/{number(report.max_points)} "
                                "points, ", (verdict.value, STYLES[verdict])))


def _folder(target: str) -> str:
    """What was graded as the student names it: a folder with its slash, a file as it is."""
    return target if target.endswith((".py", ".zip")) else target + "/"


def _footer(report: Report, console: Console, verbose: bool) -> None:
    """Which backend graded and the seed that reproduces the inputs; with --verbose also the
    versions and the sandbox's protections, which a student rarely needs (the JSON has them)."""
    console.print(Text.assemble(
        "backend: ", (report.backend, "bold"),
        f" ({report.backend_reason}); graded {visible(_folder(report.target), lines=False)} in "
        f"{report.seconds:.1f} s "
        f"with seed {report.seed} (--seed {report.seed} reproduces the inputs)"
        + (f"; {versions(report.machine)}" if verbose else "")),
        soft_wrap=not console.is_terminal)  # it names the student's folder: see `say`
    if verbose:
        console.print(Text(visible(sandbox_line(report.sandbox))))


def _submission_output(stage: StageResult, console: Console, verbose: bool) -> None:
    """The submission's own prints, marked line by line as its own, with control characters
    shown as escapes: a submission cannot print something that passes for the scorecard."""
    lines = stage.output.rstrip("\n").split("\n")
    shown = lines if verbose else lines[:OUTPUT_LINES]
    mark = f"  stage{stage.number} | "
    console.print(Text(f"stage{stage.number} {stage.id}: what the submission printed "
                       f"({len(lines)} lines):", "dim"))
    for line in shown:
        console.print(Text(mark + visible(line), "dim"), soft_wrap=True)
    if len(shown) < len(lines):
        console.print(Text(f"{mark}... {len(lines) - len(shown)} more lines (--verbose shows "
                           "them all)", "dim"))


def sandbox_line(protections) -> str:
    """One line: which protections the submission ran under, and which were missing."""
    if not protections:
        return "sandbox: no submission code ran"
    held = [p.name for p in protections if p.in_force]
    missing = [p for p in protections if not p.in_force]
    line = f"sandbox: in force: {', '.join(held) or 'none'}"
    if missing:
        line += "; NOT in force: " + "; ".join(f"{p.name} ({p.detail})" for p in missing)
    return line


def _table(report: Report) -> Table:
    table = Table(title=f"{report.course}: scorecard", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("Stage")
    table.add_column("Backend")
    table.add_column("Cases", justify="right")
    table.add_column("Speed")
    table.add_column("Points", justify="right")
    table.add_column("Status")
    for s in report.stages:
        cases = f"{s.cases_passed}/{len(s.cases)}" if ran(s) else "-"
        speed = speed_points(s, slowest=True)
        table.add_row(
            str(s.number),
            Text(s.id),
            Text(s.backend),
            cases,
            Text(speed, style="dim"),
            f"{number(s.total_points)}/{number(s.total_max_points)}",
            Text(s.status.value, style=STYLES[s.status]),
        )
    table.add_section()
    verdict = Status.PASS if report.passed else Status.FAIL
    table.add_row("", "total", "", "", "", f"{number(report.points)}/{number(report.max_points)}",
                  Text(verdict.value, style=STYLES[verdict]))
    return table


def _speed_table(report: Report) -> Table:
    table = Table(title="speed on the GPU (median of CUDA-event times, L2 flushed, interleaved "
                        "with the baseline)", title_justify="left")
    for column in ("Stage", "Case", "ms", "Baseline", "Speed-up", "Achieved", "Of limit",
                   "Verdict"):
        table.add_column(column, justify="right" if column not in ("Stage", "Case", "Baseline",
                                                                   "Verdict") else "left")
    for s in report.stages:
        for c in s.speed.cases:
            failed = c.failure.value if c.failure else "failed"
            verdict = Text("fast enough" if c.passed else failed,
                           style="green" if c.passed else "red")
            table.add_row(s.id, c.id, f"{c.ms:.4g}", f"{c.baseline} {c.baseline_ms:.4g} ms",
                          f"{c.speedup:.2f}x", f"{c.achieved:g} {c.unit}",
                          f"{100 * c.fraction:.0f}%", verdict)
    return table


def _explain(stage: StageResult, console: Console, verbose: bool) -> None:
    """What to fix in one stage: the grader's messages, with the submission's own text (what
    it raised, the type it returned) quoted in them; shown as plain Text, never as markup."""
    console.print(Text.assemble("\n", (stage.status.value, STYLES[stage.status]), visible(
        f" stage{stage.number} {stage.id} ({stage.module})", lines=False)),
        soft_wrap=not console.is_terminal)
    if stage.message:
        say(console, stage.message)
    failed = stage.failures
    for case in (failed if verbose else failed[:FAILURES_SHOWN]):
        seed = "" if case.hidden else f" (seed {case.seed})"  # a hidden case's is withheld
        say(console, f"case {case.id}{seed}: {case.summary}")
        for line in case.details:
            say(console, line, "    ")
    for hint in stage.hints:
        say(console, f"hint: {hint}")
    for check in stage.checks:
        if check.graded and not check.passed:
            say(console, f"{check.name}: {check.message}")
    for case in stage.speed.cases:
        if not case.passed:
            say(console, f"speed {case.id}: {case.summary}")
    hidden = len(failed) - FAILURES_SHOWN
    if hidden > 0 and not verbose:
        say(console, f"... {hidden} more failing cases (--verbose shows all)")


def say(console: Console, text: str, indent: str = "  ", style: str = "") -> None:
    """A message, line by line: the first at `indent`, the next ones two columns deeper. In
    a log no line is broken (where a break falls is the text's to choose: a line of the
    grader's must not end where a submission's words begin a new one); a quoted line is
    wrapped to the width, its gutter at the start of every piece."""
    for n, line in enumerate(visible(text).split("\n")):
        at = indent if n == 0 else indent + "  "
        if is_quoted(line):
            _quoted_line(console, at, line[len(GUTTER):], style)
        else:
            console.print(Text(at + line, style), soft_wrap=not console.is_terminal)


def _quoted_line(console: Console, indent: str, body: str, style: str) -> None:
    mark = indent + GUTTER
    room = max(console.width - len(mark), 20)
    pieces = Text(body, style).wrap(console, room, overflow="fold") or [Text("")]
    for piece in pieces:
        console.print(Text(mark, "dim") + piece, soft_wrap=True)


def render_compile(results, archs, console: Console) -> None:
    """The table of `grade compile`: a build check per stage and architecture."""
    table = Table(title="cuTile compile check (builds only: not a correctness pass)",
                  title_justify="left")
    for column in ("#", "Stage", "Kernels", *archs, "Status"):
        table.add_column(column)
    styles = {"COMPILED": "bold cyan", "FAILED": "bold red", "NOT STARTED": "yellow",
              "ERROR": "bold magenta"}
    for r in results:
        cells = {b.arch: ("ok" if b.ok else "FAILED") + f" {b.seconds:.1f}s" for b in r.builds}
        kernels = f"{len(r.kernels)} ({r.signatures} variants)" if r.kernels else "-"
        table.add_row(str(r.number), Text(r.id), kernels, *(cells.get(a, "-") for a in archs),
                      Text(r.status, style=styles[r.status]))
    console.print(table)
    for r in results:
        if r.status != "COMPILED":
            console.print(Text("\n" + visible(f"{r.status} stage{r.number} {r.id} ({r.module})",
                                              lines=False)))
            if r.message:
                say(console, r.message)
            # The same failure on every architecture (the usual case: the kernel's own
            # fault) is shown once, under the architectures that gave it.
            failures: dict[str, list[str]] = {}
            for build in r.builds:
                if not build.ok:
                    failures.setdefault(build.error, []).append(build.arch)
            for error, where in failures.items():
                say(console, f"{', '.join(where)}: {error}")


def render_calibration(found, margin: float, console: Console) -> None:
    arch = found[0].arch if found else "?"
    table = Table(title=f"speed thresholds for {arch} from the references (margin {margin:g})",
                  title_justify="left")
    for column in ("Stage", "Backend", "Case", "ms", "Baseline", "Speed-up", "Of limit",
                   "Suggested"):
        table.add_column(column)
    for cal in found:
        for i, c in enumerate(cal.cases):
            suggested = f"{cal.key}.min_speedup = {cal.suggested.min_speedup:g}" if i == 0 else ""
            table.add_row(cal.stage, cal.backend, c.id, f"{c.ms:.4g}",
                          f"{c.baseline} {c.baseline_ms:.4g} ms", f"{c.speedup:.2f}x",
                          f"{100 * c.fraction:.0f}%", suggested)
    console.print(table)
