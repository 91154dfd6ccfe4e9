"""Run every scalar form on the GPU over the inputs of ``inputs.py``; write one compressed .npz.

Steps (the first two need no GPU):

    python tools/hwcapture/scalar/forms.py --out forms.json                 # ptxas decides the forms
    python tools/hwcapture/scalar/capture.py --forms forms.json --prepare inputs.npz
    python tools/hwcapture/scalar/capture.py --forms forms.json --inputs inputs.npz --out scalar_sm90.npz

The last step runs on a machine with an H100 and cupy. It builds one PTX module per chunk of forms
(``forms.module``), loads the text as given through the driver (``cupy.cuda.function.Module.load``),
launches each kernel over the N inputs and stores, per form, the destination registers' raw bits.

The .npz holds: ``forms`` (JSON: the list of forms), ``meta`` (JSON: GPU, driver, CUDA), ``in_<kind>``
(uint64, SLOTS x N) and ``r<i>`` (form i: ndst x N, uint8 for predicates, else uint16/32/64).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import forms as F  # noqa: E402

RES_DT = {1: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forms", required=True)
    ap.add_argument("--prepare")
    ap.add_argument("--inputs")
    ap.add_argument("--out")
    ap.add_argument("--chunk", type=int, default=400)
    args = ap.parse_args()
    forms = [F.Form.from_json(d) for d in json.load(open(args.forms))]
    if args.prepare:
        from inputs import make_inputs
        np.savez_compressed(args.prepare, **make_inputs())
        return
    import cupy as cp
    ins = dict(np.load(args.inputs, allow_pickle=False))
    n = next(iter(ins.values())).shape[1]
    dev_in = {k: [cp.asarray(v[s]) for s in range(v.shape[0])] for k, v in ins.items()}
    out = cp.zeros(2 * n, cp.uint64)
    results = {}
    block = 128
    for c0 in range(0, len(forms), args.chunk):
        part = forms[c0:c0 + args.chunk]
        mod = cp.cuda.function.Module()
        mod.load(F.module(part).encode())
        for i, f in enumerate(part):
            fn = mod.get_function(f"k{i}")
            ptrs = [dev_in[k][s] for s, (_, _, k) in enumerate(f.srcs)]
            ptrs += [out] * (4 - len(ptrs))
            out.fill(0)
            fn((n // block,), (block,), (out, *ptrs))
            r = cp.asnumpy(out).reshape(n, 2).T[:len(f.dsts)]
            w = [d[1] for d in f.dsts]
            results[f"r{c0 + i}"] = r.astype(RES_DT[w[0]])
        cp.cuda.runtime.deviceSynchronize()
        print(f"{c0 + len(part)} forms", file=sys.stderr, flush=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    meta = {"gpu": props["name"].decode(), "cc": f"{props['major']}.{props['minor']}",
            "driver": cp.cuda.runtime.driverGetVersion(), "runtime": cp.cuda.runtime.runtimeGetVersion(),
            "n": n}
    np.savez_compressed(args.out, forms=np.array(json.dumps([f.to_json() for f in forms])),
                        meta=np.array(json.dumps(meta)), **{f"in_{k}": v for k, v in ins.items()}, **results)


if __name__ == "__main__":
    main()
