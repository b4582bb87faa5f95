"""The Triton track's record: how the grader names, words and finds the Triton language
(declared as the `triton` entry point of `tilecourse.tracks` in pyproject.toml)."""

import re

from grader.tracks.record import Parts, Track, Words

TRITON = Track(
    name="triton", title="Triton", module="triton",
    imports=re.compile(r"^\s*(import|from)\s+triton\b", re.M),
    decorator="@triton.jit",
    words=Words("program", "programs", "offsets", "tl.program_id",
                # said where no lane of the line was switched off: with no mask, or one that
                # switches nothing off here (a mask the watch cannot tell from none)
                "no lane of this load was switched off: it needs a mask (and `other=`) that "
                "keeps every lane inside the tensor",
                "no lane of this store was switched off: it needs a mask that keeps every lane "
                "inside the tensor", "store mask"),
    nan_fix=("give that `tl.load` a `mask=` and `other=` a value that changes nothing (0 for a "
             "sum, -inf for a max)"),
    extra=None, gpu_backend="triton", cpu_backend="triton-interpret",
    parts=Parts.named_in("grader.languages.triton"),
    gpu_summary="Triton kernels compiled for the GPU",
    cpu_summary="Triton's interpreter: kernels run on the CPU, one program instance at a time",
    cpu_runner="Triton's interpreter",
    preload=("triton",),
    # Triton reads it itself: a kernel decorated with it set is interpreted, whatever the
    # grader would choose.
    forced_by=("TRITON_INTERPRET", "1"),
    auto_rank=1,  # the fallback: its interpreter runs wherever PyTorch does
)
