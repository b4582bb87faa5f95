"""`grade --profile`: where a grading's time went, as the table shows it."""

from rich.console import Console

from grader.report.profile import phase_names, profile_table
from grader.results import Report, StageResult


def _stage(number: int, seconds: float, phases: dict) -> StageResult:
    return StageResult(number=number, id=f"s{number}", title="", backend="b", module="m",
                       max_points=10, seconds=seconds, phases=phases)


def test_the_phases_show_in_grading_order_with_their_parts_below_them():
    """Phases in grading order whatever order a stage holds them in; each phase's parts
    ("speed / timed batches") below it, in the order they were recorded, then what none of
    them holds."""
    report = Report(course="c", target="t", backend="b", backend_reason="", machine={},
                    started_at="", seconds=9.0, stages=[
        _stage(1, 4.0, {"end processes": 0.5, "correctness cases": 2.0,
                        "correctness cases / replay": 1.5, "start processes, load": 1.0}),
        _stage(2, 5.0, {"speed": 3.0, "speed / build, warm up": 0.5,
                        "speed / timed batches": 2.0, "correctness cases": 1.0}),
    ])
    assert phase_names(report) == ["start processes, load", "correctness cases",
                                   "correctness cases / replay", "speed",
                                   "speed / build, warm up", "speed / timed batches",
                                   "end processes"]
    console = Console(width=120, record=True)
    console.print(profile_table(report))
    text = console.export_text()
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in text.splitlines() if line.startswith("│")}
    assert rows["correctness cases"] == ["2.00", "1.00", "3.00"]
    assert rows["timed batches"] == ["", "2.00", "2.00"]  # a part of speed, indented
    assert rows["rest of the stage"] == ["0.50", "1.00", "1.50"]  # what no phase holds
    # Below each phase's parts, what none of them holds: the seconds still to explain.
    shown = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    assert shown[shown.index("replay") + 1] == "not in a part"
    assert shown[shown.index("timed batches") + 1] == "not in a part"
    outside = [[c.strip() for c in line.split("│")[2:-1]] for line in text.splitlines()
               if line.startswith("│") and line.split("│")[1].strip() == "not in a part"]
    assert outside == [["0.50", "1.00", "1.50"], ["", "0.50", "0.50"]]  # no parts: all of it
    assert rows["stage"] == ["4.00", "5.00", "9.00"]
    assert "the whole run: 9.0 s" in text
