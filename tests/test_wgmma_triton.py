"""Triton 3.6's own sm_90a PTX (tl.dot -> wgmma.mma_async, descriptors, fences, commit/wait pipelines) runs
bit-exact: the kernels, inputs and outputs come from an H100 run (tools/hwcapture/wgmma/triton_capture.py)."""
import re

import numpy as np
import pytest

import wgmma_captures as wc
from emulator import GlobalMemory, load_ptx

DATA, META = wc.load("h100_triton.npz")
KERNELS = {k["name"]: k for k in META["kernels"]}


def run_triton_kernel(name, engine=None):
    k = KERNELS[name]
    ptx = bytes(DATA[f"{name}_ptx"]).decode()
    assert "wgmma.mma_async" in ptx
    entry = re.search(r"\.entry\s+(\w+)\(([^)]*)\)", ptx)
    n_u32 = entry.group(2).count(".param .u32")
    M, N, K, sam, sak, sbk, sbn, scm, scn = k["sizes"]
    ints = [x for x, s in ((M, 0), (N, 0), (K, 0), (sam, sam), (sak, sak), (sbk, sbk), (sbn, sbn), (scm, scm),
                           (scn, scn)) if s != 1][:n_u32]                 # Triton specializes strides equal to 1
    g = GlobalMemory()
    a, b = g.upload(DATA[f"{name}_a"]), g.upload(DATA[f"{name}_b"])
    c = g.upload(np.zeros_like(DATA[f"{name}_c"]))
    warps = k["num_warps"]
    kw = {} if engine is None else {"engine": engine}
    load_ptx(ptx).launch(entry.group(1), grid=(k["grid"][0], k["grid"][1], 1), block=(32 * warps, 1, 1),
                         args=[a, b, c] + ints + [0, 0], gmem=g, shared_bytes=k["shared"], **kw)
    return g.download(c, DATA[f"{name}_c"].size), DATA[f"{name}_c"]


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_triton_matmul_bit_exact(name):
    got, want = run_triton_kernel(name)
    assert got.tobytes() == want.tobytes(), name


ATTN = {k["name"]: k for k in META["attention"]}


@pytest.mark.parametrize("name", sorted(ATTN))
def test_triton_flash_attention_bit_exact(name):
    """Online-softmax attention: Q K^T from shared memory, P V with P in registers (the "rs" form), the
    accumulator rescaled between wgmma chains (fences), exp2 approximations in between."""
    k = ATTN[name]
    ptx = bytes(DATA[f"{name}_ptx"]).decode()
    entry = re.search(r"\.entry\s+(\w+)\(([^)]*)\)", ptx)
    g = GlobalMemory()
    q, kk, v = (g.upload(DATA[f"{name}_{x}"]) for x in "qkv")
    o = g.upload(np.zeros_like(DATA[f"{name}_o"]))
    load_ptx(ptx).launch(entry.group(1), grid=(k["grid"][0], 1, 1), block=(32 * k["num_warps"], 1, 1),
                         args=[q, kk, v, o, k["seq"], float(k["scale"]), 0, 0], gmem=g, shared_bytes=k["shared"])
    assert g.download(o, DATA[f"{name}_o"].size).tobytes() == DATA[f"{name}_o"].tobytes()


def test_nvcc_gmma_sw128_k_and_mn_major():
    """nvcc's PTX of tools/hwcapture/wgmma/gmma_sw128.cu (the CuTe Hopper tutorial's shared layouts: A K-major,
    B MN-major, both 128-byte swizzled; four k16 steps by descriptor arithmetic) equals the H100."""
    z, _ = wc.load("h100_nvcc_gmma.npz")
    g = GlobalMemory()
    a, b = g.upload(z["A"]), g.upload(z["B"])
    c = g.alloc(z["C"].nbytes)
    load_ptx(bytes(z["ptx"]).decode()).launch("gmma_sw128", grid=(1, 1, 1), block=(128, 1, 1), args=[a, b, c],
                                              gmem=g)
    assert g.download(c, z["C"].nbytes).tobytes() == z["C"].tobytes()
