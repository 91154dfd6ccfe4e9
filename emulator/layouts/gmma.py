"""CuTe's GMMA shared-memory atoms (``GMMA::Layout_K_SW128_Atom`` and friends, cute/atom/mma_traits_sm90_gmma.hpp)
and Triton's NVMMA shared swizzles, checked against the wgmma descriptor reading that the H100 captures pinned
(``emulator.ops.wgmma.desc``).

An atom is 8 rows of W bytes (K-major: a row per M/N index, W bytes of K; MN-major: a row per k, W bytes of
M/N), W = 16 (INTER, no swizzle), 32, 64 or 128, with ``Swizzle<log2(W/16), 4, 3>`` on byte offsets:
element (i, j) of a K-major atom lives at byte ``Swizzle(i * W + j * e)``, of an MN-major atom at
``Swizzle(j * W + i * e)`` (i along M/N, j along K, e the element size).
"""
import math

import numpy as np

from .cute import Layout, Swizzle
from .swizzle import nvmma

ATOMS = {f"Layout_{m}_{s}_Atom": (m, w) for m in ("K", "MN")
         for s, w in (("INTER", 16), ("SW32", 32), ("SW64", 64), ("SW128", 128))}


def atom(name, elem_bytes=2):
    """(Swizzle on byte offsets, Layout (mn, k) -> element offset) of a CuTe GMMA atom."""
    major, w = ATOMS[name]
    per = w // elem_bytes
    sw = Swizzle(int(math.log2(w // 16)), 4, 3)
    if major == "K":
        return sw, Layout.parse(f"(_8,_{per}):(_{per},_1)")
    return sw, Layout.parse(f"(_{per},_8):(_1,_{per})")


def atom_addresses(name, elem_bytes=2):
    """Byte address of every element (mn, k) of the atom placed at address 0."""
    sw, L = atom(name, elem_bytes)
    rows, cols = (int(x) for x in L.shape)
    return np.array([[sw(L((i, j)) * elem_bytes) for j in range(cols)] for i in range(rows)], np.int64)


def check_atom(name, elem_bytes=2):
    """Mismatches [(mn, k, atom address, descriptor address)] between a CuTe atom and what wgmma reads through
    the canonical descriptor of that layout at address 0 (the part of the atom one instruction reads)."""
    from ..ops.wgmma import desc as D
    major, w = ATOMS[name]
    a = atom_addresses(name, elem_bytes)
    swz = 0 if w == 16 else w
    if major == "K":
        d = D.Descriptor.decode(D.canonical_descriptor(0, 8, False, swz, elem_bytes))
        k = min(w, 32) // elem_bytes
        got = D.element_addresses(d, 8, k, 8 * elem_bytes, False)
        want = a[:, :k]
    else:
        mn = w // elem_bytes
        d = D.Descriptor.decode(D.canonical_descriptor(0, mn, True, swz, elem_bytes))
        got = D.element_addresses(d, mn, 8, 8 * elem_bytes, True)
        want = a[:, :8]
    bad = np.argwhere(got != want)
    return [(int(i), int(j), int(want[i, j]), int(got[i, j])) for i, j in bad]


def check_nvmma(swizzle_bytes, rows=64, elem_bytes=2):
    """Triton's NVMMA shared layout of a row-major tile whose rows are ``swizzle_bytes`` long (the K-major
    operand tile Triton hands to wgmma): element (m, k) at ``nvmma(W)(m * W + k * e)``; mismatches against the
    canonical K-major descriptor's reading, over the 32 bytes of K of one instruction at each K step."""
    from ..ops.wgmma import desc as D
    W = swizzle_bytes
    sw = nvmma(W)
    bad = []
    for step in range(W // 32):
        d = D.Descriptor.decode(D.canonical_descriptor(32 * step, rows, False, W, elem_bytes))
        got = D.element_addresses(d, rows, 32 // elem_bytes, 8 * elem_bytes, False)
        for m in range(rows):
            for j in range(32 // elem_bytes):
                want = sw(m * W + 32 * step + j * elem_bytes)
                if want != got[m, j]:
                    bad.append((m, step * 32 // elem_bytes + j, want, int(got[m, j])))
    return bad
