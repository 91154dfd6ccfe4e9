"""Bit-exact replay of the H100 captures of ldmatrix, stmatrix and cp.async (tools/hwcapture/datamove_capture.py)."""
import numpy as np
import pytest

from emulator.ops.datamove.matrix import ldmatrix_fast, ldmatrix_reference, stmatrix_fast, stmatrix_reference
from hwreplay import load_capture, replay_case

META, VARIANTS = load_capture()


def test_capture_provenance():
    assert "H100" in META["gpu"]
    assert META["compute_capability"] == "9.0"
    assert META["driver"] and "release" in META["nvcc"]
    assert len(VARIANTS) == 18


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_replay_every_case_bit_exact(variant):
    d = VARIANTS[variant]
    n = d["kind"].size
    assert n >= 1000
    bad = [i for i in range(n) if not np.array_equal(replay_case(META, variant, d, i), d["out"][i])]
    assert not bad, f"{variant}: {len(bad)} of {n} cases differ from the H100, first case {bad[0]} ({d['kind'][bad[0]]})"


def test_replay_detects_a_wrong_model():
    """The comparison has teeth: replaying ldmatrix .x4 captures as .x4.trans mismatches almost every case."""
    d = VARIANTS["ldmatrix_x4"]
    meta = dict(META, ptx=dict(META["ptx"], ldmatrix_x4=META["ptx"]["ldmatrix_x4_trans"]))
    bad = sum(not np.array_equal(replay_case(meta, "ldmatrix_x4", d, i), d["out"][i]) for i in range(100))
    assert bad >= 95


@pytest.mark.parametrize("variant", [v for v in sorted(VARIANTS) if v.startswith("ldmatrix")])
def test_ldmatrix_reference_equals_fast_path(variant):
    d = VARIANTS[variant]
    nmat = d["out"].shape[1]
    trans = variant.endswith("trans")
    for i in range(0, d["kind"].size, 7):
        ref = np.array(ldmatrix_reference(d["smem"][i], d["addr"][i], nmat, trans), np.uint32)
        fast = np.empty((nmat, 32), np.uint32)
        ldmatrix_fast(d["smem"][i].copy(), d["addr"][i].astype(np.int64), nmat, trans, fast)
        assert np.array_equal(ref, fast)
        assert np.array_equal(ref, d["out"][i])


@pytest.mark.parametrize("variant", [v for v in sorted(VARIANTS) if v.startswith("stmatrix")])
def test_stmatrix_reference_equals_fast_path(variant):
    d = VARIANTS[variant]
    nmat = d["regs"].shape[1]
    trans = variant.endswith("trans")
    for i in range(0, d["kind"].size, 7):
        ref = d["smem"][i].copy()
        stmatrix_reference(ref, d["addr"][i], d["regs"][i].tolist(), trans)
        fast = d["smem"][i].copy()
        stmatrix_fast(fast, d["addr"][i].astype(np.int64), nmat, trans, d["regs"][i].astype(np.uint32))
        assert np.array_equal(ref, fast)
        assert np.array_equal(ref, d["out"][i])
