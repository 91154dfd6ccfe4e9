"""The mma.sync family of the fast engine (table: MMA): the tensor-core forms whose operands the lookup tables
decode (f16, bf16, the 8-bit floats) and whose C is the first accumulator (every form but sm_90's fp8), through
the same arithmetic as ``ops.mma`` (``numerics.gemm_fast``: the tile is ``_tile_n8``); compiled apart from the
loops as one C-callable function (``entry``, ``ccall.SIG``; ``families.py``), which finds the translation's mma
tables through the ctx (``ccall.K_M*``). The other forms (tf32, sm_90's fp8) are the ``mma_ext`` family
(``mmaext.py``, table: MMA_X): a kernel compiles only the code of the forms it has.

The body reads the registers straight into the tile's operands and writes D straight back (one loop over A, B
and C, one over A and B for the decode: a single copy of each for numba to compile)."""
import numpy as np
from numba import njit

from . import table as T
from . import ccall as C
from ...numerics.fast import NUM
from ...numerics.gemm_fast import _tile_n8

IDX = T.INDEX_MASK
LANES = 32


@njit(cache=True, inline="always")
def _lut(kind, i, l1, l256, l64k):
    if kind == 0:
        return l1[i]
    if kind == 1:
        return l256[i]
    return l64k[i]


def entry(em, prow, pimm, parena, n, pscratch):
    """The family's C-callable body (ccall.SIG): 1 when an operand or the result needs the reference (an inf or
    NaN, an accumulator overflow; nothing written)."""
    a32 = C.reinterpret(C.u8_1d(parena, n), np.uint32)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    nk = ctx[C.K_MREGS_N]
    row = C.i64_1d(prow, T.NFIELDS)
    k = row[T.X]
    regs = C.i64_2d(ctx[C.K_MREGS], nk, 16)[k]
    maps = C.i64_2d(ctx[C.K_MMAPS], nk, ctx[C.K_MMAPS_W])[k]
    prm = C.i64_2d(ctx[C.K_MPRM], nk, ctx[C.K_MPRM_W])[k]
    li = C.i64_2d(ctx[C.K_MLUTIDX], nk, 4)[k]
    l1 = C.i64_3d(ctx[C.K_L1], ctx[C.K_L1_N], 1, 4)
    l256 = C.i64_3d(ctx[C.K_L256], ctx[C.K_L256_N], 256, 4)
    l64k = C.i64_3d(ctx[C.K_L64K], ctx[C.K_L64K_N], 65536, 4)
    u64 = C.u64_1d(ctx[C.K_MU64], ctx[C.K_MU64_N])
    i64 = C.i64_1d(ctx[C.K_MI64], ctx[C.K_MI64_N])
    redo = C.reinterpret(C.u8_1d(ctx[C.K_MFLAGS], ctx[C.K_MFLAGS_N]), np.bool_)
    M, N, K = prm[0], prm[1], prm[2]
    mk, kn, mn = M * K, K * N, M * N
    # A, B, C from the registers into u64 (A: m*K + k, then B: k*N + n, then C: m*N + n), as fast._gather
    for g in range(3):
        epr, w, j = prm[7 + g], prm[11 + g], prm[20 + g]
        base = 0 if g == 0 else (mk if g == 1 else mk + kn)
        mask = (np.uint64(1) << np.uint64(w)) - np.uint64(1)
        for r in range(row[T.V0 + 1 + g]):
            e0 = regs[4 + 4 * g + r] & IDX
            for lane in range(LANES):
                word = np.uint64(a32[e0 + lane])
                for e in range(epr):
                    u64[base + maps[j]] = (word >> np.uint64(e * w)) & mask
                    j += 1
    # A and B decoded through their tables into i64 (S, q, t of A, then of B); an inf or NaN: the reference
    for g in range(2):
        cnt = mk if g == 0 else kn
        src = 0 if g == 0 else mk
        dst = 0 if g == 0 else 3 * mk
        lut = _lut(li[2 * g], li[2 * g + 1], l1, l256, l64k)
        for x in range(cnt):
            c = np.int64(u64[src + x])
            if lut[c, 3] != NUM:
                return 1
            i64[dst + x] = lut[c, 0]
            i64[dst + cnt + x] = lut[c, 1]
            i64[dst + 2 * cnt + x] = lut[c, 2]
    for x in range(mn):
        redo[x] = False
    o = 3 * mk
    out = u64[mk + kn + mn:mk + kn + 2 * mn]
    _tile_n8(M, N, K, i64[0:mk], i64[mk:2 * mk], i64[2 * mk:o], i64[o:o + kn], i64[o + kn:o + 2 * kn],
             i64[o + 2 * kn:o + 3 * kn], u64[mk + kn:mk + kn + mn], prm[5], prm[6], prm[15], prm[16], prm[17],
             prm[18], out, redo[0:mn])
    for x in range(mn):
        if redo[x]:
            return 1                    # an accumulator overflowed: the reference's exact chain
    epr, w, j = prm[10], prm[14], prm[23]
    for r in range(row[T.V0]):
        e0 = regs[r]
        for lane in range(LANES):
            word = np.uint64(0)
            for e in range(epr):
                word |= out[maps[j]] << np.uint64(e * w)
                j += 1
            if e0 >= 0:
                a32[(e0 & IDX) + lane] = np.uint32(word)
    return 0
