"""The ``mma_ext`` family of the fast engine (table: MMA_X): the mma.sync forms ``mmax.py`` leaves, those whose
operands are decoded arithmetically (tf32: no lookup table) and sm_90's fp8 forms (the HMMA steps start from +0,
C is added last), through the same arithmetic as ``ops.mma`` (``numerics.gemm_fast.tc_one_noalloc``, every form);
compiled apart from the loops as one C-callable function (``entry``, ``ccall.SIG``; ``families.py``), and only for
kernels with such an mma, so that an f16 or bf16 matmul does not compile the arithmetic decode and the fp8 add."""
import numpy as np

from . import table as T
from . import ccall as C
from ...numerics.gemm_fast import tc_one_noalloc
from .mmax import _lut

IDX = T.INDEX_MASK
LANES = 32


# compiled by families.py (cfunc with ccall.SIG, cache=True) when a kernel first has such an mma, under the lock
def entry(em, prow, pimm, parena, n, pscratch):
    """The family's C-callable body (ccall.SIG): 1 when an operand or the result needs the reference (an inf or
    NaN, an accumulator overflow; nothing written)."""
    a8 = C.u8_1d(parena, n)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * LANES, C.NCTX)
    nk = ctx[C.K_MREGS_N]
    mregs = C.i64_2d(ctx[C.K_MREGS], nk, 16)
    mmaps = C.i64_2d(ctx[C.K_MMAPS], nk, ctx[C.K_MMAPS_W])
    mprm = C.i64_2d(ctx[C.K_MPRM], nk, ctx[C.K_MPRM_W])
    l1 = C.i64_3d(ctx[C.K_L1], ctx[C.K_L1_N], 1, 4)
    l256 = C.i64_3d(ctx[C.K_L256], ctx[C.K_L256_N], 256, 4)
    l64k = C.i64_3d(ctx[C.K_L64K], ctx[C.K_L64K_N], 65536, 4)
    mlutidx = C.i64_2d(ctx[C.K_MLUTIDX], nk, 4)
    mbuf = C.u32_2d(ctx[C.K_MBUF], 16, LANES)
    mu64 = C.u64_1d(ctx[C.K_MU64], ctx[C.K_MU64_N])
    mi64 = C.i64_1d(ctx[C.K_MI64], ctx[C.K_MI64_N])
    mflags = C.reinterpret(C.u8_1d(ctx[C.K_MFLAGS], ctx[C.K_MFLAGS_N]), np.bool_)
    a32 = C.reinterpret(a8, np.uint32)
    row = C.i64_1d(prow, T.NFIELDS)
    # mma.sync through the same arithmetic as ``ops.mma`` (numerics.gemm_fast), in the entry itself (a call level
    # less for numba to compile)
    k = row[T.X]
    nd, na, nb, nc = row[T.V0], row[T.V0 + 1], row[T.V0 + 2], row[T.V0 + 3]
    regs = mregs[k]
    a = mbuf[0:na].reshape((1, na, LANES))
    b = mbuf[4:4 + nb].reshape((1, nb, LANES))
    c = mbuf[8:8 + nc].reshape((1, nc, LANES))
    d = mbuf[12:12 + nd].reshape((1, nd, LANES))
    for i in range(na):
        e = regs[4 + i] & IDX
        for lane in range(LANES):
            a[0, i, lane] = a32[e + lane]
    for i in range(nb):
        e = regs[8 + i] & IDX
        for lane in range(LANES):
            b[0, i, lane] = a32[e + lane]
    for i in range(nc):
        e = regs[12 + i] & IDX
        for lane in range(LANES):
            c[0, i, lane] = a32[e + lane]
    li = mlutidx[k]
    if not tc_one_noalloc(a, b, c, d, mmaps[k], mprm[k], _lut(li[0], li[1], l1, l256, l64k),
                          _lut(li[2], li[3], l1, l256, l64k), mu64, mi64, mflags):
        return 1
    for i in range(nd):
        if regs[i] >= 0:
            e = regs[i] & IDX
            for lane in range(LANES):
                a32[e + lane] = d[0, i, lane]
    return 0
