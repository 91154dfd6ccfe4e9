"""The ``mma_ext`` family of the fast engine (table: MMA_X): the mma.sync forms ``mmax.py`` leaves, tf32 and sm_90's
fp8 forms (the HMMA steps start from +0, C is added last), through the same code as ``mmax.py``
(``numerics.tc_row.run_regs``: the operands decoded arithmetically, the tile in binary64); compiled apart from the
loops as one C-callable function (``entry``, ``ccall.SIG``; ``families.py``), and only for kernels with such an
mma."""
import numpy as np

from . import table as T
from . import ccall as C
from ...numerics.tc_row import compute, store, stack_f64, stack_i64, add_c

IDX = T.INDEX_MASK


# compiled by families.py (cfunc with ccall.SIG, cache=True) when a kernel first has such an mma, under the lock
def entry(em, prow, pimm, parena, n, pscratch):
    """The family's C-callable body (ccall.SIG): 1 when an operand or the result needs the reference (an inf or
    NaN, an accumulator overflow; nothing written)."""
    a32 = C.reinterpret(C.u8_1d(parena, n), np.uint32)
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * 32, C.NCTX)
    nk = ctx[C.K_MREGS_N]
    row = C.i64_1d(prow, T.NFIELDS)
    k = row[T.X]
    regs = C.i64_2d(ctx[C.K_MREGS], nk, 16)[k]
    maps = C.i64_2d(ctx[C.K_MMAPS], nk, ctx[C.K_MMAPS_W])[k]
    prm = C.i64_2d(ctx[C.K_MPRM], nk, ctx[C.K_MPRM_W])[k]
    u64 = C.u64_1d(ctx[C.K_MU64], ctx[C.K_MU64_N])
    vals = stack_f64(1024)           # the tile's values and exponents, in the stack frame
    exps = stack_i64(1024)
    if compute(a32, regs, IDX, row[T.V0 + 1], row[T.V0 + 2], row[T.V0 + 3], maps, prm, u64, vals, exps):
        return 1
    if prm[19] == 1:            # sm_90's fp8: C added last
        add_c(u64, prm[0] * prm[2] + prm[2] * prm[1], prm[0] * prm[1], prm[6])
    store(a32, regs, IDX, row[T.V0], maps, prm, u64)
    return 0
