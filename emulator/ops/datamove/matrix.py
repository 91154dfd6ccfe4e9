"""ldmatrix / stmatrix: the readable reference (the spec) and the numba fast path.

PTX ISA, "Warp-level matrix load instruction: ldmatrix" and "stmatrix": each 8x8 matrix of 16-bit
elements is 8 rows of 16 contiguous bytes; lane 8j+r gives the address of row r of matrix j. Without
.trans, lane l receives row l>>2, elements 2(l&3) and 2(l&3)+1 (low and high half of its register);
with .trans, it receives column l>>2, rows 2(l&3) and 2(l&3)+1. stmatrix is the exact inverse.
"""
from __future__ import annotations

import numba
import numpy as np

from ...numerics import jitcache

jitcache.prepare()          # before any cached function of the package loads

# ------------------------------------------------------------------------------------------------
# Reference: plain Python over plain ints (readable; used by tests to check the fast path).

def _u16(mem, a):
    return int(mem[a]) | (int(mem[a + 1]) << 8)


def ldmatrix_reference(smem, row_addrs, nmat, trans):
    """Registers d0..d(nmat-1) of every lane: a list of nmat lists of 32 ints (uint32 bits)."""
    out = []
    for j in range(nmat):
        rows = [[_u16(smem, int(row_addrs[8 * j + r]) + 2 * c) for c in range(8)] for r in range(8)]
        regs = []
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            if trans:
                lo, hi = rows[2 * t][g], rows[2 * t + 1][g]
            else:
                lo, hi = rows[g][2 * t], rows[g][2 * t + 1]
            regs.append(lo | (hi << 16))
        out.append(regs)
    return out


def stmatrix_reference(smem, row_addrs, regs, trans):
    """Write registers regs[j][lane] (uint32) to the rows addressed by lanes 8j..8j+7 (in place)."""
    for j, rj in enumerate(regs):
        rows = [[0] * 8 for _ in range(8)]
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            lo, hi = int(rj[lane]) & 0xFFFF, int(rj[lane]) >> 16
            if trans:
                rows[2 * t][g], rows[2 * t + 1][g] = lo, hi
            else:
                rows[g][2 * t], rows[g][2 * t + 1] = lo, hi
        for r in range(8):
            a = int(row_addrs[8 * j + r])
            for c in range(8):
                smem[a + 2 * c] = rows[r][c] & 0xFF
                smem[a + 2 * c + 1] = rows[r][c] >> 8


# ------------------------------------------------------------------------------------------------
# Fast path.

@numba.njit(cache=True)
def ldmatrix_fast(smem, row_addrs, nmat, trans, out):
    """out[j, lane] (uint32) for j < nmat; row_addrs: int64[32]."""
    for j in range(nmat):
        for lane in range(32):
            g = lane >> 2
            t = lane & 3
            if trans:
                a0 = row_addrs[8 * j + 2 * t] + 2 * g
                a1 = row_addrs[8 * j + 2 * t + 1] + 2 * g
                lo = np.uint32(smem[a0]) | (np.uint32(smem[a0 + 1]) << np.uint32(8))
                hi = np.uint32(smem[a1]) | (np.uint32(smem[a1 + 1]) << np.uint32(8))
            else:
                a = row_addrs[8 * j + g] + 4 * t
                lo = np.uint32(smem[a]) | (np.uint32(smem[a + 1]) << np.uint32(8))
                hi = np.uint32(smem[a + 2]) | (np.uint32(smem[a + 3]) << np.uint32(8))
            out[j, lane] = lo | (hi << np.uint32(16))


@numba.njit(cache=True)
def stmatrix_fast(smem, row_addrs, nmat, trans, regs):
    """Inverse of ldmatrix_fast: regs[j, lane] (uint32) written to shared memory."""
    for j in range(nmat):
        for lane in range(32):
            g = lane >> 2
            t = lane & 3
            v = regs[j, lane]
            lo = v & np.uint32(0xFFFF)
            hi = v >> np.uint32(16)
            if trans:
                a0 = row_addrs[8 * j + 2 * t] + 2 * g
                a1 = row_addrs[8 * j + 2 * t + 1] + 2 * g
            else:
                a0 = row_addrs[8 * j + g] + 4 * t
                a1 = a0 + 2
            smem[a0] = np.uint8(lo & np.uint32(0xFF))
            smem[a0 + 1] = np.uint8(lo >> np.uint32(8))
            smem[a1] = np.uint8(hi & np.uint32(0xFF))
            smem[a1 + 1] = np.uint8(hi >> np.uint32(8))


# ------------------------------------------------------------------------------------------------
# movmatrix .m8n8.trans.b16: lane 4r + c holds row r, columns 2c (low half) and 2c + 1 (high half)

def movmatrix_reference(regs):
    """Readable rule: d of lane 4r + c holds A[2c][r] (low half) and A[2c + 1][r] (high half)."""
    a = [[0] * 8 for _ in range(8)]
    for lane in range(32):
        r, c = divmod(lane, 4)
        a[r][2 * c], a[r][2 * c + 1] = int(regs[lane]) & 0xFFFF, int(regs[lane]) >> 16
    return [a[2 * (lane % 4)][lane // 4] | (a[2 * (lane % 4) + 1][lane // 4] << 16) for lane in range(32)]


def movmatrix_fast(regs):
    """The same on a (32,) uint32 array: the 8x8 halves transposed."""
    h = np.ascontiguousarray(regs, np.uint32).view(np.uint16).reshape(8, 8)
    return np.ascontiguousarray(h.T).view(np.uint32).reshape(32)
