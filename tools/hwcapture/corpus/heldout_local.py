"""Held-out kernels that keep per-thread data in ``.local`` memory (tests/data/local_heldout.npz), built from
third-party sources with their projects' own flags, in the corpus format (docs/corpus.md).

    CUDA_SAMPLES_DIR=... FLAGDNN_DIR=... python tools/hwcapture/corpus/heldout_local.py bundle.npz
    python tools/hwcapture/corpus/run_gpu.py bundle.npz gpu.npz                    # on the GPU machine
    python tools/hwcapture/corpus/heldout_local.py --pack bundle.npz gpu.npz      # -> tests/data/local_heldout.npz

* NVIDIA's CUDA samples, ``Samples/2_Concepts_and_Techniques/interval``: interval Newton root finding in f64
  with directed roundings; the work list is a per-thread stack in local memory indexed at run time
  (``local_stack``), and implementation 2 recurses (calls with stack frames in local memory). ``nvcc -ptx`` of
  ``interval.cu`` as the sample builds it (no extra flags), for sm_80 and sm_90a; 2 CTAs of 64 threads.
* ``tools/hwcapture/localmem/local_widths.ptx`` (the project's own probe): every access width and vector.
* FlagDNN's NVIDIA unary kernels (``backends/nvidia/kernels/unary.py``): ``tl.sin``/``tl.cos`` and libdevice's
  ``tan`` on large arguments, whose Payne-Hanek reduction keeps its table in local memory; Triton 3.6, sm_80 and
  sm_90a.
"""
import importlib.util
import json
import os
import shutil
import sys

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "local_heldout.npz")
INTERVAL = "Samples/2_Concepts_and_Techniques/interval"
UNARY = "backends/nvidia/kernels/unary.py"


def _angles(rng, n):
    """f32 arguments for sin/cos/tan: mostly beyond 105615 (the slow path), every binade up to 3.4e38, both signs,
    the float32 values nearest to large multiples of pi/2, and the special values."""
    mag = 10.0 ** rng.uniform(-3, 38.5, n)
    x = (mag * rng.choice([-1.0, 1.0], n)).astype(np.float32)
    k = rng.integers(1, 1 << 40, n // 8).astype(np.float64)
    x[: n // 8] = (k * (np.pi / 2)).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-42, 105615.0, -105615.0, 105616.0,
                        3.4028235e38, -3.4028235e38, 1.5707964, 3.1415927, 48039.0, 117435.99, 1e10, 2 ** 63],
                       np.float32)
    x[n // 8: n // 8 + special.size] = special
    nan = np.array([0x7FC00001, 0xFFC12345, 0x7F800001, 0xFF812345], np.uint32).view(np.float32)
    x[n // 8 + special.size: n // 8 + special.size + nan.size] = nan
    return x


def triton_cases(flagdnn, rng):
    # the module imports only triton and libdevice: loaded as it is, from a relative copy (relative file names in
    # the PTX's debug information)
    os.makedirs(os.path.join(ROOT, "build", "thirdparty"), exist_ok=True)
    rel = os.path.join("build", "thirdparty", "flagdnn_unary.py")
    shutil.copy(os.path.join(flagdnn, UNARY), os.path.join(ROOT, rel))
    spec = importlib.util.spec_from_file_location("flagdnn_unary", rel)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    n = 4096
    origin = f"FlagDNN {UNARY}"
    out = []
    x = _angles(rng, n)
    for op in ("tan", "sin", "cos"):
        out.append(dict(name=f"flagdnn_unary_{op}_f32", kernel=m.unary_contiguous_kernel, grid=(2,),
                        args=dict(x=x, o=np.zeros(n, np.float32), n=n), outputs=["o"], num_warps=4,
                        targets=("sm_80", "sm_90a"), constexprs=dict(OP_TYPE=op, BLOCK_SIZE=1024, TILES_PER_PROGRAM=2),
                        config=dict(origin=f"{origin} unary_contiguous_kernel OP_TYPE={op}")))
    xb = _angles(rng, n).astype(ml_dtypes.bfloat16)
    out.append(dict(name="flagdnn_unary_sin_bf16", kernel=m.unary_contiguous_kernel, grid=(4,),
                    args=dict(x=xb, o=np.zeros(n, ml_dtypes.bfloat16), n=n), outputs=["o"], num_warps=4,
                    targets=("sm_80", "sm_90a"), constexprs=dict(OP_TYPE="sin", BLOCK_SIZE=1024, TILES_PER_PROGRAM=1),
                    config=dict(origin=f"{origin} unary_contiguous_kernel OP_TYPE=sin, bfloat16")))
    # a transposed 64 x 64 view: shape (1, 1, 1, 1, 64, 64), strides (0, 0, 0, 0, 1, 64)
    xs = _angles(rng, n)
    out.append(dict(name="flagdnn_unary_cos_strided", kernel=m.unary_strided_kernel, grid=(4,),
                    args=dict(x=xs, o=np.zeros(n, np.float32), n=n, s1=1, s2=1, s3=1, s4=64, s5=64, sx0=0, sx1=0,
                              sx2=0, sx3=0, sx4=1, sx5=64), outputs=["o"], num_warps=4, targets=("sm_80", "sm_90a"),
                    constexprs=dict(OP_TYPE="cos", BLOCK_SIZE=1024, TILES_PER_PROGRAM=1),
                    config=dict(origin=f"{origin} unary_strided_kernel OP_TYPE=cos, a transposed 64 x 64 view")))
    for op, code in (("sin", 14), ("tan", 15)):
        out.append(dict(name=f"flagdnn_pointwise_{op}_f32", kernel=m.unary_pointwise_contiguous_kernel, grid=(2,),
                        args=dict(x=x, o=np.zeros(n, np.float32), n=n), outputs=["o"], num_warps=4,
                        targets=("sm_80", "sm_90a"),
                        constexprs=dict(OPERATION=code, negative_slope=0.0, lower_clip=0.0, upper_clip=0.0,
                                        HAS_UPPER_CLIP=False, SWISH_BETA=1.0, ELU_ALPHA=1.0, SOFTPLUS_BETA=1.0,
                                        TILES_PER_PROGRAM=2, BLOCK_SIZE=1024),
                        config=dict(origin=f"{origin} unary_pointwise_contiguous_kernel OPERATION={code} ({op})")))
    return out


def interval_cases(samples):
    import nvcc_cases
    src_dir = os.path.join(samples, INTERVAL)
    # a relative copy beside the corpus sources (relative file names in the PTX)
    dst = os.path.join(ROOT, "build", "thirdparty", "interval")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src_dir, dst)
    threads = 65536                      # interval.h: GRID_SIZE * BLOCK_SIZE, the results' stride
    per = 4                              # result slots per thread kept (a thread finds at most 2 roots here)
    start = np.array([np.float32(0.01), np.float32(4.0)], np.float64).tobytes()   # interval.cu: i(0.01f, 4.0f)
    items = []
    for impl in (0, 1):          # (2, the recursive one, needs a larger stack than the launch default: it faults)
        # nvcc_cases._build's arguments: ("a", name, array), ("bytes", None, raw bytes), (kind, dtype, value)
        items.append(("test_interval_newton", ("sm80", "sm90a"), (2,), (64,), 0,
                      [("a", "buffer", np.zeros((per * threads, 2), np.float64)),
                       ("a", "nresults", np.zeros(128, np.int32)), ("bytes", None, start), ("s", "int32", impl)],
                      ["buffer", "nresults"],
                      dict(name=f"interval_impl{impl}",
                           origin=f"NVIDIA cuda-samples {INTERVAL}/interval.cu test_interval_newton<double>, "
                                  f"implementation {impl} ({['naive', 'top in registers', 'recursive'][impl]})")))
    return nvcc_cases._build(os.path.join(dst, "interval.cu"), "cuda_samples", items, source="nvcc",
                             include=(dst, os.path.join(samples, "Common")))


def ptx_cases(rng):
    """tools/hwcapture/localmem/local_widths.ptx: every .local access width and vector, overlapping bytes, a
    run-time index, 32-bit local addresses and generic addresses into the window; 2 warps."""
    src = os.path.join(ROOT, "tools", "hwcapture", "localmem", "local_widths.ptx")
    ptx = open(src).read()
    cfg = dict(source="ptx", tool="hand-written PTX", target="sm_80", kernel="local_widths", grid=[1, 1, 1],
               block=[64, 1, 1], shared=0, args=[["array", "out"], ["array", "inp"]], outputs=["out"],
               origin="tools/hwcapture/localmem/local_widths.ptx")
    inputs = dict(out=np.zeros(64 * 16, np.uint32), inp=rng.integers(0, 1 << 32, 64 * 16, dtype=np.uint64)
                  .astype(np.uint32))
    return {"ptx_local_widths": (ptx, cfg, inputs)}


def build(path):
    sys.path.insert(0, HERE)
    import build as corpus_build            # (chdir to the repository root)
    rng = np.random.default_rng(2611)
    flagdnn, samples = os.environ.get("FLAGDNN_DIR"), os.environ.get("CUDA_SAMPLES_DIR")
    if not flagdnn or not samples:
        raise SystemExit("set FLAGDNN_DIR and CUDA_SAMPLES_DIR to checkouts of FlagDNN and NVIDIA's cuda-samples")
    allc = corpus_build.triton_cases(triton_cases(flagdnn, rng), extra=dict(file="local_heldout"))
    for name, (ptx, cfg, inputs) in {**interval_cases(samples), **ptx_cases(rng)}.items():
        cfg["file"] = "local_heldout"
        allc[name] = (ptx, cfg, inputs)
    corpus_build.write_bundle(allc, path)


def pack(bundle_path, gpu_path):
    """The bundle and the GPU's outputs as one file in the corpus format (cases the GPU failed or ran twice with
    different results are left out and listed)."""
    with np.load(bundle_path, allow_pickle=False) as z:
        bundle = {k: z[k] for k in z.files}
    with np.load(gpu_path, allow_pickle=False) as z:
        gpu = {k: z[k] for k in z.files}
    meta = json.loads(str(gpu.pop("meta")))
    data = {}
    for name in sorted({k.split("__")[0] for k in bundle}):
        if f"{name}__error" in gpu or not bool(gpu.get(f"{name}__reproducible", False)):
            print(f"left out {name}: {gpu.get(f'{name}__error', 'two GPU runs differed')}")
            continue
        cfg = json.loads(str(bundle[f"{name}__config"]))
        cfg["gpu"] = meta["gpu"]
        cfg["driver"] = meta.get("nvidia_smi", "")
        for k, v in bundle.items():
            if k.split("__")[0] == name and not k.endswith("__config"):
                data[k] = v
        data[f"{name}__config"] = np.array(json.dumps(cfg))
        for k, v in gpu.items():
            if k.startswith(name + "__out__"):
                data[k] = v.view({1: np.uint8, 2: np.uint16}[v.dtype.itemsize]) \
                    if v.dtype.kind == "V" or v.dtype.name in ("bfloat16",) else v
    np.savez_compressed(OUT, **data)
    print(f"-> {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pack"]:
        pack(sys.argv[2], sys.argv[3])
    else:
        build(sys.argv[1])
