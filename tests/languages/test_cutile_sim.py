"""The cuTile simulator (`--backend cutile-sim`): the cuTile track graded on a CPU.

The references pass on it; kernels with cuTile-specific faults fail with a message that
names them; what the simulator does not implement, or what cuTile rejects, is an error,
never a silent wrong answer. (Agreement with real cuTile on a GPU is checked by
scripts/cutile_sim_diff.py.)
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import broken, failing, failure_text

from grader.backends import selection as backends
from grader.errors import BackendUnavailable
from grader.languages.cutile import frontend
from grader.languages.cutile import simulator as cutile_sim
from grader.languages.cutile.simulator import Array, tensor_of
from grader.replay import kernels
from grader.replay.locate import internal
from grader.results import Status

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def grade_cutile(grade_source):
    return lambda stage_id, source: grade_source(stage_id, source, backend="cutile-sim")


def test_every_cutile_reference_passes_on_the_simulator(run_grade, course, tmp_path):
    out = tmp_path / "r.json"
    code, _, _ = run_grade("--course", str(course.path), "all", "--solutions", "--backend",
                           "cutile-sim", "--json", str(out))
    data = json.loads(out.read_text())
    assert code == 0, [(s["id"], s["message"]) for s in data["stages"] if s["status"] != "PASS"]
    assert [s["id"] for s in data["stages"]] == [s.id for s in course.stages]
    assert all(s["status"] == "PASS" and s["backend"] == "cutile-sim" for s in data["stages"])
    assert all(s["speed"]["reason"] == "needs a GPU" for s in data["stages"])
    # The replay watched every load and store: a reference draws no finding at all.
    warned = [(s["id"], c["id"], c["stats"].get("traffic")) for s in data["stages"]
              for c in s["cases"] if c["stats"].get("traffic")]
    assert not warned, warned


def test_the_cutile_track_on_a_cpu_goes_to_the_simulator(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    selection = backends.select("auto", track="cutile")
    assert selection.backend.name == "cutile-sim"
    assert selection.reason.startswith("no usable CUDA GPU, so the grader's simulator runs")
    with pytest.raises(BackendUnavailable, match="grades the cutile track, not triton"):
        backends.select("cutile-sim", track="triton")


def test_a_tile_that_is_not_a_power_of_two_is_rejected(grade_cutile):
    source = broken("cutile", "stage1_vector_add.py", "TILE_SIZE = 1024", "TILE_SIZE = 1000")
    result = grade_cutile("vector_add", source)
    assert result.status is Status.FAIL
    assert "Dimension #0 of shape (1000,) is not a power of two" in failure_text(result)


def test_an_unsupported_api_is_named(grade_cutile):
    source = broken("cutile", "stage1_vector_add.py", "tile=x_tile + y_tile", "tile=ct.cumsum(x_tile, 0)")
    result = grade_cutile("vector_add", source)
    assert result.status is Status.FAIL
    assert "ct.cumsum is not supported by the cuTile simulator" in failure_text(result)


def test_storing_the_wrong_dtype_is_an_error(grade_cutile):
    source = broken("cutile", "stage3_softmax.py", "tile=y.astype(out.dtype)", "tile=y", count=2)
    result = grade_cutile("softmax", source)
    half = [c for c in result.cases if c.dtype != "float32"]
    assert half and all(not c.passed for c in half)
    # cuTile's own front end refuses it before the simulator runs it, at the store
    text = failure_text(result)
    assert "a kernel does not compile; the compiler said" in text and "ct.store(out, index=(row, 0), tile=y)" in text


# --- the simulator's semantics, directly --------------------------------------------------


def test_load_pads_and_store_drops_out_of_bounds():
    array = Array(torch.arange(6, dtype=torch.float32))
    tile = cutile_sim.load(array, (1,), (4,), padding_mode=cutile_sim.PaddingMode.ZERO)
    assert tensor_of(tile).tolist() == [4.0, 5.0, 0.0, 0.0]
    poison = cutile_sim.load(array, (1,), (4,))
    assert torch.isnan(tensor_of(poison)[2:]).all()
    target = torch.zeros(6)
    cutile_sim.store(Array(target), (1,), cutile_sim.full((4,), 7.0, cutile_sim.float32))
    assert target.tolist() == [0, 0, 0, 0, 7, 7]


def test_load_with_order_reads_the_transposed_tile():
    array = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    tile = cutile_sim.load(Array(array), (0, 0), (4, 4), order=(1, 0),
                           padding_mode=cutile_sim.PaddingMode.ZERO)
    assert tensor_of(tile)[:, :3].tolist() == array.T.tolist()


def test_mma_keeps_the_accumulator_dtype_and_never_converts_inputs():
    a = cutile_sim.full((16, 16), 1.0, cutile_sim.bfloat16)
    acc = cutile_sim.full((16, 16), 0.0, cutile_sim.float32)
    assert tensor_of(cutile_sim.mma(a, a, acc)).dtype == torch.float32
    with pytest.raises(cutile_sim.SimulatorError, match="need an accumulator of"):
        cutile_sim.mma(a, a, cutile_sim.full((16, 16), 0.0, cutile_sim.bfloat16))
    with pytest.raises(cutile_sim.SimulatorError, match="convert them to one dtype"):
        cutile_sim.mma(a, a.astype(cutile_sim.float16), acc)


def test_tf32_keeps_ten_mantissa_bits():
    x = cutile_sim.full((1,), 1.0 + 2.0**-12, cutile_sim.float32).astype(cutile_sim.tfloat32)
    assert tensor_of(x).item() == 1.0 and x.dtype is cutile_sim.tfloat32


# Without the cuTile extra, the simulator keeps stand-ins of its own: torch's dtypes, and
# enums with cuda.tile's members and values.
WITHOUT_CUDA_TILE = """
import sys
sys.modules["cuda.tile"] = None  # `import cuda.tile` fails, as where it is not installed
import torch
from grader.languages.cutile import simulator as sim

assert sim.float32 is torch.float32 and sim.PaddingMode.ZERO.value == "zero"
assert sim.RoundingMode.RN.value == "nearest_even" and repr(sim.tfloat32) == "tfloat32"
ct = sim.namespace


def kernel(x, out):
    tile = ct.load(x, index=(ct.bid(0),), shape=(4,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(ct.bid(0),), tile=tile.astype(ct.tfloat32) * 2)


x, out = torch.arange(6.0), torch.zeros(6)
sim.launch(sim.SimulatedStream(), (2,), kernel, (x, out))
assert out.tolist() == [0, 2, 4, 6, 8, 10], out
"""


def test_the_simulator_runs_without_cuda_tile():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", WITHOUT_CUDA_TILE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_torch_fallback_in_the_cutile_track_fails(grade_cutile):
    source = broken("cutile", "stage1_vector_add.py", "    out = torch.empty_like(x)\n", "    return x + y\n")
    result = grade_cutile("vector_add", source)
    assert result.status is Status.FAIL and result.cases_passed == 0 and result.cases
    assert all("launched no cuTile kernel" in c.summary for c in result.cases)


def _diff_script_variants():
    """The broken variants of scripts/cutile_sim_diff.py (the GPU differential test)."""
    import importlib

    return importlib.import_module("scripts.cutile_sim_diff").VARIANTS


VARIANTS = _diff_script_variants()

# What the failing cases of a variant must report, beyond failing: the simulator names the
# fault, not only that the result is wrong.
MESSAGES = {
    # padding reads as poison, and the message says where the NaN came from
    "undetermined padding": ["NaN where a number was expected, and a load took a tile over "
                             "the edge of its array with padding_mode UNDETERMINED"],
    "grid rounded down": ["never written", "TILE_SIZE=1024 per tile"],
    "no zero padding along K": ["NaN where a number was expected, and a load took a tile over "
                                "the edge of its array with padding_mode UNDETERMINED"],
}
# Rows that fill whole tiles never read padding, and still pass.
SOME_CASES_PASS = {"undetermined padding"}
# Variants whose failing cases must all be of one kind: {name: (kind, test of a case)}.
FAILING_CASES_ARE = {"no causal mask": ("causal", lambda c: c.params["causal"])}


def test_the_expected_messages_name_existing_variants():
    named = set(MESSAGES) | SOME_CASES_PASS | set(FAILING_CASES_ARE)
    assert named <= {name for _, name, _, _, _ in VARIANTS}


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v[0]}: {v[1]}")
def test_each_broken_variant_of_the_gpu_differential_fails_on_the_simulator(variant, grade_cutile, course):
    stage_id, name, old, new, _ = variant
    stage = course.select(stage_id)
    source = broken("cutile", course.module_path(stage, "cutile", solutions=True).name, old, new,
                    count=None)
    result = grade_cutile(stage_id, source)
    assert result.status is Status.FAIL, f"{name} passed on the simulator"
    report = failure_text(result)
    for fragment in MESSAGES.get(name, []):
        assert fragment in report, (name, fragment)
    if name in SOME_CASES_PASS:
        assert result.cases_passed > 0, name
    if name in FAILING_CASES_ARE:
        kind, is_kind = FAILING_CASES_ARE[name]
        bad = failing(result)
        assert bad and all(is_kind(c) for c in bad), f"{name}: a case that is not {kind} failed"


# --- what cuTile refuses, the simulator refuses, in cuTile's words ----------------------------

ct = pytest.importorskip("cuda.tile")


@ct.kernel
def _add_one(x, TILE: ct.Constant[int]):
    ct.store(x, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(TILE,)) + 1)


def _plain_function(x, TILE):
    pass


STREAM = cutile_sim.SimulatedStream()


@pytest.mark.parametrize("args, error, message", [
    ((STREAM, 4, _add_one), TypeError, "Grid must be a tuple"),
    ((STREAM, [4], _add_one), TypeError, "Grid must be a tuple"),
    ((STREAM, (1, 1, 1, 4), _add_one), ValueError, "Grid dimensions must be at most 3, got length 4"),
    ((STREAM, (4.0,), _add_one), TypeError, "an integer is required: Grid[0] is a float"),
    ((STREAM, (1, -1), _add_one), OverflowError, "can't convert negative value to unsigned int"),
    ((STREAM, (1 << 24,), _add_one), ValueError, "Grid[0] exceeds 24-bit limit: max=16777215, got=16777216"),
    ((STREAM, (0,), _add_one), ValueError, "Grid[0] is 0"),
    ((None, (4,), _add_one), TypeError, "Stream is required, got None"),
    ((STREAM, (4,), _plain_function), TypeError, "launch expects a tile kernel as the third argument, got function"),
])
def test_launch_refuses_what_cutile_launch_refuses(args, error, message):
    x = torch.zeros(64)
    with pytest.raises(error) as info:
        cutile_sim.launch(*args, (x, 16))
    assert message in str(info.value)
    assert not x.any()  # refused before any block ran


def test_launch_takes_a_tuple_of_kernel_arguments_and_grids_as_cutile_does():
    x = torch.zeros(64)
    with pytest.raises(TypeError, match="launch expects a tuple as the fourth argument, got list"):
        cutile_sim.launch(STREAM, (4,), _add_one, [x, 16])
    cutile_sim.launch(STREAM, (4,), _add_one, (x, 16))
    cutile_sim.launch(STREAM, (), _add_one, (x, 16))  # an empty grid is one block, as in cuTile
    assert x[:16].tolist() == [2.0] * 16 and x[16:].tolist() == [1.0] * 48


def test_a_tile_outside_the_tile_space_names_the_index_and_the_space():
    array = Array(torch.zeros(37, 300))
    with pytest.raises(cutile_sim.SimulatorError) as info:
        cutile_sim.load(array, (1, 0), (64, 64), padding_mode=cutile_sim.PaddingMode.ZERO)
    message = str(info.value)
    assert "tile index (1, 0) is outside the tile space" in message and "1 x 5 tiles" in message
    with pytest.raises(cutile_sim.SimulatorError, match=r"tile index \(0, -1\) is outside"):
        cutile_sim.store(array, (0, -1), cutile_sim.zeros((64, 64), cutile_sim.float32))


def test_index_shape_and_order_take_the_forms_cutile_takes():
    array = Array(torch.arange(6, dtype=torch.float32))
    assert tensor_of(cutile_sim.load(array, 1, 4, padding_mode=cutile_sim.PaddingMode.ZERO)).tolist() == [4, 5, 0, 0]
    grid = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    tile = cutile_sim.load(Array(grid), (0, 0), (4, 2), order="F", padding_mode=cutile_sim.PaddingMode.ZERO)
    assert tensor_of(tile)[:3].tolist() == grid.T.tolist()
    with pytest.raises(cutile_sim.SimulatorError, match="Index size 1 does not match the array rank 2"):
        cutile_sim.load(Array(grid), (0,), (2, 2))
    with pytest.raises(cutile_sim.SimulatorError, match="Expected 'C' or 'F', got 'K'"):
        cutile_sim.load(Array(grid), (0, 0), (2, 2), order="K")


def test_store_converts_only_what_cutile_converts_implicitly():
    target = torch.zeros(4)
    cutile_sim.store(Array(target), (0,), cutile_sim.full((4,), 1.5, cutile_sim.bfloat16))
    assert target.tolist() == [1.5] * 4  # bfloat16 widens to float32
    with pytest.raises(cutile_sim.SimulatorError, match="cannot implicitly cast float32 to bfloat16"):
        cutile_sim.store(Array(torch.zeros(4, dtype=torch.bfloat16)), (0,), cutile_sim.full((4,), 1.0, cutile_sim.float32))


def test_shape_and_dtype_mistakes_are_told_in_cutiles_words_not_pytorchs():
    a, b = cutile_sim.zeros((16, 32), cutile_sim.float32), cutile_sim.zeros((16, 16), cutile_sim.float32)
    with pytest.raises(cutile_sim.SimulatorError, match=r"Shapes are not broadcastable: \(16, 32\), \(16, 16\)"):
        a + b
    with pytest.raises(cutile_sim.SimulatorError, match="Incompatible shapes for matrix mul on tiles"):
        cutile_sim.mma(a, a, cutile_sim.zeros((16, 32), cutile_sim.float32))
    with pytest.raises(cutile_sim.SimulatorError, match=r"Expect acc shape to be \(16, 16\), got \(16, 32\)"):
        cutile_sim.mma(b, b, a)
    with pytest.raises(cutile_sim.SimulatorError, match="Implicit promotion of bfloat16 and float16"):
        cutile_sim.ones((4,), cutile_sim.bfloat16) + cutile_sim.ones((4,), cutile_sim.float16)
    with pytest.raises(cutile_sim.SimulatorError, match="cannot be reshaped to"):
        a.reshape((16, 16))


def test_pytorchs_errors_never_reach_the_student_as_the_explanation():
    ct_sim = cutile_sim.namespace
    tile = cutile_sim.zeros((16,), cutile_sim.float32)
    with pytest.raises(cutile_sim.SimulatorError, match="Axis 3 is out of range for rank 1"):
        ct_sim.sum(tile, axis=3)
    with pytest.raises(cutile_sim.SimulatorError) as info:
        tile.permute((1, 0))
    assert str(info.value).startswith("tile.permute cannot be applied to a tile of shape (16,)")
    assert "dims" not in str(info.value)  # PyTorch's words about permute's dims
    with pytest.raises(cutile_sim.SimulatorError, match="ct.load has no argument `mask`: cuTile has no masks"):
        ct_sim.load(Array(torch.zeros(8)), (0,), (8,), mask=None)


# --- a kernel reaches what it would on a GPU, and reads the values cuTile's compiler reads ---


def _public(cls) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_arrays_and_tiles_offer_only_cutiles_own_attributes():
    assert _public(cutile_sim.Array) <= _public(ct.Array)
    assert _public(cutile_sim.Tile) <= _public(ct.Tile)
    # the tensor behind each is private, and nothing public hands it out
    assert all(n.startswith("_") for n in cutile_sim.Array.__slots__ + cutile_sim.Tile.__slots__)
    array = Array(torch.ones(4, 8))
    tile = cutile_sim.load(array, (0, 0), (4, 8))
    read = [getattr(array, n) for n in _public(cutile_sim.Array)]
    read += [getattr(tile, n) for n in _public(cutile_sim.Tile)]
    read += [tile.astype(ct.float16), tile.reshape((32,)), tile.permute((1, 0)), tile.transpose(),
             cutile_sim.full((1,), 2.0, ct.float32).item()]
    assert not any(isinstance(value, torch.Tensor) for value in read)
    assert (array.shape, array.strides, array.ndim, array.dtype) == ((4, 8), (8, 1), 2, ct.float32)


@ct.kernel
def _copies_with_pytorch(x, out):
    out.copy_(x)


@ct.kernel
def _stores_a_tiles_data(x, out):
    ct.store(out, index=(0,), tile=ct.load(x, index=(0,), shape=(4,)).data)


@ct.kernel
def _adds_in_place(x, out):
    x.add_(1)


@pytest.mark.parametrize("kernel, told", [
    (_copies_with_pytorch, "a cuTile array has no attribute `copy_`: an array offers shape, dtype, ndim and strides"),
    (_stores_a_tiles_data, "a cuTile tile has no attribute `data`: a tile offers shape, dtype, ndim"),
    (_adds_in_place, "a cuTile array has no attribute `add_`"),
])
def test_a_kernel_cannot_reach_a_torch_tensor(kernel, told):
    x, out = torch.ones(4), torch.zeros(4)
    with pytest.raises(cutile_sim.SimulatorAttributeError) as info:
        cutile_sim.launch(STREAM, (1,), kernel, (x, out))
    assert told in str(info.value) and "A kernel cannot call PyTorch" in str(info.value)
    assert not internal(info.value)  # told to the student as it is, at the kernel's line
    assert not out.any() and x.eq(1).all()


SIMULATED = cutile_sim.namespace  # what `ct` is inside a simulated kernel


@pytest.mark.parametrize("call, told", [
    (lambda x, t: SIMULATED.exp(x), "an array of shape (4,) and dtype float32 was given where a tile is expected"),
    (lambda x, t: t + x, "an array of shape (4,) and dtype float32 was given where a tile is expected"),
    (lambda x, t: x[0], "Arrays are not directly subscriptable. Use load() or gather() instead."),
    (lambda x, t: SIMULATED.load(t, index=(0,), shape=(4,)), "ct.load: Expected an array, but given value is a tile of shape (4,)"),
    (lambda x, t: SIMULATED.num_tiles(3, axis=0, shape=(4,)), "ct.num_tiles: Expected an array"),
])
def test_an_array_and_a_tile_are_not_taken_for_one_another(call, told):
    x = Array(torch.ones(4))
    tile = cutile_sim.load(x, (0,), (4,))
    with pytest.raises(cutile_sim.SimulatorError) as info:
        call(x, tile)
    assert told in str(info.value)


def test_the_dtypes_and_enums_a_kernel_reads_are_cuda_tiles_own():
    for name in ("float16 bfloat16 float32 float64 int8 int16 int32 int64 uint8 bool_ tfloat32 "
                 "PaddingMode RoundingMode Constant").split():
        assert getattr(cutile_sim.namespace, name) is getattr(ct, name), name
    assert Array(torch.zeros(4, dtype=torch.bfloat16)).dtype is ct.bfloat16
    assert cutile_sim.full((4,), 1, ct.int32).dtype is ct.int32
    assert (cutile_sim.full((4,), 1.0, ct.float32) < 2).dtype is ct.bool_
    assert cutile_sim.full((4,), 1.0, ct.float32).astype(ct.tfloat32).dtype is ct.tfloat32


# Values a kernel can branch on that cuTile's compiler folds at compile time (it never
# checks the branch it drops): the simulator must take the branch the compiler kept.
FOLDED = [
    'ct.RoundingMode.RN.value == "rn"', 'ct.PaddingMode.ZERO.value == "zero"',
    'ct.RoundingMode.RN.name == "RN"', 'f"{ct.RoundingMode.RZI}" == "RoundingMode.RZI"',
    'f"{ct.float32}" == "float32"', 'f"{ct.bool_}" == "bool_"', 'f"{ct.tfloat32}" == "tfloat32"',
    'x.dtype == ct.float32', 'f"{x.dtype}" == "float32"', 't.dtype == ct.float32',
    'f"{t.dtype}" == "float32"', 'x.ndim == 1', 'f"{t.shape}" == "(16,)"',
]
BRANCHES = """
import cuda.tile as ct


@ct.kernel
def taken(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, index=(0,), shape=(TILE,))
    if {condition}:
        out.copy_(x)


@ct.kernel
def not_taken(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, index=(0,), shape=(TILE,))
    if not ({condition}):
        out.copy_(x)


@ct.kernel
def simulated(x, out, TILE: ct.Constant[int]):
    t = ct.load(x, index=(0,), shape=(TILE,))
    if {condition}:
        ct.store(out, index=(0,), tile=t)
"""


@pytest.mark.parametrize("condition", FOLDED)
def test_the_simulator_takes_the_branch_the_compiler_kept(condition, tmp_path):
    path = tmp_path / "branches.py"
    path.write_text(BRANCHES.format(condition=condition), encoding="utf-8")
    built = kernels.load(path, "cutile").namespace
    x, out = torch.ones(16), torch.zeros(16)
    # the compiler drops the branch it folds to False: only there does `out.copy_` compile
    rejects = [frontend.front_end_check(built[name], (x, out, 16)) is not None
               for name in ("taken", "not_taken")]
    assert rejects.count(True) == 1, f"the compiler does not fold {condition}"
    kept = rejects == [True, False]
    cutile_sim.launch(STREAM, (1,), built["simulated"], (x, out, 16))
    assert bool(out.any()) is kept, condition
