"""The f64 and integer mma.sync tiles of the fast engine (scalarx.K_MMAX rows): a C-callable function that reads
the operand registers of all 32 lanes from the arena, runs the executor's own tile kernel
(``numerics.fast.f64_batch`` / ``int_batch``, as ``ops.mma.MmaOp`` does) and writes D back.

It is compiled apart from the loops and from ``xcall.py`` (whose ``x_c`` calls it through the address the row
holds), and only for kernels with such an mma: the translation imports this module when it makes the row.
"""
import numpy as np
from llvmlite import ir
from numba import carray, cfunc, njit, types
from numba.extending import intrinsic

from . import table as T
from .scalarx import MMA_MAPS, MMA_REGS
from ...numerics.fast import f64_batch, int_batch
from ...numerics.jitcache import INNER

_P64 = types.CPointer(types.uint64)
_PI64 = types.CPointer(types.int64)
_P8 = types.CPointer(types.uint8)


@intrinsic
def _i64_pointer(typingctx, addr):
    sig = types.CPointer(types.int64)(types.int64)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.IntType(64).as_pointer())
    return sig, codegen


@njit(cache=True, **INNER)
def _mma(row, em, a32, a64):
    """An mma.sync of the f64 or integer family (a K_MMAX row): the registers of all 32 lanes into the executor's
    tile kernel (numerics.fast.f64_batch / int_batch, as ops.mma.MmaOp runs them), D written back; 1 (nothing
    written) unless all 32 lanes execute it (.sync.aligned: the executor names who is missing)."""
    if em != 0xFFFFFFFF:
        return 1
    tab = carray(_i64_pointer(row[T.V0]), row[T.V0 + 1])
    kind, na, nb, nc, nd = tab[0], tab[1], tab[2], tab[3], tab[4]
    nm = tab[MMA_MAPS]
    maps = tab[MMA_MAPS + 1:MMA_MAPS + 1 + nm]
    prm = tab[MMA_MAPS + 2 + nm:MMA_MAPS + 2 + nm + tab[MMA_MAPS + 1 + nm]]
    regs = tab[MMA_REGS:MMA_REGS + 20]
    if kind == 0:
        a = np.empty((1, na, 32), np.uint64)
        b = np.empty((1, nb, 32), np.uint64)
        c = np.empty((1, nc, 32), np.uint64)
        d = np.empty((1, nd, 32), np.uint64)
        for g, x, n in ((1, a, na), (2, b, nb), (3, c, nc)):
            for i in range(n):
                e = regs[nd + (na if g > 1 else 0) + (nb if g > 2 else 0) + i] & T.INDEX_MASK
                for lane in range(32):
                    x[0, i, lane] = a64[e + lane]
        f64_batch(a, b, c, d, maps, prm)
        for i in range(nd):
            if regs[i] >= 0:
                e = regs[i] & T.INDEX_MASK
                for lane in range(32):
                    a64[e + lane] = d[0, i, lane]
        return 0
    a32_ = np.empty((1, na, 32), np.uint32)
    b32 = np.empty((1, nb, 32), np.uint32)
    c32 = np.empty((1, nc, 32), np.uint32)
    d32 = np.empty((1, nd, 32), np.uint32)
    for g, x, n in ((1, a32_, na), (2, b32, nb), (3, c32, nc)):
        for i in range(n):
            e = regs[nd + (na if g > 1 else 0) + (nb if g > 2 else 0) + i] & T.INDEX_MASK
            for lane in range(32):
                x[0, i, lane] = a32[e + lane]
    int_batch(a32_, b32, c32, d32, maps, prm)
    for i in range(nd):
        if regs[i] >= 0:
            e = regs[i] & T.INDEX_MASK
            for lane in range(32):
                a32[e + lane] = d32[0, i, lane]
    return 0


@cfunc(types.int64(types.int64, _PI64, _P64, _P8, types.int64, _P64), cache=True, nopython=True)
def mma_c(em, prow, pimm, parena, n, pscratch):
    a8 = carray(parena, n)
    return _mma(carray(prow, T.NFIELDS), em, a8.view(np.uint32), a8.view(np.uint64))


ADDRESS = mma_c.address
