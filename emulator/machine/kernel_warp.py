"""A warp inside a CTA: per-lane program counters and call stacks, and the per-thread memory spaces
(``.local`` depots, ``.param``) that a plain :class:`~emulator.machine.warp.Warp` does not have."""

import numpy as np

from ..errors import (MemoryAccessError, fail)
from ..memory import LANES, check_alignment, global_gather, global_scatter
from .warp import _DEFAULT_OPTIONS, Warp, _CpAsyncState


LANE = np.arange(LANES)
PARAM_BASE = 0x7E00_0000_0000          # generic addresses of kernel parameters (cvta.param)


_FROM: dict = {}


def _lanes_from(n):
    """(exited, present) of a warp whose first ``n`` lanes are threads: fresh bool[32] arrays (from a cache)."""
    got = _FROM.get(n)
    if got is None:
        ex = LANE >= n
        got = _FROM[n] = (ex, ~ex)
    return got[0].copy(), got[1].copy()


def _present(n):
    """The bool[32] of a warp's lanes that are threads (its first ``n``): a fresh array."""
    got = _FROM.get(n)
    if got is None:
        ex = LANE >= n
        got = _FROM[n] = (ex, ~ex)
    return got[1].copy()


class KernelWarp(Warp):
    """A warp inside a CTA: per-lane PCs and call stacks, .local / .param memory, shared CTA state."""

    @property
    def stacks(self):
        """Per lane, its stack of return PCs (made the first time a lane calls)."""
        if self._stacks is None:
            self._stacks = [[] for _ in range(LANES)]
        return self._stacks

    # shared-memory records the fast engine logged in numeric form, turned into SmemAccess when first read
    @property
    def _smem_log(self):
        pending = self.__dict__.get("_smem_pending")
        if pending:
            log = self.__dict__["_smem_records"]
            for make in pending:
                log.extend(make())
            pending.clear()
        return self.__dict__["_smem_records"]

    @_smem_log.setter
    def _smem_log(self, records):
        self.__dict__["_smem_records"] = records
        self.__dict__["_smem_pending"] = []

    # what every warp starts with (read from the class until a warp sets its own)
    _stacks = None                     # per-lane call stacks, made at the first call (``stacks``)
    depth = 0                          # number of lanes inside a call
    issued = 0
    fast = None                        # the fast engine's per-warp state (machine.fastcore), if used
    _stall = None                      # (lanes, reason) set by an executor that cannot go on
    _yield = None                      # set by an executor that lets the other warps run
    _last_yield = None
    _force = False                     # machine.convergence: lift the waits of the next pick (nothing else can go on)
    back_taken = 0                     # spin detection (machine.cta): backward branches taken
    _spin_snap = None
    _spin_yield = False
    _yield_digest = None

    def __init__(self, cta, program, warp_id, nthreads_here, smem, gmem, arch, options, param_init, local_bases,
                 local_size, trace, param=None, rows=None, symbols=None):
        self._cta = cta
        # Warp.__init__'s state, without its checks (the launch checked arch, gmem and options); a warp of the
        # fast engine's CTA loop (``rows``) gets its cp.async table when the loop binds it (FastCTA.bind)
        self.arch = arch
        self.gmem = gmem
        self.options = options = options or _DEFAULT_OPTIONS
        self.smem_log_cap = options.bank_log if options.bank_log is not None else 1 << 62
        self.smem_log_dropped = 0
        self._smem_n = 0
        self.smem = smem
        self.warp_id = warp_id
        self.regs = {}
        self.symbols = {} if symbols is None else symbols
        self.special_values = {}
        self.cp_async = _CpAsyncState() if rows is None else None
        self.smem_inflight = cta.smem_inflight
        self.__dict__["_smem_records"] = []
        self.__dict__["_smem_pending"] = []
        self._programs = {}
        self.clock = 0
        self.program = program
        self.reg_types = program.reg_types
        if rows is None:
            self.pc = np.zeros(LANES, np.int64)
            self.exited, self.present = _lanes_from(nthreads_here)
            self.waiting = np.zeros(LANES, np.bool_)
        else:               # (pc, exited, waiting): rows of the fast engine's CTA arrays (FastCTA), which set them
            self.pc, self.exited, self.waiting = rows
            self.present = _present(nthreads_here)
        self.present_bits = (1 << min(max(int(nthreads_here), 0), LANES)) - 1     # lanes 0..n-1
        # per lane, an id of its chain of call sites (equal ids: the lanes' PCs compare directly)
        self.chain_id = np.zeros(LANES, np.int64)
        self._chains = {(): 0}             # chain of return PCs -> id
        self._chain_of = {0: ()}           # id -> chain
        # per lane, a copy of the launch's parameter bytes (``param``: this warp's rows of the CTA's block)
        self.param = param_init[None, :].repeat(LANES, axis=0) if param is None else param
        self.local_bases = local_bases     # uint64 (32,)
        self.local_size = local_size
        self.dynamic_base = program.shared_static
        self.trace = trace
        self._written = [] if trace else None
        self._async = cta.async_unit
        self.held = np.zeros(LANES, np.bool_)     # lanes held back by a spin check
        self.spins = {}                    # pc of the backward branch -> (lanes, what the loop waits for)

    def _inflight_counts(self):
        return self._cta.smem_inflight          # the CTA's (Warp.__init__ asks for it)

    def __repr__(self):
        from ..ops.common import format_lanes
        live = ~self.exited & self.present
        state = []
        if self.exited[self.present].all():
            state.append("exited")
        else:
            run = live & ~self.waiting
            if run.any():
                state.append(f"lanes {format_lanes(np.flatnonzero(run))} at pc {sorted(set(self.pc[run].tolist()))[:4]}")
            if (live & self.waiting).any():
                state.append(f"lanes {format_lanes(np.flatnonzero(live & self.waiting))} waiting")
        return (f"<KernelWarp CTA {tuple(self._cta.ctaid)} warp {self.warp_id} ({self.arch}): "
                f"{int(self.present.sum())} thread(s), {'; '.join(state)}, {self.issued} instructions issued>")

    # -- the scheduler protocol (see machine.cta) ----------------------------------------------------
    def stall(self, mask, reason):
        self._stall = (mask.copy(), reason)
        return True

    def yield_turn(self, reason=None):
        self._yield = reason or True

    # -- the cluster ------------------------------------------------------------------------------------
    @property
    def cluster(self):
        return self._cta.cluster

    @property
    def cluster_rank(self):
        return self._cta.rank

    @property
    def cluster_size(self):
        return self._cta.cluster.size

    def peer(self, instr, rank, lane=None, addr=None):
        if rank == self._cta.rank:
            return self
        ctas = self._cta.cluster.ctas
        if 0 <= rank < len(ctas):
            other = ctas[rank]
            if all(w.exited.all() for w in other.warps):
                from ..errors import MemoryAccessError, fail
                fail(MemoryAccessError, instr, f"reaches the shared memory of CTA {other.ctaid} (rank {rank}) of the "
                     f"cluster, whose threads have all exited: its shared memory is gone (a CTA must not exit "
                     f"while others may still access it; barrier.cluster before exiting)", lane)
            return other.warps[0]
        return super().peer(instr, rank, lane, addr)

    def state_digest(self):
        """A digest of everything a lane's next steps depend on besides memory: registers, PCs, exits."""
        if self.fast is not None:          # the fast engine's registers: one arena, and a few others
            return digest_of(self.fast.arena, self.regs.other, self.pc, self.exited, self.param)
        return digest_of(None, self.regs, self.pc, self.exited, self.param)

    def tensormap_bytes(self, instr, space, addr, lane):
        if space == "param" or (space is None and PARAM_BASE <= addr < PARAM_BASE + self.param.shape[1]):
            off = addr - PARAM_BASE if space is None else addr
            if off < 0 or off + 128 > self.param.shape[1]:
                fail(MemoryAccessError, instr, f"tensor map at param offset {off:#x} runs past the parameters", lane)
            return self.param[lane, off:off + 128].copy()
        return super().tensormap_bytes(instr, space, addr, lane)

    # shared cp.async bookkeeping of the CTA
    @property
    def _inflight_n(self):
        return self._cta.inflight_n

    @_inflight_n.setter
    def _inflight_n(self, v):
        self._cta.inflight_n = v

    def set_reg(self, name, values, mask):
        super().set_reg(name, values, mask)
        if self._written is not None:
            self._written.append(name)

    # -- address spaces ----------------------------------------------------------------------------
    def cvta(self, space, values, to):
        if space == "local":
            v = values.astype(np.uint64)
            out = v - self.local_bases if to else v + self.local_bases
            return out.astype(values.dtype)
        if space == "param":                  # kernel parameters get a generic window of their own
            v = values.astype(np.uint64)
            out = v - np.uint64(PARAM_BASE) if to else v + np.uint64(PARAM_BASE)
            return out.astype(values.dtype)
        if space == "const":
            return values
        return super().cvta(space, values, to)

    def _local_addrs(self, instr, addrs, mask, nbytes):
        a = addrs.astype(np.int64)
        bad = mask & ((a < 0) | (a + nbytes > self.local_size))
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            fail(MemoryAccessError, instr, f"local address {int(a[lane]):#x} (+{nbytes} bytes) is outside the "
                 f"thread's .local memory ({self.local_size} bytes)", lane)
        return (a.astype(np.uint64) + self.local_bases).astype(np.uint64)

    def space_load(self, instr, space, addrs, mask, nbytes, align):
        check_alignment(instr, addrs, mask, align)
        if space == "local":
            return global_gather(self.gmem, instr, self._local_addrs(instr, addrs, mask, nbytes), mask, nbytes)
        if space == "const":
            return global_gather(self.gmem, instr, addrs, mask, nbytes)
        if space == "param":
            a = self._param_addrs(instr, addrs, mask, nbytes)
            out = np.zeros((LANES, nbytes), np.uint8)
            lanes = np.flatnonzero(mask)
            out[lanes] = self.param[lanes[:, None], a[lanes][:, None] + np.arange(nbytes)]
            return out
        return super().space_load(instr, space, addrs, mask, nbytes, align)

    def space_store(self, instr, space, addrs, mask, data, align):
        check_alignment(instr, addrs, mask, align)
        nbytes = data.shape[1]
        if space == "local":
            return global_scatter(self.gmem, instr, self._local_addrs(instr, addrs, mask, nbytes), mask, data)
        if space == "param":
            a = self._param_addrs(instr, addrs, mask, nbytes)
            lanes = np.flatnonzero(mask)
            self.param[lanes[:, None], a[lanes][:, None] + np.arange(nbytes)] = data[lanes]
            return None
        if space == "const":
            fail(MemoryAccessError, instr, ".const memory is read-only")
        return super().space_store(instr, space, addrs, mask, data, align)

    def _param_addrs(self, instr, addrs, mask, nbytes):
        a = addrs.astype(np.int64)
        bad = mask & ((a < 0) | (a + nbytes > self.param.shape[1]))
        if bad.any():
            lane = int(np.flatnonzero(bad)[0])
            fail(MemoryAccessError, instr, f"param address {int(a[lane]):#x} (+{nbytes} bytes) is outside the "
                 f".param space", lane)
        return a


def digest_of(arena, regs, pc, exited, param):
    """``KernelWarp.state_digest`` of a warp state: the fast engine's arena (or None), the other registers by name,
    PCs, exits and .param bytes (the CTA loop digests a copy kept at a warp's last yield: fastcore.ctaloop)."""
    import hashlib
    h = hashlib.blake2b(digest_size=16)
    if arena is not None:
        h.update(arena)
    for name in sorted(regs):
        h.update(name.encode())
        h.update(np.ascontiguousarray(regs[name]).tobytes())
    h.update(pc.tobytes())
    h.update(exited.tobytes())
    h.update(param.tobytes())
    return h.digest()
