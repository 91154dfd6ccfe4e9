"""Spin detection, shared by the scheduler (machine.cta) and the fast engine (machine.fastcore), which must
count and check the same way: every SPIN_CHECK-th backward branch a warp takes, and the one after it, the
scheduler compares the warp's state (docs/api.md: Spin loops and independent thread scheduling)."""

SPIN_CHECK = 256
