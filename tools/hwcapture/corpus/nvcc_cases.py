"""The nvcc half of the corpus: CUDA kernels (cuda/*.cu) compiled with ``nvcc -ptx`` under several flag sets
(sm_80, sm_90a, ``-lineinfo``, ``-G``, ``--use_fast_math``), and CuTe kernels built from CUTLASS headers
(``cute/*.cu``, needs ``CUTLASS_DIR`` pointing at a CUTLASS checkout's ``include`` folder).
"""
import os
import re
import subprocess
import tempfile

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FLAGS = {   # flag-set name -> nvcc flags
    "sm80": ["-arch=sm_80"],
    "sm90a": ["-arch=sm_90a"],
    "lineinfo": ["-arch=sm_90a", "-lineinfo"],
    "G": ["-arch=sm_90a", "-G"],
    "fastmath": ["-arch=sm_90a", "--use_fast_math"],
}


def nvcc_ptx(src, flags, include=()):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "k.ptx")
        cmd = ["nvcc", "-ptx", "-std=c++17", *flags, *[f"-I{i}" for i in include], os.path.relpath(src, HERE),
               "-o", out]
        subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=HERE)   # relative file names
        return open(out).read()


def _f32(rng, n, scale=1.0):
    x = (rng.standard_normal(n) * scale).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-42, 65504.0, 70000.0, 3e38, 1.5, 2.5,
                        -2.5, 0.5, 255.5, 2147483648.0, -129.0, 1e10], np.float32)
    x[rng.choice(n, min(n // 8, special.size), replace=False)] = special[:min(n // 8, special.size)]
    return x


def basic_cases(rng):
    """(kernel, flag sets, grid, block, shared, args [(kind, name, value)], outputs)."""
    n = 1000
    out = []
    all_flags = ("sm80", "sm90a", "lineinfo", "G")

    def add(kernel, grid, block, args, outputs, flags=all_flags, shared=0):
        out.append((kernel, flags, grid, block, shared, args, outputs))

    add("saxpy", (4,), (256,), [("s", "int32", n), ("s", "float32", 1.75), ("a", "x", _f32(rng, n)),
                                ("a", "y", _f32(rng, n))], ["y"], flags=all_flags + ("fastmath",))
    add("reduce_sum", (4,), (256,), [("a", "x", rng.standard_normal(5000).astype(np.float32)),
                                     ("a", "out", np.zeros(4, np.float32)), ("s", "int32", 5000)], ["out"])
    add("histogram_smem", (3,), (128,), [("a", "x", rng.integers(0, 2**32, 3000, dtype=np.uint64).astype(np.uint32)),
                                         ("a", "h", np.zeros(64, np.uint32)), ("s", "int32", 3000)], ["h"])
    add("transpose_smem", (3, 2), (32, 8), [("a", "inp", rng.standard_normal(50 * 70).astype(np.float32)),
                                            ("a", "out", np.zeros(50 * 70, np.float32)), ("s", "int32", 50),
                                            ("s", "int32", 70)], ["out"])
    b64 = rng.integers(-2**40, 2**40, 256, dtype=np.int64)
    b64[b64 == 0] = 7
    b64[:64] = rng.integers(1, 100, 64)
    add("int_math", (2,), (128,), [("a", "a", rng.integers(-2**62, 2**62, 256, dtype=np.int64)), ("a", "b", b64),
                                   ("a", "o", np.zeros(1024, np.int64)),
                                   ("a", "u", rng.integers(0, 2**32, 512, dtype=np.uint64).astype(np.uint32)),
                                   ("a", "ou", np.zeros(256, np.uint32)), ("s", "int32", 256)], ["o", "ou"])
    add("float_math", (2,), (256,), [("a", "x", _f32(rng, 512, 10.0)), ("a", "y", _f32(rng, 512, 3.0)),
                                     ("a", "o", np.zeros(512, np.float32)), ("s", "int32", 512)], ["o"],
        flags=all_flags + ("fastmath",))
    add("double_math", (2,), (128,), [("a", "x", rng.standard_normal(256) * 1e3), ("a", "y", rng.standard_normal(256)),
                                      ("a", "o", np.zeros(256)), ("s", "int32", 256)], ["o"], flags=("sm90a", "G"))
    add("double_div", (2,), (128,), [("a", "x", rng.standard_normal(256) * 1e3), ("a", "y", rng.standard_normal(256)),
                                     ("a", "o", np.zeros(256)), ("s", "int32", 256)], ["o"], flags=("sm90a",))
    add("half_math", (1,), (128,), [("a", "x", rng.standard_normal(256).astype(np.float16)),
                                    ("a", "y", rng.standard_normal(256).astype(np.float16)),
                                    ("a", "o", np.zeros(256, np.float16)),
                                    ("a", "bx", rng.standard_normal(256).astype(ml_dtypes.bfloat16)),
                                    ("a", "bo", np.zeros(256, ml_dtypes.bfloat16)), ("s", "int32", 128)],
        ["o", "bo"], flags=("sm80", "sm90a", "G"))
    add("conversions", (2,), (256,), [("a", "x", _f32(rng, 512, 1e3)), ("a", "h", np.zeros(512, np.float16)),
                                      ("a", "b", np.zeros(512, ml_dtypes.bfloat16)), ("a", "iv", np.zeros(512, np.int32)),
                                      ("a", "uv", np.zeros(512, np.uint32)), ("a", "c", np.zeros(512, np.int8)),
                                      ("a", "d", np.zeros(512)), ("a", "ll", np.zeros(512, np.int64)),
                                      ("s", "int32", 512)], ["h", "b", "iv", "uv", "c", "d", "ll"],
        flags=("sm80", "sm90a", "G"))
    add("warp_collectives", (2,), (64,), [("a", "x", rng.integers(0, 2**32, 128, dtype=np.uint64).astype(np.uint32)),
                                          ("a", "o", np.zeros(128, np.uint32))], ["o"])
    add("calls_and_switch", (2,), (128,), [("a", "x", rng.standard_normal(256).astype(np.float32)),
                                           ("a", "sel", rng.integers(0, 100, 256).astype(np.int32)),
                                           ("a", "o", np.zeros(256, np.float32)), ("s", "int32", 256)], ["o"])
    add("dyn_smem_scan", (1,), (256,), [("a", "x", rng.integers(-100, 100, 256).astype(np.int32)),
                                        ("a", "o", np.zeros(256, np.int32)), ("s", "int32", 250)], ["o"],
        shared=1024, flags=("sm90a", "G"))
    add("cache_hints", (2,), (128,), [("a", "x", _f32(rng, 256)), ("a", "o", np.zeros(256, np.float32)),
                                      ("s", "int32", 256)], ["o"], flags=("sm80", "sm90a", "lineinfo"))
    add("policy_values", (1,), (32,), [("a", "o", np.zeros(8, np.uint64))], ["o"], flags=("sm90a",))
    return out


def mma_cases(rng):
    out = []
    M = N = 32
    K = 64
    out.append(("wmma_f16", ("sm80", "sm90a", "G"), (2, 2), (32,), 0,
                [("a", "a", rng.standard_normal((M, K)).astype(np.float16)),
                 ("a", "b", rng.standard_normal((N, K)).astype(np.float16)), ("a", "c", np.zeros((M, N), np.float32)),
                 ("s", "int32", M), ("s", "int32", N), ("s", "int32", K)], ["c"]))
    out.append(("wmma_tf32", ("sm80", "sm90a"), (2, 2), (32,), 0,
                [("a", "a", rng.standard_normal((M, K)).astype(np.float32)),
                 ("a", "b", rng.standard_normal((K, N)).astype(np.float32)), ("a", "c", np.zeros((M, N), np.float32)),
                 ("s", "int32", M), ("s", "int32", N), ("s", "int32", K)], ["c"]))
    out.append(("wmma_s8", ("sm80", "sm90a"), (2, 2), (32,), 0,
                [("a", "a", rng.integers(-128, 128, (M, K)).astype(np.int8)),
                 ("a", "b", rng.integers(-128, 128, (N, K)).astype(np.int8)), ("a", "c", np.zeros((M, N), np.int32)),
                 ("s", "int32", M), ("s", "int32", N), ("s", "int32", K)], ["c"]))
    out.append(("pipeline_copy", ("sm80", "sm90a", "G"), (1,), (128,), 0,
                [("a", "inp", rng.standard_normal(4 * 512).astype(np.float32)),
                 ("a", "out", np.zeros(4 * 512, np.float32)), ("s", "int32", 512)], ["out"]))
    return out


def cluster_cases(rng):
    """Thread-block clusters (cuda/cluster.cu): special registers under runtime cluster dimensions (and none),
    and a 4-CTA cluster using distributed shared memory, barrier.cluster, remote mbarriers, TMA multicast."""
    import sys
    sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "..")))
    from emulator import TensorMap
    out = []
    for cl, grid, block in (((2, 2, 1), (4, 2, 2), (32, 2)), ((4, 1, 2), (8, 1, 2), (64,)), (None, (3, 2), (32,))):
        ncta = int(np.prod(grid))
        tag = "c" + "".join(map(str, cl)) if cl else "nocluster"
        extra = {"name": f"cluster_sregs_{tag}"}
        if cl:
            extra["cluster"] = list(cl)
        out.append(("cluster_sregs", ("sm90a",), grid, block, 0, [("a", "out", np.zeros(ncta * 32, np.uint32))],
                    ["out"], extra))
    out.append(("cluster_addr_probe", ("sm90a",), (4,), (64,), 0, [("a", "out", np.zeros(64, np.uint64))], ["out"],
                {"cluster": [4, 1, 1]}))
    src = rng.standard_normal((128, 32)).astype(np.float32)
    tm = TensorMap.encode_tiled("FLOAT32", 2, 0, [32, 128], [128], [32, 32])
    out.append(("cluster_dsmem", ("sm90a",), (8,), (128,), 0,
                [("a", "in", rng.integers(0, 2**32, 8 * 256, dtype=np.uint64).astype(np.uint32)),
                 ("a", "out", np.zeros(8 * 1024, np.uint32)), ("tensormap", "src", (bytes(tm), src)),
                 ("a", "tiles", np.zeros(8 * 1024, np.float32))], ["out", "tiles"],
                {"nondeterministic": {"out": [[906 * 4, 908 * 4], [5002 * 4, 5004 * 4]],
                                      "why": "atom.max.u64 through generic addresses into another CTA's shared "
                                             "memory: four H100 runs left four different values there, not always "
                                             "the maximum"}}))
    return out


def _build(src, prefix, items, source="nvcc", include=()):
    res = {}
    cache = {}
    for kernel, flagsets, grid, block, shared, args, outputs, *extra in items:
        extra = dict(extra[0]) if extra else {}
        for fs in flagsets:
            if fs not in cache:
                cache[fs] = nvcc_ptx(src, FLAGS[fs], include)
            ptx = cache[fs]
            entry = kernel
            if not re.search(rf"\.entry\s+{re.escape(kernel)}\s*\(", ptx):
                m = re.search(rf"\.entry\s+(_Z\d+{re.escape(kernel)}\w*)\s*\(", ptx)     # a C++ template kernel
                if not m:
                    raise RuntimeError(f"{kernel} not found in the PTX of {src}")
                entry = m.group(1)
            label = extra.get("name", kernel)
            name = (label if label.startswith(prefix + "_") else f"{prefix}_{label}") + f"_{fs}"
            arglist, inputs = [], {}
            for kind, aname, v in args:
                if kind == "a":
                    arglist.append(["array", aname])
                    inputs[aname] = v
                elif kind == "bytes":
                    arglist.append(["bytes", v.hex()])
                elif kind == "tensormap":          # (bytes, array described): the address is written at launch
                    arglist.append(["tensormap", aname, v[0].hex(), 0])
                    inputs[aname] = v[1]
                else:
                    arglist.append(["scalar", aname, v])
            cfg = dict(source=source, tool=_nvcc_version(), flags=" ".join(FLAGS[fs]),
                       target=FLAGS[fs][0].split("=")[1], kernel=entry, grid=list(grid) + [1] * (3 - len(grid)),
                       block=list(block) + [1] * (3 - len(block)), shared=shared, args=arglist, outputs=outputs,
                       **{k: v for k, v in extra.items() if k != "name"})
            res[name] = (ptx, cfg, inputs)       # the whole module as nvcc wrote it
    return res


_VERSION = []


def _nvcc_version():
    if not _VERSION:
        v = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
        _VERSION.append(v)
    return _VERSION[0]


def cases(kinds):
    rng = np.random.default_rng(90)
    res = {}
    if "nvcc" in kinds:
        res.update(_build(os.path.join(HERE, "cuda", "basic.cu"), "nvcc", basic_cases(rng)))
        res.update(_build(os.path.join(HERE, "cuda", "mma.cu"), "nvcc", mma_cases(rng)))
    if "nvcc" in kinds or "cluster" in kinds:
        res.update(_build(os.path.join(HERE, "cuda", "cluster.cu"), "nvcc", cluster_cases(np.random.default_rng(91))))
    if "cute" in kinds:
        from cute_cases import cute_cases
        inc = os.environ.get("CUTLASS_DIR")
        if not inc:
            raise RuntimeError("set CUTLASS_DIR to a CUTLASS checkout's include folder to build the CuTe cases")
        for src, items in cute_cases(rng):
            res.update(_build(src, "cute", items, source="cute", include=(inc,)))
        # CUTLASS's CuTe TMA tutorial on a 2-CTA cluster: its launches as recorded on the GPU (cute_tutorial.py)
        import cute_tutorial
        dump = open(os.path.join(HERE, "cute", "tutorial_launches.txt")).read()
        ptx = cute_tutorial.compile_ptx(os.path.dirname(os.path.normpath(inc)))
        res.update(cute_tutorial.cases(dump, ptx, np.random.default_rng(92)))
    return res
