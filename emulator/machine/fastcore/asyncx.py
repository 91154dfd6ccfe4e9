"""Hopper's register and shared-memory rewrites in the fast engine (``HOPX`` rows), as their executors define
them: ``elect.sync`` and ``bar.warp.sync`` (``ops.warpops``, ``machine.program``), ``mapa`` in both forms (``ops.cluster``), ``tensormap.replace.tile`` on a
tensor map in this CTA's shared memory (``ops.mbarrier`` with ``memory.tensormap.replace_field``), its copy
to global memory (``tensormap.cp_fenceproxy``) and
``fence.proxy.async`` (``AsyncUnit.fence_proxy_async``: the generic-proxy marks of ``memx.py`` are cleared);
``setmaxnreg``, ``griddepcontrol``, ``fence.mbarrier_init`` and the tensormap and alias proxy fences have nothing
to do (kind ``K_NOP``, which the loop does not call for).

The rows run in one C-callable function compiled apart from the loops (``hopcall.hop_c``, as ``xcall.py`` does
for XROW), which the loops call through its address (``call_hop``; the translation puts it in its table-pointer
array). Every rule the executor checks and this code does not (a membermask naming a lane that does not execute,
a rank outside the cluster, an address outside the shared::cluster window, a tensor map past shared memory)
returns 1: nothing was written, and the loop hands the instruction back, so the executor raises its error.
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .raw import _peek64, _poke64
from ...memory.mbarrier import ADDR, COUNT_MAX, EXPECTED, NCOLS, PENDING, PHASE, TX, TX_MAX
from ...memory.dsmem import OFFSET_MASK, SHIFT, WINDOW_END  # noqa: F401 (the address encoding, for hopcall.py)

(K_NOP, K_ELECT, K_MAPA, K_TMREPLACE, K_FENCE_ASYNC, K_WARPSYNC, K_TMCOPY, K_MB_ARRIVE, K_MB_TX, K_MB_WAIT, K_MB_INIT,
 K_MB_INVAL) = range(12)    # (K_MB_INIT, K_MB_INVAL: in the CTA loop only, state S_MBINIT)
# barrier.cluster.arrive / wait and getctarank: clusterx.py (compiled apart, "cluster"; rarecall.rare_c calls it)
K_CL_ARRIVE, K_CL_WAIT, K_CTARANK = 12, 13, 14
MB_EXPECT, MB_DROP, MB_COUNT = 1, 2, 4     # K_MB_ARRIVE's Y: .expect_tx, arrive_drop, a count operand (B)
# tensormap.replace.tile fields (row Y), as memory.tensormap.replace_field writes them
(F_GLOBAL_ADDRESS, F_RANK, F_INTERLEAVE, F_SWIZZLE, F_FILL, F_GLOBAL_DIM, F_GLOBAL_STRIDE, F_ELEMENT_STRIDE,
 F_BOX_DIM, F_ELEMTYPE) = range(10)        # F_ELEMTYPE: the value is the encoding, code | tf32 << 8 (translate.py)
FIELDS = {"global_address": F_GLOBAL_ADDRESS, "rank": F_RANK, "interleave_layout": F_INTERLEAVE,
          "swizzle_mode": F_SWIZZLE, "fill_mode": F_FILL, "global_dim": F_GLOBAL_DIM,
          "global_stride": F_GLOBAL_STRIDE, "element_stride": F_ELEMENT_STRIDE, "box_dim": F_BOX_DIM,
          "elemtype": F_ELEMTYPE}
LANES = 32
U0 = np.uint64(0)
U1 = np.uint64(1)

@njit(cache=True, _nrt=False)
def _put_bits(smem, byte, bit, width, v):
    """replace_field's put_bits: the little-endian 64-bit word at ``byte`` (raw address ``smem`` + ``byte``) gets
    ``v`` in bits bit..bit+width-1."""
    word = _peek64(smem + byte)
    mask = (U1 << np.uint64(width)) - U1 if width < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    mask = mask << np.uint64(bit)
    word = (word & ~mask) | ((v << np.uint64(bit)) & mask)
    _poke64(smem + byte, word)


@njit(cache=True, _nrt=False)
def _replace(smem, a, field, k, v):
    """memory.tensormap.replace_field on the 128 bytes at shared offset ``a`` (raw value ``v``, ordinal ``k``)."""
    if field == F_GLOBAL_ADDRESS:
        _put_bits(smem, a, 0, 64, v)
    elif field == F_RANK:
        _put_bits(smem, a + 8, 4, 3, v)
    elif field == F_INTERLEAVE:
        _put_bits(smem, a + 8, 11, 2, v)
    elif field == F_SWIZZLE:
        _put_bits(smem, a + 8, 13, 2, v)
    elif field == F_FILL:
        _put_bits(smem, a + 8, 15, 1, v)
    elif field == F_GLOBAL_DIM:
        _put_bits(smem, a + 32 + 4 * k, 0, 32, v - U1)
    elif field == F_GLOBAL_STRIDE:
        s = v >> np.uint64(4)
        _put_bits(smem, a + 12 + 4 * k, 0, 32, s & np.uint64(0xFFFFFFFF))
        _put_bits(smem, a + 28, 4 * k, 4, s >> np.uint64(32))
    elif field == F_ELEMENT_STRIDE:
        _put_bits(smem, a + 52, 3 * k, 3, v - U1)
    elif field == F_ELEMTYPE:
        _put_bits(smem, a + 8, 7, 4, v & np.uint64(0xF))
        _put_bits(smem, a + 8, 16, 1, v >> np.uint64(8))
    else:                                            # F_BOX_DIM
        _put_bits(smem, a + 55 + k, 0, 8, v - U1)




@njit(cache=True, _nrt=False)
def global_find(gtab, n, addr, nbytes):
    """The host address of global bytes [addr, addr + nbytes) through the raw global-memory table (rows of base,
    size, host pointer; raw._find's search), or 0 when they are not inside one allocation."""
    lo, hi = 0, n - 1
    k = -1
    while lo <= hi:
        mid = (lo + hi) // 2
        if np.int64(_peek64(gtab + 24 * mid)) <= addr:
            k = mid
            lo = mid + 1
        else:
            hi = mid - 1
    if k < 0:
        return 0
    base = np.int64(_peek64(gtab + 24 * k))
    if addr - base + nbytes > np.int64(_peek64(gtab + 24 * k + 8)):
        return 0
    return np.int64(_peek64(gtab + 24 * k + 16)) + (addr - base)


# -- mbarriers: the CTA's table (memory.mbarrier.MBarriers.rows) through its raw address --------------------------

@njit(cache=True, inline="always")
def _mb(tab, i, c):
    return np.int64(_peek64(tab + 8 * (i * NCOLS + c)))


@njit(cache=True, inline="always")
def _mb_set(tab, i, c, v):
    _poke64(tab + 8 * (i * NCOLS + c), np.uint64(v))


@njit(cache=True, _nrt=False)
def mb_find(tab, n, a):
    """The row of the barrier at shared offset ``a``, or -1 (MBarriers.get raises)."""
    for i in range(n):
        if _mb(tab, i, ADDR) == a:
            return i
    return -1


@njit(cache=True, _nrt=False)
def mb_save(tab, n):
    """Keep a copy of every row's state in its spare columns (mb_restore puts it back)."""
    for i in range(n):
        for c in range(EXPECTED, TX + 1):
            _mb_set(tab, i, c + 4, _mb(tab, i, c))


@njit(cache=True, _nrt=False)
def mb_restore(tab, n):
    for i in range(n):
        for c in range(EXPECTED, TX + 1):
            _mb_set(tab, i, c, _mb(tab, i, c + 4))


@njit(cache=True, _nrt=False)
def _complete_if_done(tab, i):
    if _mb(tab, i, PENDING) == 0 and _mb(tab, i, TX) == 0:
        _mb_set(tab, i, PHASE, _mb(tab, i, PHASE) + 1)
        _mb_set(tab, i, PENDING, _mb(tab, i, EXPECTED))


@njit(cache=True, _nrt=False)
def mb_expect_tx(tab, i, nbytes):
    """MBarriers.expect_tx; False when the tx-count would overflow."""
    tx = _mb(tab, i, TX)
    if tx + nbytes > TX_MAX:
        return False
    _mb_set(tab, i, TX, tx + nbytes)
    return True


@njit(cache=True, _nrt=False)
def mb_complete_tx(tab, i, nbytes):
    """MBarriers.complete_tx; False when the tx-count would underflow."""
    tx = _mb(tab, i, TX)
    if tx - nbytes < -TX_MAX:
        return False
    _mb_set(tab, i, TX, tx - nbytes)
    if _mb(tab, i, PENDING) == 0:
        _complete_if_done(tab, i)
    return True


@njit(cache=True, _nrt=False)
def mb_arrive(tab, i, count, drop):
    """MBarriers.arrive: the state before it (phase << 32 | pending, as uint64), or -1 (as int64) when more
    arrivals come than are pending."""
    pending = _mb(tab, i, PENDING)
    st = ((_mb(tab, i, PHASE) & 0xFFFFFFFF) << 32) | pending
    if count > pending:
        return np.int64(-1)
    _mb_set(tab, i, PENDING, pending - count)
    if drop:
        _mb_set(tab, i, EXPECTED, _mb(tab, i, EXPECTED) - count)
    _complete_if_done(tab, i)
    return st


@intrinsic
def call_hop(typingctx, fn, em, pstate, prow, pimm, parena, n, pscratch):
    """Call the compiled ``hopcall.hop_c`` at the address ``fn`` (all arguments int64: the lanes, the addresses of
    the loop's state vector, the row, its immediates, the arena, the arena's length, the loop's scratch); returns
    its int64."""
    sig = types.int64(*([types.int64] * 8))

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        p64, p8 = i64.as_pointer(), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(i64, [i64, p64, p64, p64, p8, i64, p64])
        f = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(f, [args[1], builder.inttoptr(args[2], p64), builder.inttoptr(args[3], p64),
                                builder.inttoptr(args[4], p64), builder.inttoptr(args[5], p8), args[6],
                                builder.inttoptr(args[7], p64)])
    return sig, codegen
