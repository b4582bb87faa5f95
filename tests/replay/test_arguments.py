"""A launch's arguments matched to its kernel's parameters (grader.replay.arguments): which
parameter is missing, extra or given twice, at the line that launches the kernel."""

import textwrap

from grader.replay.arguments import at_launch, mismatch, sites

PARAMETERS = ["x_ptr", "y_ptr", "out_ptr", "n_elements", "BLOCK_SIZE"]


def test_every_parameter_given_is_no_mismatch():
    assert mismatch("k", PARAMETERS, set(), 4, ["BLOCK_SIZE"]) is None
    assert mismatch("k", PARAMETERS, set(), 5, []) is None


def test_a_missing_parameter_is_named_with_what_the_launch_passed():
    said = mismatch("k", PARAMETERS, set(), 3, ["BLOCK_SIZE"])
    assert said == ("the launch gives no value for n_elements: k takes 5 parameters (x_ptr, "
                    "y_ptr, out_ptr, n_elements, BLOCK_SIZE), and the launch passes 3 by "
                    "position and BLOCK_SIZE by name")


def test_a_parameter_the_kernel_supplies_may_be_left_out():
    # a default, or a value every autotuner configuration sets
    assert mismatch("k", PARAMETERS, {"BLOCK_SIZE"}, 4, []) is None
    assert "no value for BLOCK_SIZE" in mismatch("k", PARAMETERS, set(), 4, [])


def test_too_many_arguments_by_position():
    said = mismatch("k", ["x", "y", "out", "TILE_SIZE"], set(), 5, [])
    assert said.startswith("the launch passes 5 arguments by position, but k takes 4 "
                           "parameters (x, y, out, TILE_SIZE)")


def test_an_argument_given_by_position_and_by_name():
    said = mismatch("k", PARAMETERS, set(), 5, ["BLOCK_SIZE"])
    assert said.startswith("the launch passes BLOCK_SIZE twice, by position and as "
                           "`BLOCK_SIZE=`")


def test_the_launch_line_is_found_in_the_source(tmp_path):
    path = tmp_path / "stage1.py"
    path.write_text(textwrap.dedent("""\
        def wrapper(x):
            grid = (4,)
            kernel[grid](x, 1)
            ct.launch(stream, grid, other, (x,))
            helper(kernel)
            return kernel
        """))
    assert sites(path, "kernel") == [(3, "kernel[grid](x, 1)"), (5, "helper(kernel)")]
    assert sites(path, "other") == [(4, "ct.launch(stream, grid, other, (x,))")]
    assert at_launch(path, "other", "wrong") == "line 4 (`ct.launch(stream, grid, other, (x,))`): wrong"
    assert at_launch(path, "kernel", "wrong") == \
        "lines 3, 5 launch kernel or hand it to a call: wrong"
    assert at_launch(path, "absent", "wrong") == "wrong"


def test_a_file_that_does_not_parse_names_no_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def f(:\n")
    assert sites(path, "f") == [] and at_launch(path, "f", "wrong") == "wrong"


def test_a_triton_kernel_may_be_launched_without_a_default_or_what_every_config_sets():
    import triton
    import triton.language as tl

    from grader.tracks import wing

    @triton.autotune(configs=[triton.Config({"BLOCK": 64, "EXTRA": 1}),
                              triton.Config({"BLOCK": 128})], key=[])
    @triton.jit
    def kernel(a_ptr, n, BLOCK: tl.constexpr, EXTRA: tl.constexpr, D: tl.constexpr = 2):
        pass

    assert wing("triton").reader.optional(kernel) == {"BLOCK", "D"}  # EXTRA: one config only
    assert wing("triton").reader.parameters(kernel) == ["a_ptr", "n", "BLOCK", "EXTRA", "D"]
