"""red.async and st.async against the H100, bit for bit (tests/data/atomics/async_*_sm90.npz).

Every red.async / st.async form ptxas 13 accepts for sm_90a ran on an H100 through the atomics harness
(tools/hwcapture/atomics/capture.py ``--only async_ss``, ``async_generic:st.async``, ``async_generic:red.async``;
each group in its own process, the kernels launched on clusters of two), over the same 2,048 edge-heavy operands
as the atom/red capture: each thread on its own cell of this CTA's shared memory (``ind``), of the other CTA of
the cluster (``remote``), and, red.async, 128 threads on four cells three times (``con``).  Each thread waits on
the mbarrier its update signals (complete_tx) and records the wait's result.

* one thread per address: memory and the recorded wait results equal the H100's on both engines;
* contended: each H100 run is an order of the lanes the emulator's update allows, and an order-free update's
  final value equals the H100's.

The default run takes a sample; ``-m slow`` runs every case.
"""
import os

import numpy as np
import pytest

import atomics_replay as R

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "atomics")
FILES = ("async_ss_sm90.npz", "async_st_generic_sm90.npz", "async_red_generic_sm90.npz")
CAPS = [R.capture(os.path.join(HERE, f)) for f in FILES]
CASES = [c for _, cases, _, _ in CAPS for c in cases]
ONE = [i for i, c in enumerate(CASES) if c["mode"] in ("ind", "remote")]
CON = [i for i, c in enumerate(CASES) if c["mode"] == "con"]
ORDER_FREE = {"add", "and", "or", "xor", "min", "max"}


def _id(i):
    c = CASES[i]
    return f"{c['form']['text'].split()[0]}@{c['mode']}"


def _sample(ids, n, seed):
    rng = np.random.default_rng(seed)
    return sorted(rng.choice(ids, min(n, len(ids)), replace=False).tolist())


def test_capture_is_what_it_claims():
    for meta, cases, _, _ in CAPS:
        assert meta["gpu"].startswith("NVIDIA H100") and meta["cc"] == "9.0" and not meta["errors"]
    assert len(CASES) == 239 + 120 + 39 and len(ONE) == 372 and len(CON) == 26
    texts = {c["form"]["text"] for c in CASES}
    bases = {c["form"]["base"] for c in CASES}
    assert bases == {"red.async", "st.async"}
    # every form once per mode: the 226 red.async/st.async forms ptxas accepts (tests/test_atomics_diff.py)
    assert len(texts) == 226
    for c in CASES:
        nb = R.form(c).nbytes
        for r in c["runs"]:
            assert R.want(c)[1].shape[1] == nb


def _check_one(i, engines=("reference", "fast")):
    c = CASES[i]
    wd, wm = R.want(c)
    for eng in engines:
        d, m = R.kernel_case(c, eng)
        assert (m == wm).all(), f"{eng}: memory differs on {(m != wm).any(axis=1).sum()} lanes"
        assert (d == wd).all(), f"{eng}: the mbarrier waits' results differ on {(d != wd).any(axis=1).sum()} lanes"


@pytest.mark.parametrize("i", _sample(ONE, 6, 3), ids=_id)
def test_one_thread_per_address_sample(i):
    _check_one(i)


@pytest.mark.slow
@pytest.mark.parametrize("i", ONE, ids=_id)
def test_one_thread_per_address_all(i):
    _check_one(i)


def _random_orders_reach(c, run, apply, tries=4000):
    """Whether some order of each cell's 32 lanes, among ``tries`` seeded random ones, ends at the H100's value
    (the fixed orders of ``serial_explains`` miss some of .inc's wrap-dependent finals)."""
    import atomic_kernels as K
    f = R.form(c)
    mem, b, cc = R.operands(c)
    bb, cc = b[K.CON_LANES], cc[K.CON_LANES]
    wm = R.want(c, run)[1]
    rng = np.random.default_rng(run)
    for cell in range(K.CON_CELLS):
        lanes = np.arange(cell, K.BLOCK, K.CON_CELLS)
        start, final = bytes(mem[K.CON_INIT + cell]), bytes(wm[cell])
        for _ in range(tries):
            cur = start
            for j in rng.permutation(lanes):
                cur = apply(f, cur, bytes(bb[j]), bytes(cc[j]))
            if cur == final:
                break
        else:
            return False
    return True


def _check_con(i):
    c = CASES[i]
    f = R.form(c)
    for run in range(len(c["runs"])):
        ok, why = R.serial_explains(c, run, R.apply_bytes(f, "loop"))
        if not ok and f.op in ("inc", "dec"):
            ok = _random_orders_reach(c, run, R.apply_bytes(f, "loop"))
        assert ok, f"H100 run {run} of {f.text}: {why}"
    d, m = R.kernel_case(c, "fast")
    if f.op in ORDER_FREE:
        assert len({r["mem"] for r in c["runs"]}) == 1
        assert (m == R.want(c)[1]).all(), "the final value of an order-free update differs from the H100"


@pytest.mark.parametrize("i", _sample(CON, 2, 4), ids=_id)
def test_contended_sample(i):
    _check_con(i)


@pytest.mark.slow
@pytest.mark.parametrize("i", CON, ids=_id)
def test_contended_all(i):
    _check_con(i)


def test_a_wrong_value_is_caught():
    """The comparison can fail: the H100's memory with one byte changed is not what the emulator produces."""
    c = CASES[ONE[0]]
    d, m = R.kernel_case(c, "fast")
    wm = R.want(c)[1].copy()
    wm[5, 0] ^= 1
    assert not (m == wm).all()
