"""Capture wgmma.mma_async on an H100: one kernel per form of ``wgmma_gen.forms()``, outputs only.

    python tools/hwcapture/wgmma/capture.py build OUTDIR        # PTX + cubin (ptxas -arch=sm_90a), here
    python tools/hwcapture/wgmma/capture.py run OUTDIR RESULT.npz [--phase safe|risky]   # needs cupy, a GPU

Inputs are rebuilt from the form list by ``wgmma_gen.form_inputs`` (deterministic), so the result file holds only
``d<i>`` (n_cta, 128, n_d) uint32 accumulator registers and ``base<i>`` (the shared window's base) per
form ``i``, plus ``meta`` (JSON: device, driver).  ``tests/test_wgmma_captures.py`` replays them.
"""
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wgmma_gen as gen  # noqa: E402


def build(outdir):
    os.makedirs(outdir, exist_ok=True)
    fl = gen.forms()

    def one(i):
        p = os.path.join(outdir, f"f{i}.ptx")
        with open(p, "w") as fh:
            fh.write(gen.ptx(fl[i]))
        r = subprocess.run(["ptxas", "-arch=sm_90a", "-o", os.path.join(outdir, f"f{i}.cubin"), p],
                           capture_output=True, text=True)
        return i, r.returncode, r.stderr
    with ThreadPoolExecutor(4) as ex:
        bad = [(i, e) for i, rc, e in ex.map(one, range(len(fl))) if rc]
    for i, e in bad:
        print(i, fl[i]["spelling"], e[:400])
    print(f"{len(fl)} forms, {len(bad)} failed")


def run(outdir, result, phase):
    import cupy as cp
    fl = gen.forms()
    out = {}
    props = cp.cuda.runtime.getDeviceProperties(0)
    meta = {"device": props["name"].decode(), "driver": cp.cuda.runtime.driverGetVersion(),
            "runtime": cp.cuda.runtime.runtimeGetVersion(), "phase": phase}
    t0 = time.time()
    for i, f in enumerate(fl):
        if f["phase"] != phase:
            continue
        inp = gen.form_inputs(i, f)
        mod = cp.RawModule(path=os.path.join(outdir, f"f{i}.cubin"))
        fn = mod.get_function("wgmma_cap")
        fn.max_dynamic_shared_size_bytes = gen.DYN_SMEM
        n = f["n_cta"]
        img = cp.asarray(inp["img"])
        desc = cp.asarray(inp["desc"])
        a = cp.asarray(inp["a"])
        c = cp.asarray(inp["c"])
        d = cp.zeros_like(c)
        misc = cp.asarray(np.concatenate([inp["scale_d"], np.zeros(n, np.uint32)]))
        fn((n,), (128,), (img, desc, a, c, d, misc), shared_mem=gen.DYN_SMEM)
        cp.cuda.runtime.deviceSynchronize()
        out[f"d{i}"] = cp.asnumpy(d)
        out[f"base{i}"] = cp.asnumpy(misc)[n:]
        if len(out) % 40 == 0:
            np.savez_compressed(result, meta=json.dumps(meta), **out)
            print(f"{len(out) // 2} forms, {time.time() - t0:.1f}s", flush=True)
    np.savez_compressed(result, meta=json.dumps(meta), **out)
    print(f"done: {len(out) // 2} forms in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2])
    else:
        ph = sys.argv[sys.argv.index("--phase") + 1] if "--phase" in sys.argv else "safe"
        run(sys.argv[2], sys.argv[3], ph)
