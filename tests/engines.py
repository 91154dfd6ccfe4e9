"""Run one launch on both engines and compare everything a launch leaves behind, bit for bit."""
import io

import numpy as np

from emulator import EmulatorError, GlobalMemory


def launch_outcome(module, kernel, grid, block, arrays, scalars=(), engine="fast", **kw):
    """Launch with fresh global memory holding ``arrays`` (their addresses come first in the arguments,
    then ``scalars``); returns a dict of everything observable, or the error raised."""
    g = GlobalMemory()
    addrs = [g.upload(a) for a in arrays]
    out = io.StringIO()
    try:
        r = module.launch(kernel, grid, block, list(addrs) + list(scalars), gmem=g, out=out, engine=engine, **kw)
    except EmulatorError as e:
        return {"error": (type(e).__name__, str(e)), "memory": memory_of(g)}
    warps, pending = warp_states(r)
    executed = sum(w.fast.executed for _, ws in r.ctas for w in ws if w.fast is not None)
    return {"memory": memory_of(g), "warps": warps, "stdout": out.getvalue(), "instructions": r.instructions,
            "fast_executed": executed, "cp_async": pending}


def warp_states(result, banks=True):
    """({(ctaid, warp): (registers, shared memory, issued, PCs, bank records)}, {(ctaid, warp): cp.async copies
    still in flight}) of a launch's kept CTAs (``banks`` False: the bank records left out, as [])."""
    warps, pending = {}, {}
    for ctaid, ws in result.ctas:
        for w in ws:
            regs = {n: w.get_reg(n).copy() for n in w.regs}
            recs = [(a.instruction, a.op, a.addrs.tolist(), a.width, a.mask.tolist(), a.nmat,
                     None if a.src is None else a.src.tolist()) for a in w._smem_log] if banks else []
            warps[(ctaid, w.warp_id)] = (regs, w.smem.copy(), w.issued, w.pc.copy(), recs)
            pending[(ctaid, w.warp_id)] = w.cp_async.pending()        # cp.async copies still in flight
    return warps, pending


def replay_outcome(case, engine):
    """(outputs, everything observable) of a corpus case replayed (``corpus_lib.replay``) on ``engine``, in
    ``launch_outcome``'s form; the memory is the case's outputs by name."""
    import corpus_lib
    got, res, out = corpus_lib.replay(case, engine=engine)
    warps, pending = warp_states(res)
    return got, {"memory": [(k, got[k].copy()) for k in sorted(got)], "warps": warps, "stdout": out,
                 "instructions": res.instructions, "cp_async": pending}


def memory_of(g):
    """[(base address, a copy of the bytes)] of every allocation of the GlobalMemory ``g``."""
    return [(b, buf.copy()) for b, buf in zip(g._bases, g._bufs)]


def differences(ref, fast, clusters=False):
    """Human-readable list of what differs between two outcomes (empty: bit-identical). ``clusters``: a launch in
    clusters of several CTAs, which the two engines interleave differently (the reference warp by warp, the fast
    engine CTA by CTA, docs/tma.md): how often waits were issued again (the instruction counts) may differ;
    everything else may not."""
    diffs = []
    if "error" in ref or "error" in fast:
        if ref.get("error") != fast.get("error"):
            diffs.append(f"error: reference {ref.get('error')} vs fast {fast.get('error')}")
    for (b1, m1), (b2, m2) in zip(ref["memory"], fast["memory"]):
        if b1 != b2 or m1.tobytes() != m2.tobytes():
            bad = np.flatnonzero(m1 != m2)[:8] if m1.shape == m2.shape else "shape"
            where = f"{b1:#x}" if isinstance(b1, (int, np.integer)) else repr(b1)   # (an address, or an output's name)
            diffs.append(f"global allocation {where}: bytes {bad} differ")
    if "error" in ref or "error" in fast:
        return diffs
    for k in ("stdout",) if clusters else ("stdout", "instructions"):
        if ref[k] != fast[k]:
            diffs.append(f"{k}: {ref[k]!r} vs {fast[k]!r}")
    for key, (regs1, smem1, iss1, pc1, banks1) in ref["warps"].items():
        regs2, smem2, iss2, pc2, banks2 = fast["warps"][key]
        for n in sorted(set(regs1) | set(regs2)):
            a = regs1.get(n)
            b = regs2.get(n)
            if a is None or b is None:
                # a register the fast engine pre-created but nobody wrote reads as zero
                v = b if a is None else a
                if v.any():
                    diffs.append(f"warp {key}: register {n} exists in one engine only")
                continue
            if a.dtype != b.dtype or a.tobytes() != b.tobytes():
                lanes = np.flatnonzero(a != b)[:4].tolist() if a.dtype == b.dtype else "dtype"
                diffs.append(f"warp {key}: register {n} lanes {lanes}: {a[lanes] if lanes != 'dtype' else a.dtype} "
                             f"vs {b[lanes] if lanes != 'dtype' else b.dtype}")
        if smem1.tobytes() != smem2.tobytes():
            diffs.append(f"warp {key}: shared memory differs")
        if (iss1 != iss2 and not clusters) or (pc1 != pc2).any():
            diffs.append(f"warp {key}: issued {iss1} vs {iss2}, pcs differ: {(pc1 != pc2).any()}")
        if banks1 != banks2:
            diffs.append(f"warp {key}: shared-memory access logs differ ({len(banks1)} vs {len(banks2)} records)")
        if ref["cp_async"][key] != fast["cp_async"][key]:
            diffs.append(f"warp {key}: cp.async copies in flight differ: {ref['cp_async'][key]} vs "
                         f"{fast['cp_async'][key]}")
    return diffs


def compare_engines(module, kernel, grid, block, arrays, scalars=(), **kw):
    ref = launch_outcome(module, kernel, grid, block, arrays, scalars, engine="reference", **kw)
    fast = launch_outcome(module, kernel, grid, block, arrays, scalars, engine="fast", **kw)
    return ref, fast, differences(ref, fast)
