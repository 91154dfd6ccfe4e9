"""Distributed shared memory: how a ``.shared::cluster`` address names a CTA of the cluster and a byte of its
shared memory.

Measured on the H100 (``tests/data/corpus``, cases ``nvcc_cluster_*``): a shared::cluster address is
``rank << 24 | offset``, and a CTA's own shared::cta addresses already carry its own rank in bits 24..31
(``mapa(a, r) - a == (r - own rank) << 24``); the generic window of the cluster's shared memory is one fixed
base plus the same 32-bit value. In the emulator every CTA's shared window starts at 0 (its shared::cta
addresses are plain offsets), so its shared::cluster addresses are the H100's minus the executing CTA's own
``rank << 24``: bits 24..31 hold ``(target rank - own rank) mod 256`` and bits 0..23 the offset. Differences
of addresses, ``getctarank`` and every access are the H100's; generic addresses of the cluster window are the
same 32-bit values (the emulator's generic shared window starts at 0).
"""
from __future__ import annotations

SHIFT = 24
OFFSET_MASK = (1 << SHIFT) - 1
WINDOW_END = 1 << 32          # generic addresses [0, 2^32) are the cluster's shared memory


def encode(target, own, offset):
    """The shared::cluster address of byte ``offset`` of CTA rank ``target``, seen from CTA rank ``own``."""
    return ((int(target) - int(own)) & 0xFF) << SHIFT | (int(offset) & OFFSET_MASK)


def target_rank(addr, own):
    """The CTA rank a shared::cluster address names, seen from CTA rank ``own``."""
    return (int(own) + (int(addr) >> SHIFT & 0xFF)) & 0xFF


def offset(addr):
    return int(addr) & OFFSET_MASK
