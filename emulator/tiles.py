"""Whole tiles and whole GEMMs through one tensor-core instruction (the ``mma`` / ``gemm`` API).

``mma(instr, A, B, C)`` packs the tiles into lane registers with the instruction's fragments, runs the
instruction on a :class:`~emulator.machine.warp.Warp` through ``Warp.run`` and unpacks D.  ``gemm`` builds
a whole GEMM from the instruction; it is bit-identical to issuing the instructions one by one.
"""
from __future__ import annotations

import numpy as np

from isa.fragments import pack, unpack
from .errors import OperandError, UnsupportedError, expect_str, fail
from .machine.warp import Warp
from .numerics import gemm_fast
from .ops.mma import get_mma
from .tile_bits import _elem_bits_of, _from_bits, as_tile  # noqa: F401


# ------------------------------------------------------------------------------------------------
# whole tiles
def _tiles_in(v, A, B, C):
    out = []
    for op, x, t in (("A", A, v.atype), ("B", B, v.btype), ("C", C, v.ctype)):
        bits = _elem_bits_of(x, t, op, v.spelling)
        if bits.shape[-2:] != v.tile_shape(op):
            fail(OperandError, v.spelling, f"{op} must be {v.tile_shape(op)[0]}x{v.tile_shape(op)[1]}, "
                                           f"got shape {bits.shape}")
        out.append(bits)
    return out


def _reg_names(v, op, base):
    t = {"A": v.atype, "B": v.btype, "C": v.ctype, "D": v.dtype}[op]
    prefix = "%fd" if t == "f64" else "%f" if t == "f32" else "%r"
    return [f"{prefix}{base + i}" for i in range(v.n_regs(op))]


def mma(instr: str, A, B, C, arch: str = "sm_90"):
    """One instruction on whole tiles: A (M, K), B (K, N), C (M, N) -> D (M, N) (docs/api.md).

    The tiles are packed into lane registers with the instruction's fragments, the instruction runs on a
    ``Warp`` through ``Warp.run`` and D is unpacked.  For the m8n8k4 ``.f16`` forms the four quad pairs'
    products are stacked: A (32, 4), B (4, 32), C/D (32, 8); an (8, 4), (4, 8), (8, 8) problem is run on
    every quad pair and one copy of D returned.  ``instr`` may also be a ``wmma.mma`` form (docs/wmma.md):
    the tiles go into its fragments (A: M x K, B: K x N, C/D: M x N)."""
    expect_str(instr, "mma: instr")
    expect_str(arch, "mma: arch")
    if instr.strip().startswith("wmma"):
        return _wmma_tiles(instr, A, B, C, arch)
    op = get_mma(instr, arch)
    v = op.variant
    single_quad = False
    if v.family == "m8n8k4_f16" and np.shape(A) == (8, 4):
        single_quad = True
        A = np.concatenate([A] * 4, axis=0)
        B = np.concatenate([B] * 4, axis=1)
        C = np.concatenate([C] * 4, axis=0)
    a, b, c = _tiles_in(v, A, B, C)
    regs = {"A": pack(v, "A", a), "B": pack(v, "B", b), "C": pack(v, "C", c)}
    names = {"D": _reg_names(v, "D", 0), "A": _reg_names(v, "A", 100), "B": _reg_names(v, "B", 200),
             "C": _reg_names(v, "C", 300)}
    w = Warp(arch=arch)
    for o in "ABC":
        for r, name in enumerate(names[o]):
            w.write(name, regs[o][r])
    w.run(f"{instr} {{{', '.join(names['D'])}}}, {{{', '.join(names['A'])}}}, "
          f"{{{', '.join(names['B'])}}}, {{{', '.join(names['C'])}}};")
    d = np.stack([np.asarray(w.read(name)) for name in names["D"]])
    D = _from_bits(unpack(v, "D", d), v.dtype)
    return D[:8] if single_quad else D


def _wmma_tiles(instr, A, B, C, arch):
    from isa.wmma import FragmentView
    from .ops.wmma import get_wmma
    op = get_wmma(instr.strip(), arch)
    v = FragmentView(op.form)
    a, b, c = _tiles_in(v, A, B, C)
    d = op.execute(pack(v, "A", a), pack(v, "B", b), pack(v, "C", c))
    return _from_bits(unpack(v, "D", d), v.dtype)


def mma_registers(instr: str, A, B, C, arch: str = "sm_90"):
    """Like ``mma`` but through ``MmaOp.execute`` directly (no Warp); the same bits."""
    op = get_mma(instr, arch)
    v = op.variant
    a, b, c = _tiles_in(v, A, B, C)
    d = op.execute(pack(v, "A", a), pack(v, "B", b), pack(v, "C", c))
    return _from_bits(unpack(v, "D", d), v.dtype)


# ------------------------------------------------------------------------------------------------
# whole GEMMs
def gemm(A, B, C, instr: str = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", arch: str = "sm_90"):
    """D = A @ B + C built from ``instr``: for every output tile the K steps run in ascending order and
    the D of one step is the C of the next; bit-identical to issuing the instructions one by one.
    ``instr`` may be a ``wgmma.mma_async`` spelling (64 x N x K tiles; A and B from shared memory)."""
    expect_str(instr, "gemm: instr")
    expect_str(arch, "gemm: arch")
    if instr.strip().startswith("wgmma"):
        from .wgmma_tiles import wgmma_gemm
        return wgmma_gemm(A, B, C, instr)
    op = get_mma(instr, arch)
    v = op.variant
    if v.family == "m8n8k4_f16":
        fail(UnsupportedError, instr, "gemm is not defined for the quad-pair m8n8k4 .f16 forms")
    a, b, c = (as_tile(x, n, instr) for x, n in ((A, "A"), (B, "B"), (C, "C")))
    if a.ndim != 2 or b.ndim != 2 or c.ndim != 2 or a.shape[1] != b.shape[0] or c.shape != (a.shape[0], b.shape[1]):
        fail(OperandError, instr, f"gemm needs A (M, K), B (K, N), C (M, N); got {a.shape}, {b.shape}, {c.shape}")
    Mt, Nt = v.tile_shape("D")
    Kt = v.tile_shape("A")[1]
    M, K = a.shape
    N = b.shape[1]
    if M % Mt or N % Nt or K % Kt:
        fail(OperandError, instr, f"M, N, K = {M}, {N}, {K} must be multiples of the instruction tile {Mt}x{Nt}x{Kt}")
    abits = _elem_bits_of(a, v.atype, "A", instr)
    bbits = _elem_bits_of(b, v.btype, "B", instr)
    cbits = _elem_bits_of(c, v.ctype, "C", instr)
    if v.family == "tc":
        d = gemm_fast.tc_gemm(abits, bbits, cbits, op)
    else:
        d = _gemm_by_instructions(op, abits, bbits, cbits)
    return _from_bits(d, v.dtype)


def _gemm_by_instructions(op, abits, bbits, cbits):
    """Generic path: every K step as one batch of register-level instructions."""
    v = op.variant
    Mt, Nt = v.tile_shape("D")
    Kt = v.tile_shape("A")[1]
    M, K = abits.shape
    N = bbits.shape[1]
    mi, ni = M // Mt, N // Nt
    # (mi, Mt, K) -> tiles per step
    at = abits.reshape(mi, Mt, K // Kt, Kt).transpose(2, 0, 1, 3)          # (ks, mi, Mt, Kt)
    bt = bbits.reshape(K // Kt, Kt, ni, Nt).transpose(0, 2, 1, 3)          # (ks, ni, Kt, Nt)
    ct = cbits.reshape(mi, Mt, ni, Nt).transpose(0, 2, 1, 3)               # (mi, ni, Mt, Nt)
    creg = pack(v, "C", ct).reshape(mi * ni, op.n_c, 32)
    for s in range(K // Kt):
        areg = pack(v, "A", at[s])                                          # (mi, n_a, 32)
        breg = pack(v, "B", bt[s])                                          # (ni, n_b, 32)
        aa = np.repeat(areg, ni, axis=0)
        bb = np.tile(breg, (mi, 1, 1))
        d = op.execute_batch(aa, bb, creg)
        if v.ctype == v.dtype:
            creg = d
        else:   # never for the forms gemm accepts (dtype == ctype), kept for clarity
            creg = pack(v, "C", unpack(v, "D", d))
    dt = unpack(v, "D", creg.reshape(mi, ni, op.n_d, 32))                   # (mi, ni, Mt, Nt)
    return dt.transpose(0, 2, 1, 3).reshape(M, N)
