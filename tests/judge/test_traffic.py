"""The replay's watch on memory traffic (grader.replay.traffic), the picture of a failure
(grader.judge.picture, grader.report.picture_html) and hints gated on a confirmed cause,
without grading anything: each is fed the data it would see."""

import numpy as np
import pytest
import torch

from grader.judge import ownership, picture
from grader.judge.misconduct import replay_misconduct
from grader.problems.evidence import Evidence, observed, row_factor
from grader.protocol import ProtocolError
from grader.replay import traffic as traffic_module
from grader.replay.locate import Source
from grader.replay.regions import Region
from grader.replay.traffic import (NOBODY, OOB_READER, SEVERAL, SHARED, WRITTEN, LaunchWatch,
                                   Traffic)
from grader.results import Failure
from grader.sandbox import Outcome
from grader.sandbox.outcomes import call_outcome
from grader.tracks import TRACKS

TRITON, CUTILE = TRACKS["triton"].words, TRACKS["cutile"].words

SOURCE = Source(("x = tl.load(x_ptr + offsets)", "tl.store(out_ptr + offsets, x)"), "k.py")


def regions(n=8, guard=8):
    x = torch.zeros(n + guard)[:n]
    out = torch.zeros(n + guard)[:n]
    return x, out, [Region.of(x, "`x`", is_input=True), Region.of(out, "the output", is_output=True)]


def addresses(t: torch.Tensor, offsets) -> np.ndarray:
    return np.array([t.data_ptr() + 4 * o for o in offsets], dtype=np.uint64)


def run(programs, accesses, words=TRITON):
    x, out, found = regions()
    watch = LaunchWatch(found, programs, SOURCE, words)
    for store, tensor, offsets, program, line in accesses:
        target = out if tensor == "out" else x
        watch.access(store, addresses(target, offsets), np.ones(len(offsets), bool), program, line)
    traffic = Traffic()
    watch.close(traffic, out)
    return traffic


def test_a_load_past_the_end_fails_at_its_line_even_when_the_store_is_masked():
    traffic = run(2, [(False, "x", range(0, 4), 0, 1), (False, "x", range(4, 12), 1, 1),
                      (True, "out", range(0, 4), 0, 2), (True, "out", range(4, 8), 1, 2)])
    [finding] = [f for f in traffic.findings if f.kind == "load_out_of_bounds"]
    assert finding.fails and finding.line == 1
    assert "line 1 (`x = tl.load(x_ptr + offsets)`): reads 4 elements past the end of `x`" in finding.text
    assert "program 1" in finding.text


def test_elements_of_an_input_left_unread_are_told_at_the_load_that_read_the_rest():
    traffic = run(2, [(False, "x", range(0, 4), 0, 1), (False, "x", range(0, 4), 1, 1),
                      (True, "out", range(0, 4), 0, 2), (True, "out", range(4, 8), 1, 2)])
    [unread] = [f for f in traffic.findings if f.kind == "unread"]
    assert unread.line == 1 and not unread.fails
    assert unread.text.startswith("line 1 (`x = tl.load(x_ptr + offsets)`), its only load: 4 of "
                                  "the 8 elements of `x` were never read by any program")


def test_an_element_one_program_stores_and_another_reads_is_a_race():
    """Program 0 stores to the output what program 1 then reads: right on the CPU, where
    the programs run in order, undefined on a GPU. Both orders of the two accesses count;
    a program reading what it stored itself, and separate launches, do not."""
    for accesses, second, verb in (
            ([(True, "out", range(0, 4), 0, 2), (False, "out", range(2, 6), 1, 1)], 1, "reads"),
            ([(False, "out", range(4, 8), 1, 1), (True, "out", range(4, 8), 0, 2)], 0,
             "stores to")):
        [race] = [f for f in run(2, accesses).findings if f.kind == "race"]
        assert race.fails and race.line == accesses[1][4]
        assert f"program {second} {verb} an element of the output (flat index" in race.text
        assert "in the same launch" in race.text and "(a race)" in race.text
    alone = run(2, [(True, "out", range(0, 4), 0, 2), (False, "out", range(0, 4), 0, 1),
                    (True, "out", range(4, 8), 1, 2), (False, "x", range(0, 8), 1, 1)])
    assert not [f for f in alone.findings if f.kind == "race"]


def test_another_value_stored_where_another_program_stored_is_a_race():
    """The watch is told of a store once it is done, and holds the bits it left against the
    first storing program's: program 0 clearing program 1's tile before program 1 stores its
    values races (on a GPU the zeros may land last); two programs storing the same value do
    not, nor does a program storing over its own earlier store."""
    def launch(stores):
        x, out, found = regions()
        watch = LaunchWatch(found, 2, SOURCE, TRITON)
        for program, offsets, value in stores:
            out[list(offsets)] = value  # the store, done, then told
            watch.access(True, addresses(out, offsets), np.ones(len(offsets), bool), program, 2)
        traffic = Traffic()
        watch.close(traffic, out)
        return [f for f in traffic.findings if f.kind == "race"]

    [race] = launch([(0, range(4, 8), 0.0), (1, range(4, 8), 3.0)])
    assert race.fails and race.line == 2
    assert ("program 1 stores to an element of the output (flat index 4) that program 0 stored "
            "a different value to in the same launch") in race.text
    assert "which of the two values stays is undefined (a race)" in race.text
    assert launch([(0, range(0, 8), 5.0), (1, range(0, 8), 5.0)]) == []
    assert launch([(0, range(0, 4), 0.0), (0, range(0, 4), 1.0), (1, range(0, 4), 1.0)]) == []
    assert launch([(0, range(0, 4), float("nan")), (1, range(0, 4), float("nan"))]) == []
    [later] = launch([(0, range(0, 4), 1.0), (1, range(0, 4), 1.0), (1, range(2, 3), 2.0)])
    assert "program 1 stores to an element of the output (flat index 2)" in later.text


def test_a_lane_wider_than_an_element_accesses_every_element_its_bytes_cover():
    """A pointer cast to a wider type: one 8-byte lane at float32 element 3 writes element 4
    too, which program 1 then stores again; and one at the last element reaches past the
    end of the output."""
    x, out, found = regions()
    watch = LaunchWatch(found, 2, SOURCE, TRITON)
    out[3:5] = 0.0
    watch.access(True, addresses(out, [3]), np.ones(1, bool), 0, 2, width=8)
    out[4] = 1.0
    watch.access(True, addresses(out, [4]), np.ones(1, bool), 1, 2)
    watch.access(True, addresses(out, [7]), np.ones(1, bool), 1, 2, width=8)
    traffic = Traffic()
    watch.close(traffic, out)
    [race] = [f for f in traffic.findings if f.kind == "race"]
    assert "program 1 stores to an element of the output (flat index 4) that program 0" in race.text
    [past] = [f for f in traffic.findings if f.kind == "store_out_of_bounds"]
    assert "writes 1 element past the end of the output" in past.text


def test_masked_lanes_are_not_accesses():
    x, out, found = regions()
    watch = LaunchWatch(found, 1, SOURCE, TRITON)
    mask = np.array([True] * 8 + [False] * 4)
    watch.access(False, addresses(x, range(12)), mask, 0, 1)
    watch.access(True, addresses(out, range(12)), mask, 0, 2)
    traffic = Traffic()
    watch.close(traffic, out)
    assert traffic.findings == []
    assert bool((traffic.output_map == WRITTEN).all())


def test_programs_that_store_the_same_elements_are_told_the_program_id():
    traffic = run(2, [(False, "x", range(4), p, 1) for p in (0, 1)]
                  + [(True, "out", range(4), p, 2) for p in (0, 1)])
    kinds = {f.kind: f for f in traffic.findings}
    assert "tl.program_id" in kinds["same_elements"].text
    assert "unread" in kinds  # x[4:] was never read
    assert bool((traffic.output_map[:4] & SHARED).all()) and not traffic.output_map[4:].any()


def test_overlap_and_idle_programs_in_cutile_words():
    traffic = run(3, [(True, "out", range(0, 6), 0, 2), (True, "out", range(4, 8), 1, 2)],
                  words=CUTILE)
    kinds = {f.kind: f for f in traffic.findings}
    assert "2 output elements were stored by more than one block" in kinds["overlap"].text
    assert "1 of the 3 blocks stored nothing (2)" in kinds["idle"].text
    assert not kinds["overlap"].fails


def test_a_store_into_an_input_fails():
    traffic = run(1, [(True, "x", range(8), 0, 2)])
    assert [f.kind for f in traffic.findings if f.fails] == ["store_to_input"]


def test_an_access_in_no_tensor_is_a_load_or_a_store_by_what_it_did():
    x, out, found = regions()
    watch = LaunchWatch(found, 1, SOURCE, TRITON)
    nowhere = np.array([64, 72], dtype=np.uint64)  # no tensor the kernel was given holds them
    watch.access(False, nowhere, np.ones(2, bool), 0, 1)
    watch.access(True, nowhere, np.ones(2, bool), 0, 2)
    traffic = Traffic()
    watch.close(traffic, out)
    assert [(f.kind, f.line) for f in traffic.findings if f.fails] == \
        [("load_out_of_bounds", 1), ("store_out_of_bounds", 2)]
    assert all("2 accesses reach an address in no tensor" in f.text
               for f in traffic.findings if f.fails)


@pytest.mark.parametrize("kinds, says, failure", [
    (["load_out_of_bounds"], "read outside a tensor", Failure.READ_OUT_OF_BOUNDS),
    (["store_out_of_bounds"], "wrote outside a tensor", Failure.OUT_OF_BOUNDS),
    (["load_out_of_bounds", "race", "store_out_of_bounds"], "read and wrote outside a tensor",
     Failure.OUT_OF_BOUNDS)])
def test_the_verdict_says_whether_the_kernel_read_or_wrote_out_of_bounds(kinds, says, failure):
    """A kernel whose loads alone pass an edge is not told it wrote there: a hidden case
    shows only the kind."""
    outcome = Outcome(traffic=[{"kind": k, "text": f"line {n}: {k}", "line": n, "fails": True}
                               for n, k in enumerate(kinds, 1)])
    verdict = replay_misconduct(None, outcome, None, "cpu")
    assert verdict.summary == f"{says}, as the watch of its loads and stores saw:"
    assert verdict.kind is failure and len(verdict.details) == len(kinds)


def test_the_program_that_read_out_of_bounds_marks_what_it_wrote():
    traffic = run(2, [(False, "x", range(8, 10), 1, 1), (True, "out", range(4, 8), 1, 2)])
    assert bool((traffic.output_map[4:] & OOB_READER).all()) and not traffic.output_map[:4].any()


def test_the_writers_map_names_the_one_program_that_stored_each_element():
    traffic = run(3, [(True, "out", range(0, 3), 0, 2), (True, "out", range(2, 5), 1, 2)])
    assert traffic.writers.tolist() == [0, 0, SEVERAL, 1, 1, NOBODY, NOBODY, NOBODY]
    assert traffic.writer_launch == 0
    # where several stored an element: its flat index and the two lowest of them
    assert traffic.shared.tolist() == [[2, 0, 1]]
    three = run(3, [(True, "out", range(0, 2), 2, 2), (True, "out", range(1, 4), 0, 2),
                    (True, "out", range(1, 2), 1, 2), (True, "out", range(3, 4), 2, 2)])
    assert three.writers.tolist()[:4] == [2, SEVERAL, 0, SEVERAL]
    assert three.shared.tolist() == [[1, 0, 1], [3, 0, 2]]
    assert run(1, [(True, "out", range(0, 3), 0, 2)]).shared.shape == (0, 3)


def test_several_launches_storing_to_the_output_leave_no_writers_map():
    x, out, found = regions()
    traffic = Traffic()
    for index in (0, 1):
        watch = LaunchWatch(found, 1, SOURCE, TRITON, index)
        watch.access(True, addresses(out, range(8)), np.ones(8, bool), 0, 2)
        watch.close(traffic, out)
    assert traffic.writers is None and traffic.writer_launch is None


def writers_2d(tiles):
    """A 4 x 8 output, tiles of 2 x 4: `tiles` maps a program to the elements it stored."""
    writers = torch.full((4, 8), NOBODY, dtype=torch.int32)
    for program, where in tiles.items():
        writers[where] = program
    return writers


def test_every_tile_stored_whole_by_one_program_clears_the_stores():
    writers = writers_2d({0: (slice(0, 2), slice(0, 4)), 1: (slice(0, 2), slice(4, 8)),
                          2: (slice(2, 4), slice(0, 4)), 3: (slice(2, 4), slice(4, 8))})
    [line] = ownership.report(writers, [2, 4], TRACKS["triton"].words_for((2, 2)))
    assert line == ("every tile was stored whole by one program, and no program stored outside "
                    "its tile (4 tiles of 2 x 4)")


def close(got, want):
    return (got - want).abs() <= 1e-5 + 1e-5 * want.abs()


def test_whole_tiles_at_each_other_s_places_are_told_apart_from_wrong_values():
    """Every program stored a whole tile: that alone does not say the tiles are in their
    places. Two tiles swapped hold each other's right values (said, with the fix's place);
    wrong values in their own tiles hold no other's (said too)."""
    writers = writers_2d({0: (slice(0, 2), slice(0, 4)), 1: (slice(0, 2), slice(4, 8)),
                          2: (slice(2, 4), slice(0, 4)), 3: (slice(2, 4), slice(4, 8))})
    words = TRACKS["cutile"].words_for((2, 2))
    want = torch.rand(4, 8)
    got = want.clone()
    got[0:2, 4:8], got[2:4, 0:4] = want[2:4, 0:4], want[0:2, 4:8]
    held = ownership.moved(got, want, ~close(got, want), [2, 4], close)
    assert held.pairs == [(1, 2), (2, 1)] and held.wrong == 2
    [line] = ownership.report(writers, [2, 4], words, held)
    assert line.endswith("; yet every wrong tile holds the right values of another tile ((0, 1) "
                         "holds those of (1, 0), (1, 0) holds those of (0, 1)): the values are "
                         "right, and each is stored at another tile's place (check the tile "
                         "index the store uses)")
    wrong = want * 2
    held = ownership.moved(wrong, want, ~close(wrong, want), [2, 4], close)
    assert held.pairs == [] and held.wrong == 4
    [line] = ownership.report(writers, [2, 4], words, held)
    assert line.endswith("; no wrong tile holds the right values of another: the wrong values "
                         "come from what was loaded or computed")


def test_programs_that_stray_from_their_tiles_are_named_with_the_output_s_ranges():
    writers = writers_2d({0: (slice(0, 2), slice(0, 6)),  # its tile and half the next
                          1: (slice(2, 4), slice(0, 2))})  # half a tile
    writers[0, 7] = SEVERAL
    lines = ownership.report(writers, [2, 4], TRACKS["cutile"].words_for((2, 2)))
    assert lines[0].startswith("what each block stored, against the output's tiles "
                               "(2 x 4 elements per tile, 4 tiles)")
    text = "\n".join(lines)
    assert "block (0, 0) stored into 2 tiles ((0, 0), (0, 1)), out[0:2, 0:6] in all" in text
    # some element was stored by several blocks, which the map names none of: what a block
    # stored is what it alone stored
    assert "block (1, 0) alone stored 4 of the 8 elements of tile (1, 0) (out[2:4, 0:4]): " \
           "out[2:4, 0:2]" in text
    assert "tile (0, 1) (out[0:2, 4:8]) was stored by more than one block" in text
    assert "1 of the 4 tiles was stored by no block (first: tile (1, 1), out[2:4, 4:8])" in text
    assert lines[-1] == ("  block -> tile stored, in grid order: (0, 0) -> (0, 0) + (0, 1), "
                         "(1, 0) -> (1, 0), (0, 1) -> nothing alone, (1, 1) -> nothing alone")


def test_an_output_nobody_stored_gets_no_ownership_report():
    assert ownership.report(writers_2d({}), [2, 4], TRACKS["triton"].words_for((4,))) == []


def test_the_tile_map_marks_each_tile_by_its_worst_element():
    bad = torch.zeros(4, 8, dtype=torch.bool)
    bad[0, 0] = True
    unwritten = torch.zeros_like(bad)
    unwritten[3, 7] = True
    traffic = torch.zeros(4, 8, dtype=torch.uint8)
    traffic[2, 0] = SHARED
    rows = picture.tile_map(bad, unwritten, traffic, [2, 4])
    assert rows == ["X.", "2_"]
    assert picture.shown(["..", ".."]) == []


def test_a_factor_per_row_is_confirmed_only_when_every_row_has_one():
    want = torch.rand(4, 8) + 0.1
    got = want * torch.tensor([[2.0], [3.0], [0.5], [4.0]])
    assert row_factor(Evidence(got, want, atol=1e-5, rtol=1e-5)) is not None
    noisy = got.clone()
    noisy[0, 0] += 1
    assert row_factor(Evidence(noisy, want, atol=1e-5, rtol=1e-5)) is None


def test_rows_of_zeros_are_no_factor_and_are_said_to_be_zeros():
    """A row of zeros is the right answer times 0, yet nothing confirms a normalisation:
    what made it is not known (an inf sum, a store of nothing), and the report says only
    what it saw."""
    want = torch.rand(4, 8) + 0.1
    got = want * torch.tensor([[2.0], [0.0], [0.5], [0.0]])
    ev = Evidence(got, want, atol=1e-5, rtol=1e-5)
    assert row_factor(ev) is None
    [seen] = observed(ev)
    assert seen.text.endswith("4 of 4 rows and 8 of 8 columns hold wrong elements; 2 of those "
                              "rows hold only zeros")


def test_a_hint_that_names_a_cause_needs_the_case_to_confirm_it():
    from grader.course.model import Signature
    from grader.results import CaseResult, Failure

    hint = Signature(never_written=True, cause="grid_short")  # "the grid rounds down"
    case = CaseResult("n=4097", "float32", {"n": 4097}, 0, False, "", failure=Failure.WRONG_RESULT,
                      stats={"never_written": 1, "causes": ["no_program_id"]})
    assert not hint.matches(case)
    case.stats["causes"] = ["grid_short"]
    assert hint.matches(case)


def test_an_internal_error_of_the_simulator_is_told_as_a_line_of_the_kernel(tmp_path):
    from grader.languages.cutile.simulator import memory
    from grader.replay.locate import describe

    kernel = tmp_path / "k.py"
    kernel.write_text("def body(t):\n    return memory.tile_index(t)\n", encoding="utf-8")
    scope = {"memory": memory}
    exec(compile(kernel.read_text(), str(kernel), "exec"), scope)
    try:
        scope["body"](object())  # the simulator's own code fails on a value it never expected
    except Exception as exc:  # noqa: BLE001
        text = describe(exc, kernel)
    assert text.startswith("line 2 of k.py (`return memory.tile_index(t)`) could not be run")
    assert text.endswith("TypeError in the cuTile simulator)")  # the simulator's folder, known
    assert "memory.py" not in text and "object" not in text


def test_a_reply_whose_writers_are_no_program_of_the_launch_is_refused():
    """The judge counts per program: a map naming programs the launch never had (a reply
    the replay's process did not write) is refused before anything counts with it."""
    output = torch.zeros(4)
    launch = {"kernel": "k", "grid": [2], "constants": {}, "language": "triton"}
    value = {"output": {"device": "cpu"}, "error": None, "host": [], "compile_errors": [],
             "unchecked": None, "overruns": [], "traffic": [], "launches": [launch],
             "writer_launch": 0}
    fine = torch.tensor([0, 1, NOBODY, SEVERAL], dtype=torch.int32)
    shared = torch.tensor([[3, 0, 1]], dtype=torch.int32)
    read = call_outcome(value, {"output": output, "writers": fine, "shared": shared}, [])
    assert read.writers is fine and read.shared is shared
    for forged in ([0, 1, 2, 0], [0, 1 << 30, 0, 0], [0, -7, 0, 0]):
        with pytest.raises(ProtocolError, match="no program of the launch"):
            call_outcome(value, {"output": output, "shared": shared,
                                 "writers": torch.tensor(forged, dtype=torch.int32)}, [])
    for forged in ([[3, 0, 2]], [[3, NOBODY, 0]]):  # the shared rows name programs too
        with pytest.raises(ProtocolError, match="no program of the launch"):
            call_outcome(value, {"output": output, "writers": fine,
                                 "shared": torch.tensor(forged, dtype=torch.int32)}, [])
    for rows in (None, [[4, 0, 1]], [[-1, 0, 1]], [[3, 0, 1]] * 5, [[3, 0]]):
        tensors = {"writers": fine} if rows is None else {
            "writers": fine, "shared": torch.tensor(rows, dtype=torch.int32)}
        with pytest.raises(ProtocolError, match="not rows of its output"):
            call_outcome(value, {"output": output, **tensors}, [])


def test_a_reply_without_launches_or_writers_is_read():
    """A proposal refused before its first launch ran (a launch option the grader does not
    replay) comes back with no launches and no map of writers: an answer, not a broken one;
    a map of writers with no launch is still refused."""
    value = {"output": {"type": "nothing"}, "error": "refused", "host": [], "compile_errors": [],
             "unchecked": None, "overruns": [], "traffic": [], "launches": [],
             "writer_launch": None}
    assert call_outcome(value, {}, []).error == "refused"
    with pytest.raises(ProtocolError, match="names the writers of a launch it did not make"):
        call_outcome({**value, "writer_launch": 0}, {}, [])


def test_the_shared_rows_are_spread_over_the_output_when_there_are_too_many(monkeypatch):
    """Past SHARED_ROWS elements stored by several programs, the rows kept are spread from
    the first to the last, so that every part of the picture can name some."""
    monkeypatch.setattr(traffic_module, "SHARED_ROWS", 3)
    traffic = run(2, [(True, "out", range(0, 8), 0, 2), (True, "out", range(0, 8), 1, 2)])
    assert [row[0] for row in traffic.shared.tolist()] == [0, 3, 7]
