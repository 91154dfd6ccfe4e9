"""mbarrier phases, transaction counts and waits (PTX ISA rules), on a lone warp and in kernels:
producer/consumer scheduling, seeded schedules, deadlock reports."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from emulator import MBarrierError, WarpSyncError, Warp, load_ptx
from emulator.memory.mbarrier import MBarriers


def test_phase_completes_on_arrivals_and_tx():
    w = Warp()
    w.run("""
        .reg .b64 %s<4>;
        .reg .pred %p<4>;
        mbarrier.init.shared::cta.b64 [64], 2;
        mbarrier.try_wait.parity.shared::cta.b64 %p0, [64], 1;   // the phase 'before' 0 counts as done
        mbarrier.test_wait.parity.shared::cta.b64 %p1, [64], 0;
    """)
    assert w.read("%p0").all() and not w.read("%p1").any()
    u = w.async_unit.mbarriers
    b = u.live[64]
    assert (b.phase, b.pending, b.tx) == (0, 2, 0)
    # 32 lanes arriving on a count-2 barrier breaks the rule: only lane 0 and 1 arrive here
    w.run("mbarrier.expect_tx.shared::cta.b64 [64], 256;")        # 32 lanes: tx 8192
    assert b.tx == 256 * 32
    u.arrive("t", 64)
    u.arrive("t", 64)
    assert b.phase == 0 and b.pending == 0                      # arrivals done, bytes outstanding
    u.complete_tx("t", 64, 256 * 32)
    assert (b.phase, b.pending, b.tx) == (1, 2, 0)
    w.run("mbarrier.test_wait.parity.shared::cta.b64 %p1, [64], 0;")
    assert w.read("%p1").all()


def test_arrive_state_and_pending_count():
    w = Warp()
    w.run("""
        .reg .b64 %s<2>;
        .reg .b32 %c;
        .reg .pred %p;
        mbarrier.init.shared.b64 [0], 100;
        mbarrier.arrive.shared.b64 %s0, [0];
        mbarrier.pending_count.b64 %c, %s0;
        mbarrier.test_wait.shared.b64 %p, [0], %s0;
    """)
    # each lane's state is taken before its own arrival: lane k sees 100 - k pending
    assert (w.read("%c") == 100 - np.arange(32)).all()
    assert not w.read("%p").any()
    assert w.async_unit.mbarriers.live[0].pending == 68


def test_complete_tx_before_expect_tx_is_allowed():
    u = MBarriers()
    u.init("t", 8, 1)
    u.complete_tx("t", 8, 64)          # negative transiently
    u.arrive("t", 8)
    assert u.live[8].phase == 0
    u.expect_tx("t", 8, 64)
    # expect_tx brings tx back to zero with no pending arrivals: the phase completes on the next event
    assert u.live[8].tx == 0


def test_errors():
    w = Warp()
    with pytest.raises(MBarrierError, match="no initialised mbarrier at shared address 0x40"):
        w.run(".reg .pred %p; mbarrier.try_wait.parity.shared.b64 %p, [64], 0;")
    with pytest.raises(MBarrierError, match="not 8-byte aligned"):
        w.run("mbarrier.init.shared.b64 [4], 1;")
    w.run("mbarrier.init.shared.b64 [0], 1;")
    with pytest.raises(MBarrierError, match="tx-count overflows"):
        w.run("mbarrier.expect_tx.shared.b64 [0], 1048575;")     # 32 lanes
    u = MBarriers()
    u.init("t", 0, 2)
    with pytest.raises(MBarrierError, match="arrive with count 3 but only 2"):
        u.arrive("t", 0, 3)
    with pytest.raises(MBarrierError, match="count 0 must be"):
        u.init("t", 8, 0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.lists(st.sampled_from(["arrive", "expect", "complete"]), max_size=30),
       st.integers(1, 300))
def test_phase_rule_fuzz(count, events, nbytes):
    """Against a direct statement of the rule: the phase advances exactly when pending reaches 0 with tx 0."""
    u = MBarriers()
    u.init("t", 0, count)
    phase, pending, tx = 0, count, 0
    for e in events:
        if e == "arrive":
            if pending == 0:
                continue
            u.arrive("t", 0)
            pending -= 1
        elif e == "expect":
            u.expect_tx("t", 0, nbytes)
            tx += nbytes
        else:
            u.complete_tx("t", 0, nbytes)
            tx -= nbytes
        if pending == 0 and tx == 0 and e != "expect":
            phase, pending = phase + 1, count
        b = u.live[0]
        assert (b.phase, b.pending, b.tx) == (phase, pending, tx)


# ------------------------------------------------------------------------------------------------
# kernels

DEADLOCK = r"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry stuck()
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    .shared .align 8 .b64 bar[2];
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    mov.u32 %r2, bar;
    @%p1 mbarrier.init.shared::cta.b64 [%r2], 2;
    bar.sync 0;
    setp.lt.u32 %p2, %r1, 32;
    @%p2 bra WAIT;
    mbarrier.arrive.shared::cta.b64 _, [%r2];
    ret;
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;
    @!%p1 bra WAIT;
    ret;
}
"""


def test_deadlock_names_warp_barrier_phase_and_counts():
    m = load_ptx(DEADLOCK)
    # 64 threads: warp 1's 32 arrivals on a count-2 barrier complete 16 phases; phase 16 has parity 0 again
    with pytest.raises(WarpSyncError, match="phase 16 \\(parity 0\\), 2 of 2"):
        m.launch("stuck", block=64)
    # 33 threads: one arrival of two; warp 0 waits forever
    with pytest.raises(WarpSyncError) as e:
        m.launch("stuck", block=33)
    msg = str(e.value)
    assert "deadlock" in msg and "warp 0 lanes 0-31" in msg and "parity 0" in msg
    assert "1 of 2 arrival(s) pending" in msg and "tx-count 0" in msg


SPIN = DEADLOCK.replace("mbarrier.try_wait.parity", "mbarrier.test_wait.parity")


def test_spinning_on_test_wait_is_a_deadlock_too():
    with pytest.raises(WarpSyncError, match="warp 0 spins: .*test_wait.*parity 0"):
        load_ptx(SPIN).launch("stuck", block=33)
