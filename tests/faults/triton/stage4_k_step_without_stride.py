"""Steps B's pointers along K by BLOCK_K elements, not BLOCK_K rows (stride_bk forgotten).

expect: FAIL
message: 32 elements on in memory instead of 32 rows of B
passes: layout=transposed
cause: k_loop
"""

import os

import torch
import triton
import triton.language as tl

__all__ = ["matmul"]


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    # >>> tuned: the program order's own parameters, if it has any
    GROUP_M: tl.constexpr,
    # --- plain
    # <<<
):
    pid = tl.program_id(axis=0)
    # >>> tuned: the order in which programs take the tiles of C (see "Making it fast")
    # Grouped ordering: GROUP_M tile rows per group, column by column inside a group, so
    # that programs running together reuse the same A and B tiles from L2.
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    programs_per_group = GROUP_M * tiles_n
    group = pid // programs_per_group
    first_m = group * GROUP_M
    group_rows = tl.minimum(tiles_m - first_m, GROUP_M)  # the last group may be short
    local = pid - group * programs_per_group
    pid_m = first_m + local % group_rows
    pid_n = local // group_rows
    # --- plain
    # tiles_n = tl.cdiv(N, BLOCK_N)
    # pid_m = pid // tiles_n  # row by row
    # pid_n = pid % tiles_n
    # <<<

    # Step 1: Compute the row offsets (in M), column offsets (in N) and K offsets of
    #   the first step, and the pointer tiles of A [BLOCK_M, BLOCK_K] and
    #   B [BLOCK_K, BLOCK_N], using the strides.
    #   Hint: tl.arange, broadcasting with [:, None] and [None, :].
    # >>> solution
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    # --- exercise
    # offs_m = ...
    # offs_n = ...
    # offs_k = ...
    # a_ptrs = ...
    # b_ptrs = ...
    # <<<

    # The running sum of this C tile stays in fp32 whatever the input dtype.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        # Step 2: Load the current A and B tiles. Mask rows past M, columns past N
        #   and K lanes past K; masked lanes read 0.0 so they add nothing.
        #   Hint: tl.load(ptrs, mask=..., other=0.0), compare offs_k against K - k0.
        # >>> solution
        k_mask = offs_k < K - k0
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_mask[:, None] & (offs_n[None, :] < N), other=0.0)
        # --- exercise
        # a = ...
        # b = ...
        # <<<

        # Step 3: Multiply the tiles and add into acc (fp32 accumulation; fp32
        #   inputs run as tf32), then move both pointer tiles BLOCK_K along K.
        #   Hint: tl.dot with acc as its accumulator argument and input_precision="tf32";
        #   stride_ak, stride_bk.
        # >>> solution
        acc = tl.dot(a, b, acc, input_precision="tf32")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K
        # --- exercise
        # acc = ...
        # ...  # advance a_ptrs and b_ptrs to the next tile along K
        # <<<

    # Step 4: Cast the finished tile to C's dtype and store it, masked to the
    #   rows < M and columns < N.
    #   Hint: c_ptr.dtype.element_ty, tl.store(..., mask=...).
    # >>> solution
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
    # --- exercise
    # c_ptrs = ...
    # ...  # store the accumulator into c, in c's dtype, masked
    # <<<


# >>> tuned: a persistent kernel through tensor descriptors, for Hopper and later
@triton.jit
def matmul_tma_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, PROGRAMS: tl.constexpr,
):
    # Tensor descriptors hand whole tiles to the TMA unit, which copies them into shared
    # memory and masks the edges of the matrix itself: no pointer tiles, no masks. They
    # need contiguous rows whose byte strides are multiples of 16 (the wrapper checks).
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1],
                                       block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1],
                                       block_shape=[BLOCK_M, BLOCK_N])
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    per_group = GROUP_M * tiles_n
    # Persistent: PROGRAMS programs (one per SM) walk the tiles of C in the grouped order,
    # tile, tile + PROGRAMS, ... flatten=True lets Triton pipeline the K loop of one tile
    # into the next, so the loads of a tile's first steps overlap the last one's stores.
    for tile in tl.range(tl.program_id(axis=0), tiles_m * tiles_n, PROGRAMS, flatten=True):
        group = tile // per_group
        first_m = group * GROUP_M
        group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
        local = tile - group * per_group
        pid_m = first_m + local % group_rows
        pid_n = local // group_rows
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))
# --- plain
# <<<


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Return a @ b for a [M, K] and b [K, N] (fp16, bf16 or fp32)."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    # >>> tuned: tile shape, warps and pipeline depth (see "Making it fast")
    # fp16/bf16 on a GPU with enough shared memory per block for 4 stages of 128 x 256 tiles
    # 64 deep (4 * 48 KiB of A and B tiles): each loaded byte feeds more tensor-core work.
    # Elsewhere (fp32, smaller GPUs, the interpreter) 128 x 128 x 32 tiles with 3 stages
    # fit everywhere.
    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages = 128, 128, 32, 8, 3
    if a.is_cuda and a.element_size() == 2:
        props = torch.cuda.get_device_properties(a.device)
        optin = props.shared_memory_per_block_optin if hasattr(
            props, "shared_memory_per_block_optin") else 0  # older torch does not report it
        if optin >= 4 * (128 * 64 + 64 * 256) * 2:
            BLOCK_M, BLOCK_N, BLOCK_K, num_stages = 128, 256, 64, 4
    options = dict(GROUP_M=GROUP_M, num_warps=8, num_stages=num_stages)
    # --- plain
    # BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
    # options = {}  # Triton's default warps and pipeline stages
    # <<<
    # Triton's CPU interpreter keeps bf16 values as raw 16-bit integers and cannot feed
    # them to tl.dot, so there A and B go in as fp32 copies (exact: every bf16 value is an
    # fp32 value) and C stays bf16. On a GPU, bf16 goes to tl.dot as is.
    interpreting = not a.is_cuda or os.environ.get("TRITON_INTERPRET", "0") == "1"
    if interpreting and a.dtype == torch.bfloat16:
        a, b = a.float(), b.float()
    # >>> tuned: on Hopper and later, the persistent kernel through tensor descriptors
    # fp16 / bf16 with rows the TMA unit can copy (contiguous, 16-byte aligned): one
    # program per SM, 128 x 256 x 64 tiles, 3 stages (3 * 48 KiB of A and B tiles, and
    # 64 KiB for C's tile on its way out). The interpreter runs it too (fp16 cases).
    hopper = not a.is_cuda or torch.cuda.get_device_capability(a.device) >= (9, 0)
    aligned = all(t.is_contiguous() and t.storage_offset() * t.element_size() % 16 == 0
                  and t.shape[1] * t.element_size() % 16 == 0 for t in (a, b, c))
    if hopper and aligned and a.element_size() == 2:
        if a.is_cuda:  # descriptors made inside a kernel live in global scratch memory
            triton.set_allocator(lambda size, alignment, stream: torch.empty(
                size, dtype=torch.int8, device=a.device))
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else 4
        programs = min(sms, triton.cdiv(M, 128) * triton.cdiv(N, 256))
        matmul_tma_kernel[(programs,)](
            a, b, c, M, N, K,
            BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, PROGRAMS=programs,
            num_warps=8, num_stages=3,
        )
        return c
    # --- plain
    # <<<
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, **options,
    )
    return c
