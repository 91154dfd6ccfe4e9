"""CTAs resident together: how many CTAs of a launch an H100 holds at once, and the grid scheduler that keeps
them resident while they wait on global memory that other CTAs write.

The occupancy model (``occupancy``) is CUDA's occupancy calculator for compute capability 9.0 on the 132 SMs of
an H100 SXM. Per SM: 65,536 registers in 4 sub-partitions, allocated per warp in units of 256; 228 KB of shared
memory, allocated per CTA in units of 128 bytes with 1 KB reserved per CTA; 2,048 threads (64 warps); 32 CTAs.

Registers per thread: the launch's ``regs_per_thread`` (what ``ptxas -v`` or ``cudaFuncGetAttributes`` report),
else the kernel's ``.maxnreg``, else 32: the most at which registers never limit residency on the H100, so a
grid is never reported as a deadlock that the H100 might have held at once.

The scheduler (``run_grid``): CTAs start in order (``%ctaid.x`` fastest), each running until it finishes, as
before; a CTA whose warps only spin (a loop that comes round unchanged, ``nanosleep``, a failed ``atom.cas``
retry) on memory another CTA may write parks, and the next CTA starts while fewer than the resident limit are
parked. When none can start, the parked CTAs are resumed in turn (CTA order; a seeded order under
``schedule=("random", seed)``), each only when some CTA changed something since its last turn. A round in which no parked CTA changes anything, with no CTA left that could
start, is a deadlock: a ``WarpSyncError`` naming each waiting CTA, what it waits for, and the CTAs that could
not be resident.
"""
from __future__ import annotations

from typing import NamedTuple

from ..errors import OperandError, WarpSyncError
from .spin import SPIN_CHECK

SMS = 132
REGS_PER_SM = 65536
REGS_PER_CTA = 65536
SUBPARTITIONS = 4
REG_GRANULE = 256
MAX_REGS_PER_THREAD = 255
SMEM_PER_SM = 228 * 1024
SMEM_RESERVED = 1024
SMEM_GRANULE = 128
WARPS_PER_SM = 64
CTAS_PER_SM = 32
DEFAULT_REGS = 32


class Occupancy(NamedTuple):
    """How many CTAs of one launch shape an H100 holds at once."""
    per_sm: int              # CTAs per SM: the smallest of ``limits``
    resident: int            # per_sm x 132 SMs
    limits: dict             # 'registers', 'shared memory', 'warps', 'CTAs' -> CTAs per SM each allows
    regs_per_thread: int
    regs_from: str           # 'regs_per_thread', '.maxnreg' or 'default'
    smem_per_cta: int        # bytes allocated per CTA (the reserved 1 KB and the rounding included)

    def describe(self):
        lim = min(self.limits, key=lambda k: (self.limits[k], k != "CTAs"))
        why = {"registers": f"registers: {self.regs_per_thread} per thread ({self.regs_from})",
               "shared memory": f"shared memory: {self.smem_per_cta} bytes per CTA (1 KB reserved included) of "
                                f"{SMEM_PER_SM} per SM",
               "warps": f"threads: {WARPS_PER_SM} warps per SM",
               "CTAs": f"{CTAS_PER_SM} CTAs per SM"}[lim]
        return f"{self.resident} CTAs ({self.per_sm} per SM on {SMS} SMs, limited by {why})"


def occupancy(nthreads, smem_bytes, regs_per_thread=None, maxnreg=None):
    """The H100's residency for CTAs of ``nthreads`` threads using ``smem_bytes`` of shared memory (static and
    dynamic) and ``regs_per_thread`` registers (None: ``maxnreg``, else the default of 32)."""
    if regs_per_thread is not None:
        regs, src = int(regs_per_thread), "regs_per_thread"
    elif maxnreg is not None:
        # .maxnreg is a cap: ptxas allocates at most 255, and no more than lets one CTA of this size fit
        regs, src = max(1, min(int(maxnreg), MAX_REGS_PER_THREAD)), ".maxnreg"
        warps = -(-int(nthreads) // 32)
        while regs > 1 and -(-regs * 32 // REG_GRANULE) * REG_GRANULE * -(-warps // SUBPARTITIONS) * SUBPARTITIONS \
                > REGS_PER_CTA:
            regs -= 1
    else:
        regs, src = DEFAULT_REGS, "default"
    if not 1 <= regs <= MAX_REGS_PER_THREAD:
        raise OperandError(f"launch: regs_per_thread must be 1..{MAX_REGS_PER_THREAD} (the H100's limit), "
                           f"not {regs}")
    warps = -(-int(nthreads) // 32)
    per_warp = -(-regs * 32 // REG_GRANULE) * REG_GRANULE
    if per_warp * -(-warps // SUBPARTITIONS) * SUBPARTITIONS > REGS_PER_CTA:
        raise OperandError(f"launch: {nthreads} threads of {regs} registers ({src}) need more than the "
                           f"{REGS_PER_CTA} registers a CTA may have; the H100 refuses this launch (too many "
                           f"resources requested)")
    by_regs = (REGS_PER_SM // SUBPARTITIONS // per_warp) * SUBPARTITIONS // warps
    smem = -(-(int(smem_bytes) + SMEM_RESERVED) // SMEM_GRANULE) * SMEM_GRANULE
    limits = {"registers": by_regs, "shared memory": SMEM_PER_SM // smem, "warps": WARPS_PER_SM // warps,
              "CTAs": CTAS_PER_SM}
    per_sm = min(limits.values())
    return Occupancy(per_sm, per_sm * SMS, limits, regs, src, smem)


def run_grid(ctaids, make, finish, occ, rng=None, batch=None):
    """Run the CTAs ``ctaids``: ``make(cid)`` builds one, ``finish(cta)`` takes it once every thread exited;
    at most ``occ.resident`` (an ``Occupancy``) wait at once (module docstring). ``batch(i)`` (optional) runs CTAs
    ``i``, ``i + 1``, .. to their end by itself and returns (how many it ran, None or the next CTA made: started,
    to run as one ``make`` built)."""
    nxt, n, limit = 0, len(ctaids), occ.resident
    parked = []                           # resident CTAs that wait on memory, in start order
    epoch = 0                             # counts the calls that changed something
    seen = {}                             # parked CTA -> the epoch of its last call
    while nxt < n or parked:
        if nxt < n and len(parked) < limit:
            cta = None
            if batch is not None:
                done, cta = batch(nxt)
                nxt += done
                epoch += done
                if cta is None and (done or nxt >= n):
                    continue
            if cta is None:
                cta = make(ctaids[nxt])
            nxt += 1
            epoch += 1
            if cta.run(park=True) is None:
                parked.append(cta)
                seen[cta] = epoch
                _soon(cta)
            else:
                finish(cta)
            continue
        moved = False
        order = parked if rng is None else [parked[i] for i in rng.permutation(len(parked))]
        for cta in order:
            if seen[cta] == epoch:        # nothing changed since it last looked: it would spin the same way
                continue
            if cta.run(park=True) is None:
                if cta.moved:
                    epoch += 1
                    moved = True
                seen[cta] = epoch
                _soon(cta)
                continue
            parked.remove(cta)
            del seen[cta]
            finish(cta)
            epoch += 1
            moved = True
            if nxt < n:                   # a place came free: the next CTA starts, as on the H100
                break
        if not moved:
            _deadlock(parked, ctaids[nxt:], occ)


def _soon(cta):
    """A parked CTA checks its spin loops at their next two backward branches when it resumes (instead of up
    to SPIN_CHECK later): a resume whose flag has not changed costs two iterations. Both engines count the same."""
    for w in cta.warps:
        w.back_taken += (-w.back_taken - 1) % SPIN_CHECK


def _deadlock(parked, never, occ):
    if len(parked) == 1 and not never:
        parked[0]._deadlock()                 # one CTA left: its own report
    shown = parked[:8]
    parts = [f"CTA {c.ctaid}: " + "; ".join(c._deadlock_parts()) for c in shown]
    if len(parked) > len(shown):
        parts.append(f"and {len(parked) - len(shown)} more CTA(s) spinning the same way")
    if never:
        nv = (f"CTA {tuple(never[0])}" if len(never) == 1 else
              f"CTAs {tuple(never[0])} .. {tuple(never[-1])} ({len(never)} CTAs)")
        tail = (f"{nv} could not be resident: the H100 holds at most {occ.describe()} "
                f"of this launch at once, and every resident CTA waits (a grid that waits on CTAs that are not "
                f"resident hangs on the GPU)")
    else:
        tail = "every CTA of the grid is resident, and none can go on"
    raise WarpSyncError(f"grid deadlock: {len(parked)} resident CTA(s) wait on memory that no running thread "
                        f"writes; " + " | ".join(parts) + f"; {tail}")
