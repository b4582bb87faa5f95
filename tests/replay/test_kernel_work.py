"""Points only for work the student's kernel did: the corpus of grader/sandbox/host.py,
grader/sandbox/screening.py and the languages' front ends (grader.tracks.contract.CpuRunner.front_end).

Each submission below earns its output some other way than by its kernel, usually next to a
kernel launched as cover, and must fail with a message that names what it did; the
references, and kernels written the way NVIDIA's own samples write them, must pass.
"""

import re

import pytest
from conftest import ROOT, case_text, failure_text

from grader import intake
from grader.quoting import is_quoted
from grader.results import Status

SOLUTIONS = ROOT / "solutions"


def reference(track: str, name: str) -> str:
    return (SOLUTIONS / track / name).read_text()


def host_does(stage_file: str, old: str, new: str, track: str = "triton") -> str:
    """The reference with the line `old` replaced by `new` wherever it stands, at its own
    indentation or deeper (every path out of a wrapper with several returns): the kernel
    still launches, the host computes the answer."""
    source = reference(track, stage_file)
    body = old.lstrip(" ")
    base = len(old) - len(body)
    line = re.compile(rf"^( {{{base},}}){re.escape(body)}", re.MULTILINE)
    assert line.search(source), (stage_file, old)
    return line.sub(lambda m: "".join(m.group(1)[base:] + text for text in new.splitlines(True)),
                    source)


def said_by_its_process(case) -> str:
    """What a failing case quotes from the submission's processes (the host watch's findings,
    why its launches cannot be replayed): the lines behind the gutter, one after another."""
    return " ".join(line for line in case.details if is_quoted(line))


MATMUL_RETURN = "    return c\n"
ADD_RETURN = "    return out\n"


# --- the host may not compute -------------------------------------------------------------


@pytest.mark.parametrize("stage, stage_file, old, new, named", [
    ("matmul", "stage4_matmul.py", MATMUL_RETURN,
     "    return (a[:, :, None] * b[None]).sum(1).to(a.dtype)\n", "torch.Tensor.mul "),
    ("matmul", "stage4_matmul.py", MATMUL_RETURN,
     "    import torch.nn.functional as F\n"
     "    ones = torch.ones(a.shape[0], 1, dtype=a.dtype)\n"
     "    return F.bilinear(a, ones, b.t()[:, :, None].contiguous())\n", "bilinear"),
    ("matmul", "stage4_matmul.py", MATMUL_RETURN,
     "    import torch.nn.functional as F\n"
     "    return F.conv1d(a.t()[None], b.t()[:, :, None])[0].t()\n", "conv1d"),
    ("vector_add", "stage1_vector_add.py", ADD_RETURN,
     "    out.copy_(x)\n    out.add_(y)\n    return out\n", "torch.Tensor.add_"),
    ("vector_add", "stage1_vector_add.py", ADD_RETURN,
     "    return torch.sub(x, y, alpha=-1)\n", "torch.sub"),
    ("fused_gelu", "stage2_fused_gelu.py", "    return out\n",
     "    z = x.mul_(1)\n    return torch.sigmoid(z)\n", "torch.Tensor.mul_"),
    ("softmax", "stage3_softmax.py", "    return out\n",
     "    return x.exp_().div_(x.sum(-1, keepdim=True))\n", "torch.Tensor.exp_"),
    ("flash_attention", "stage5_flash_attention.py", "    return out\n",
     "    import torch.nn.functional as F\n"
     "    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)\n",
     "scaled_dot_product_attention"),
    # Work the dispatcher never sees: numpy (without importing it), Python lists.
    ("vector_add", "stage1_vector_add.py", ADD_RETURN,
     "    return torch.from_numpy(x.numpy() + y.numpy())\n", "torch.Tensor.numpy"),
    ("vector_add", "stage1_vector_add.py", ADD_RETURN,
     "    return torch.tensor([a + b for a, b in zip(x.tolist(), y.tolist())], dtype=x.dtype)\n",
     "torch.Tensor.tolist"),
])
def test_pytorch_on_the_host_next_to_a_cover_kernel_fails(grade_source, stage, stage_file, old,
                                                          new, named):
    result = grade_source(stage, host_does(stage_file, old, new))
    assert result.status is Status.FAIL and result.cases_passed == 0, failure_text(result)
    # the host watch's finding, from the child: quoted under the grader's sentence
    seen = {said_by_its_process(c) for c in result.cases}
    assert all(named in s and "on the host" in s for s in seen), seen


@pytest.fixture
def unscreened(monkeypatch):
    """The static check switched off, to show what stands behind it."""
    monkeypatch.setattr(intake, "screen", lambda *args: [])


THREAD = """
    import threading
    done = []
    worker = threading.Thread(target=lambda: done.append(x + y))
    worker.start()
    worker.join()
    out.copy_(done[0])
    return out
"""


@pytest.mark.parametrize("new, named", [
    (THREAD, "was given a tensor that is neither an input nor made by the allowed host code"),
    # The watch switched off from inside, the way the grader itself runs kernels.
    ("    from torch.utils._python_dispatch import _disable_current_modes\n"
     "    from torch.overrides import _pop_mode_temporarily\n"
     "    with _disable_current_modes():\n"
     "        with _pop_mode_temporarily():\n"
     "            return x + y\n",
     "it returned a tensor that is neither an input nor made by the allowed host code"),
])
def test_work_out_of_the_watchs_sight_fails(grade_source, unscreened, new, named):
    result = grade_source("vector_add", host_does("stage1_vector_add.py", ADD_RETURN, new))
    assert result.status is Status.FAIL and result.cases_passed == 0, failure_text(result)
    assert all(named in said_by_its_process(c) for c in result.cases), \
        {case_text(c) for c in result.cases}


def test_a_write_into_the_output_behind_the_kernels_back_changes_nothing(grade_source,
                                                                        unscreened):
    # A thread (which the watch does not follow) overwrites the output after the launch: in
    # the child only, whose output counts for nothing. The replay's is the kernel's own.
    source = host_does("stage1_vector_add.py", ADD_RETURN, """
    import threading
    def overwrite():
        with torch.no_grad():
            out.view(-1).fill_(0.0)
    worker = threading.Thread(target=overwrite)
    worker.start()
    worker.join()
    return out
""")
    result = grade_source("vector_add", source)
    assert result.status is Status.PASS, failure_text(result)


def test_an_output_no_kernel_was_given_fails(grade_source):
    source = host_does("stage1_vector_add.py",
                       "    vector_add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n",
                       "    spare = torch.empty_like(x)\n"
                       "    vector_add_kernel[grid](x, y, spare, n_elements, BLOCK_SIZE=BLOCK_SIZE)\n")
    result = grade_source("vector_add", source)
    assert result.status is Status.FAIL
    assert all("which no kernel launch was given" in said_by_its_process(c)
               for c in result.cases)


# --- the static check ---------------------------------------------------------------------


@pytest.mark.parametrize("line, named", [
    ("import threading", "may not import threading"),
    ("from torch.utils import _python_dispatch", "may not import torch.utils._python_dispatch"),
    ("import grader.sandbox.submission", "may not import grader.sandbox.submission"),
    ("from ctypes import CDLL", "may not import ctypes"),
    ("import importlib", "may not import importlib"),
    ("run = eval", "may not use eval()"),
    ("base = torch.Tensor.__mro__", "may not reach into .__mro__"),
    ("keep = __builtins__", "may not use __builtins__"),
])
def test_a_forbidden_import_or_call_is_named_at_its_line(grade_source, line, named):
    source = reference("triton", "stage1_vector_add.py")
    marker = "import torch\n"
    result = grade_source("vector_add", source.replace(marker, marker + line + "\n", 1))
    assert result.status is Status.ERROR
    number = source[: source.index(marker)].count("\n") + 2
    assert f"line {number}: `{line}`: a kernel submission {named}" in result.message
    assert not result.cases  # nothing of it ran


def test_patching_the_grader_from_inside_is_stopped_before_it_runs(grade_source):
    # What a student who read grader/ would try: report a launch that never happened.
    source = ("import grader.sandbox.submission as s\n"
              "s.Submission.call = lambda *a, **k: None\n"
              + host_does("stage1_vector_add.py", ADD_RETURN, "    return x + y\n"))
    result = grade_source("vector_add", source)
    assert result.status is Status.ERROR and "may not import grader.sandbox.submission" in result.message


# --- kernel bodies only an interpreter would run ------------------------------------------


def test_a_triton_kernel_body_that_no_gpu_compiler_accepts_fails(grade_source):
    """A dict built in a kernel: Python (the interpreter) runs it, Triton's compiler does
    not."""
    source = host_does("stage1_vector_add.py", "    pid = tl.program_id(axis=0)\n",
                       "    pid = tl.program_id(axis=0)\n    notes = {\"pid\": pid}\n")
    result = grade_source("vector_add", source)
    assert result.status is Status.FAIL and result.cases_passed == 0
    text = failure_text(result)
    assert "a kernel does not compile; the compiler said" in text and "notes = {" in text
    # At the kernel line itself, not at the wrapper's launch line the error is raised from.
    line = source.splitlines().index('    notes = {"pid": pid}') + 1
    assert f"(at vector_add_submission.py, line {line}: notes = {{\"pid\": pid}})" in text


def test_a_unit_stride_compiles_as_the_gpu_compiles_it(grade_source):
    """What the real tools accept must pass: Triton's JIT compiles an integer argument equal
    to 1 as the constant 1, and a tensor descriptor compiles only with a constant last stride.
    A kernel that passes its unit stride as an argument is checked the same way."""
    described = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    x = tl.make_tensor_descriptor(x_ptr, shape=[n], strides=[stride], block_shape=[BLOCK])
    y = tl.make_tensor_descriptor(y_ptr, shape=[n], strides=[stride], block_shape=[BLOCK])
    out = tl.make_tensor_descriptor(out_ptr, shape=[n], strides=[stride], block_shape=[BLOCK])
    out.store([start], x.load([start]) + y.load([start]))


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), x.stride(0), BLOCK=1024)
    return out
'''
    result = grade_source("vector_add", described)
    assert result.status is Status.PASS, failure_text(result)


@pytest.mark.parametrize("causal", [False, True])
def test_the_attention_references_path_for_gpus_before_hopper_compiles_for_sm_80(causal):
    """GPUs before Hopper have no tensor-memory accelerator: there the Triton attention
    reference loads K and V by pointers at D = 128 too. Graded on a CPU, it takes its
    descriptor path at D = 128 (the interpreter checks that one), so the pointer path at that
    head size is compiled for sm_80 here, with the launch an A100 would make."""
    import importlib.util
    import sys

    import torch

    from grader.languages.triton import frontend

    path = ROOT / "solutions/triton/stage5_flash_attention.py"
    spec = importlib.util.spec_from_file_location("attention_reference_sm80", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    x = torch.zeros(1, 1, 200, 128, dtype=torch.bfloat16)
    strides = {f"stride_{t}{d}": s for t in "qkvo" for d, s in zip("bhnd", x.stride())}
    bound = dict(q_ptr=x, k_ptr=x, v_ptr=x, o_ptr=x, H=1, N_CTX=200, qk_scale=0.1, **strides,
                 HEAD_DIM=128, BLOCK_M=64, BLOCK_N=64, IS_CAUSAL=causal, KV_DESCRIPTORS=False)
    assert frontend.front_end_check("flash_attention_kernel", module.flash_attention_kernel.fn, bound,
                          path) is None


def test_a_triton_kernel_defined_inside_a_function_is_named(grade_source):
    """The compile check finds a kernel by its name in the module: one made inside a
    function cannot be checked, and the message says how to write it instead."""
    tiny = '''
import torch
import triton
import triton.language as tl


def vector_add(x, y):
    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
                 + tl.load(y_ptr + offsets, mask=mask), mask=mask)

    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
'''
    result = grade_source("vector_add", tiny)
    assert result.status is Status.FAIL
    assert "not bound to a top-level name of the file" in failure_text(result)
    assert "define each kernel with @triton.jit at the top level" in failure_text(result)


def test_a_cutile_kernel_body_that_calls_pytorch_fails_on_the_simulator(grade_source):
    source = reference("cutile", "stage1_vector_add.py")
    marker = "    ct.store("
    assert source.count(marker) == 1
    source = source.replace(marker, "    torch.matmul(x, y)\n" + marker)
    result = grade_source("vector_add", source, backend="cutile-sim")
    assert result.status is Status.FAIL and result.cases_passed == 0
    text = failure_text(result)
    assert "its kernels are refused before they run" in text
    line = source.splitlines().index("    torch.matmul(x, y)") + 1
    assert f"line {line} of vector_add_submission.py: `torch` cannot be used in a kernel" in text


def test_host_attention_next_to_a_kernel_that_reads_its_block_id_fails(grade_source):
    source = '''
import cuda.tile as ct
import torch
import torch.nn.functional as F


@ct.kernel
def cover_kernel(out):
    ct.bid(0)


def flash_attention(q, k, v, causal=False, sm_scale=None):
    out = torch.empty_like(q)
    ct.launch(torch.cuda.current_stream(), (1,), cover_kernel, (out,))
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)
'''
    result = grade_source("flash_attention", source, backend="cutile-sim")
    assert result.status is Status.FAIL and result.cases_passed == 0
    assert all("scaled_dot_product_attention on the host" in said_by_its_process(c)
               for c in result.cases)


# --- what the real tools accept passes ----------------------------------------------------


SAMPLE_STYLE = '''
"""Row softmax written the way NVIDIA's cuTile samples write kernels: numpy dtypes, `launch`
imported by name, a 2-D gather and scatter with bounds checks, Python's max on tiles."""
import numpy as np
import torch
from cuda import tile as ct
from cuda.tile import launch as run_kernel

ConstInt = ct.Constant[int]


@ct.kernel
def row_softmax(x, out, TILE: ConstInt):
    row = ct.bid(0)
    cols = ct.arange(TILE, dtype=np.int32)[None, :]
    tile = ct.gather(x, (row, cols), padding_value=-np.inf, check_bounds=True)
    tile = tile.astype(np.float32)
    top = max(ct.max(tile, axis=1, keepdims=True), ct.full((1, 1), -1e30, dtype=np.float32))
    e = ct.exp(tile - top)
    y = ct.truediv(e, ct.sum(e, axis=1, keepdims=True))
    ct.scatter(out, (row, cols), y.astype(out.dtype), check_bounds=True)


def softmax(x):
    rows, n = x.shape
    out = torch.empty_like(x)
    tile = 1 << max(n - 1, 0).bit_length()
    run_kernel(torch.cuda.current_stream(), (rows,), row_softmax, (x, out, tile))
    return out
'''


def test_a_kernel_in_the_style_of_nvidias_samples_passes_on_the_simulator(grade_source):
    result = grade_source("softmax", SAMPLE_STYLE, backend="cutile-sim")
    assert result.status is Status.PASS, failure_text(result)
    assert not [c for c in result.checks if not c.graded], result.checks  # it was compiled too


def test_a_front_end_the_grader_cannot_call_leaves_the_case_not_graded(course, interpret):
    """An older Triton (or cuda-tile) whose front end takes other arguments: the compile check
    cannot be made, so the replay does not run the kernel (its body could be host code only
    an interpreter runs) and the case is not graded, whatever its output."""
    from scripted import ScriptedChild, correct

    from grader.judge.stage import StageCheck
    from grader.results import Failure

    def unchecked(*args):
        outcome = correct(*args)
        outcome.unchecked = "this Triton's front end takes other arguments"
        return outcome

    stage = course.select("vector_add")
    check = StageCheck(stage, interpret, ScriptedChild([unchecked]))
    verdict = check.judge(stage.cases[0])
    assert not verdict.passed and verdict.kind is Failure.NOT_GRADED
    assert "could not be checked" in verdict.summary
    assert check.unchecked == "this Triton's front end takes other arguments"
