"""course.toml is loaded into typed dataclasses and every mistake is named by its key path."""

import pytest
from conftest import RULES
from mini_courses import matmul_course

from grader.course import Threshold, TimeLimit, Tolerance, load_course
from grader.errors import CourseError
from grader.results import CaseResult, Failure

MINIMAL = """
[course]
title = "mini"

""" + RULES + """

[[stages]]
id = "vector_add"
title = "Vector add"
points = 10
modules = { triton = "triton/stage1_vector_add.py", cutile = "cutile/stage1_vector_add.py" }
tolerance.float32 = { atol = 1e-6, rtol = 0 }
cases = [ { n = 5, dtypes = ["float32"] } ]
"""


def load_text(tmp_path, text):
    path = tmp_path / "course.toml"
    path.write_text(text, encoding="utf-8")
    return load_course(path)


def error_for(tmp_path, text) -> str:
    with pytest.raises(CourseError) as info:
        load_text(tmp_path, text)
    return str(info.value)


def test_the_course_file_loads(course):
    assert [s.id for s in course.stages] == [
        "vector_add", "fused_gelu", "softmax", "matmul", "flash_attention"]
    assert [s.number for s in course.stages] == [1, 2, 3, 4, 5]
    for stage in course.stages:
        assert stage.cases, stage.id
        for case in stage.cases:
            assert case.dtype in stage.tolerance


def test_every_stage_covers_float32_or_half_precision_as_the_course_promises(course):
    for stage in course.stages:
        dtypes = {c.dtype for c in stage.cases}
        assert dtypes & {"float16", "bfloat16"}, stage.id
        if stage.id != "flash_attention":
            assert "float32" in dtypes, stage.id


def test_minimal_course_gives_typed_values(tmp_path):
    course = load_text(tmp_path, MINIMAL)
    (stage,) = course.stages
    assert stage.points == 10.0 and stage.name == "stage1"
    assert stage.tolerance == {"float32": Tolerance(1e-6, 0.0)}
    (case,) = stage.cases
    assert case.params == {"n": 5} and case.dtype == "float32" and case.id == "n=5-float32"
    assert isinstance(case.seed, int)


def test_defaults_fill_optional_params_and_seed_is_stable(course):
    softmax = course.select("softmax")
    assert softmax.cases[0].params["scale"] == 1.0
    again = load_course(course.path).select("softmax")
    assert [c.seed for c in again.cases] == [c.seed for c in softmax.cases]


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ('title = "Vector add"', 'title = "Vector add"\ncolour = "red"',
         "stages[0].colour: unknown key"),
        ('points = 10\n', '', "stages[0].points: missing"),
        ('points = 10', 'points = "ten"', "stages[0].points: expected an integer or a number, found a string"),
        ('points = 10', 'points = true', "stages[0].points: expected an integer or a number, found a boolean"),
        ('{ n = 5, dtypes', '{ dtypes', "stages[0].cases[0].n: missing"),
        ('n = 5', 'n = 5, m = 3', "stages[0].cases[0].m: unknown key"),
        ('n = 5', 'n = 0', "stages[0].cases[0].n: must be at least 1"),
        ('["float32"]', '["float8"]', "unknown dtype 'float8'"),
        ('["float32"]', '["float16"]', "float16 has no tolerance"),
        ('id = "vector_add"', 'id = "vector_sub"', "stages[0].id: unknown stage id 'vector_sub'"),
        ('rtol = 0', 'rtl = 0', "stages[0].tolerance.float32.rtl: unknown key"),
        ('triton = "triton/stage1_vector_add.py"', 'tritn = "x.py"', "stages[0].modules.triton: missing"),
        ('[course]\ntitle = "mini"', '[course]', "course.title: missing"),
        ('cases = [ { n = 5, dtypes = ["float32"] } ]', 'cases = []', "a stage needs at least one case"),
        ('{ n = 5, dtypes = ["float32"] }', '{ n = 5, dtypes = ["float32"] }, { n = 5, dtypes = ["float32"] }',
         "case n=5-float32 appears more than once"),
    ],
)
def test_validation_errors_name_file_and_key_path(tmp_path, old, new, expected):
    assert old in MINIMAL
    message = error_for(tmp_path, MINIMAL.replace(old, new, 1))
    assert str(tmp_path / "course.toml") in message
    assert expected in message


def test_several_errors_are_reported_together(tmp_path):
    text = MINIMAL.replace("points = 10", 'points = "x"').replace("n = 5", "n = -1")
    message = error_for(tmp_path, text)
    assert "stages[0].points" in message and "stages[0].cases[0].n" in message


def test_invalid_toml_is_reported_with_its_position(tmp_path):
    message = error_for(tmp_path, MINIMAL + "\n[[stages]\n")
    assert "is not valid TOML" in message and "line" in message


def test_a_bad_course_file_exits_2_without_traceback(tmp_path, run_grade):
    path = tmp_path / "course.toml"
    path.write_text(MINIMAL.replace("points = 10", "points = -3"), encoding="utf-8")
    code, out, err = run_grade("--course", str(path), "list")
    assert code == 2
    assert "stages[0].points: must not be negative" in err
    assert "Traceback" not in out + err


def test_a_missing_course_file_exits_2(tmp_path, run_grade, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_grade("list")
    assert code == 2 and "No course.toml found" in err and "--course" in err


MEMORY = """
[stages.memory_growth]
small = { n = 1024 }
large = { n = 4096 }
dtype = "float32"
max_growth = 6.0
"""


def test_a_memory_growth_rule_is_read_with_its_parameters_and_dtype(tmp_path):
    stage = load_text(tmp_path, MINIMAL + MEMORY).stages[0]
    rule = stage.memory_growth
    assert (rule.small.params, rule.large.params) == ({"n": 1024}, {"n": 4096})
    assert (rule.small.dtype, rule.max_growth) == ("float32", 6.0)
    assert load_text(tmp_path, MINIMAL).stages[0].memory_growth is None


@pytest.mark.parametrize("old, new, expected", [
    ("max_growth = 6.0", "max_growth = 1", "stages[0].memory_growth.max_growth: must be above 1"),
    ('dtype = "float32"', 'dtype = "float64"', "stages[0].memory_growth.dtype: unknown dtype"),
    ("large = { n = 4096 }", "large = { m = 4096 }", "stages[0].memory_growth.large.m: unknown key"),
    ("small = { n = 1024 }\n", "", "stages[0].memory_growth.small: missing"),
])
def test_a_wrong_memory_growth_rule_is_named_by_its_key_path(tmp_path, old, new, expected):
    assert expected in error_for(tmp_path, MINIMAL + MEMORY.replace(old, new, 1))


def test_a_speed_table_without_cases_is_an_error(tmp_path):
    speed = """
[stages.speed]
points = 5
baseline = "torch"
cases = []
thresholds.sm_90.triton = { min_speedup = 1.0 }
"""
    message = error_for(tmp_path, MINIMAL + speed)
    assert "stages[0].speed.cases: a speed table needs at least one case" in message


def test_a_threshold_is_named_by_its_key_path_with_the_keys_it_may_give(tmp_path):
    """A threshold table is read straight into the Threshold record (its keys are the
    record's fields); that it gives a figure at all is the checker's, at the same path."""
    speed = """
[stages.speed]
points = 5
baseline = "torch"
cases = [ { n = 1024, dtypes = ["float32"] } ]
thresholds.sm_90.triton = { min_fraction = 0.5 }
"""
    assert load_text(tmp_path, MINIMAL + speed).stages[0].speed.threshold("sm_90", "triton") \
        == Threshold(min_fraction=0.5)
    for old, new, expected in (
            ("{ min_fraction = 0.5 }", "{ }",
             "stages[0].speed.thresholds.sm_90.triton: give min_speedup, min_fraction or both"),
            ("{ min_fraction = 0.5 }", "{ min_fraction = 0 }",
             "stages[0].speed.thresholds.sm_90.triton.min_fraction: must be positive"),
            ("{ min_fraction = 0.5 }", '{ min_fraction = 0.5, baseline = "" }',
             "stages[0].speed.thresholds.sm_90.triton.baseline: expected a non-empty string"),
            ("{ min_fraction = 0.5 }", "{ min_fraction = 0.5, fraction = 1 }",
             "stages[0].speed.thresholds.sm_90.triton.fraction: unknown key; expected one of: "
             "min_speedup, min_fraction, copied_from, baseline"),
            ("sm_90.triton", "sm_90.tritn",
             "stages[0].speed.thresholds.sm_90.tritn: unknown key; expected one of: triton, cutile")):
        assert expected in error_for(tmp_path, MINIMAL + speed.replace(old, new))


def test_a_time_limit_is_read_with_the_grader_s_default_where_it_gives_none(tmp_path):
    (stage,) = load_text(tmp_path, MINIMAL + "time_limit = { cpu = 5 }\n").stages
    assert stage.time_limit == TimeLimit(cpu=5.0) and stage.time_limit.seconds("cuda") == 120.0
    message = error_for(tmp_path, MINIMAL + "time_limit = { cpu = 0, tpu = 1 }\n")
    assert "stages[0].time_limit.cpu: must be positive" in message
    assert "stages[0].time_limit.tpu: unknown key; expected one of: cpu, gpu" in message


def test_a_hidden_stage_without_an_id_is_named_not_a_traceback(tmp_path):
    (tmp_path / "course.hidden.toml").write_text('[[stages]]\ncases = [ { n = 7, dtypes = ["float32"] } ]\n')
    message = error_for(tmp_path, MINIMAL)
    assert "course.hidden.toml" in message and "stages[0].id: missing" in message


def test_a_hint_names_only_what_the_stage_has(tmp_path):
    """A hint's signature is checked like a case: parameters of the problem, known dtypes,
    failure kinds the grader records."""
    text = MINIMAL + '''
[[stages.hints]]
when = { params = { m = 3 }, failure = "exploded", dtypes = ["float64"] }
hint = "x"
'''
    message = error_for(tmp_path, text)
    assert "stages[0].hints[0].when.params.m: unknown key; expected one of: n" in message
    assert "stages[0].hints[0].when.failure: unknown failure 'exploded'; known: 'wrong result'" in message
    listed = error_for(tmp_path, text.replace('failure = "exploded"',
                                              'failure = ["wrote out of bounds", "exploded"]'))
    assert "stages[0].hints[0].when.failure[1]: unknown failure 'exploded'; known: 'wrong" in listed


def test_a_hint_s_failure_is_one_kind_or_any_of_a_list(tmp_path):
    text = MINIMAL + '''
[[stages.hints]]
when = { failure = "wrong result" }
hint = "one"

[[stages.hints]]
when = { failure = ["read out of bounds", "wrote out of bounds"] }
hint = "either"
'''
    (tmp_path / "course.toml").write_text(text)
    one, either = load_course(tmp_path / "course.toml").stages[0].hints
    assert one.when.failure == ("wrong result",) and one.hint == "one"
    assert either.when.failure == ("read out of bounds", "wrote out of bounds")
    read, wrote = (CaseResult("c", "float32", {}, 0, False, "", failure=kind)
                   for kind in (Failure.READ_OUT_OF_BOUNDS, Failure.OUT_OF_BOUNDS))
    assert either.when.matches(read) and either.when.matches(wrote)
    assert not one.when.matches(read)


def test_a_hypothesis_names_an_experiment_of_its_problem_or_a_probe(tmp_path):
    """The catalogue of hypotheses is course content checked like the rest: a recompute the
    problem does not define, a probe of parameters it does not have, or neither, is named."""
    text = MINIMAL + '''
[[stages.hypotheses]]
cause = "a"
experiment = "no_such_recompute"
says = "x"

[[stages.hypotheses]]
cause = "b"
probe = { m = 1 }
says = "x"

[[stages.hypotheses]]
cause = "c"
says = "x"
'''
    message = error_for(tmp_path, text)
    assert "stages[0].hypotheses[1].probe.m: unknown key" in message
    message = error_for(tmp_path, text.replace("probe = { m = 1 }", "probe = { n = 1 }"))
    assert ("stages[0].hypotheses[0].experiment: unknown experiment 'no_such_recompute'; "
            "known: none") in message
    assert "stages[0].hypotheses[2]: give an `experiment` or a `probe`" in message


MATMUL = matmul_course('K = 1, layout = "contiguous"')


def test_a_probe_the_problem_would_refuse_on_a_case_is_named_at_load(tmp_path):
    """A probe is replayed on a failing case's parameters: where the problem refuses what it
    makes of one of the stage's cases, the hypothesis could never be named for that case."""
    (stage,) = load_text(tmp_path, MATMUL).stages
    assert stage.hypotheses[0].probe == {"K": 1, "layout": "contiguous"}
    message = error_for(tmp_path, MATMUL.replace('probe = { K = 1, layout = "contiguous" }',
                                                 "probe = { K = 1 }"))
    assert ("stages[0].hypotheses[0].probe: stage 'matmul', hypothesis "
            "'accumulator_added_twice': the probe would replay the case "
            "M=65,N=33,K=47,layout=sliced-float32 with parameters the problem refuses: "
            "layout = 'sliced' needs K of at least 2") in message
    assert "layout=contiguous-float32" not in message  # the contiguous case takes K = 1


@pytest.mark.parametrize("probe, says", [
    ("K = 0", "stages[0].hypotheses[0].probe.K: must be at least 1"),
    ('layout = "tiled"', "stages[0].hypotheses[0].probe.layout: unknown layout 'tiled'; "
                         "known: 'contiguous', 'transposed', 'sliced'"),
])
def test_a_probes_values_are_held_to_what_a_case_may_give(tmp_path, probe, says):
    text = MATMUL.replace('probe = { K = 1, layout = "contiguous" }', f"probe = {{ {probe} }}")
    assert says in error_for(tmp_path, text)


GELU = """
[course]
title = "mini"

""" + RULES + """

[[stages]]
id = "fused_gelu"
title = "Fused GELU"
points = 10
modules = { triton = "triton/stage2_fused_gelu.py", cutile = "cutile/stage2_fused_gelu.py" }
tolerance.float32 = { atol = 1e-5, rtol = 1e-5 }
cases = [ { M = 3, N = 5, layout = "sliced", dtypes = ["float32"] } ]
"""


def test_a_hypothesis_names_only_the_facts_its_experiment_finds(tmp_path):
    """A hypothesis's words fill in, in braces, what its experiment found ({strides}: the
    strides x was read with); a name the experiment does not find, a name without an
    experiment, or a lone brace is refused where the course loads, not at a failing case."""
    hypothesis = """
[[stages.hypotheses]]
cause = "strides"
experiment = "x_misread"
says = "SAYS"
"""
    def loaded(says: str, experiment: str = 'experiment = "x_misread"'):
        return load_text(tmp_path, GELU + hypothesis.replace("SAYS", says).replace(
            'experiment = "x_misread"', experiment))

    (ok,) = loaded("read with {strides}, not {own} ({{sic}})").stages[0].hypotheses
    assert ok.says.format_map({"strides": (5, 1), "own": (8, 1)}) == \
        "read with (5, 1), not (8, 1) ({sic})"
    for says, experiment, expected in (
            ("read with {tile}", 'experiment = "x_misread"',
             "names {tile}, but experiment 'x_misread' finds strides, own"),
            ("read with {strides}", 'experiment = "bias_left_out"',
             "names {strides}, but experiment 'bias_left_out' finds no facts to name"),
            ("read with {strides}", "probe = { N = 1 }",
             "names {strides}, but a hypothesis without an experiment has no facts to name"),
            ("read with {strides", 'experiment = "x_misread"', "write a brace as {{ or }}"),
            ("read with {strides:{tile}}", 'experiment = "x_misread"',
             "a brace's format cannot be read"),
            ("read with {strides:.4q}", 'experiment = "x_misread"',
             "a brace's format cannot be read")):
        with pytest.raises(CourseError) as info:
            loaded(says, experiment)
        assert "stages[0].hypotheses[0].says" in str(info.value)
        assert expected in str(info.value), str(info.value)


def test_a_layout_case_draws_a_view_with_other_strides(tmp_path):
    (case,) = load_text(tmp_path, GELU).stages[0].cases
    assert case.params["layout"] == "sliced" and "layout=sliced" in case.id
    x = load_text(tmp_path, GELU).stages[0].problem.draw(case.params, "float32", case.seed).args[0]
    assert x.shape == (3, 5) and not x.is_contiguous() and x.stride(1) == 1 and x.stride(0) > 5
    transposed = dict(case.params, layout="transposed")
    t = load_text(tmp_path, GELU).stages[0].problem.draw(transposed, "float32", 1).args[0]
    assert t.shape == (3, 5) and t.stride() == (1, 3)


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ('layout = "sliced"', 'layout = "diagonal"',
         "stages[0].cases[0].layout: unknown layout 'diagonal'; known: 'contiguous', 'transposed', 'sliced'"),
        ('layout = "sliced"', 'layout = 2', "stages[0].cases[0].layout: unknown layout 2"),
        ('M = 3', 'M = 1', "stages[0].cases[0]: layout = 'sliced' needs M of at least 2"),
    ],
)
def test_a_layout_is_checked_with_a_clear_error(tmp_path, old, new, expected):
    assert old in GELU
    assert expected in error_for(tmp_path, GELU.replace(old, new, 1))


def test_a_stage_whose_lesson_promises_no_layout_has_no_layout_parameter(tmp_path):
    message = error_for(tmp_path, MINIMAL.replace("n = 5", 'n = 5, layout = "sliced"'))
    assert "stages[0].cases[0].layout: unknown key" in message


# The sizes a stage's tiles split (the rest: one program per index, or a whole dimension).
TILED = {"vector_add": ("n",), "fused_gelu": ("M", "N"), "softmax": ("N",),
         "matmul": ("M", "N", "K"), "flash_attention": ("N",)}


def test_every_stage_has_a_case_whose_tiled_sizes_fit_no_tile(course):
    # Tiles are powers of two: an odd size above 1 is a multiple of none of them, so such a
    # case has a partial tile along every tiled dimension, whatever tiles a kernel picks.
    assert set(TILED) == {s.id for s in course.stages}
    for stage in course.stages:
        assert any(all(c.params[p] > 1 and c.params[p] % 2 for p in TILED[stage.id])
                   for c in stage.cases), stage.id


def test_the_stages_that_promise_any_layout_grade_transposed_and_sliced_inputs(course):
    for stage_id in ("fused_gelu", "matmul"):
        layouts = {c.params["layout"] for c in course.select(stage_id).cases}
        assert layouts == {"contiguous", "transposed", "sliced"}, stage_id
