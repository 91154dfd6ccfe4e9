"""The layout helpers of Gluon's Blackwell examples, computed and explained.

Gluon's example kernels (a persistent matmul and the attention forward pass built on ``tcgen05_mma``)
start with four small helpers that pick the tensor-core instruction shape, the shared-memory swizzle and the
register layout of the accumulator. Their numbers are not arbitrary; each docstring below says where they
come from. Hopper facts (wgmma) were measured on the H100 this project emulates; **Blackwell facts
(tcgen05, tensor memory) are modelled from the published PTX semantics and Triton's own layouts, not
measured**: no Blackwell GPU was available.
"""
from .layouts import BlockedLayout, DistributedLinearLayout, NVMMASharedLayout
from .linear import GluonLayoutError, fail
from .tmem import TensorMemoryLayout

BITS = {"fp8": 8, "float8e4nv": 8, "float8e5": 8, "int8": 8, "uint8": 8, "fp16": 16, "float16": 16,
        "bf16": 16, "bfloat16": 16, "fp32": 32, "float32": 32, "tf32": 32, "int32": 32, "fp64": 64,
        "float64": 64}


def bitwidth(element_ty):
    """Bits of an element type given as a number, a name ('fp16', 'bfloat16', ...) or an object with
    ``primitive_bitwidth`` (a Triton dtype)."""
    if isinstance(element_ty, int):
        return element_ty
    if hasattr(element_ty, "primitive_bitwidth"):
        return int(element_ty.primitive_bitwidth)
    name = str(element_ty).split(".")[-1]
    if name not in BITS:
        raise GluonLayoutError(f"element type {element_ty!r}: unknown; give the bit width or one of "
                               f"{', '.join(BITS)}")
    return BITS[name]


def get_mma_instr_shape(shape, element_ty):
    """(M, N, K) of the single tensor-core instruction that computes a ``shape`` = (rows, cols) accumulator.

    * **M = 128 if rows >= 128 else 64.** Blackwell's ``tcgen05.mma`` (one CTA) computes an M x N tile with
      M = 64 or M = 128: its accumulator lives in tensor memory, which has 128 lanes, one row per lane, so
      128 rows is the full instruction and 64 the half one. (Hopper's ``wgmma`` is always m64: four warps of
      16 rows each.)
    * **N = 256 if cols >= 256 else cols.** Both ``wgmma`` (``m64nNk*``, N = 8..256 in steps of 8) and
      ``tcgen05.mma`` (N up to 256) stop at N = 256: a wider tile takes several instructions.
    * **K = 256 // bits.** One instruction consumes 32 bytes of K per row of A and of B: k16 for 16-bit
      types, k32 for 8-bit, k8 for tf32 (PTX's ``m64nNk16`` f16/bf16, ``k32`` e4m3/e5m2/s8, ``k8`` tf32).
      256 bits = 32 bytes = two 16-byte chunks per row: the unit the shared-memory swizzles are built from.

    The M rule is tcgen05's (modelled, not measured). On Hopper use M = 64 per warpgroup.
    """
    if len(shape) != 2:
        raise GluonLayoutError(f"get_mma_instr_shape: shape {list(shape)} is not 2-D")
    m = 128 if shape[0] >= 128 else 64
    n = 256 if shape[1] >= 256 else int(shape[1])
    k = 256 // bitwidth(element_ty)
    return (m, n, k)


def get_nvmma_layout(shape, element_ty, order=(1, 0), fp4_padded=False):
    """The NVMMA shared layout for a tile of ``shape`` whose dimension ``order[0]`` is contiguous.

    The swizzle width follows from the **contiguous bytes of one row** of the tile, ``c = shape[order[0]] *
    bits / 8``: the widest of 128, 64, 32 that divides ``c`` (and is <= ``c``), else 0 (no swizzle). A
    W-byte swizzle XORs the 16-byte chunk index of each W-byte row with its row number (mod W / 16), so that
    8 consecutive rows (the 8 rows of a core matrix that one wgmma/tcgen05/ldmatrix phase reads) hit 8
    different 16-byte bank groups: wider is better (128 B = all 32 banks), but it needs a whole W-byte row
    of data. Fewer than 8 rows along the other dimensions: no swizzle (nothing to spread).
    ``transposed`` is set when dimension 0 is the contiguous one (``order[0] == 0``).
    """
    bits = bitwidth(element_ty)
    if fp4_padded:
        raise GluonLayoutError("get_nvmma_layout: fp4_padded layouts are not modelled")
    c = shape[order[0]] * bits // 8
    w = next((w for w in (128, 64, 32) if c >= w and c % w == 0), 0)
    outer = 1
    for d in order[1:]:
        outer *= shape[d]
    if len(shape) < 2 or outer < 8:
        w = 0
    return NVMMASharedLayout(swizzle_byte_width=w, element_bitwidth=bits, rank=len(shape),
                             transposed=order[0] == 0)


def get_tmem_32x32b_reg_layout(instr_shape, shape, num_warps):
    """The register layout (a BlockedLayout) in which ``tcgen05.ld.32x32b`` delivers an accumulator of
    ``shape`` made of ``instr_shape`` = (M, N, K) blocks, for 4 or 8 warps.  Modelled, not measured.

    The numbers: tensor memory has 128 lanes; warp ``w`` may only touch lanes ``32 * (w % 4)`` .. ``+31``;
    the 32x32b message gives thread ``i`` of the warp lane ``32 * (w % 4) + i`` (one row), one 32-bit column
    per register. So:

    * **M = 128:** thread ``t`` of the first 4 warps owns row ``t``: ``threads_per_warp = [32, 1]``,
      ``warps_per_cta = [4, .]``, each thread a whole row of columns: ``size_per_thread = [1, N]``. With 8
      warps, warps 4-7 reach the same lanes again, so they take half of the columns (``[1, N / 2]``,
      ``warps_per_cta = [4, 2]``), or, when the tile has a second 128-row block (rows > 128), that block
      (``warps_per_cta = [8, 1]``).
    * **M = 64:** a 64-row block uses TMEM lanes 0-15 of each warp's 32 (16 rows per warp), so lanes 16-31
      of each warp get the same 16 rows, second half of the columns: ``threads_per_warp = [16, 2]`` (the
      ``16x32bx2`` shape of ``tcgen05.ld``: two column halves of 16 lanes). With several 64-row blocks this
      helper keeps that split, whereas Triton 3.9's ``TensorMemoryLayout`` stores the next block in TMEM lanes
      16-31 (its own register layout is :func:`tmem_32x32b_reg_layout`); tests/test_gluon.py pins where the
      two differ.
    * ``order = [0, 1]``: consecutive threads walk rows (lanes), registers walk columns.
    """
    if len(shape) != 2:
        raise GluonLayoutError("get_tmem_32x32b_reg_layout: expected a 2-D shape")
    if num_warps not in (4, 8):
        raise GluonLayoutError(f"get_tmem_32x32b_reg_layout: num_warps must be 4 or 8 (one or two "
                               f"warpgroups), got {num_warps}")
    M, N = instr_shape[0], instr_shape[1]
    bm, bn = shape[0] // M, shape[1] // N
    groups = num_warps // 4
    if M == 64:
        tpw = [16, 2]
        if bm * bn == 1:
            spt, wpc = [1, -(-N // (2 * groups))], [4, groups]
        else:
            spt = [1, -(-N // 2)]
            w0 = 4 * min(bm, groups)
            wpc = [w0, -(-groups // (w0 // 4))]
    else:
        tpw = [32, 1]
        if shape[0] > 128:
            spt, wpc = [1, N], [4 * groups, 1]
        else:
            spt, wpc = [1, -(-N // groups)], [4, groups]
    return BlockedLayout(spt, tpw, wpc, [0, 1])


def get_mma_reg_layout(shape, num_warps, dtype="float32"):
    """``get_tmem_32x32b_reg_layout(get_mma_instr_shape(shape, dtype), shape, num_warps)``: the register
    layout of a ``shape`` accumulator (f32 by default) loaded from tensor memory. Modelled, not measured."""
    return get_tmem_32x32b_reg_layout(get_mma_instr_shape(shape, dtype), shape, num_warps)


def tmem_32x32b_reg_layout(tmem_layout, shape, num_warps):
    """The register layout ``tcgen05.ld.32x32b`` gives for a tensor-memory tensor, derived from its
    tensor-memory layout (Triton 3.9's ``get_reg_layout(num_warps, "32x32b")``): a thread's lane holds one
    TMEM lane (row bits 0-4), the warp's sub-partition the next two row bits, registers walk the columns.
    Lanes 16-31 that hold nothing (M = 64, one block) and a second warpgroup take the highest column bits.
    Modelled, not measured."""
    if not isinstance(tmem_layout, TensorMemoryLayout):
        fail("tmem_32x32b_reg_layout", f"expected a TensorMemoryLayout, got {tmem_layout!r}")
    if num_warps not in (4, 8):
        fail("tmem_32x32b_reg_layout", f"num_warps must be 4 or 8, got {num_warps}")
    t = tmem_layout.to_linear(shape)
    rows = [list(r) for r in t["row"]]
    cols = [list(c) for c in t["col"] if any(c)]
    warp = rows[5:7]
    if num_warps == 8:
        warp.append(cols.pop())
    lane = rows[:5]
    if not any(lane[4]):
        lane[4] = cols.pop()
    return DistributedLinearLayout(cols, lane, warp, [], list(shape))
