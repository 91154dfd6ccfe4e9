"""A warp's ``cp.async.bulk.commit_group`` / ``wait_group`` (``AsyncUnit.commit_lanes`` / ``wait_group_lanes``, one
pass over the copies in flight) against the thread-by-thread definition (``commit`` / ``wait_group`` lane after lane):
the same copies complete, in the same order, with the same groups and the same copies left in flight."""
import numpy as np
import pytest

from emulator.memory.asyncunit import AsyncCopy, AsyncUnit


def _unit(rng, done):
    u = AsyncUnit(64)
    for i in range(int(rng.integers(0, 40))):
        warp, lane = int(rng.integers(0, 2)), int(rng.integers(0, 6))
        u.issue(AsyncCopy("store", "t", warp, lane, 0, (lambda i=i: done.append(i)), grouped=bool(rng.random() < 0.9),
                          info={"i": i}))
        if rng.random() < 0.3:                 # some copies committed before the instruction under test
            u.commit(warp, lane)
    return u


def _state(u, done):
    return (list(done), [(c.info["i"], c.group) for c in u.pending], dict(u.committed), u.mbarriers.version)


@pytest.mark.parametrize("seed", range(40))
def test_a_warps_groups_equal_its_threads_one_by_one(seed):
    for what in ("commit", "wait"):
        rng = np.random.default_rng(seed)
        done_a, done_b = [], []
        a, b = _unit(rng, done_a), _unit(np.random.default_rng(seed), done_b)
        lanes = sorted(set(rng.integers(0, 6, size=int(rng.integers(1, 7))).tolist()))
        keep = int(rng.integers(0, 3))
        for u in (a, b):                       # (the same history on both: a commit first for the wait)
            for lane in lanes:
                u.commit(0, lane)
        if what == "commit":
            a.commit_lanes(0, lanes)
            for lane in lanes:
                b.commit(0, lane)
        else:
            a.wait_group_lanes(0, lanes, keep)
            for lane in lanes:
                b.wait_group(0, lane, keep)
        assert _state(a, done_a) == _state(b, done_b)


def test_the_comparison_can_fail():
    """Completing every selected copy in issue order (lanes mixed) is told apart from lane after lane."""
    done = []
    u = AsyncUnit(64)
    for i, lane in enumerate((1, 0, 1, 0)):
        u.issue(AsyncCopy("store", "t", 0, lane, 0, (lambda i=i: done.append(i)), grouped=True, info={"i": i}))
    u.commit_lanes(0, [0, 1])
    u.wait_group_lanes(0, [0, 1], 0)
    assert done == [1, 3, 0, 2] and not u.pending
