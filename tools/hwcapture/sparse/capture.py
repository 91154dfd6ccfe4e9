"""Capture mma.sp and wgmma.mma_async.sp on an H100 (inputs: sp_gen.py, rebuilt from the form lists).

    python tools/hwcapture/sparse/capture.py build OUTDIR          # PTX + cubins (ptxas -arch=sm_90a), here
    python tools/hwcapture/sparse/capture.py run OUTDIR RESULT.npz [--skip m]   # needs cupy and a GPU

The result holds ``m<i>`` (warps, 32, n_d) uint32 per mma.sp form, ``w<i>`` (n_cta, 128, n_d) uint32 and
``w<i>_base`` (the shared window's base per CTA) per wgmma.sp form, ``y<i>_<mode>`` (and ``_base``) per wgmma.sp
metadata experiment, ``x<i>_<mode>`` per mma.sp experiment, and ``meta``
(JSON: device, driver, the jobs that trapped, SASS opcode counts of the mma.sp kernels).  Jobs run in child
processes; one that traps (illegal instruction) is recorded and the next child goes on after it.
"""
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sp_gen as G  # noqa: E402


def build(outdir):
    os.makedirs(outdir, exist_ok=True)
    names = [f"mma_sp_{i}" for i in range(len(G.MMA_FORMS))]
    p = os.path.join(outdir, "mma_sp.ptx")
    open(p, "w").write(G.mma_ptx(G.MMA_FORMS, names))
    r = subprocess.run(["ptxas", "-arch=sm_90a", "-o", os.path.join(outdir, "mma_sp.cubin"), p],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:2000]

    def one(i):
        q = os.path.join(outdir, f"w{i}.ptx")
        open(q, "w").write(G.wg_ptx(G.WG_FORMS[i]))
        r = subprocess.run(["ptxas", "-arch=sm_90a", "-o", os.path.join(outdir, f"w{i}.cubin"), q],
                           capture_output=True, text=True)
        os.remove(q)
        return i, r.returncode, r.stderr
    with ThreadPoolExecutor(4) as ex:
        bad = [(i, e) for i, rc, e in ex.map(one, range(len(G.WG_FORMS))) if rc]
    for i, e in bad:
        print(i, G.wg_spelling(G.WG_FORMS[i]), e[:400])
    print(f"{len(G.MMA_FORMS)} mma.sp forms, {len(G.WG_FORMS)} wgmma.sp forms, {len(bad)} failed")


def jobs():
    """Everything to launch, in order: the mma.sp forms, the wgmma.sp forms, the wgmma.sp metadata experiments,
    then the mma.sp experiments (tests/data/sparse/mma_sp_h100.npz holds the mma.sp forms,
    tests/data/sparse/wgmma_sp_h100.npz the wgmma.sp forms and their experiments)."""
    out = [("m", i, "") for i, f in enumerate(G.MMA_FORMS) if not G.risky(f)]
    out += [("w", i, "") for i in range(len(G.WG_FORMS))]
    out += [("y", i, mode) for i, mode in G.WG_EXPERIMENTS]
    out += [("x", i, mode) for i, mode in G.EXPERIMENTS]
    return out


def job_name(kind, i, mode):
    return f"{kind}{i}" + (f"_{mode}" if mode else "")


def child(outdir, tmp, start, skip=""):
    """Run the jobs from ``start`` on, one result file each, synchronising after every launch; a trap ends the
    process (and its CUDA context) and the parent goes on after the job that trapped."""
    import cupy as cp
    mods = {}
    for kind, i, mode in [j for j in jobs() if j[0] not in skip][start:]:
        if kind in "mx":
            if "mma" not in mods:
                mods["mma"] = cp.cuda.function.Module()
                mods["mma"].load(open(os.path.join(outdir, "mma_sp.cubin"), "rb").read())
            f = G.MMA_FORMS[i]
            inp = G.mma_inputs(i, f, mode or None)
            na, nb, nc, nd = G.mma_regs(f)
            nw = inp["a"].shape[0]
            packed = np.concatenate([inp["a"], inp["b"], inp["c"], inp["e"][..., None]], axis=2)
            dev_in = cp.asarray(np.ascontiguousarray(packed).reshape(-1))
            dev_out = cp.zeros(nw * 32 * nd, cp.uint32)
            mods["mma"].get_function(f"mma_sp_{i}")((nw,), (32,), (dev_in, dev_out))
            cp.cuda.runtime.deviceSynchronize()
            res = {"d": cp.asnumpy(dev_out).reshape(nw, 32, nd)}
        else:
            f = G.WG_FORMS[i]
            inp = G.wg_inputs(i, f, mode or None)
            fn = cp.RawModule(path=os.path.join(outdir, f"w{i}.cubin")).get_function("wgmma_sp_cap")
            fn.max_dynamic_shared_size_bytes = G.W.DYN_SMEM
            n = f["n_cta"]
            c = cp.asarray(inp["c"])
            d = cp.zeros_like(c)
            misc = cp.asarray(np.concatenate([inp["scale_d"], np.zeros(n, np.uint32)]))
            fn((n,), (128,), (cp.asarray(inp["img"]), cp.asarray(inp["desc"]), cp.asarray(inp["a"]), c, d, misc,
                              cp.asarray(inp["e"])), shared_mem=G.W.DYN_SMEM)
            cp.cuda.runtime.deviceSynchronize()
            res = {"d": cp.asnumpy(d), "base": cp.asnumpy(misc)[n:]}
        np.savez(os.path.join(tmp, job_name(kind, i, mode) + ".npz"), **res)


def run(outdir, result, budget=150.0, skip=""):
    budget = float(os.environ.get("SP_BUDGET", budget))
    import tempfile
    import cupy as cp
    props = cp.cuda.runtime.getDeviceProperties(0)
    meta = {"device": props["name"].decode(), "driver": cp.cuda.runtime.driverGetVersion(),
            "runtime": cp.cuda.runtime.runtimeGetVersion(), "traps": [], "not_run": []}
    del cp
    tmp = tempfile.mkdtemp()
    js = [j for j in jobs() if j[0] not in skip]
    t0 = time.time()
    start = 0
    while start < len(js):
        if time.time() - t0 > budget:
            meta["not_run"] = [job_name(*j) for j in js[start:]]
            break
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "child", outdir, tmp, str(start), skip],
                           capture_output=True, text=True)
        done = start
        while done < len(js) and os.path.exists(os.path.join(tmp, job_name(*js[done]) + ".npz")):
            done += 1
        if done < len(js):
            meta["traps"].append([job_name(*js[done]), (r.stderr or "").strip().splitlines()[-1:]])
            print("trap:", meta["traps"][-1], flush=True)
        start = done + 1
    out = {}
    for j in js:
        p = os.path.join(tmp, job_name(*j) + ".npz")
        if os.path.exists(p):
            z = np.load(p)
            out[job_name(*j)] = z["d"]
            if "base" in z:
                out[job_name(*j) + "_base"] = z["base"]
    meta["seconds"] = time.time() - t0
    _sass(outdir, meta)
    np.savez_compressed(result, meta=np.array(json.dumps(meta)), **out)
    print(f"done: {len(out)} arrays, {len(meta['traps'])} traps, {time.time() - t0:.1f}s")


def _sass(outdir, meta):
    try:
        import collections
        import re
        sass = {}
        txt = subprocess.run(["cuobjdump", "-sass", os.path.join(outdir, "mma_sp.cubin")], capture_output=True,
                             text=True, timeout=60).stdout
        for fn_txt in re.split(r"\n\s+Function : ", txt)[1:]:
            name = fn_txt.split("\n")[0].strip()
            ops = [x.split()[0] for x in re.findall(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", fn_txt)]
            sass[name] = dict(collections.Counter(x for x in ops if "MMA" in x or "F2FP" in x or "FADD" in x
                                                  or "HADD" in x or "PRMT" in x or "SEL" in x))
        meta["sass"] = sass
    except Exception as e:         # noqa: BLE001
        meta["sass_error"] = repr(e)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2])
    elif sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else "")
    else:          # run OUTDIR RESULT [--skip m] (the job kinds to leave out: m mma.sp, x experiments, w wgmma.sp,
        #              y wgmma.sp experiments); SP_BUDGET=seconds bounds the run
        run(sys.argv[2], sys.argv[3], skip=sys.argv[sys.argv.index("--skip") + 1] if "--skip" in sys.argv else "")
