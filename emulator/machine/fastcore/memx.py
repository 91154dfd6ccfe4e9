"""Shared-memory writes of the fast engine in kernels where the asynchronous proxy reads shared memory
(wgmma.mma_async through its descriptors, TMA and bulk stores), as ``ops.memops.shared_store`` defines them:

* a write into bytes an in-flight ``wgmma.mma_async`` reads is an error (``ops.wgmma.state.check_smem_write``):
  the loop checks the CTA's read counts (``CtaWgmma.smem_reads``, int32 a byte, through the raw pointer in state
  ``S_WG_READS`` while ``S_WG_SMEM`` says some are held) and hands the instruction back on any hit, so that the
  reference raises;
* every generic-proxy write marks its bytes for the ``fence.proxy.async`` check (``AsyncUnit.generic_write``:
  ``dirty``, a bool a byte, through ``S_DIRTY``); ``S_DIRTY_N`` starts as ``AsyncUnit.any_dirty`` and counts the
  stores marked, a ``fence.proxy.async`` in the loop (``asyncx.py``) clears the marks and sets it to 0, and the
  engine then sets ``AsyncUnit.any_dirty`` from it as the reference does.
"""
import numpy as np
from numba import njit

from . import ccall as C
from . import table as T
from .ccall import SIG  # noqa: F401 (families.APART's signature attribute)
from .raw import _peek32, _poke8
from ...numerics.jitcache import INNER

ONE = np.uint64(1)


@njit(cache=True, _nrt=False, **INNER)
def wg_free(state, a, nbytes):
    """Whether no in-flight wgmma.mma_async of the CTA reads shared bytes [a, a + nbytes)."""
    if state[T.S_WG_SMEM] == 0:
        return True
    p = state[T.S_WG_READS]
    if p == 0:
        return False
    for b in range(nbytes):
        if _peek32(p + 4 * (a + b)) != 0:
            return False
    return True


@njit(cache=True, _nrt=False, **INNER)
def smem_write_ok(state, addrs, lanes, nbytes):
    """Whether the shared-memory write of ``nbytes`` at ``addrs`` by the lanes in the bit mask ``lanes`` touches
    no byte an in-flight wgmma.mma_async reads."""
    if state[T.S_WG_SMEM] == 0:
        return True
    for lane in range(32):
        if (lanes >> lane) & 1 and not wg_free(state, addrs[lane], nbytes):
            return False
    return True


@njit(cache=True, _nrt=False, **INNER)
def mark_generic(state, addrs, lanes, nbytes):
    """Mark the bytes the lanes in ``lanes`` wrote as generic-proxy writes not yet fenced (``S_DIRTY``)."""
    p = state[T.S_DIRTY]
    if p == 0 or lanes == 0:
        return
    for lane in range(32):
        if (lanes >> lane) & 1:
            a = addrs[lane]
            for b in range(nbytes):
                _poke8(p + a + b, ONE)
    state[T.S_DIRTY_N] += 1


def memx_c(lanes, op, nbytes, parena, narena, pscratch):
    """The warp loop's calls of the two above for its shared stores (``loop.run``), compiled apart ("memx" of
    ``families.APART``, the families' signature ``ccall.SIG``) and bound only for kernels the async proxy reads
    (``Translation.async_readers``: wgmma, TMA and bulk stores), so that the loop, which every kernel compiles, links
    none of their code: ``op`` 0, ``smem_write_ok`` (0: the write may go on, 1: it goes back), 1, ``mark_generic``;
    the lanes' addresses in the loop's scratch row 2, the state through the ctx."""
    ctx = C.i64_1d(pscratch + 8 * C.CTX_ROW * 32, C.NCTX)
    state = C.i64_1d(ctx[C.K_STATE], T.NSTATE)
    addrs = C.i64_1d(pscratch + 8 * 2 * 32, 32)
    if op == 0:
        return 0 if smem_write_ok(state, addrs, lanes, nbytes) else 1
    mark_generic(state, addrs, lanes, nbytes)
    return 0
