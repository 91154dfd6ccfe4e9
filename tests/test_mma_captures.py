"""Replay of the H100 golden vectors: every captured mma.sync variant, raw bits, 0 mismatches.

The captures (tools/hwcapture/mma_capture.py) hold each warp's A, B, C registers and the D registers the
GPU wrote, per lane.  They are replayed through the register-level path (MmaOp.execute_batch) in full, and a
subset through Warp.run.  NaN payloads and signed zeros are compared like any other bits.
"""
import numpy as np
import pytest

from emulator import Warp
from emulator.ops.mma import get_mma
from isa.mma import VARIANTS

from mma_captures import all_captures, meta

CAPS = all_captures()


def test_every_variant_is_captured():
    """Every variant is in this capture, or (the m8n8k16/m8n8k32 integer and .b1 forms, added later) in the
    register-level part of the WMMA capture (tests/data/wmma, replayed by tests/test_wmma.py)."""
    import json
    import os
    z = np.load(os.path.join(os.path.dirname(__file__), "data", "wmma", "sm90_wmma.npz"), allow_pickle=False)
    later = {m["spelling"] for m in json.loads(str(z["meta"])) if m["name"].startswith("e")}
    assert not set(CAPS) & later
    assert sorted(set(CAPS) | {s for s in later if s.startswith("mma.")}) == sorted(VARIANTS)
    info = meta()
    assert info["gpu"].startswith("NVIDIA H100") and info["compute_capability"] == "9.0"


@pytest.mark.parametrize("spelling", sorted(CAPS))
def test_replay_register_path(spelling):
    cap = CAPS[spelling]
    op = get_mma(spelling, "sm_90")
    got = op.execute_batch(cap["a"], cap["b"], cap["c"])
    assert got.dtype == cap["d"].dtype
    bad = got != cap["d"]
    if bad.any():
        w = np.nonzero(bad.any(axis=(1, 2)))[0]
        r, lane = np.argwhere(bad[w[0]])[0]
        pytest.fail(f"{spelling}: {int(bad.sum())} of {bad.size} D words differ, in distributions "
                    f"{sorted(set(cap['dist'][w].tolist()))}; first: warp {w[0]} reg {r} lane {lane}: "
                    f"H100 {cap['d'][w[0], r, lane]:#x}, emulator {got[w[0], r, lane]:#x}")


def test_capture_sizes():
    """Several thousand cases per variant (hand-made tiles included), over every distribution."""
    for spelling, cap in CAPS.items():
        outputs = cap["d"].shape[0] * 128 if VARIANTS[spelling].shape[0] == 16 or \
            VARIANTS[spelling].family == "m8n8k4_f16" else cap["d"].shape[0] * 64
        assert outputs >= 1500, spelling
        dists = set(cap["dist"].tolist())
        expect = {"random", "limits", "mixed"} if VARIANTS[spelling].family == "int" else \
            {"normal", "wide", "cancel", "rawbits", "subnormal"}
        assert expect <= dists, spelling


def _names(v, op, base):
    t = {"A": v.atype, "B": v.btype, "C": v.ctype, "D": v.dtype}[op]
    prefix = "%fd" if t == "f64" else "%f" if t == "f32" else "%r"
    return [f"{prefix}{base + i}" for i in range(v.n_regs(op))]


@pytest.mark.parametrize("spelling", sorted(CAPS))
def test_replay_through_warp_run(spelling):
    """One warp per distribution through the PTX front end and the mma executor."""
    cap = CAPS[spelling]
    v = VARIANTS[spelling]
    names = {op: _names(v, op, base) for op, base in (("D", 0), ("A", 10), ("B", 20), ("C", 30))}
    text = (f"{spelling} {{{', '.join(names['D'])}}}, {{{', '.join(names['A'])}}}, "
            f"{{{', '.join(names['B'])}}}, {{{', '.join(names['C'])}}};")
    picks = [int(np.nonzero(cap["dist"] == d)[0][0]) for d in dict.fromkeys(cap["dist"].tolist())]
    for i in picks:
        w = Warp(arch="sm_90")
        for op, key in (("A", "a"), ("B", "b"), ("C", "c")):
            for r, name in enumerate(names[op]):
                w.write(name, cap[key][i, r])
        w.run(text)
        got = np.stack([w.read(n) for n in names["D"]])
        assert np.array_equal(got, cap["d"][i]), f"{spelling}: warp {i} ({cap['dist'][i]}) differs"


@pytest.mark.parametrize("spelling", ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                                      "mma.sync.aligned.m16n8k32.row.col.f16.e5m2.e4m3.f16"])
def test_replay_all_batch_paths(spelling):
    """The single-instruction, the vectorised-across-instructions and the multi-core batch kernels give
    the same (captured) bits."""
    from emulator.ops.mma import PARALLEL_BATCH
    cap = CAPS[spelling]
    op = get_mma(spelling)
    reps = PARALLEL_BATCH // len(cap["d"]) + 1
    a, b, c, d = (np.concatenate([cap[k]] * reps) for k in "abcd")
    assert np.array_equal(op.execute_batch(a, b, c), d)
    assert np.array_equal(op.execute_batch(a[:40], b[:40], c[:40]), d[:40])  # vectorised
    for i in range(0, len(cap["d"]), 7):
        assert np.array_equal(op.execute(cap["a"][i], cap["b"][i], cap["c"][i]), cap["d"][i])
