"""Build the control-flow capture bundle: kernels as nvcc, Triton and Gluon wrote them, and hand-written PTX.

    python tools/hwcapture/ctrlflow/build.py BUNDLE.npz SASS_DIR

Cases use the corpus format (docs/corpus.md). Then, on the GPU machine:

    python tools/hwcapture/corpus/run_gpu.py BUNDLE.npz GPU.npz
    for f in SASS_DIR/*.ptx; do ptxas -arch=sm_90a $f -o ${f%.ptx}.cubin && cuobjdump -sass ${f%.ptx}.cubin; done

and ``pack.py BUNDLE.npz GPU.npz`` (in this folder) writes ``tests/data/ctrlflow.npz``. SASS_DIR receives the PTX
of the wgmma cases, whose SASS shows where ptxas puts its own warpgroup waits and arrives.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "corpus"))
os.chdir(ROOT)


def nvcc_ptx(flags):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "k.ptx")
        subprocess.run(["nvcc", "-ptx", "-std=c++17", *flags, "ctrlflow.cu", "-o", out], check=True, cwd=HERE)
        return open(out).read()


def nvcc_cases(rng):
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    sel = rng.integers(0, 1000, n).astype(np.int32)
    res = {}
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    for tag, flags in (("sm90a", ["-arch=sm_90a"]), ("G", ["-arch=sm_90a", "-G"])):
        ptx = nvcc_ptx(flags)
        base = dict(source="nvcc", tool=version, flags=" ".join(flags), target="sm_90a", grid=[3, 1, 1],
                    block=[128, 1, 1], shared=0)
        f32 = lambda: np.zeros(n, np.float32)    # noqa: E731
        for kernel, args, outs in (
                ("fptr_table", [("array", "x", x), ("array", "sel", sel), ("array", "o", f32()),
                                ("scalar", "int32", n)], ["o"]),
                ("fptr_loop", [("array", "x", x), ("array", "sel", sel), ("array", "o", f32()),
                               ("scalar", "int32", n)], ["o"]),
                ("virtual_calls", [("array", "x", x), ("array", "sel", sel), ("array", "o", f32()),
                                   ("array", "sides", np.zeros(n, np.int32)), ("scalar", "int32", n)], ["o", "sides"]),
                ("dense_switch", [("array", "x", x), ("array", "sel", sel), ("array", "o", f32()),
                                  ("scalar", "int32", n)], ["o"]),
                ("brkpt_guarded", [("array", "a", x), ("array", "c", x[::-1].copy()), ("array", "o", f32()),
                                   ("scalar", "int32", n), ("scalar", "int32", 2)], ["o"])):
            res[f"nvcc_{kernel}_{tag}"] = (ptx, dict(base, kernel=kernel), args, outs)
    return res


def triton_cases(rng):
    import triton
    import triton.language as tl
    import emulator.triton as et
    from triton_kernels import matmul_kernel
    res = {}
    for name, M, BK in (("matmul_f16acc_64x64", 64, 32), ("matmul_f16acc_128", 128, 64)):
        a = rng.standard_normal((M, M)).astype(np.float16)
        b = rng.standard_normal((M, M)).astype(np.float16)
        c = np.zeros((M, M), np.float16)
        k = et.compile(matmul_kernel, a, b, c, M, M, M, M, 1, M, 1, M, 1, target="sm_90a", num_warps=4, BM=64,
                       BN=64, BK=BK, PREC="ieee", ACC=tl.float16, OUT=tl.float16)
        vals = dict(a_ptr=("array", "a", a), b_ptr=("array", "b", b), c_ptr=("array", "c", c))
        for pname, v in zip(("M", "N", "K", "sam", "sak", "sbk", "sbn", "scm", "scn"), (M, M, M, M, 1, M, 1, M, 1)):
            vals[pname] = ("scalar", "int32", v)
        args = [vals[pname] for pname, _ in k.params]          # Triton drops the arguments it specialised (1)
        res[f"triton_{name}_sm90a"] = (k.ptx, dict(source="triton", tool=f"Triton {triton.__version__}",
                                                   target="sm_90a", kernel=k.name, grid=[M // 64, M // 64, 1],
                                                   block=[32 * k.num_warps, 1, 1], shared=int(k.shared), scratch=0),
                                       args, ["c"])
    import gluon_ws
    ptx, name, nw, shared, scratch = gluon_ws.compile_ptx()
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    res["triton_gluon_ws_loops_sm90a"] = (ptx, dict(source="triton", tool=f"Triton {triton.__version__} (Gluon)",
                                                    target="sm_90a", kernel=name, grid=[2, 1, 1], block=[32 * nw, 1, 1],
                                                    shared=int(shared), scratch=scratch),
                                          [("array", "x", x), ("array", "y", np.zeros(n, np.float32)),
                                           ("array", "z", np.zeros(32, np.float32)),
                                           ("array", "w", np.zeros(n, np.float32)), ("scalar", "int32", n)],
                                          ["y", "z", "w"])
    return res


def hand_cases(rng):
    import handwritten as h
    res = {}
    for group in (h.brx_cases(rng), h.call_cases(), h.wgmma_cases(rng)):
        for name, (ptx, cfg, args, outs) in group.items():
            res[name] = (ptx, dict(cfg, source="ptx", tool="hand-written", target="sm_90a", shared=0), args, outs)
    return res


def main():
    out, sass_dir = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(2222)
    cases = {}
    cases.update(nvcc_cases(rng))
    cases.update(hand_cases(rng))
    cases.update(triton_cases(rng))
    res, first = {}, {}
    os.makedirs(sass_dir, exist_ok=True)
    for name, (ptx, cfg, args, outs) in cases.items():
        arglist, inputs = [], {}
        for kind, a, v in args:
            if kind == "array":
                arglist.append(["array", a])
                inputs[a] = v
            else:
                arglist.append(["scalar", a, v])
        cfg = dict(cfg, args=arglist, outputs=outs, dtypes={k: v.dtype.name for k, v in inputs.items()})
        if ptx in first:
            cfg["ptx_from"] = first[ptx]
        else:
            first[ptx] = name
            res[f"{name}__ptx"] = np.frombuffer(ptx.encode(), np.uint8)
            if "wgmma" in name or "f16acc" in name:
                open(os.path.join(sass_dir, name + ".ptx"), "w").write(ptx)
        res[f"{name}__config"] = np.array(json.dumps(cfg))
        for k, v in inputs.items():
            res[f"{name}__in__{k}"] = v
    np.savez_compressed(out, **res)
    print(f"{len(cases)} cases -> {out}")


if __name__ == "__main__":
    main()
