"""A probe's value the case's launch gives (grader.course.FromLaunch): `probe = { K = { launch
= ["BLOCK_K", "TILE_K"], minus = 1 } }` replays a failing case with K one short of the K tile
its kernels were launched with. Its shape is checked where the course loads, each mistake
named by its key path."""

import pytest
from mini_courses import matmul_course

from grader.course import FromLaunch, load_course
from grader.errors import CourseError

MATMUL = matmul_course("PROBE", cause="k_loop")


def loaded(tmp_path, probe: str):
    path = tmp_path / "course.toml"
    path.write_text(MATMUL.replace("PROBE", probe), encoding="utf-8")
    return load_course(path)


def test_a_probe_value_may_name_the_launch_constant_it_is_taken_from(tmp_path):
    (stage,) = loaded(tmp_path, 'K = { launch = ["BLOCK_K", "TILE_K"], minus = 1 }').stages
    (hypothesis,) = stage.hypotheses
    assert hypothesis.probe == {"K": FromLaunch(("BLOCK_K", "TILE_K"), 1)}
    # (the sliced case is not refused: what the launch gives is known once a case ran)
    (plain,) = loaded(tmp_path, 'K = { launch = ["BLOCK_K"] }').stages[0].hypotheses
    assert plain.probe == {"K": FromLaunch(("BLOCK_K",), 0)}


@pytest.mark.parametrize("probe, says", [
    ("K = { launch = [] }", "probe.K.launch: expected at least one entry"),
    ('K = { launch = ["1x"] }', "probe.K.launch[0]: expected a name, as Python writes one, "
                                "found '1x'"),
    ('K = { lunch = ["BLOCK_K"] }', "probe.K.lunch: unknown key; expected one of: launch, minus"),
    ('K = { launch = ["BLOCK_K"], minus = -1 }', "probe.K.minus: must not be negative"),
    ('K = { launch = "BLOCK_K" }', "probe.K.launch: expected an array, found a string"),
    ('K = "BLOCK_K"', "probe.K: expected an integer, found a string"),
    ('layout = { launch = ["BLOCK_K"] }', "probe.layout: unknown layout"),
])
def test_a_probe_value_from_the_launch_is_checked_where_the_course_loads(tmp_path, probe, says):
    with pytest.raises(CourseError) as info:
        loaded(tmp_path, probe)
    assert f"stages[0].hypotheses[0].{says}" in str(info.value), str(info.value)


def test_a_value_from_the_launch_is_the_first_constant_given_less_its_minus():
    one_short = FromLaunch(("BLOCK_K", "TILE_K"), 1)
    assert one_short.of({"TILE_K": 32}) == (31, "TILE_K - 1")
    assert one_short.of({"BLOCK_K": 64, "TILE_K": 32}) == (63, "BLOCK_K - 1")
    assert FromLaunch(("BLOCK_K",)).of({"BLOCK_K": 32}) == (32, "BLOCK_K")
    assert one_short.of({"BLOCK_M": 64}) is None  # no such constant: no probe
    assert one_short.of({"BLOCK_K": 1}) is None  # a size below 1: no probe
    assert one_short.of({"BLOCK_K": True}) is None  # a flag is no size
