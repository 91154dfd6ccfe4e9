"""emulator.gluon's owner() against an H100: which thread and register held each element.

tests/data/gluon/h100_owners.npz was written by tools/gluon/owner_capture.py: a Gluon kernel per layout,
compiled by Triton 3.9 to sm_90a PTX, run from that PTX on an NVIDIA H100 80GB HBM3 (driver 580.159.04);
each element holds ``tid * 256 + register`` of the thread/register that held it (for replicated elements,
the copy Triton stores: the first holder in (warp, lane, register) order).
"""
import json
import pathlib

import numpy as np
import pytest

from emulator.gluon import parse_layout

DATA = pathlib.Path(__file__).parent / "data" / "gluon" / "h100_owners.npz"


def load():
    z = np.load(DATA, allow_pickle=False)
    meta = json.loads(str(z["meta"]))
    return meta, [z[f"case{i}"] for i in range(len(meta["cases"]))]


def test_capture_is_from_the_h100():
    meta, arrays = load()
    assert "H100" in meta["device"] and len(arrays) == 21


@pytest.mark.parametrize("i", range(21))
def test_owner_matches_the_h100(i):
    meta, arrays = load()
    m, got = meta["cases"][i], arrays[i]
    o = parse_layout(m["layout"]).owner(m["shape"])
    reg, thr = o.first()
    assert (got == thr * 256 + reg).all(), f"{m['layout']} {m['shape']}: {(got != thr * 256 + reg).sum()} cells"
    # and the measured holder is one of the copies owner() lists
    all_ids = o.thread * 256 + o.register
    assert (all_ids == got[..., None]).any(-1).all()


def test_a_wrong_layout_mismatches():
    meta, arrays = load()
    i = next(k for k, m in enumerate(meta["cases"]) if m["layout"].startswith("NVMMADistributedLayout(version=[2"))
    m = meta["cases"][i]
    wrong = parse_layout(m["layout"].replace("[2, 2]", "[1, 4]"))
    reg, thr = wrong.owner(m["shape"]).first()
    assert not (arrays[i] == thr * 256 + reg).all()


@pytest.mark.slow
def test_the_emulator_runs_the_same_ptx_to_the_same_owners():
    """The Gluon kernels' PTX, run on the emulator, writes what the H100 wrote."""
    from emulator.triton import run_ptx
    z = np.load(DATA, allow_pickle=False)
    meta, arrays = load()
    for i, (ptx, m) in enumerate(zip(z["ptx"], meta["cases"])):
        out = np.full(int(np.prod(m["shape"])), -1, np.int32)
        run_ptx(str(ptx), m["name"], 1, [out], num_warps=m["num_warps"], shared=m["shared"])
        assert (out.reshape(m["shape"]) == arrays[i]).all(), m["layout"]
