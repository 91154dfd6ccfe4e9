"""A CTA's block of arrays (``fastcore.engine._small_pages``): still zeros, the same array, and on Linux advised
onto small pages (the kernel's VmFlags for its mapping show ``nh``)."""
import sys

import numpy as np
import pytest

from emulator.machine.fastcore.engine import _small_pages


def _vmflags(addr):
    with open("/proc/self/smaps") as f:
        inside = False
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and all(c in "0123456789abcdef-" for c in head[0]):
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                inside = lo <= addr < hi
            elif inside and line.startswith("VmFlags:"):
                return head[1:]
    return None


def test_block_stays_zero_and_is_the_same_array():
    b = np.zeros(6 << 20, np.uint8)
    assert _small_pages(b) is b
    assert not b.any()
    small = np.zeros(4096, np.uint8)
    assert _small_pages(small) is small


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise and /proc/self/smaps are Linux's")
def test_block_is_on_small_pages():
    b = _small_pages(np.zeros(8 << 20, np.uint8))
    b[::4096] = 1                           # (touched after the advice, as a CTA touches its block)
    flags = _vmflags(b.ctypes.data + (4 << 20))
    assert flags is not None and "nh" in flags, flags
    assert int(b.sum()) == b.size // 4096
