"""Raw memory access for the jitted loops: loads and stores of 8..64 bits at host addresses (shared memory,
.param and global allocations are addressed by their data pointers), and the allocation lookup."""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ...numerics import jitcache
from ...numerics.jitcache import INNER
from . import table as T

jitcache.prepare()          # before any cached function of the package loads

_U1 = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


# _mask and _sext are compiled once and inlined by LLVM (forceinline); numba's own inline="always" would type and
# lower them again at every use
@njit(cache=True, _nrt=False, forceinline=True, **INNER)
def _mask(w):
    """The low ``w`` bits set (1 <= w <= 64)."""
    return _ALL >> np.uint64(64 - w)


@njit(cache=True, inline="always")
def store_lane(j, nbytes):
    """The j-th of 32 lanes in ``memory.spaces.store_order``'s order for a store of ``nbytes`` per lane: the
    phases of 32 / max(1, nbytes / 4) lanes in order, within a phase the lowest lane last (its bytes stay)."""
    per = 32 // max(1, nbytes // 4)
    return (j // per) * per + per - 1 - j % per


@njit(cache=True, _nrt=False, forceinline=True, **INNER)
def _sext(v, w):
    """The low ``w`` bits of ``v`` sign-extended to 64 (as raw uint64 bits)."""
    if w >= 64:
        return v
    m = _U1 << np.uint64(w - 1)
    return ((v & _mask(w)) ^ m) - m


@njit(cache=True, _nrt=False, **INNER)
def _mulhi_u64(a, b):
    """The high 64 bits of the 128-bit product of two uint64 (mul.hi.u64, and the signed forms' base)."""
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a0, a1 = a & m32, a >> s32
    b0, b1 = b & m32, b >> s32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    mid = (p00 >> s32) + (p01 & m32) + (p10 & m32)
    return a1 * b1 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)


def _peek_intrinsic(nbits):
    @intrinsic
    def peek(typingctx, addr):
        """The nbits-bit little-endian value at the raw address ``addr`` (zero-extended to uint64)."""
        sig = types.uint64(types.int64)

        def codegen(context, builder, signature, args):
            ity = ir.IntType(nbits)
            v = builder.load(builder.inttoptr(args[0], ity.as_pointer()), align=1)
            return builder.zext(v, ir.IntType(64)) if nbits < 64 else v
        return sig, codegen
    return peek


def _poke_intrinsic(nbits):
    @intrinsic
    def poke(typingctx, addr, value):
        """Store the low nbits of ``value`` at the raw address ``addr``."""
        sig = types.void(types.int64, types.uint64)

        def codegen(context, builder, signature, args):
            ity = ir.IntType(nbits)
            v = builder.trunc(args[1], ity) if nbits < 64 else args[1]
            builder.store(v, builder.inttoptr(args[0], ity.as_pointer()), align=1)
            return context.get_dummy_value()
        return sig, codegen
    return poke


@intrinsic
def opaque(typingctx, x):
    """``x`` itself, as a value LLVM cannot see through (an empty inline-asm statement): a loop ``for lane in
    range(opaque(LANES))`` keeps its count unknown to LLVM, which then vectorises it once instead of unrolling it
    into 32 copies (the loops over a warp's lanes: their code, and the time LLVM spends on it, is the smaller)."""
    if not isinstance(x, types.Integer) or x.bitwidth != 64:
        return None
    sig = x(x)

    def codegen(context, builder, signature, args):
        fty = ir.FunctionType(ir.IntType(64), [ir.IntType(64)])
        return builder.asm(fty, "", "=r,0", [args[0]], side_effect=False, name="opaque")
    return sig, codegen


_peek8, _peek16, _peek32, _peek64 = (_peek_intrinsic(n) for n in (8, 16, 32, 64))
_poke8, _poke16, _poke32, _poke64 = (_poke_intrinsic(n) for n in (8, 16, 32, 64))


@njit(cache=True, inline="always")
def _peek(addr, ew):
    if ew == 4:
        return _peek32(addr)
    if ew == 8:
        return _peek64(addr)
    if ew == 2:
        return _peek16(addr)
    return _peek8(addr)


@njit(cache=True, inline="always")
def _poke(addr, ew, v):
    if ew == 4:
        _poke32(addr, v)
    elif ew == 8:
        _poke64(addr, v)
    elif ew == 2:
        _poke16(addr, v)
    else:
        _poke8(addr, v)


@njit(cache=True, _nrt=False, **INNER)
def _find(gtab, addr, nbytes):
    """Index of the allocation holding [addr, addr + nbytes), or -1."""
    lo, hi = 0, gtab.shape[0] - 1
    k = -1
    while lo <= hi:
        mid = (lo + hi) // 2
        if gtab[mid, 0] <= addr:
            k = mid
            lo = mid + 1
        else:
            hi = mid - 1
    if k < 0 or addr - gtab[k, 0] + nbytes > gtab[k, 1]:
        return -1
    return k


@njit(cache=True, inline="always")
def _allocation(gtab, state, k, addr, nbytes):
    """The allocation holding [addr, addr + nbytes): ``k`` when it does (the last one found), else the one
    ``_find`` finds, which is remembered in ``state``; -1 when none does."""
    if gtab[k, 0] <= addr and addr - gtab[k, 0] + nbytes <= gtab[k, 1]:
        return k
    k = _find(gtab, addr, nbytes)
    if k >= 0:
        state[T.S_LASTALLOC] = k
    return k
