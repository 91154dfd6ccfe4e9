"""Host buffers (torch CPU tensors, numpy arrays, ``triton.reinterpret`` wrappers) placed in global memory in
place: the kernel reads and writes the buffers' own bytes, no copy is made.

Each pointer argument names its whole buffer (a torch tensor's untyped storage, a numpy array's outermost
base). Buffers whose host bytes overlap (views of one storage, a numpy array and a tensor sharing memory,
two reinterpretations of one tensor) become one allocation, so aliasing arguments alias on the device too.
An allocation keeps the host address's offset modulo 256, so a pointer that is (or is not) 16-byte aligned
on the host is so in the emulator too, as Triton's specialiser assumed when it compiled the kernel.
Separate buffers stay separate allocations with unmapped gaps between them: an access that runs off one is
reported rather than landing in the next. Needs no Triton and no torch (torch objects are used by their
methods only).
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..errors import OperandError
from ..memory import GlobalMemory

try:                                            # numpy >= 2
    from numpy.lib.array_utils import byte_bounds as _byte_bounds
except ImportError:                             # pragma: no cover - numpy 1.x
    _byte_bounds = np.byte_bounds


def host_span(obj, what="argument"):
    """(pointer, lo, hi): the host address ``obj`` points at and the bounds of the whole buffer it lies in."""
    if isinstance(obj, np.ndarray):
        owner = obj
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        lo, hi = _byte_bounds(owner)
        return int(obj.__array_interface__["data"][0]), int(lo), int(hi)
    t = obj
    if not hasattr(t, "untyped_storage") and hasattr(t, "base"):      # triton.reinterpret's TensorWrapper
        t = t.base
    if not hasattr(t, "untyped_storage") or not hasattr(obj, "data_ptr"):
        raise OperandError(f"{what}: a pointer argument must be a torch CPU tensor, a numpy array, "
                           f"triton.reinterpret(...) of one, None or an integer address, not {type(obj).__name__}")
    dev = getattr(t, "device", None)
    if dev is not None and getattr(dev, "type", "cpu") != "cpu":
        raise OperandError(f"{what}: the tensor is on {dev}; the emulator runs on host memory: pass CPU "
                           f"tensors (device='cpu')")
    st = t.untyped_storage()
    lo = int(st.data_ptr())
    return int(obj.data_ptr()), lo, lo + int(st.nbytes())


def _host_bytes(lo, n):
    if n == 0:
        return np.zeros(0, np.uint8)
    return np.frombuffer((ctypes.c_uint8 * n).from_address(lo), np.uint8)


class HostMapping:
    """Where each host buffer of one launch lies in ``gmem`` (a fresh :class:`GlobalMemory` by default)."""

    def __init__(self, gmem: GlobalMemory | None = None):
        self.gmem = gmem if gmem is not None else GlobalMemory()
        self._regions = []                 # [(host lo, host hi, device base)], sorted by lo

    def place(self, objs, what="argument"):
        """Device addresses for ``objs`` (pointer arguments; None gives 0, an int is taken as an address)."""
        spans = [None if o is None or isinstance(o, (int, np.integer)) else host_span(o, what) for o in objs]
        new = sorted((lo, hi) for s in spans if s is not None for lo, hi in [s[1:]]
                     if not self._covered(lo, hi))
        merged = []
        for lo, hi in new:
            if merged and lo < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        for lo, hi in merged:
            base = self.gmem.map(_host_bytes(lo, hi - lo), phase=lo % GlobalMemory.ALIGN)
            self._regions.append((lo, hi, base))
        self._regions.sort()
        out = []
        for o, s in zip(objs, spans):
            if s is None:
                out.append(0 if o is None else int(o))
            else:
                out.append(self.device_address(s[0], s[1]))
        return out

    def _covered(self, lo, hi):
        return any(rlo <= lo and hi <= rhi for rlo, rhi, _ in self._regions)

    def device_address(self, ptr, lo=None):
        for rlo, rhi, base in self._regions:
            if rlo <= (ptr if lo is None else lo) and ptr <= rhi:
                return base + (ptr - rlo)
        raise OperandError(f"host address {ptr:#x} lies in no mapped buffer")
