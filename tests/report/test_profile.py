"""`grade --profile`: where a grading's time went, as the table shows it."""

from rich.console import Console

from grader.report.profile import CommandSeconds, phase_names, profile_table
from grader.results import PHASE_PART, READIED, Report, StageResult


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


def test_a_stage_readied_beside_an_earlier_one_shows_that_apart_from_its_own_turn():
    """Its processes started and its calls recorded while the stage before it was graded:
    a phase of its own, last, whose seconds are not the stage's."""
    report = Report(course="c", target="t", backend="b", backend_reason="", machine={},
                    started_at="", seconds=6.0, stages=[
        _stage(1, 4.0, {"start processes, load": 1.0, "correctness cases": 3.0}),
        _stage(2, 2.0, {"correctness cases": 1.5, READIED: 3.5,
                        f"{READIED}{PHASE_PART}start processes, load": 0.5,
                        f"{READIED}{PHASE_PART}record the call": 2.5}),
    ])
    names = phase_names(report)
    assert names[-3:] == [READIED, f"{READIED}{PHASE_PART}start processes, load",
                          f"{READIED}{PHASE_PART}record the call"]
    console = Console(width=140, record=True)
    console.print(profile_table(report))
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in console.export_text().splitlines() if line.startswith("│")}
    assert rows[READIED] == ["", "3.50", "3.50"]
    assert rows["rest of the stage"] == ["0.00", "0.50", "0.50"]  # not less for the readying
    assert rows["stage"] == ["4.00", "2.00", "6.00"]


def test_the_commands_own_seconds_outside_the_run_are_shown_beside_it():
    """The grading's clock starts after Python, the imports and the backend's CUDA context:
    the caption tells how long the command has run, and how much of it the table misses."""
    report = Report(course="c", target="t", backend="b", backend_reason="", machine={},
                    started_at="", seconds=6.0, stages=[_stage(1, 6.0, {})])
    console = Console(width=300, record=True)
    console.print(profile_table(report, CommandSeconds(before_run=2.0, so_far=8.5)))
    caption = " ".join(console.export_text().split())  # wrapped to the table's width
    assert "the whole run: 6.0 s; the command so far: 8.5 s, 2.0 s of it before the run" \
        in caption
    assert "and 0.5 s after it (the results written and shown)" in caption
    console = Console(width=300, record=True)
    console.print(profile_table(report))  # where the system keeps no start time
    assert "the command so far" not in console.export_text()


def test_a_process_knows_how_long_it_has_run():
    import time

    from grader.cli.run import process_seconds

    first = process_seconds()
    assert first is not None and 0.0 < first < 24 * 3600  # this test's process, on Linux
    time.sleep(0.05)
    assert process_seconds() >= first + 0.04
