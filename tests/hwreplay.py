"""Replay of the data-movement hardware captures through Warp.run (shared by tests and tools)."""
from __future__ import annotations

import json
import os

import numpy as np

from emulator import GlobalMemory, Warp

DATA = os.path.join(os.path.dirname(__file__), "data")
DATAMOVE = os.path.join(DATA, "datamove", "datamove_sm90.npz")


def load_capture(path=DATAMOVE):
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("meta").tobytes().decode())
    variants = {}
    for key, a in arrays.items():
        v, field = key.split("/")
        variants.setdefault(v, {})[field] = a
    return meta, variants


def replay_case(meta, variant, d, i):
    """Run case i of a variant on a fresh Warp; returns what the capture recorded as 'out'."""
    text = meta["ptx"][variant]
    buf = meta["buf_bytes"]
    if variant.startswith("ldmatrix"):
        w = Warp(smem_bytes=buf)
        w.smem[:] = d["smem"][i]
        w.write("%r8", d["addr"][i])
        w.run(text)
        return np.stack([w.read(f"%r{j}") for j in range(d["out"].shape[1])])
    if variant.startswith("stmatrix"):
        w = Warp(smem_bytes=buf)
        w.smem[:] = d["smem"][i]
        w.write("%r8", d["addr"][i])
        for j in range(d["regs"].shape[1]):
            w.write(f"%r{j}", d["regs"][i, j])
        w.run(text)
        return w.smem.copy()
    g = GlobalMemory()
    base = g.upload(d["gsrc"][i])
    w = Warp(smem_bytes=buf, gmem=g)
    w.smem[:] = d["smem"][i]
    w.write("%r8", d["addr"][i])
    w.write("%rd1", np.uint64(base) + d["gaddr"][i].astype(np.uint64))
    w.write("%r9", d["size"][i])
    w.write("%p1", d["size"][i] != 0)          # the ignore-src predicate of the ignore_src variant
    w.run(text + meta["cp_tail"])
    return w.smem.copy()
