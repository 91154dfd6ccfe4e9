"""Run a corpus bundle (``build.py``) on the GPU, from the PTX text itself, and save every output.

    python tools/hwcapture/corpus/run_gpu.py BUNDLE.npz OUT.npz

Each case's PTX bytes are loaded with ``cuModuleLoadData`` (``cupy.cuda.function.Module.load``), so the driver
compiles exactly the text the emulator gets. Each case runs twice on fresh copies of its inputs; both runs
must give the same bytes (``<case>__reproducible``). A case that fails is recorded (``<case>__error``) and
the others go on; a case that breaks the CUDA context is run in a fresh process.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

SCALARS = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
           "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64, "float16": np.float16,
           "float32": np.float32, "float64": np.float64}


def load(path):
    cases = {}
    with np.load(path, allow_pickle=False) as z:
        for key in z.files:
            name, kind, *rest = key.split("__")
            c = cases.setdefault(name, {"in": {}})
            if kind == "ptx":
                c["ptx"] = z[key].tobytes()
            elif kind == "config":
                c["config"] = json.loads(str(z[key]))
            else:
                c["in"][rest[0]] = z[key]
    for c in cases.values():
        if "ptx" not in c:
            c["ptx"] = cases[c["config"]["ptx_from"]]["ptx"]
    return cases


def run_case(cp, case):
    cfg = case["config"]
    if cfg.get("at"):
        raise RuntimeError("its arrays sit at recorded device addresses inside recorded argument bytes: it is "
                           "captured by its own host program (production.py native), not here")
    mod = cp.cuda.function.Module()
    mod.load(case["ptx"] + b"\0")
    fn = mod.get_function(cfg["kernel"])
    if cfg.get("shared", 0) > 48 * 1024:
        import ctypes                    # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        err = ctypes.CDLL("libcuda.so.1").cuFuncSetAttribute(ctypes.c_void_p(fn.ptr), 8, ctypes.c_int(cfg["shared"]))
        if err:
            raise RuntimeError(f"cuFuncSetAttribute failed with CUresult {err}")
    outs = []
    for _ in range(2):
        dev, args = {}, []
        for a in cfg["args"]:            # every array first: a tensor map names the array it describes
            if a[0] in ("array", "tensormap") and a[1] not in dev:
                dev[a[1]] = cp.asarray(case["in"][a[1]])
        for a in cfg["args"]:
            if a[0] == "array":
                args.append(dev[a[1]])
            elif a[0] == "bytes":
                args.append(np.frombuffer(bytes.fromhex(a[1]), np.uint8))
            elif a[0] == "tensormap":        # recorded bytes, the array's address written at the offset
                raw = bytearray.fromhex(a[2])
                off = a[3] if len(a) > 3 else 0
                raw[off:off + 8] = np.uint64(dev[a[1]].data.ptr).tobytes()
                args.append(np.frombuffer(bytes(raw), np.uint8))
            else:
                args.append(SCALARS[a[1]](a[2]))
        if cfg["source"] == "triton":
            nprog = int(np.prod(cfg["grid"]))
            scratch = cp.zeros(max(cfg.get("scratch", 0) * nprog, 1), cp.uint8) if cfg.get("scratch") else None
            args.append(scratch if scratch is not None else np.uint64(0))
            args.append(np.uint64(0))
        if cfg.get("cluster"):
            _launch_raw(cp, fn, cfg, args, cluster=cfg["cluster"])
        elif any(isinstance(a, np.ndarray) for a in args):
            _launch_raw(cp, fn, cfg, args)       # aggregate arguments: their bytes exactly as recorded
        else:
            fn(tuple(cfg["grid"]), tuple(cfg["block"]), tuple(args), shared_mem=cfg.get("shared", 0))
        cp.cuda.Device().synchronize()
        outs.append({k: cp.asnumpy(dev[k]) for k in cfg["outputs"]})
    skip = cfg.get("nondeterministic", {})         # byte ranges known to differ from run to run (with why)

    def agree(k):
        a, b = outs[0][k].view(np.uint8).reshape(-1).copy(), outs[1][k].view(np.uint8).reshape(-1).copy()
        for lo, hi in skip.get(k, []):
            a[lo:hi] = b[lo:hi] = 0
        return np.array_equal(a, b)
    same = all(agree(k) for k in outs[0])
    return outs[0], same


def _launch_raw(cp, fn, cfg, args, cluster=None):
    """cuLaunchKernel with a kernelParams array that points at each argument's bytes (cuLaunchKernelEx with
    the cluster dimension attribute when ``cluster`` is given)."""
    import ctypes
    bufs = []
    for a in args:
        if isinstance(a, np.ndarray):
            raw = a.tobytes()
        elif hasattr(a, "data") and hasattr(a.data, "ptr"):
            raw = np.uint64(a.data.ptr).tobytes()
        else:
            raw = np.asarray(a).tobytes()
        bufs.append(ctypes.create_string_buffer(raw, max(len(raw), 1)))
    params = (ctypes.c_void_p * len(bufs))(*[ctypes.addressof(b) for b in bufs])
    g, b = cfg["grid"], cfg["block"]
    if cluster is not None:
        _launch_cluster(fn, g, b, cfg.get("shared", 0), cluster, params)
        return
    cp.cuda.driver.launchKernel(fn.ptr, g[0], g[1], g[2], b[0], b[1], b[2], cfg.get("shared", 0), 0,
                                ctypes.addressof(params), 0)


def _launch_cluster(fn, g, b, shared, cluster, params):
    import ctypes
    c_uint = ctypes.c_uint

    class Value(ctypes.Union):
        _fields_ = [("pad", ctypes.c_char * 64), ("cluster", c_uint * 3)]

    class Attr(ctypes.Structure):
        _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", Value)]

    class Config(ctypes.Structure):
        _fields_ = [("gx", c_uint), ("gy", c_uint), ("gz", c_uint), ("bx", c_uint), ("by", c_uint), ("bz", c_uint),
                    ("shared", c_uint), ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(Attr)),
                    ("nattrs", c_uint)]
    attr = Attr()
    attr.id = 4                                   # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attr.value.cluster[0], attr.value.cluster[1], attr.value.cluster[2] = (list(cluster) + [1, 1])[:3]
    conf = Config(g[0], g[1], g[2], b[0], b[1], b[2], shared, None, ctypes.pointer(attr), 1)
    lib = ctypes.CDLL("libcuda.so.1")
    err = lib.cuLaunchKernelEx(ctypes.byref(conf), ctypes.c_void_p(fn.ptr), params, None)
    if err:
        raise RuntimeError(f"cuLaunchKernelEx failed with CUresult {err}")


def worker(bundle, names, outdir):
    import cupy as cp
    cases = load(bundle)
    for name in names:
        t = time.time()
        res = {}
        try:
            out, same = run_case(cp, cases[name])
            for k, v in out.items():
                res[f"{name}__out__{k}"] = v
            res[f"{name}__reproducible"] = np.array(same)
            print(f"{name}: ok ({time.time() - t:.2f}s, reproducible {same})", flush=True)
        except Exception as e:  # noqa: BLE001 - keep the other cases
            res[f"{name}__error"] = np.array(f"{type(e).__name__}: {e}")
            print(f"{name}: FAILED {type(e).__name__}: {e}", flush=True)
        np.savez(os.path.join(outdir, name + ".npz"), **res)


def main():
    if sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[4:], sys.argv[3])
        return
    bundle, out = sys.argv[1], sys.argv[2]
    tmp = out + ".parts"
    os.makedirs(tmp, exist_ok=True)
    names = sorted(load(bundle))
    todo = list(names)
    while todo:
        subprocess.run([sys.executable, __file__, "--worker", bundle, tmp] + todo, timeout=3000)
        done = {f[:-4] for f in os.listdir(tmp)}
        rest = [n for n in todo if n not in done]
        if rest:      # the worker died on rest[0]: record it and go on with the others
            np.savez(os.path.join(tmp, rest[0] + ".npz"), **{f"{rest[0]}__error": np.array("the process died")})
            print(f"{rest[0]}: the process died", flush=True)
            rest = rest[1:]
        todo = rest
    res = {}
    for n in names:
        with np.load(os.path.join(tmp, n + ".npz"), allow_pickle=False) as z:
            res.update({k: z[k] for k in z.files})
    import cupy as cp
    props = cp.cuda.runtime.getDeviceProperties(0)
    meta = {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
            "cc": f"{props['major']}.{props['minor']}", "driver": cp.cuda.runtime.driverGetVersion(),
            "runtime": cp.cuda.runtime.runtimeGetVersion()}
    try:
        meta["nvidia_smi"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                            capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001 - informational only
        meta["nvidia_smi"] = repr(e)
    res["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(out, **res)
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
