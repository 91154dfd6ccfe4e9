"""Run every atomics case on the GPU; write one compressed .npz.

    python tools/hwcapture/atomics/atomic_forms.py --out forms.json            # ptxas decides the forms (no GPU)
    python tools/hwcapture/atomics/capture.py --prepare inputs.npz             # the operands (needs ml_dtypes)
    python tools/hwcapture/atomics/capture.py --forms forms.json --inputs inputs.npz --out atomics_sm90.npz \
        --only plain --programs                                                 # on the H100
    python tools/hwcapture/atomics/capture.py ... --only async_ss / async_generic:st.async / async_generic:red.async

tests/data/atomics/atomics_sm90.npz is ``--only plain --programs``. Each ``--only`` group runs in its own process:
a kernel that faults (cudaErrorIllegalInstruction) ends the process's CUDA context, so the rest of its group
is lost. The red.async/st.async groups faulted on their first kernel when their kernels were launched without
clusters; their kernels now declare ``.reqnctapercluster`` and have not been run on the GPU since.

The second step runs on a machine with an H100, cupy and ptxas. The kernels of ``atomic_kernels.py`` are compiled
by ptxas for sm_90a (in parallel, modules of 500 kernels) and loaded through the driver. Every form runs in
``ind`` mode on each of its targets; the forms without semantics, scope and cache hint also run in ``con``
mode, three times (the ``runs``), to see whether contended results repeat.

The .npz holds: ``meta`` (JSON), ``cases`` (JSON: per case the form, target, mode and the names of its
result arrays), ``op_<signature>`` (uint8 (3, N, nbytes): initial memory, b, c) and the result arrays,
stored once per distinct content (``a<k>``: uint8 (lanes, nbytes)). ``programs`` (JSON) and ``p<k>`` arrays
record the compiler-generated kernels of ``atomic_programs.py`` (their PTX included).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import atomic_forms as F  # noqa: E402
import atomic_kernels as K  # noqa: E402

RUNS = 3


class Store:
    def __init__(self):
        self.arrays, self.by_hash = {}, {}

    def put(self, a):
        a = np.ascontiguousarray(a, np.uint8)
        h = hashlib.sha1(a.tobytes() + repr(a.shape).encode()).hexdigest()
        if h not in self.by_hash:
            name = f"a{len(self.arrays)}"
            self.arrays[name] = a
            self.by_hash[h] = name
        return self.by_hash[h]


def all_cases(forms):
    cases = []
    for f in forms:
        for t in K.targets(f):
            cases.append((f, t, "ind"))
            if t == "shared" and K.remote_ok(f) and not f.hint and f.scope in ("", "cluster") and \
                    f.sem in ("", "relaxed", "weak") and (f.sem == "" or f.base.endswith("async")):
                cases.append((f, t, "remote"))
            if f.sem in ("", "relaxed") and f.scope in ("", "cluster") and not f.hint and \
                    (f.base != "st.async") and (f.sem == "" or f.base == "red.async"):
                cases.append((f, t, "con"))
    def rank(x):                  # the plain forms first, the riskier launches (async, clusters) later
        f, _, mode = x
        plain = f.sem == "" and f.scope == "" and not f.hint
        return (not plain, f.base.endswith("async"), mode == "remote")
    return sorted(cases, key=rank)


def select(f, only):
    kind, _, base = only.partition(":")
    is_async = f.base in ("red.async", "st.async")
    if kind == "plain":
        return not is_async
    if kind == "async_ss":
        return is_async and f.space != ""
    return is_async and f.space == "" and (not base or f.base == base)


def compile_all(cases, chunk=500, jobs=16):
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    d = tempfile.mkdtemp()
    parts = [cases[s:s + chunk] for s in range(0, len(cases), chunk)]

    def one(i):
        p = os.path.join(d, f"m{i}.ptx")
        open(p, "w").write(K.module(parts[i]))
        r = subprocess.run([ptxas, "-arch=sm_90a", p, "-o", p[:-4] + ".cubin"], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(r.stderr[:3000])
        return open(p[:-4] + ".cubin", "rb").read()

    with cf.ThreadPoolExecutor(jobs) as ex:
        return parts, list(ex.map(one, range(len(parts))))


def run_case(cp, fn, f, target, mode, inputs, ops, dev, out, store):
    N = K.N
    sig = K.signature(f)
    if sig not in ops:
        mem, b, c = K.operands(f, inputs)
        ops[sig] = (mem, b, c)
        for m in ("ind", "remote", "con"):
            bb, cc = (b, c) if m != "con" else (b[K.CON_LANES], c[K.CON_LANES])
            pad = lambda x: np.pad(x, ((0, N - x.shape[0]), (0, 16 - x.shape[1])))  # noqa: E731
            dev[sig, m] = (cp.asarray(pad(bb).reshape(-1)), cp.asarray(pad(cc).reshape(-1)))
    mem = ops[sig][0]
    nb = f.nbytes
    init = np.zeros((N, 16), np.uint8)
    if mode in ("ind", "remote"):
        init[:, :nb] = mem
        lanes, cells, grid = N, N, N // K.BLOCK
    else:
        init[:K.CON_CELLS, :nb] = mem[K.CON_INIT:K.CON_INIT + K.CON_CELLS]
        lanes, cells, grid = K.BLOCK, K.CON_CELLS, 1
    rec = {"form": f.to_json(), "target": target, "mode": mode, "sig": sig, "runs": []}
    for run in range(RUNS if mode == "con" else 1):
        out.fill(0)
        out[N * 16:] = cp.asarray(init.reshape(-1))
        fn((grid,), (K.BLOCK,), (out, *dev[sig, mode]))
        h = cp.asnumpy(out).reshape(2, N, 16)
        r = {"mem": store.put(h[1, :cells, :nb])}
        if f.base == "atom":
            r["dst"] = store.put(h[0, :lanes, :nb])
        elif f.base in ("red.async", "st.async"):
            r["dst"] = store.put(h[0, :lanes, :4])
        rec["runs"].append(r)
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forms")
    ap.add_argument("--out")
    ap.add_argument("--prepare", help="write the scalar capture's inputs to this .npz and stop")
    ap.add_argument("--programs", action="store_true", help="also run atomic_programs.py's kernels")
    ap.add_argument("--inputs", help="the scalar inputs as .npz (default: computed here, which needs ml_dtypes)")
    ap.add_argument("--only", help="plain (atom, red), async_ss (red.async/st.async with a state space) or "
                                   "async_generic[:base] (without one): a launch that traps loses the rest of its run")
    ap.add_argument("--limit", type=int, default=0, help="run only the first and last limit/2 cases (a trial)")
    ap.add_argument("--budget", type=float, default=1e9, help="seconds of running after which the rest is skipped")
    args = ap.parse_args()
    if args.prepare:
        np.savez_compressed(args.prepare, **K.scalar_inputs())
        return
    import cupy as cp
    t0 = time.time()
    spec = json.load(open(args.forms))
    forms = [F.Form.from_json(d) for d in spec["forms"] + spec["hint_forms"]]
    cases = all_cases(forms)
    if args.only:
        cases = [x for x in cases if select(x[0], args.only)]
    if args.limit:
        cases = cases[:args.limit // 2] + cases[-args.limit // 2:]
    parts, cubins = compile_all(cases)
    t1 = time.time()
    print(f"{len(cases)} cases compiled in {t1 - t0:.1f} s", file=sys.stderr, flush=True)
    inputs = dict(np.load(args.inputs, allow_pickle=False)) if args.inputs else K.scalar_inputs()
    store = Store()
    ops, dev = {}, {}
    N = K.N
    out = cp.zeros(2 * N * 16, cp.uint8)
    records, errors = [], []
    progs = []
    if args.programs:
        import atomic_programs as P
        progs = P.capture(cp, store, RUNS)
    try:
        for part, cub in zip(parts, cubins):
            if time.time() - t1 > args.budget:
                errors.append(f"budget spent: {len(cases) - len(records)} cases not run")
                break
            mod = cp.cuda.function.Module()
            mod.load(cub)
            for i, (f, target, mode) in enumerate(part):
                records.append(run_case(cp, mod.get_function(f"k{i}"), f, target, mode, inputs, ops, dev, out, store))
            cp.cuda.runtime.deviceSynchronize()
    except Exception as e:          # a failed launch poisons the context: keep what ran
        errors.append(f"{type(e).__name__}: {e} (after {len(records)} cases)")
    t2 = time.time()
    print(f"ran {len(records)} cases in {t2 - t1:.1f} s; {len(store.arrays)} distinct arrays; {errors}",
          file=sys.stderr, flush=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    meta = {"gpu": props["name"].decode(), "cc": f"{props['major']}.{props['minor']}",
            "driver": cp.cuda.runtime.driverGetVersion(), "runtime": cp.cuda.runtime.runtimeGetVersion(),
            "n": N, "runs": RUNS, "forms": len(spec["forms"]), "hint_forms": len(spec["hint_forms"]),
            "seconds": {"compile": t1 - t0, "run": t2 - t1}, "errors": errors}
    opnd = {f"op_{s}": np.stack(v) for s, v in ops.items()}
    np.savez_compressed(args.out, meta=np.array(json.dumps(meta)), cases=np.array(json.dumps(records)),
                        programs=np.array(json.dumps(progs)), **opnd, **store.arrays)


if __name__ == "__main__":
    main()
