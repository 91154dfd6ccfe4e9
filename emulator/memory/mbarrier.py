"""mbarrier objects (PTX ISA 9.7.13.15): a phase, a pending-arrival count and a transaction count.

A phase completes when its pending arrivals reach zero and its tx-count is zero; then the phase number
advances, the pending count is reloaded with the expected count and the tx-count restarts at zero.
``try_wait.parity p`` succeeds once the phase of parity ``p`` has completed, i.e. when the current phase's
parity differs from ``p``. The state of every barrier of a CTA lives in :class:`MBarriers`, keyed by its
shared-memory address.
"""
from __future__ import annotations

import numpy as np

from ..errors import MBarrierError, fail

COUNT_MAX = (1 << 20) - 1           # arrival counts: 1 .. 2^20 - 1
TX_MAX = (1 << 20) - 1              # tx-count: -(2^20 - 1) .. 2^20 - 1

# The state of a CTA's barriers is one int64 table (MBarriers.rows), one row per barrier, which the fast engine
# reads and writes too (machine/fastcore/asyncx.py): the columns below, then a copy of EXPECTED..TX the fast
# engine keeps while it applies an instruction (put back when a lane breaks a rule). ADDR -1: a free row.
ADDR, EXPECTED, PENDING, PHASE, TX = range(5)
NCOLS = 10


class MBarrier:
    """One barrier: its address, its history (for the timeline) and a view of its row of the table."""
    __slots__ = ("addr", "history", "_owner", "_row", "_kept")

    def __init__(self, owner, row, addr):
        self.addr, self.history, self._owner, self._row, self._kept = addr, [], owner, row, None

    def _get(self, col):
        if self._kept is not None:
            return self._kept[col - EXPECTED]
        return self._owner.rows.item(self._row, col)

    def _set(self, col, v):
        self._owner.rows[self._row, col] = v

    expected = property(lambda self: self._get(EXPECTED), lambda self, v: self._set(EXPECTED, v))
    pending = property(lambda self: self._get(PENDING), lambda self, v: self._set(PENDING, v))
    phase = property(lambda self: self._get(PHASE), lambda self, v: self._set(PHASE, v))
    tx = property(lambda self: self._get(TX), lambda self, v: self._set(TX, v))

    def _detach(self):
        """Keep the last values (an invalidated barrier: its row is free for another)."""
        self._kept = tuple(int(x) for x in self._owner.rows[self._row, EXPECTED:TX + 1])

    def state(self):
        """The opaque 64-bit state an arrive returns: the phase number and the pending count."""
        return (self.phase & 0xFFFFFFFF) << 32 | self.pending

    def describe(self):
        return (f"mbarrier at shared {self.addr:#x}: phase {self.phase} (parity {self.phase & 1}), "
                f"{self.pending} of {self.expected} arrival(s) pending, tx-count {self.tx}")


class MBarriers:
    """The mbarriers of one CTA (or one lone warp), keyed by shared-memory address."""

    def __init__(self):
        self.live: dict[int, MBarrier] = {}
        self.step = 0                     # the CTA's instruction count, for the history
        self.version = 0                  # bumped on every state change (the scheduler's progress signal)
        self.retired: list[MBarrier] = []  # invalidated barriers (their history stays for the timeline)
        self.rows = np.full((4, NCOLS), -1, np.int64)      # the state (see NCOLS); rows[:used] hold barriers
        self.used = 0

    def reserve(self, n):
        """Room for ``n`` barriers in the table (the fast engine's CTA loop initialises barriers in it, and hands a
        barrier that finds the table full back to Python, which grows it)."""
        if self.rows.shape[0] < n:
            grown = np.full((n, NCOLS), -1, np.int64)
            grown[:self.used] = self.rows[:self.used]
            self.rows = grown

    def _row(self, addr):
        """A free row of the table for a barrier at ``addr`` (the table grows when it is full)."""
        free = np.flatnonzero(self.rows[:self.used, ADDR] < 0)
        if free.size:
            return int(free[0])
        if self.used == self.rows.shape[0]:
            grown = np.full((2 * self.used, NCOLS), -1, np.int64)
            grown[:self.used] = self.rows
            self.rows = grown
        self.used += 1
        return self.used - 1

    def get(self, instr, addr, lane=None):
        b = self.live.get(int(addr))
        if b is None:
            fail(MBarrierError, instr, f"no initialised mbarrier at shared address {int(addr):#x} (mbarrier.init "
                 f"it first; an invalidated barrier must be initialised again)", lane)
        return b

    def _log(self, b, event):
        b.history.append((self.step, event, b.phase, b.pending, b.tx))
        self.version += 1

    def init(self, instr, addr, count, lane=None):
        if addr % 8:
            fail(MBarrierError, instr, f"mbarrier address {addr:#x} is not 8-byte aligned", lane)
        if not 1 <= count <= COUNT_MAX:
            fail(MBarrierError, instr, f"mbarrier.init count {count} must be 1..{COUNT_MAX}", lane)
        old = self.live.get(addr)
        row = old._row if old is not None else self._row(addr)
        if old is not None:
            old._detach()
        self.rows[row, :TX + 1] = (addr, count, count, 0, 0)
        b = self.live[addr] = MBarrier(self, row, addr)
        self._log(b, "init")

    def inval(self, instr, addr, lane=None):
        b = self.get(instr, addr, lane)
        self._log(b, "inval")
        b._detach()
        self.rows[b._row, ADDR] = -1
        self.retired.append(self.live.pop(int(addr)))

    def _complete_if_done(self, b):
        if b.pending == 0 and b.tx == 0:
            b.phase += 1
            b.pending = b.expected
            self._log(b, "phase")

    def expect_tx(self, instr, addr, nbytes, lane=None):
        b = self.get(instr, addr, lane)
        if b.tx + nbytes > TX_MAX:
            fail(MBarrierError, instr, f"tx-count overflows: {b.tx} + {nbytes} exceeds {TX_MAX} ({b.describe()})",
                 lane)
        b.tx += nbytes
        self._log(b, f"expect_tx {nbytes}")

    def complete_tx(self, instr, addr, nbytes, lane=None):
        b = self.get(instr, addr, lane)
        if b.tx - nbytes < -TX_MAX:
            fail(MBarrierError, instr, f"tx-count underflows: {b.tx} - {nbytes} is below -{TX_MAX} "
                 f"({b.describe()})", lane)
        b.tx -= nbytes
        self._log(b, f"complete_tx {nbytes}")
        if b.pending == 0:
            self._complete_if_done(b)

    def arrive(self, instr, addr, count=1, drop=False, lane=None):
        """One arrive-on operation; returns the state before it (for test_wait)."""
        b = self.get(instr, addr, lane)
        st = b.state()
        if count > b.pending:
            fail(MBarrierError, instr, f"arrive with count {count} but only {b.pending} arrival(s) are pending in "
                 f"this phase ({b.describe()})", lane)
        b.pending -= count
        if drop:
            b.expected -= count
        self._log(b, "arrive_drop" if drop else "arrive")
        if b.pending == 0 and b.tx < 0:
            pass                     # completes when the outstanding transactions land (tx back to zero)
        self._complete_if_done(b)
        return st

    def phase_done(self, instr, addr, parity, lane=None):
        """try_wait.parity / test_wait.parity: has the phase of this parity completed?"""
        return (self.get(instr, addr, lane).phase & 1) != (parity & 1)

    def state_done(self, instr, addr, state, lane=None):
        """try_wait / test_wait with a state from arrive: has that state's phase completed?"""
        return self.get(instr, addr, lane).phase != (state >> 32) & 0xFFFFFFFF
