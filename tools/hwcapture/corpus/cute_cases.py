"""CuTe cases: kernels in cute/cute_kernels.cu built from the CUTLASS headers; the bytes of their aggregate
arguments (shapes, strides, layouts, tiled MMA/copy objects) are printed by the same file built for the host."""
import os
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "cute", "cute_kernels.cu")


def host_arg_bytes(include, src=SRC, arch="sm_80"):
    """{kernel: [hex bytes of each aggregate argument, in order]} from the host build of a CuTe source."""
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "dump")
        subprocess.run(["nvcc", "-std=c++17", f"-arch={arch}", f"-I{include}", "-diag-suppress", "550", src, "-o",
                        exe], check=True, capture_output=True, text=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    return {ln.split()[0]: ln.split()[1:] for ln in out.splitlines() if ln.strip()}


def cute_cases(rng):
    raw = host_arg_bytes(os.environ["CUTLASS_DIR"])
    sm90_src = os.path.join(HERE, "cute", "cute_sm90.cu")
    raw.update(host_arg_bytes(os.environ["CUTLASS_DIR"], sm90_src, "sm_90a"))

    def b(kernel, i):
        return ("bytes", None, bytes.fromhex(raw[kernel][i]))

    items = []
    M, N = 96, 80
    items.append(("cute_scale_copy", ("sm80", "sm90a"), (3, 5), (128,), 0,
                  [("a", "inp", rng.standard_normal(M * N).astype(np.float32)), ("a", "out", np.zeros(M * N, np.float32)),
                   b("cute_scale_copy", 0), b("cute_scale_copy", 1), b("cute_scale_copy", 2),
                   b("cute_scale_copy", 3)], ["out"]))
    items.append(("cute_sgemm_nt", ("sm80", "sm90a"), (2, 2), (256,), 0,
                  [b("cute_sgemm_nt", 0), ("a", "A", rng.standard_normal(64 * 32).astype(np.float32)),
                   b("cute_sgemm_nt", 1), ("a", "B", rng.standard_normal(64 * 32).astype(np.float32)),
                   b("cute_sgemm_nt", 2), ("a", "C", np.zeros(64 * 64, np.float32)), b("cute_sgemm_nt", 3),
                   b("cute_sgemm_nt", 4), b("cute_sgemm_nt", 5), b("cute_sgemm_nt", 6)], ["C"]))
    items.append(("cute_hgemm_tn", ("sm80", "sm90a"), (2, 2), (128,), 0,
                  [("a", "A", rng.standard_normal(128 * 64).astype(np.float16)),
                   ("a", "B", rng.standard_normal(128 * 64).astype(np.float16)),
                   ("a", "C", np.zeros(128 * 128, np.float32)), ("s", "int32", 128), ("s", "int32", 128),
                   ("s", "int32", 64), b("cute_hgemm_tn", 0), b("cute_hgemm_tn", 1)], ["C"]))
    items.append(("cute_swizzle_transpose", ("sm90a",), (1,), (128,), 0,
                  [("a", "inp", rng.standard_normal(64 * 64).astype(np.float16)),
                   ("a", "out", np.zeros(64 * 64, np.float16)), b("cute_swizzle_transpose", 0)], ["out"]))
    sm90 = [("cute_wgmma_tn", ("sm90a",), (1,), (128,), 0,
             [("a", "A", rng.standard_normal(64 * 128).astype(np.float16)),
              ("a", "B", rng.standard_normal(64 * 128).astype(np.float16)),
              ("a", "C", np.zeros(64 * 64, np.float32)), ("s", "int32", 128),
              b("cute_wgmma_tn", 0)], ["C"])]
    return [(SRC, items), (sm90_src, sm90)]
