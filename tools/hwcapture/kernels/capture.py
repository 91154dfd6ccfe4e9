"""Golden outputs of whole nvcc kernels on a real GPU, for the kernel tests.

    python tools/hwcapture/kernels/capture.py build          # nvcc -ptx every .cu here (needs nvcc)
    python tools/hwcapture/kernels/capture.py run OUTDIR     # run every case on the GPU (needs cupy)
    python tools/hwcapture/kernels/capture.py emulate OUTDIR # the same cases on the emulator

The GPU runs exactly the committed ``.ptx`` files (the driver compiles them; ``cupy.RawModule(path=...)``),
so the emulator and the hardware execute the same program. Every case's arrays are saved before and after
the launch (``<case>__before__<name>`` / ``<case>__after__<name>``) together with the launch configuration,
so a test replays a case from the ``.npz`` alone. printf output is captured from the process's stdout.
"""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
DATA = os.path.join(ROOT, "tests", "data", "kernels")
SOURCES = {   # .ptx -> (.cu, extra nvcc flags)
    os.path.join(ROOT, "emulator", "demo", "mma_demo.ptx"): (os.path.join(ROOT, "emulator", "demo", "mma_demo.cu"), []),
    os.path.join(DATA, "gemm_tiled.ptx"): (os.path.join(HERE, "gemm_tiled.cu"), []),
    os.path.join(DATA, "warp_ops.ptx"): (os.path.join(HERE, "warp_ops.cu"), []),
    os.path.join(DATA, "float_ops.ptx"): (os.path.join(HERE, "float_ops.cu"), []),
    os.path.join(DATA, "float_ops_ftz.ptx"): (os.path.join(HERE, "float_ops.cu"), ["-ftz=true"]),
    os.path.join(DATA, "cta_sync.ptx"): (os.path.join(HERE, "cta_sync.cu"), []),
    os.path.join(DATA, "misc_kernels.ptx"): (os.path.join(HERE, "misc_kernels.cu"), []),
}
NVCC = ["nvcc", "-ptx", "-arch=sm_90"]


# ------------------------------------------------------------------------------------------------
# Inputs

def _f32_bits(rng, n):
    """f32 inputs mixing ordinary values, specials, subnormals, near-cancellations and raw bits."""
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 0.49999997, 3.4028235e38,
                        -3.4028235e38, 1.1754944e-38, 1e-45, -1e-45, 1.1754942e-38, 16777217.0, 2147483648.0,
                        -2147483648.0, 4294967296.0, 9.3e18, -9.3e18, 1e10, -1e10, 65504.0, 65520.0, 6e-8,
                        3e-8, 1e-40], np.float32).view(np.uint32)
    special = np.concatenate([special, np.array([0x7FC00000, 0x7FA00001, 0xFFC00123, 0x7F800001], np.uint32)])
    k = n // 8
    parts = [
        (rng.standard_normal(2 * k) * 10.0 ** rng.integers(-3, 4, 2 * k)).astype(np.float32).view(np.uint32),
        rng.choice(special, k),
        rng.integers(0, 2 ** 32, k, dtype=np.uint64).astype(np.uint32),
        (rng.standard_normal(k) * 2.0 ** rng.integers(-140, -100, k)).astype(np.float32).view(np.uint32),
        (rng.integers(-2 ** 24, 2 ** 24, k) + rng.choice([0.0, 0.5, 0.25, -0.5], k)).astype(np.float32)
        .view(np.uint32),
    ]
    out = np.concatenate(parts)
    out = np.concatenate([out, rng.integers(0, 2 ** 32, n - out.size, dtype=np.uint64).astype(np.uint32)])
    return rng.permutation(out)


def _f64(rng, n):
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.5, 5e-324, -5e-324,
                        2.2250738585072014e-308, 1.7976931348623157e308, 2.0 ** 53 + 1, 4294967295.6, -2147483648.7,
                        1e300, 1e-300], np.float64)
    k = n // 4
    parts = [rng.standard_normal(2 * k) * 10.0 ** rng.integers(-5, 6, 2 * k), rng.choice(special, k),
             rng.integers(0, 2 ** 63, n - 3 * k, dtype=np.uint64).view(np.float64)]
    return rng.permutation(np.concatenate(parts))


def cases():
    """name -> dict(ptx, kernel, grid, block, args); args: ('array', name, ndarray) or ('int'/'u64', value)."""
    out = {}
    a_iota = (np.arange(256) * 0.01).astype(np.float16)
    b_iota = (np.arange(128) * 0.01).astype(np.float16)
    rng = np.random.default_rng(2024)
    a_rand = rng.standard_normal(256).astype(np.float16)
    b_rand = rng.standard_normal(128).astype(np.float16)
    demo = os.path.join("emulator", "demo", "mma_demo.ptx")
    for kern in ("ptx_mma_shared", "ptx_mma_global"):
        for tag, a, b in (("iota", a_iota, b_iota), ("normal", a_rand, b_rand)):
            out[f"{kern}_{tag}"] = dict(ptx=demo, kernel=kern, grid=(1, 1, 1), block=(32, 1, 1), args=[
                ("array", "a", a), ("array", "b", b), ("array", "c", np.zeros(128, np.float16)),
                ("int", 16), ("int", 8), ("int", 16)])
    rng = np.random.default_rng(7)
    M, N, K = 128, 128, 64
    out["gemm_tiled"] = dict(ptx="tests/data/kernels/gemm_tiled.ptx", kernel="gemm_tiled", grid=(N // 64, M // 64, 1),
                             block=(128, 1, 1), args=[
        ("array", "A", rng.standard_normal((M, K)).astype(np.float16)),
        ("array", "B", rng.standard_normal((K, N)).astype(np.float16)),
        ("array", "C", np.zeros((M, N), np.float32)), ("int", M), ("int", N), ("int", K)])
    rng = np.random.default_rng(11)
    n = 2 * 96
    vals = rng.integers(-3000, 3000, n).astype(np.int32)
    vals[::17] = rng.integers(-2 ** 31, 2 ** 31, vals[::17].size, dtype=np.int64).astype(np.int32)
    counters = np.zeros(16, np.int32)
    counters[[1, 6]] = -2 ** 31
    counters[[2, 4]] = -1
    out["warp_ops"] = dict(ptx="tests/data/kernels/warp_ops.ptx", kernel="warp_ops", grid=(2, 1, 1),
                           block=(96, 1, 1), globals=["g_bits"], args=[
        ("array", "in", vals), ("array", "out", np.zeros(n * 24, np.int32)), ("array", "counters", counters)])
    rng = np.random.default_rng(5)
    n = 512
    out["float_ops"] = dict(ptx="tests/data/kernels/float_ops.ptx", kernel="float_ops", grid=(4, 1, 1),
                            block=(128, 1, 1), args=[
        ("array", "a", _f32_bits(rng, n).view(np.float32)), ("array", "b", _f32_bits(rng, n).view(np.float32)),
        ("array", "c", _f32_bits(rng, n).view(np.float32)), ("array", "da", _f64(rng, n)),
        ("array", "db", _f64(rng, n)), ("array", "dc", _f64(rng, n)),
        ("array", "out32", np.zeros(n * 72, np.uint32)), ("array", "out64", np.zeros(n * 16, np.uint64))])
    ftz = dict(out["float_ops"])
    ftz["ptx"] = "tests/data/kernels/float_ops_ftz.ptx"
    out["float_ops_ftz"] = ftz
    rng = np.random.default_rng(3)
    n = 3 * 80
    vals = rng.integers(-500, 500, n).astype(np.int32)
    vals[::9] = 7
    vals[5::23] = 0x311
    out["cta_sync"] = dict(ptx="tests/data/kernels/cta_sync.ptx", kernel="cta_sync", grid=(3, 1, 1),
                           block=(80, 1, 1), shared=80 * 4, args=[
        ("array", "in", vals), ("array", "out", np.full(n * 12, -1, np.int32)), ("int", n)])
    misc = "tests/data/kernels/misc_kernels.ptx"
    rng = np.random.default_rng(17)
    x = (rng.integers(-1000, 1000, 256) * 0.25).astype(np.float32)
    out["reduce_sum"] = dict(ptx=misc, kernel="reduce_sum", grid=(2, 1, 1), block=(128, 1, 1), args=[
        ("array", "x", x), ("array", "out", np.zeros(1, np.float32)), ("int", 200), ("f32", 0.5)])
    out["transpose"] = dict(ptx=misc, kernel="transpose", grid=(1, 1, 1), block=(32, 32, 1), args=[
        ("array", "in", rng.standard_normal(64 * 4).astype(np.float32)),
        ("array", "out", np.zeros(64 * 4, np.float32)), ("int", 64)])
    a = rng.integers(-5000, 5000, 64).astype(np.int32)
    b = rng.integers(-2 ** 62, 2 ** 62, 64, dtype=np.int64)
    c = rng.integers(0, 2 ** 64, 64, dtype=np.uint64)
    out["switch_int64"] = dict(ptx=misc, kernel="sw", grid=(1, 1, 1), block=(64, 1, 1), args=[
        ("array", "a", a), ("array", "b", b), ("array", "c", c)])
    return out


def entry_name(ptx_text, plain):
    for m in re.finditer(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx_text):
        name = m.group(1)
        if name == plain or re.fullmatch(rf"_Z{len(plain)}{re.escape(plain)}\w*", name):
            return name
    raise SystemExit(f"no kernel {plain} in the PTX")


def _config(case):
    """The JSON-able launch description saved with a case."""
    return json.dumps({"ptx": case["ptx"], "kernel": case["kernel"], "grid": list(case["grid"]),
                       "block": list(case["block"]), "shared": case.get("shared", 0), "globals": case.get("globals", []),
                       "args": [[a[0], a[1]] if a[0] == "array" else [a[0], a[1]] for a in case["args"]]})


# ------------------------------------------------------------------------------------------------
# Runners

class _CaptureStdout:
    """Redirect file descriptor 1 (where the CUDA driver prints device printf) into a file."""

    def __enter__(self):
        sys.stdout.flush()
        self.tmp = tempfile.TemporaryFile(mode="w+b")
        self.saved = os.dup(1)
        os.dup2(self.tmp.fileno(), 1)
        return self

    def __exit__(self, *exc):
        try:
            ctypes.CDLL(None).fflush(None)
        except OSError:
            pass
        os.dup2(self.saved, 1)
        os.close(self.saved)
        self.tmp.seek(0)
        self.text = self.tmp.read().decode("utf-8", "replace")
        self.tmp.close()


def _run_case(cp, name, case, res, repeats=3):
    """Launch one case ``repeats`` times on fresh copies of its inputs; keep the first run's results and
    record whether every run produced the same bytes (and the same printf lines, in any order)."""
    path = os.path.join(ROOT, case["ptx"])
    runs = []
    for _ in range(repeats):
        mod = cp.RawModule(path=path)
        fn = mod.get_function(entry_name(open(path).read(), case["kernel"]))
        dev, args = {}, []
        for a in case["args"]:
            if a[0] == "array":
                dev[a[1]] = cp.asarray(a[2])
                args.append(dev[a[1]])
            else:
                args.append(np.float32(a[1]) if a[0] == "f32" else np.int32(a[1]))
        with _CaptureStdout() as cap:
            fn(tuple(case["grid"]), tuple(case["block"]), tuple(args), shared_mem=case.get("shared", 0))
            cp.cuda.Device().synchronize()
        out = {f"{name}__after__{k}": cp.asnumpy(v) for k, v in dev.items()}
        for g in case.get("globals", []):
            out[f"{name}__global__{g}"] = cp.ndarray((1,), cp.uint64, memptr=mod.get_global(g)).get()
        runs.append((out, cap.text))
    out, text = runs[0]
    same = all(all(np.array_equal(o[k].view(np.uint8), out[k].view(np.uint8)) for k in out) and
               sorted(t.splitlines()) == sorted(text.splitlines()) for o, t in runs[1:])
    res.update(out)
    for a in case["args"]:
        if a[0] == "array":
            res[f"{name}__before__{a[1]}"] = a[2]
    res[f"{name}__config"] = np.array(_config(case))
    res[f"{name}__printf"] = np.array(text)
    res[f"{name}__reproducible"] = np.array(same)
    print(f"{name}: ok ({len(text.splitlines())} printf lines, {repeats} runs identical: {same})")


def run_gpu(outdir):
    import cupy as cp
    res = {}
    for name, case in cases().items():
        try:
            _run_case(cp, name, case, res)
        except Exception as e:  # noqa: BLE001 - keep the other cases
            print(f"{name}: FAILED: {e!r}")
            res[f"{name}__error"] = np.array(repr(e))
    props = cp.cuda.runtime.getDeviceProperties(0)
    meta = {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
            "cc": f"{props['major']}.{props['minor']}", "driver": cp.cuda.runtime.driverGetVersion(),
            "runtime": cp.cuda.runtime.runtimeGetVersion(), "cupy": cp.__version__}
    try:
        meta["nvidia_smi"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                            capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001 - informational only
        meta["nvidia_smi"] = repr(e)
    try:
        meta["nvcc"] = subprocess.run(["nvcc", "--version"], capture_output=True, text=True,
                                      timeout=30).stdout.strip().splitlines()[-1]
    except Exception as e:  # noqa: BLE001
        meta["nvcc"] = repr(e)
    res["meta"] = np.array(json.dumps(meta))
    os.makedirs(outdir, exist_ok=True)
    np.savez_compressed(os.path.join(outdir, "h100_kernels.npz"), **res)
    print(json.dumps(meta))


def run_emulator(outdir):
    sys.path.insert(0, ROOT)
    from emulator import GlobalMemory, load_ptx
    import io
    res = {}
    for name, case in cases().items():
      try:
        g = GlobalMemory()
        module = load_ptx(open(os.path.join(ROOT, case["ptx"])).read())
        addrs, args = {}, []
        for a in case["args"]:
            if a[0] == "array":
                addrs[a[1]] = (g.upload(a[2]), a[2])
                args.append(addrs[a[1]][0])
            else:
                args.append(a[1])
        buf = io.StringIO()
        r = module.launch(case["kernel"], case["grid"], case["block"], args, gmem=g, out=buf,
                          shared_bytes=case.get("shared", 0))
        for k, (addr, arr) in addrs.items():
            res[f"{name}__after__{k}"] = g.download(addr, arr.nbytes).view(arr.dtype).reshape(arr.shape)
        res[f"{name}__printf"] = np.array(buf.getvalue())
        print(f"{name}: {r.instructions} instructions")
      except Exception as e:  # noqa: BLE001 - keep the other cases
        print(f"{name}: FAILED: {e!r}")
    os.makedirs(outdir, exist_ok=True)
    np.savez_compressed(os.path.join(outdir, "emulated_kernels.npz"), **res)


def build():
    for out, (cu, flags) in SOURCES.items():
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.run(NVCC + flags + [os.path.basename(cu), "-o", out], check=True, cwd=os.path.dirname(cu))
        print(f"{out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build")
    for c in ("run", "emulate"):
        sp = sub.add_parser(c)
        sp.add_argument("outdir")
    a = p.parse_args()
    if a.cmd == "build":
        build()
    elif a.cmd == "run":
        run_gpu(a.outdir)
    else:
        run_emulator(a.outdir)


if __name__ == "__main__":
    main()
