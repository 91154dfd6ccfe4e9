"""Compile the benchmark's Triton kernels to PTX for sm_90a (no GPU needed) into benchmarks/data/.

    TRITON_DISABLE_LINE_INFO=1 python benchmarks/build_triton_ptx.py     # needs triton

The PTX files are committed, so the benchmark itself needs no Triton.
"""
import json
import os

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data")


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x * 2.0 + y, mask=m)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < ncols
    x = tl.load(x_ptr + row * ncols + offs, mask=m, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp2(x * 1.4426950408889634)
    tl.store(out_ptr + row * ncols + offs, e / tl.sum(e, axis=0), mask=m)


@triton.jit
def sum_kernel(x_ptr, out_ptr, ncols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * ncols + offs, mask=offs < ncols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + offs)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + offs, tl.cumsum(x, axis=0))


@triton.jit
def int_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    r = (x * 3 + (y >> 2)) ^ (x & 0xFF)
    r = tl.where(x > y, r, r - y)
    tl.store(out_ptr + offs, r, mask=m)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BK * sak
        b += BK * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc)


KERNELS = {
    # name: (function, signature, constexprs, num_warps); the matmul is compiled for sm_80 (mma.sync,
    # ldmatrix, cp.async: an H100 runs it as is), the rest for sm_90a
    "add": (add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
            {"BLOCK": 1024}, 4),
    "softmax": (softmax_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "ncols": "i32"}, {"BLOCK": 1024}, 4),
    "sum": (sum_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "ncols": "i32"}, {"BLOCK": 1024}, 4),
    "cumsum": (cumsum_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 1024}, 4),
    "int": (int_kernel, {"x_ptr": "*i32", "y_ptr": "*i32", "out_ptr": "*i32", "n": "i32"}, {"BLOCK": 1024}, 4),
    "matmul": (matmul_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
                               "K": "i32", "sam": "i32", "sak": "i32", "sbk": "i32", "sbn": "i32", "scm": "i32",
                               "scn": "i32"}, {"BM": 64, "BN": 64, "BK": 32}, 4),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    meta = {}
    for name, (fn, sig, consts, warps) in KERNELS.items():
        target = GPUTarget("cuda", 80 if name == "matmul" else 90, 32)
        sig = dict(sig)
        sig.update({k: "constexpr" for k in consts})
        k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts), target=target,
                           options={"num_warps": warps, "num_stages": 1 if name != "matmul" else 2})
        path = os.path.join(OUT, f"triton_{name}.ptx")
        with open(path, "w") as f:
            f.write(k.asm["ptx"])
        nparams = k.asm["ptx"].count(".param .")
        meta[name] = {"kernel": k.metadata.name, "num_warps": warps, "shared": k.metadata.shared,
                      "extra_params": nparams - len([v for v in sig.values() if v != "constexpr"])}
        print(f"{path}: {k.asm['ptx'].count(chr(10))} lines, shared {k.metadata.shared}")
    with open(os.path.join(OUT, "triton_kernels.json"), "w") as f:
        json.dump({"triton": triton.__version__, "kernels": meta}, f, indent=1)


if __name__ == "__main__":
    main()
