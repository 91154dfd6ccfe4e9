"""Whole tiles through one ``wgmma.mma_async`` (the ``emulator.wgmma`` API) and GEMMs built from it.

``wgmma(instr, A, B, C)`` lays A and B out in shared memory in a canonical layout (K-major or MN-major,
swizzle none/32/64/128 bytes), builds their matrix descriptors, and runs a one-warpgroup kernel (128 threads)
through ``load_ptx``: the kernel copies the image into shared memory, loads C (and A, for ``a="registers"``)
into the fragment registers, fences, issues the instruction, commits, waits and stores D.  That is the same
path as any kernel's ``wgmma.mma_async``.
"""
from __future__ import annotations

import numpy as np

from isa.wgmma import VARIANTS
from .errors import OperandError, fail
from .numerics import wgmma as num
from .ops.wgmma import desc as D
from .ops.wgmma.op import canonical_spelling, get_wgmma
from .tile_bits import _elem_bits_of, _from_bits, as_tile

def _layout_into(img, tile_mn_k, elem_bits, mn_major, swizzle, start):
    """Write an (MN, K) tile of raw element bits into ``img`` at its canonical layout; its descriptor."""
    mn, k = tile_mn_k.shape
    kbytes = k * elem_bits // 8
    desc = D.canonical_descriptor(start, mn, mn_major, swizzle, max(1, elem_bits // 8), kbytes)
    d = D.Descriptor.decode(desc)
    addr = D.element_addresses(d, mn, k, elem_bits, mn_major)
    if elem_bits >= 8:
        for j in range(elem_bits // 8):
            img[addr + j] = ((tile_mn_k >> np.uint64(8 * j)) & np.uint64(0xFF)).astype(np.uint8)
    else:
        sub = ((np.arange(k) % (8 // elem_bits)) * elem_bits).astype(np.uint64)
        np.bitwise_or.at(img, addr.reshape(-1), ((tile_mn_k & np.uint64(1)) << sub).astype(np.uint8).reshape(-1))
    return desc, int(addr.max()) + max(1, elem_bits // 8)


def _kernel(spelling, v, ss, nbytes, imms):
    nd = v.n_d
    dt = "f32" if v.dtype == "f32" else "b32"
    aop = "%rd10" if ss else "{%a0, %a1, %a2, %a3}"
    L = [".version 8.5", ".target sm_90a", ".address_size 64", ".extern .shared .align 1024 .b8 smem[];",
         ".visible .entry wgmma_tile(.param .u64 p_img, .param .u64 p_da, .param .u64 p_db, .param .u64 p_a, "
         ".param .u64 p_c, .param .u64 p_d, .param .u32 p_sd)", "{",
         ".reg .pred %p<3>;", ".reg .b32 %r<16>;", ".reg .b64 %rd<20>;", f".reg .{dt} %d<{nd}>;", ".reg .b32 %a<4>;",
         "ld.param.u64 %rd1, [p_img];", "ld.param.u64 %rd10, [p_da];", "ld.param.u64 %rd11, [p_db];",
         "ld.param.u64 %rd3, [p_a];", "ld.param.u64 %rd4, [p_c];", "ld.param.u64 %rd5, [p_d];",
         "ld.param.u32 %r9, [p_sd];", "setp.ne.u32 %p2, %r9, 0;",
         "mov.u32 %r1, %tid.x;", "mov.u32 %r4, smem;", "mov.u32 %r5, 0;",
         "COPY:", "shl.b32 %r6, %r5, 7;", "add.s32 %r6, %r6, %r1;", "shl.b32 %r6, %r6, 4;",
         "cvt.u64.u32 %rd6, %r6;", "add.s64 %rd7, %rd1, %rd6;", "ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd7];",
         "add.s32 %r7, %r4, %r6;", "st.shared.v4.u32 [%r7], {%r10, %r11, %r12, %r13};", "add.s32 %r5, %r5, 1;",
         f"setp.lt.u32 %p1, %r5, {nbytes // 2048};", "@%p1 bra COPY;",
         "fence.proxy.async.shared::cta;", "bar.sync 0;",
         f"mul.wide.u32 %rd8, %r1, {4 * v.n_a};", "add.s64 %rd8, %rd3, %rd8;",
         f"mul.wide.u32 %rd9, %r1, {4 * nd};", "add.s64 %rd12, %rd4, %rd9;", "add.s64 %rd13, %rd5, %rd9;"]
    if not ss:
        L += [f"ld.global.u32 %a{r}, [%rd8+{4 * r}];" for r in range(4)]
    L += [f"ld.global.{dt} %d{i}, [%rd12+{4 * i}];" for i in range(nd)]
    L += ["wgmma.fence.sync.aligned;",
          f"{spelling} {{{', '.join(f'%d{i}' for i in range(nd))}}}, {aop}, %rd11, %p2{''.join(', ' + str(x) for x in imms)};",
          "wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;"]
    L += [f"st.global.{dt} [%rd13+{4 * i}], %d{i};" for i in range(nd)]
    L += ["ret;", "}"]
    return "\n".join(L)


def _bits(x, t, what, spelling, shape):
    if t == "b1":
        x = as_tile(x, what, spelling)
        if x.dtype.kind not in "biu" or (x.size and (x.min() < 0 or x.max() > 1)):
            fail(OperandError, spelling, f"{what} of .b1 must hold 0/1 values")
        bits = x.astype(np.uint64)
    else:
        bits = _elem_bits_of(x, t, what, spelling)
    if bits.shape != shape:
        fail(OperandError, spelling, f"{what} must be {shape[0]}x{shape[1]}, got shape {bits.shape}")
    return bits


def wgmma(instr: str, A, B, C, *, a: str = "smem", swizzle: int = 128, trans_a: int = 0, trans_b: int = 0,
          scale_d: bool = True, scale_a: int = 1, scale_b: int = 1):
    """One ``wgmma.mma_async`` on whole tiles: A (64, K), B (K, N), C (64, N) -> D (64, N).

    ``a`` is ``"smem"`` (A through a descriptor) or ``"registers"`` (A fragments in registers).  A and B
    are stored in the canonical layout of ``swizzle`` bytes (0, 32, 64, 128), K-major unless ``trans_a`` /
    ``trans_b`` (MN-major; .f16/.bf16 only).  Element types as for ``mma`` (.b1: arrays of 0/1)."""
    from .machine.module import load_ptx
    from .memory import GlobalMemory
    sp = canonical_spelling(instr) or instr
    op = get_wgmma(instr)
    v = op.variant
    ss = a == "smem"
    if a not in ("smem", "registers"):
        fail(OperandError, instr, f"a must be 'smem' or 'registers', not {a!r}")
    if (trans_a or trans_b) and not v.can_transpose:
        fail(OperandError, instr, "imm-trans-a/b exist only for .f16/.bf16")
    if trans_a and not ss:
        fail(OperandError, instr, "A from registers has no imm-trans-a")
    abits = _bits(A, v.atype, "A", sp, (64, v.k))
    bbits = _bits(B, v.btype, "B", sp, (v.k, v.n))
    cbits = _bits(C, v.dtype, "C", sp, (64, v.n))
    img = np.zeros(64 * 1024, np.uint8)
    wa, wb = v.elem_bits("A"), v.elem_bits("B")
    da, end = _layout_into(img, abits, wa, bool(trans_a), swizzle, 0) if ss else (0, 0)
    start_b = -(-end // 1024) * 1024
    db, end = _layout_into(img, np.ascontiguousarray(bbits.T), wb, bool(trans_b), swizzle, start_b)
    nbytes = -(-end // 2048) * 2048
    img = img[:nbytes]
    imms = []
    if v.is_float:
        imms = [scale_a, scale_b] + ([trans_a] if ss and v.can_transpose else []) + \
            ([trans_b] if v.can_transpose else [])
    # fragments: thread t's registers
    a_regs = np.zeros((128, 4), np.uint32)
    c_regs = np.zeros((128, v.n_d), np.uint32)
    for w in range(4):
        rows = slice(16 * w, 16 * w + 16)
        c_regs[32 * w:32 * w + 32] = op.d_regs(cbits[rows]).T
        if not ss:
            a_regs[32 * w:32 * w + 32] = op._pack(abits[rows], op.a_idx, op.wa).T
    g = GlobalMemory()
    pi, pa, pc = g.upload(img), g.upload(a_regs), g.upload(c_regs)
    pd = g.upload(np.zeros_like(c_regs))
    mod = load_ptx(_kernel(v.spelling, v, ss, nbytes, imms))
    mod.launch("wgmma_tile", grid=(1, 1, 1), block=(128, 1, 1),
               args=[pi, da, db, pa, pc, pd, int(bool(scale_d))], gmem=g, shared_bytes=nbytes)
    d_regs = g.download(pd, c_regs.nbytes).view(np.uint32).reshape(128, v.n_d)
    out = np.zeros((64, v.n), np.uint64)
    for w in range(4):
        out[16 * w:16 * w + 16] = op.c_tile(d_regs[32 * w:32 * w + 32].T.copy())
    return _from_bits(out, v.dtype) if v.dtype != "s32" else out.astype(np.uint32).view(np.int32)


def wgmma_gemm(A, B, C, instr: str, scale_a: int = 1, scale_b: int = 1):
    """D = A @ B + C from ``instr``: for every 64 x N output tile the K steps run in ascending order, the D of
    one step the C of the next: bit-identical to a chain of wgmma.mma_async on one accumulator."""
    op = get_wgmma(instr)
    v = op.variant
    a, b, c = (np.asarray(x) for x in (A, B, C))
    if a.ndim != 2 or b.ndim != 2 or c.ndim != 2 or a.shape[1] != b.shape[0] or c.shape != (a.shape[0], b.shape[1]):
        fail(OperandError, instr, f"gemm needs A (M, K), B (K, N), C (M, N); got {a.shape}, {b.shape}, {c.shape}")
    M, K = a.shape
    N = b.shape[1]
    if M % 64 or N % v.n or K % v.k:
        fail(OperandError, instr, f"M, N, K = {M}, {N}, {K} must be multiples of the instruction tile 64x{v.n}x{v.k}")
    ab = _bits(a, v.atype, "A", instr, (M, K))
    bb = _bits(b, v.btype, "B", instr, (K, N))
    d = _bits(c, v.dtype, "C", instr, (M, N))
    if v.is_float:
        ab = num.negate(ab, v.atype, scale_a)
        bb = num.negate(bb, v.btype, scale_b)
    for k0 in range(0, K, v.k):
        d = num.wgmma_tile(v.atype, v.btype, v.dtype, ab[:, k0:k0 + v.k], bb[k0:k0 + v.k], d, v.satfinite)
    return _from_bits(d, v.dtype) if v.dtype != "s32" else d.astype(np.uint32).view(np.int32)


__all__ = ["wgmma", "wgmma_gemm", "VARIANTS"]
