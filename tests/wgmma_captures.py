"""Replay of the H100 wgmma captures (tools/hwcapture/wgmma): inputs rebuilt from the form list, outputs
from tests/data/wgmma/*.npz."""
import json
import os
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.abspath(ROOT))
sys.path.insert(0, os.path.join(ROOT, "tools", "hwcapture", "wgmma"))
import wgmma_gen as gen  # noqa: E402

from emulator.ops.wgmma import get_wgmma  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "data", "wgmma")


def load(name):
    path = os.path.join(DATA, name)
    z = np.load(path, allow_pickle=False)
    return {k: z[k] for k in z.files}, json.loads(str(z["meta"])) if "meta" in z.files else {}


def replay_cta(f, inp, j, base=0, compute=None):
    """D registers (128, n_d) of CTA j computed by the emulator's descriptor reads and arithmetic."""
    op = get_wgmma(f["spelling"])
    v = op.variant
    smem = np.zeros(base + gen.IMG, np.uint8)
    smem[base:] = inp["img"][j]
    da, db = (int(x) + (base >> 4) for x in inp["desc"][j])
    B, _ = op.read(smem, db, "B", f["trans_b"], "replay", v.n)
    out = np.zeros((128, v.n_d), np.uint32)
    if f["op_form"] == "ss":
        A64, _ = op.read(smem, da, "A", f["trans_a"], "replay", 64)
    for w in range(4):
        th = slice(32 * w, 32 * w + 32)
        if f["op_form"] == "ss":
            A = A64[16 * w:16 * w + 16]
        else:
            A = op.a_tile(inp["a"][j][th].T.copy())
        C = op.c_tile(inp["c"][j][th].T.copy())
        sd = bool(inp["scale_d"][j])
        if compute is None:
            Dt = op.compute(A, np.ascontiguousarray(B.T), C, sd, f["scale_a"], f["scale_b"])
        else:
            Dt = compute(op, A, np.ascontiguousarray(B.T), C, sd, f["scale_a"], f["scale_b"])
        out[th] = op.d_regs(Dt).T
    return out
