"""The independent CTAs of a launch in one jitted call (the grid loop).

A launch's CTAs that nothing reads after their run (``keep="none"``, all but the last with ``keep="last"``) run
one after the other on one CTA's arrays (``FastCTA``): for each, ``grid_loop`` restores the arrays' block from a
template (the block as ``FastCTA.start`` set it up for the batch's first CTA: PCs, exit masks, barrier state,
special registers, ``.local`` and variable addresses, parameter bytes, zeroed shared memory), writes the CTA's
own ids (``%ctaid``, ``%clusterid``, ``%smid``: the special registers that differ between the CTAs of a launch
without clusters), sets the state vector's fields as ``FastCTA.run`` does before its first run, and calls the
CTA loop (``loop.run_cta``) through its address (``ccall.call_native``: numba does not compile or link the CTA
loop into this function). A full shared-memory log is dropped and the loop goes on, as it is for a CTA nobody
keeps. The first CTA whose outcome needs Python (any status but "every thread exited": an instruction handed
back, printf, the instruction budget spent, a spin check, a deadlock) stops the grid loop: its arrays hold the
state the CTA loop left, and ``machine.cta.CTA`` takes it over there (``FastLaunch.resume``, ``FastCTA.run``
skips its first call), exactly as if ``FastCTA.run`` had made that call itself.

Only kernels whose CTAs need nothing of Python around the CTA loop take this path (``eligible``): no async unit
(mbarriers, bulk copies, wgmma, proxy fences), no cp.async table, no sanitizer, profile, debugger, trace, seeded
schedule or timeline, no clusters. ``ON = False`` turns it off (every CTA then runs through ``FastCTA.run``).
"""
import numpy as np
from numba import njit

from . import table as T
from .ccall import call_native

ON = True               # False: every CTA goes through FastCTA.run (the tests compare both)
CHUNK = 4096            # CTAs per call of the grid loop (the progress bar moves between calls)
_SMID = 132             # %smid = linear CTA id % 132 (machine.warp.H100_SMS)

# the special registers that differ between the CTAs of a launch without clusters: the column's kind in
# ``grid_loop`` (0..2: the CTA id's axis, 3: %smid)
_KIND = {"%ctaid.x": 0, "%ctaid.y": 1, "%ctaid.z": 2, "%clusterid.x": 0, "%clusterid.y": 1, "%clusterid.z": 2,
         "%smid": 3}


@njit(cache=True, _nrt=False)
def grid_loop(cta_addr, targs, block, template, a32, cols, kinds, gx, gy, first, count, state, head_idx, head_vals,
              each_idx, each_vals, cst, out):
    """Run CTAs ``first`` .. ``first + count - 1`` (linear ids of a grid ``gx`` x ``gy`` x ..) on the arrays of
    ``targs`` (``loop.run_cta``'s arguments, views of ``block``, whose words ``template`` restores). ``out[0]``: the instruction budget (read, then
    written back); ``out[1]``: how many CTAs ran to their end (the next one, if any, stopped for Python)."""
    budget = out[0]
    nw = a32.shape[0]
    for i in range(count):
        for k in range(block.shape[0]):        # (uint64 words: the block's size is a multiple of 64 bytes)
            block[k] = template[k]
        lin = first + i
        ids = (lin % gx, (lin // gx) % gy, lin // (gx * gy), lin % _SMID)
        for j in range(cols.shape[0]):
            v = np.uint32(ids[kinds[j]])
            c = cols[j]
            for w in range(nw):
                for lane in range(32):
                    a32[w, c + lane] = v
        for j in range(head_idx.shape[0]):
            state[head_idx[j]] = head_vals[j]
        inflight = 0
        while True:
            for j in range(each_idx.shape[0]):
                state[each_idx[j]] = each_vals[j]
            state[T.S_BUDGET] = budget
            state[T.S_INFLIGHT] = inflight
            call_native(cta_addr, targs)
            budget = state[T.S_BUDGET]
            inflight = state[T.S_INFLIGHT]
            if state[T.S_MBAR_CHANGED] != 0 or state[T.S_MBAR_REBUILT] != 0:
                break
            s = cst[T.C_STATUS]
            if s == T.CTA_DONE:
                break
            if s == T.CTA_SLOW and state[T.S_STATUS] == T.ST_LOG:
                continue            # (nobody keeps the CTA's bank records: the log starts again)
            break
        if cst[T.C_STATUS] != T.CTA_DONE or state[T.S_MBAR_CHANGED] != 0 or state[T.S_MBAR_REBUILT] != 0:
            out[0] = budget
            out[1] = i
            return
    out[0] = budget
    out[1] = count


_CTA_ADDRESS = {}


def cta_loop_address(args):
    """The address of the CTA loop (``loop.run_cta``) compiled for the types of ``args`` (compiled or loaded from
    numba's cache now)."""
    from numba import typeof
    from .loop import run_cta
    sig = tuple(typeof(a) for a in args)
    got = _CTA_ADDRESS.get(sig)
    if got is None:
        if sig not in run_cta.overloads:
            run_cta.compile(sig)
        cres = run_cta.overloads[sig]
        got = _CTA_ADDRESS[sig] = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
        if not got:
            raise AssertionError("the fast engine's CTA loop has no address")
    return got


def eligible(fast, cta):
    """Whether the CTAs of ``cta``'s launch (``cta``: its first CTA the grid loop would run, just made) need
    nothing of Python around the CTA loop."""
    from .engine import FastLaunch, _unit_free, _uses_cp_async
    fc = cta.fast_cta
    if not ON or fc is None or type(fast) is not FastLaunch or cta.san is not None or cta._rng is not None or \
            cta._timeline or cta.profile is not None or cta.debug is not None or cta.trace is not None:
        return False
    tr = fast.tr
    prog = cta.prog
    if tr.wg is not None or tr.bulkx or tr.async_readers or tr.cta_waits or not _unit_free(tr, prog) or \
            _uses_cp_async(prog) or cta.__dict__.get("_au") is not None or cta.cluster.size != 1:
        return False
    return all(n in _KIND or n.startswith(("%cluster_ctaid.", "%cluster_nctaid.", "%nclusterid."))
               or n == "%cluster_ctarank" for _, n in fc.own_columns(cta))


def run(fast, cta, ctaids, first, stop, budget):
    """Run the CTAs ``first`` .. ``stop - 1`` of ``ctaids`` (``cta``: CTA ``first``, just made, not run; the launch
    keeps none of them) in the grid loop; returns how many ran to their end. When that is fewer than
    ``stop - first``, the next CTA stopped for Python, its state in ``cta.fast_cta``'s arrays."""
    fc = cta.fast_cta
    targs = fc.loop_args(cta)
    addr = cta_loop_address(targs)
    block64 = fc.block.view(np.uint64)
    template = block64.copy()
    cols_names = fc.own_columns(cta)
    picked = [(c, _KIND[n]) for c, n in cols_names if n in _KIND]
    cols = np.array([c for c, _ in picked], np.int64)
    kinds = np.array([k for _, k in picked], np.int64)
    head_idx, head_vals, each_idx, each_vals = fc.grid_state(cta)
    a32 = fc.arenas.view(np.uint32)
    grid = ctaids.grid
    lin0 = ctaids._r
    if lin0.step != 1:
        raise AssertionError("the grid loop runs CTAs in their serial order")
    out = np.zeros(2, np.int64)
    done = first
    st = fast.state
    while done < stop:
        n = min(CHUNK, stop - done)
        out[0] = budget[0]
        grid_loop(addr, targs, block64, template, a32, cols, kinds, grid[0], grid[1], lin0.start + done, n, st,
                  head_idx, head_vals, each_idx, each_vals, fc.cst, out)
        budget[0] = int(out[0])
        done += int(out[1])
        if out[1] < n:
            fc._ran = True          # (FastCTA.run goes on from the state the CTA loop left)
            break
    return done - first
