"""Global memory (allocations at 64-bit device addresses) and per-lane byte access to any byte array.

Every access is bounds- and alignment-checked; a violation raises an error naming the instruction,
the lane and the rule.
"""
from __future__ import annotations

import bisect

import numpy as np

from ..errors import AlignmentError, MemoryAccessError, fail

LANES = 32

# Sizes the H100 allows, checked before anything is allocated.
MAX_SHARED_BYTES = 227 * 1024          # shared memory of one CTA (static + dynamic, the opt-in maximum)
MAX_LOCAL_BYTES = 512 * 1024           # .local memory of one thread
MAX_ALLOC_BYTES = 1 << 34              # one global allocation (16 GiB; the host has to hold it)


def _int(v, where, what):
    """An integer argument (a float with an integer value is accepted, as before), or MemoryAccessError."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer, float, np.floating)) or \
            (isinstance(v, (float, np.floating)) and not float(v).is_integer()):
        raise MemoryAccessError(f"{where}: {what} must be an integer, not {v!r:.40}")
    return int(v)


def _raw_bytes(data, where):
    """The bytes of a numpy array (or of what np.asarray makes of ``data``): numbers, bools, bytes."""
    if isinstance(data, (bytes, bytearray)):
        return np.frombuffer(bytes(data), np.uint8)
    nbytes = getattr(data, "nbytes", 0)
    if isinstance(nbytes, (int, np.integer)) and nbytes > MAX_ALLOC_BYTES:
        raise MemoryAccessError(f"{where}: {nbytes} bytes is more than one allocation may take "
                                f"({MAX_ALLOC_BYTES} bytes)")
    try:
        a = np.ascontiguousarray(data)
    except (TypeError, ValueError) as e:
        raise MemoryAccessError(f"{where}: cannot take the bytes of {type(data).__name__} ({e})") from None
    if a.dtype.hasobject or a.dtype.kind == "U":
        raise MemoryAccessError(f"{where}: an array of {a.dtype} has no device bytes; pass numbers")
    return a.view(np.uint8).reshape(-1)


def _alloc_args(nbytes, fill):
    """``GlobalMemory.alloc``'s arguments checked: (size, fill byte), or MemoryAccessError naming what is wrong."""
    fill = 0 if fill is None else fill
    nbytes = _int(nbytes, "GlobalMemory.alloc", "nbytes")
    if _int(fill, "GlobalMemory.alloc", "fill") not in range(256):
        raise MemoryAccessError(f"GlobalMemory.alloc: fill must be a byte value 0..255, not {fill}")
    if nbytes < 0:
        raise MemoryAccessError(f"GlobalMemory.alloc: size {nbytes} is negative")
    if nbytes > MAX_ALLOC_BYTES:
        raise MemoryAccessError(f"GlobalMemory.alloc: {nbytes} bytes is more than one allocation may take "
                                f"({MAX_ALLOC_BYTES} bytes)")
    return nbytes, int(fill)


class GlobalMemory:
    """Device global memory as a set of allocations.

    ``upload`` copies an array's bytes in and returns its device address (256-byte aligned);
    ``download`` copies bytes back out. Allocations are separated by unmapped gaps, so an access that runs
    off the end of one is reported rather than landing silently in the next.
    """

    BASE = 0x7F00_0000_0000
    ALIGN = 256
    GAP = 4096

    def __init__(self):
        self._bases: list[int] = []
        self._bufs: list[np.ndarray] = []
        self._next = self.BASE
        # allocations made by alloc() without a fill, for the sanitizer's initcheck: address -> None (nothing
        # written yet) or a bool array of the bytes written (by write() or a watched kernel). upload(), map(),
        # alloc(fill=...) and any launch that is not sanitised leave an allocation out (initialised).
        self._uninit: dict[int, np.ndarray | None] = {}

    def __repr__(self):
        return f"<GlobalMemory: {len(self._bufs)} allocation(s), {sum(b.size for b in self._bufs)} bytes>"

    # -- allocation ------------------------------------------------------------------------------
    def alloc(self, nbytes: int, fill: int | None = None) -> int:
        """Reserve ``nbytes`` of zero-filled (or ``fill``-filled) memory; returns its address. Without ``fill``
        the bytes read as zero but count as uninitialised for the sanitizer (docs/sanitize.md) until written."""
        fresh = fill is None
        if type(nbytes) is not int or not 0 <= nbytes <= MAX_ALLOC_BYTES or \
                not (fresh or (type(fill) is int and 0 <= fill < 256)):     # (plain arguments: checked here)
            nbytes, fill = _alloc_args(nbytes, fill)
        try:
            buf = np.zeros(nbytes, np.uint8) if not fill else np.full(nbytes, fill, dtype=np.uint8)
        except MemoryError:
            raise MemoryAccessError(f"GlobalMemory.alloc: the host cannot hold {nbytes} bytes") from None
        addr = self._place(buf, nbytes)
        if fresh and nbytes:
            self._uninit[addr] = None
        return addr

    def _place(self, buf, nbytes):
        """Give ``buf`` (a new allocation of ``nbytes``) the next free address; returns it."""
        span = -(-max(nbytes, 1) // self.ALIGN) * self.ALIGN
        addr = self._next
        bases = self._bases
        if bases and addr < bases[-1] + max(self._bufs[-1].size, 1) + self.GAP or \
                bases and bases[-1] > addr:         # (an allocation mapped at an exact address is in the way)
            addr = self._free(span)
        self._insert(addr, buf)
        self._next = addr + span + self.GAP
        return addr

    def upload(self, array) -> int:
        """Copy the bytes of ``array`` (any numpy array, C order) into a new allocation."""
        if type(array) is np.ndarray and array.flags.c_contiguous and array.dtype.kind not in "OUV" and \
                array.nbytes <= MAX_ALLOC_BYTES:    # (the common case: the array's bytes copied in one go)
            buf = array.reshape(-1).view(np.uint8).copy()
        else:
            raw = _raw_bytes(array, "GlobalMemory.upload")
            buf = np.zeros(raw.size, np.uint8)
            buf[:] = raw
        return self._place(buf, buf.size)

    def map(self, array: np.ndarray, phase: int = 0, at: int | None = None) -> int:
        """Place an existing C-contiguous, writeable numpy array in global memory without copying: the
        kernel reads and writes the array's own bytes. Returns its address: 256-byte aligned, plus ``phase``
        (0..255) to give the array the alignment its host address has. ``at`` places the array at that
        exact address instead (for example the one it had on a GPU, so that recorded argument bytes that hold
        device pointers need no patching); it must not overlap another allocation."""
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous or not array.flags.writeable:
            raise MemoryAccessError("GlobalMemory.map: needs a C-contiguous, writeable numpy array; use "
                                    "upload() to copy any other array in")
        if array.dtype.hasobject or array.dtype.kind in "UM":
            raise MemoryAccessError(f"GlobalMemory.map: an array of {array.dtype} has no device bytes; map numbers")
        phase = _int(phase, "GlobalMemory.map", "phase")
        if phase not in range(self.ALIGN):
            raise MemoryAccessError(f"GlobalMemory.map: phase must be 0..{self.ALIGN - 1}, not {phase}")
        raw = array.reshape(-1).view(np.uint8)
        if at is not None:
            return self._map_at(raw, _int(at, "GlobalMemory.map", "at"))
        span = -(-max(raw.size + phase, 1) // self.ALIGN) * self.ALIGN
        start = self._free(span)
        self._insert(start + phase, raw)
        self._next = start + span + self.GAP
        return start + phase

    def _free(self, span):
        """The lowest 256-aligned address at or above the next free one where ``span`` bytes (and a gap)
        fit between the allocations placed at exact addresses by ``map(at=)``."""
        addr = self._next
        i = bisect.bisect_right(self._bases, addr)
        if i and addr < self._bases[i - 1] + max(self._bufs[i - 1].size, 1) + self.GAP:
            addr = -(-(self._bases[i - 1] + max(self._bufs[i - 1].size, 1) + self.GAP) // self.ALIGN) * self.ALIGN
        while i < len(self._bases) and addr + span + self.GAP > self._bases[i]:
            addr = -(-(self._bases[i] + max(self._bufs[i].size, 1) + self.GAP) // self.ALIGN) * self.ALIGN
            i += 1
        return addr

    def _insert(self, addr, buf):
        bases = self._bases
        if not bases or addr > bases[-1]:       # (the common case: above every allocation)
            bases.append(addr)
            self._bufs.append(buf)
            return
        i = bisect.bisect_right(bases, addr)
        bases.insert(i, addr)
        self._bufs.insert(i, buf)
        # an allocation below another: the fast engine's table of this memory (engine.global_table) is made anew
        self._reorders = self.__dict__.get("_reorders", 0) + 1

    def _map_at(self, raw, addr):
        if addr <= 0 or addr + raw.size > 1 << 64:
            raise MemoryAccessError(f"GlobalMemory.map: address {addr:#x} is not a 64-bit device address")
        i = bisect.bisect_right(self._bases, addr)
        prev = (self._bases[i - 1], self._bufs[i - 1].size) if i else None
        if prev is not None and addr < prev[0] + max(prev[1], 1):
            raise MemoryAccessError(f"GlobalMemory.map: address {addr:#x} lies inside the allocation at "
                                    f"{prev[0]:#x} (+{prev[1]} bytes)")
        if i < len(self._bases) and addr + max(raw.size, 1) > self._bases[i]:
            raise MemoryAccessError(f"GlobalMemory.map: {raw.size} bytes at {addr:#x} overlap the allocation "
                                    f"at {self._bases[i]:#x}")
        self._insert(addr, raw)
        return addr

    def download(self, addr: int, nbytes: int) -> np.ndarray:
        """A copy of ``nbytes`` bytes at ``addr`` as np.ndarray[uint8]."""
        if type(addr) is not int or type(nbytes) is not int:
            addr = _int(addr, "GlobalMemory.download", "addr")
            nbytes = _int(nbytes, "GlobalMemory.download", "nbytes")
        buf, off = self._locate(addr, nbytes, "GlobalMemory.download")
        return buf[off:off + nbytes].copy()

    def write(self, addr: int, data) -> None:
        """Overwrite bytes at ``addr`` with the bytes of ``data``."""
        raw = _raw_bytes(data, "GlobalMemory.write")
        buf, off = self._locate(addr if type(addr) is int else _int(addr, "GlobalMemory.write", "addr"), raw.size,
                                "GlobalMemory.write")
        buf[off:off + raw.size] = raw
        if self._uninit:
            self._mark_written(np.array([int(addr)], np.int64), raw.size)

    def _mark_written(self, addrs, nbytes):
        """Bytes [a, a + nbytes) for each a in ``addrs`` now hold written data (the sanitizer's initcheck)."""
        bases = np.asarray(self._bases, np.int64)
        a = np.asarray(addrs, np.int64)
        which = np.searchsorted(bases, a, "right") - 1
        for i in np.unique(which):
            base = int(bases[i]) if i >= 0 else -1
            if base not in self._uninit:
                continue
            init = self._uninit[base]
            if init is None:
                init = self._uninit[base] = np.zeros(self._bufs[i].size, np.bool_)
            off = a[which == i] - base
            init[np.clip(off[:, None] + np.arange(nbytes), 0, init.size - 1)] = True

    def view(self, addr: int, nbytes: int) -> np.ndarray:
        """A live uint8 view of ``nbytes`` at ``addr``."""
        addr, nbytes = _int(addr, "GlobalMemory.view", "addr"), _int(nbytes, "GlobalMemory.view", "nbytes")
        buf, off = self._locate(addr, nbytes, "GlobalMemory.view")
        return buf[off:off + nbytes]

    def allocations(self):
        """[(address, size)] of every allocation."""
        return [(b, buf.size) for b, buf in zip(self._bases, self._bufs)]

    # -- lookup ----------------------------------------------------------------------------------
    def _find(self, addr: int, nbytes: int):
        i = bisect.bisect_right(self._bases, addr) - 1
        if i < 0:
            return None
        off = addr - self._bases[i]
        buf = self._bufs[i]
        if off + nbytes > buf.size:
            return None
        return buf, off

    def _locate(self, addr, nbytes, instr, lane=None):
        hit = self._find(addr, nbytes)
        if hit is None:
            fail(MemoryAccessError, instr, f"global address {addr:#x} (+{nbytes} bytes) is outside every "
                 f"global allocation", lane)
        return hit


# ------------------------------------------------------------------------------------------------
# Per-lane access helpers. ``addrs`` is an int64/uint64 array of 32 addresses, ``mask`` the active lanes.

def count_rows(counter: np.ndarray, starts, width: int, delta: int):
    """``counter[s:s + width] += delta`` for every start ``s`` (``np.add.at`` over the rows, which may overlap;
    rows that do not overlap, the common case, take one fancy-indexed update)."""
    starts = np.asarray(starts, np.int64)
    idx = starts[:, None] + np.arange(width)
    srt = np.sort(starts)
    if srt.size < 2 or (np.diff(srt) >= width).all():
        counter[idx] += delta
    else:
        np.add.at(counter, idx, delta)


def check_alignment(instr, addrs, mask, align, what="address"):
    bad = mask & ((addrs.astype(np.int64) % align) != 0)
    if bad.any():
        lane = int(np.flatnonzero(bad)[0])
        fail(AlignmentError, instr, f"{what} {int(addrs[lane]):#x} is not {align}-byte aligned", lane)


def check_bounds(instr, addrs, mask, nbytes, size, space="shared"):
    a = addrs.astype(np.int64)
    bad = mask & ((a < 0) | (a + nbytes > size))
    if bad.any():
        lane = int(np.flatnonzero(bad)[0])
        fail(MemoryAccessError, instr, f"{space} address {int(a[lane]):#x} (+{nbytes} bytes) is outside "
             f"{space} memory ({size} bytes)", lane)


def gather(mem: np.ndarray, addrs, mask, nbytes):
    """Bytes at each active lane's address: (32, nbytes) uint8 (inactive lanes read as zero)."""
    out = np.zeros((LANES, nbytes), np.uint8)
    idx = np.flatnonzero(mask)
    if idx.size:
        a = addrs[idx].astype(np.int64)
        out[idx] = mem[a[:, None] + np.arange(nbytes)]
    return out


def store_order(mask, nbytes):
    """The active lanes of a store in the order in which their bytes land, so that the last write of a byte is
    the one that stays. Where several lanes of one instruction store to the same bytes, the H100 keeps the
    lowest lane of the last phase that writes them: an access of ``nbytes`` per lane is served in phases of
    ``32 / max(1, nbytes / 4)`` lanes (one phase up to 32 bits, lanes 0-15 then 16-31 for 64 bits, four
    phases of 8 lanes for 128 bits), one after the other, and within a phase the lowest lane wins (measured on
    shared and global memory: tools/hwcapture/divergence/stores.cu)."""
    lanes = np.flatnonzero(mask)
    if nbytes <= 4:
        return lanes[::-1]
    per = LANES // (nbytes // 4)
    return lanes[np.lexsort((-lanes, lanes // per))]


def scatter(mem: np.ndarray, addrs, mask, data):
    """Write data (32, nbytes) at each active lane's address, in ``store_order`` (the H100's survivor of
    lanes that store to the same bytes stays)."""
    nbytes = data.shape[1]
    for lane in store_order(mask, nbytes):
        a = int(addrs[lane])
        mem[a:a + nbytes] = data[lane]


def global_gather(gmem: GlobalMemory, instr, addrs, mask, nbytes):
    out = np.zeros((LANES, nbytes), np.uint8)
    lanes = np.flatnonzero(mask)
    if not lanes.size:
        return out
    a = addrs.astype(np.uint64)
    lo, hi = int(a[lanes].min()), int(a[lanes].max())
    hit = gmem._find(lo, hi - lo + nbytes)
    if hit is not None:                              # fast path: one allocation serves every lane
        buf, off = hit
        rel = (a[lanes] - np.uint64(lo)).astype(np.int64) + off
        out[lanes] = buf[rel[:, None] + np.arange(nbytes)]
        return out
    for lane in lanes:
        buf, off = gmem._locate(int(a[lane]), nbytes, instr, lane)
        out[lane] = buf[off:off + nbytes]
    return out


def global_scatter(gmem: GlobalMemory, instr, addrs, mask, data):
    nbytes = data.shape[1]
    a = addrs.astype(np.uint64)
    targets = {lane: gmem._locate(int(a[lane]), nbytes, instr, lane) for lane in np.flatnonzero(mask)}  # check all
    for lane in store_order(mask, nbytes):                                                             # first
        buf, off = targets[lane]
        buf[off:off + nbytes] = data[lane]
