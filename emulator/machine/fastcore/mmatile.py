"""The f64 and integer mma.sync tiles of the fast engine (scalarx.K_MMAX rows): a C-callable function that reads
the operand registers of all 32 lanes from the arena into arrays in its stack frame, runs the tile by the rules of
the executor's kernels (``numerics.fast.f64_batch`` / ``int_batch``, as ``ops.mma.MmaOp`` runs them) one row of
eight columns at a time in vector registers (``numerics.tc_simd.vfma``: a chain of fused multiply-adds; ``vimac``:
exact integer sums), and writes D back.

It is compiled apart from the loops and from ``xcall.py`` (whose ``x_c`` calls it through the address the row
holds), and only for kernels with such an mma: the translation imports this module when it makes the row.
"""
import numpy as np
from llvmlite import ir
from numba import carray, cfunc, njit, types
from numba.extending import intrinsic

from . import table as T
from .scalarx import MMA_MAPS, MMA_REGS
from ...numerics.fast import F64_DEFAULT_NAN, fma64_bits, stack_f64, stack_i64
from ...numerics.jitcache import INNER
from ...numerics.tc_simd import vfma, vimac

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
def _int_in(a32, e, nreg, mp, epr, w, signed, out):
    """The elements of an integer operand (nreg registers from a32[e], epr elements of w bits a word; sign-extended
    when ``signed``) into out[mp[(r * 32 + lane) * epr + i]] (numerics.fast._int_tile's rule): element i of a word
    is its bits i w .. i w + w - 1, shifted to the top of 64 and back (arithmetically when signed)."""
    for r in range(nreg):
        src = a32[e[r] & T.INDEX_MASK:]
        if epr == 1:
            for lane in range(32):
                out[np.uint64(mp[r * 32 + lane])] = np.int32(src[lane]) if signed else np.int64(src[lane])
        elif epr == 4:
            for lane in range(32):
                word = np.int64(src[lane])
                o = mp[(r * 32 + lane) * 4:]
                if signed:
                    out[np.uint64(o[0])] = (word << 56) >> 56
                    out[np.uint64(o[1])] = (word << 48) >> 56
                    out[np.uint64(o[2])] = (word << 40) >> 56
                    out[np.uint64(o[3])] = (word << 32) >> 56
                else:
                    out[np.uint64(o[0])] = word & 0xFF
                    out[np.uint64(o[1])] = (word >> 8) & 0xFF
                    out[np.uint64(o[2])] = (word >> 16) & 0xFF
                    out[np.uint64(o[3])] = word >> 24
        else:
            for lane in range(32):
                word = np.int64(src[lane])
                o = mp[(r * 32 + lane) * epr:]
                for i in range(epr):
                    v = word << (64 - w * (i + 1))
                    out[np.uint64(o[i])] = v >> (64 - w) if signed else np.int64(np.uint64(v) >> np.uint64(64 - w))


@njit(cache=True, **INNER)
def _int_mma(regs, a32, maps, prm, na, nb, nc, nd):
    """The integer forms (numerics.fast._int_one's rule): the exact sum of C and the products (``tc_simd.vimac``,
    one row of eight columns a call), saturated to int32 (.satfinite) or wrapped."""
    M, N, K = prm[0], prm[1], prm[2]
    if M * K > 4096 or K * N > 2048 or M * N > 256:
        return 1
    A = stack_i64(2048).view(np.int32)          # the operands in int32, C and the sums in int64
    B = stack_i64(1024).view(np.int32)
    C = stack_i64(256)
    _int_in(a32, regs[nd:], na, maps[prm[10]:], prm[3], prm[5], prm[7] != 0, A)
    _int_in(a32, regs[nd + na:], nb, maps[prm[11]:], prm[4], prm[6], prm[8] != 0, B)
    _int_in(a32, regs[nd + na + nb:], nc, maps[prm[12]:], 1, 32, True, C)
    for m in range(M):
        if N == 8 and K <= 256:
            vimac(A, B, C, m * K, 0, m * 8, K)
        else:
            for n in range(N):
                x = C[m * N + n]
                for k in range(K):
                    x += A[m * K + k] * B[k * N + n]
                C[m * N + n] = x
    dmap = maps[prm[13]:]
    sat = prm[9] != 0
    for i in range(nd):
        if regs[i] >= 0:
            dst = a32[regs[i] & T.INDEX_MASK:]
            for lane in range(32):
                s = C[np.uint64(dmap[i * 32 + lane])]
                if sat:
                    s = min(max(s, -2147483648), 2147483647)
                dst[lane] = np.uint32(s & 0xFFFFFFFF)
    return 0


@njit(cache=True, **INNER)
def _f64_mma(regs, a64, maps, prm, na, nb, nc, nd):
    """The f64 forms (numerics.fast.f64_one's rule: a chain of fused multiply-adds per element, a NaN operand
    passed on quieted, B's before the accumulator's before A's; a NaN made here is the default NaN): with no NaN
    operand, one row of eight columns per ``tc_simd.vfma``; else element by element through fast.fma64_bits."""
    M, N, K = prm[0], prm[1], prm[2]
    if M * K > 512 or K * N > 512 or M * N > 256:
        return 1
    A = stack_f64(512)
    B = stack_f64(512)
    C = stack_f64(256)
    ua = A.view(np.uint64)
    ub = B.view(np.uint64)
    uc = C.view(np.uint64)
    nan = 0
    for g in range(3):
        n = na if g == 0 else (nb if g == 1 else nc)
        e = regs[nd:] if g == 0 else (regs[nd + na:] if g == 1 else regs[nd + na + nb:])
        out = ua if g == 0 else (ub if g == 1 else uc)
        mp = maps[prm[3 + g]:]
        for r in range(n):
            src = a64[e[r] & T.INDEX_MASK:]
            for lane in range(32):
                x = src[lane]
                nan |= np.int64((x & np.uint64(0x7FFFFFFFFFFFFFFF)) > np.uint64(0x7FF0000000000000))
                out[np.uint64(mp[r * 32 + lane])] = x
    for m in range(M):
        if N == 8 and nan == 0:
            vfma(A, B, C, m * K, 0, m * 8, K, np.int64(F64_DEFAULT_NAN))
        else:
            for n in range(N):
                acc = uc[m * N + n]
                for k in range(K):
                    acc = fma64_bits(ua[m * K + k], ub[k * N + n], acc)
                uc[m * N + n] = acc
    dmap = maps[prm[6]:]
    for i in range(nd):
        if regs[i] >= 0:
            dst = a64[regs[i] & T.INDEX_MASK:]
            for lane in range(32):
                dst[lane] = uc[np.uint64(dmap[i * 32 + lane])]
    return 0


@njit(cache=True, **INNER)
def _mma(row, em, a32, a64):
    """An mma.sync of the f64 or integer family (a K_MMAX row): the registers of all 32 lanes, the tile (the rules
    of numerics.fast.f64_batch / int_batch, as ops.mma.MmaOp runs them), D written back; 1 (nothing written)
    unless all 32 lanes execute it (.sync.aligned: the executor names who is missing)."""
    if em != 0xFFFFFFFF:
        return 1
    tab = carray(_i64_pointer(row[T.V0]), row[T.V0 + 1])
    kind, na, nb, nc, nd = tab[0], tab[1], tab[2], tab[3], tab[4]
    nm = tab[MMA_MAPS]
    maps = tab[MMA_MAPS + 1:MMA_MAPS + 1 + nm]
    prm = tab[MMA_MAPS + 2 + nm:MMA_MAPS + 2 + nm + tab[MMA_MAPS + 1 + nm]]
    regs = tab[MMA_REGS:MMA_REGS + 20]
    if kind == 0:
        return _f64_mma(regs, a64, maps, prm, na, nb, nc, nd)
    return _int_mma(regs, a32, maps, prm, na, nb, nc, nd)


@cfunc(types.int64(types.int64, _PI64, _P64, _P8, types.int64, _P64), cache=True, nopython=True)
def mma_c(em, prow, pimm, parena, n, pscratch):
    a8 = carray(parena, n)
    return _mma(carray(prow, T.NFIELDS), em, a8.view(np.uint32), a8.view(np.uint64))


ADDRESS = mma_c.address
