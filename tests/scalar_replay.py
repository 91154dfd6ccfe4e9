"""Replay of the scalar differential capture (tests/data/scalar/): every ptxas-accepted scalar form, run by
``Warp.run`` over the inputs the H100 saw, compared bit for bit with the H100's destination registers."""
from __future__ import annotations

import json
import os
from functools import lru_cache

import numpy as np

from emulator import Warp
from emulator.errors import EmulatorError

DATA_DIR = os.path.join(os.path.dirname(__file__), "data", "scalar")
DATA = os.path.join(DATA_DIR, "scalar_sm90.npz")
CAPTURES = ("scalar_sm90", "scalar_sm90_extra")     # the register forms; immediates, cvt.pack, SIMD video
MASK = {16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF}
UDT = {16: np.uint16, 32: np.uint32, 64: np.uint64}


@lru_cache(maxsize=None)
def capture(name="scalar_sm90"):
    z = np.load(os.path.join(DATA_DIR, name + ".npz"), allow_pickle=False)
    forms = json.loads(str(z["forms"]))
    inputs = {k[3:]: z[k] for k in z.files if k.startswith("in_")}
    results = [z[f"r{i}"] for i in range(len(forms))]
    return forms, inputs, results, json.loads(str(z["meta"]))


def opcode(form):
    return form["text"].split()[0]


def family(form):
    return opcode(form).split(".")[0]


def run_form(form, inputs, lanes):
    """The emulator's destination bits for ``lanes`` (a multiple of 32): array (ndst, len(lanes)).
    Raises EmulatorError when the form is refused."""
    w = Warp()
    outs = [np.zeros(len(lanes), np.uint64) for _ in form["dsts"]]
    for b in range(0, len(lanes), 32):
        sel = lanes[b:b + 32]
        for k, (reg, width, kind) in enumerate(form["srcs"]):
            v = inputs[kind][k][sel]
            w.write(reg, (v & np.uint64(1)).astype(np.bool_) if width == 1 else (v & np.uint64(MASK[width])).astype(UDT[width]))
        w.run(form["text"])
        for j, (reg, width) in enumerate(form["dsts"]):
            outs[j][b:b + 32] = w.read(reg).astype(np.uint64)
    return np.stack(outs)


def compare(i, lanes, name="scalar_sm90"):
    """(refusal message or None, lanes that differ, emulator bits, H100 bits) for form i."""
    forms, inputs, results, _ = capture(name)
    form = forms[i]
    want = results[i][:, lanes].astype(np.uint64)
    try:
        got = run_form(form, inputs, lanes)
    except EmulatorError as e:
        return f"{type(e).__name__}: {e}", np.array(lanes), None, want
    bad = np.flatnonzero((got != want).any(axis=0))
    return None, np.asarray(lanes)[bad], got, want


def describe(i, lane, name="scalar_sm90"):
    """A readable line for one mismatching lane of form i."""
    forms, inputs, results, _ = capture(name)
    form = forms[i]
    ins = ", ".join(f"{reg}=0x{int(inputs[kind][k][lane]):x}" for k, (reg, _, kind) in enumerate(form["srcs"]))
    want = ", ".join(f"0x{int(x):x}" for x in results[i][:, lane])
    got = run_form(form, inputs, np.full(32, lane))[:, 0]
    return f"{form['text']}  lane {lane}: {ins} -> H100 {want}, emulator {', '.join(f'0x{int(x):x}' for x in got)}"


def sample_lanes(n_total, n=64, seed=0):
    """A deterministic sample: n lanes spread over the crossed edges, the extra edges and the random part."""
    rng = np.random.default_rng(seed)
    parts = [rng.choice(1024, n // 2, replace=False), rng.choice(np.arange(1024, n_total), n // 2, replace=False)]
    return np.sort(np.concatenate(parts))
