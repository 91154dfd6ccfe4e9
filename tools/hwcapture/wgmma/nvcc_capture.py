"""Run nvcc's PTX of gmma_sw128.cu (wgmma with 128-byte swizzled K-major A and MN-major B) on an H100.

    nvcc -arch=sm_90a -ptx -o gmma_sw128.ptx tools/hwcapture/wgmma/gmma_sw128.cu      # here
    python tools/hwcapture/wgmma/nvcc_capture.py gmma_sw128.ptx RESULT.npz            # needs cupy, a GPU

Saves the PTX, the inputs (numpy seed 7) and C.
"""
import sys

import numpy as np


def inputs():
    rng = np.random.default_rng(7)
    A = rng.standard_normal((64, 64)).astype(np.float16)
    B = rng.standard_normal((64, 128)).astype(np.float16)
    return A, B


def main(ptx_path, out):
    import cupy as cp
    ptx = open(ptx_path, "rb").read()
    mod = cp.cuda.function.Module()
    mod.load(ptx)
    fn = mod.get_function("gmma_sw128")
    A, B = inputs()
    a, b = cp.asarray(A), cp.asarray(B)
    c = cp.zeros((64, 128), cp.float32)
    fn((1, 1, 1), (128, 1, 1), (a, b, c))
    cp.cuda.runtime.deviceSynchronize()
    np.savez_compressed(out, ptx=np.frombuffer(ptx, np.uint8), A=A, B=B, C=cp.asnumpy(c))
    print("ok", float(np.abs(cp.asnumpy(c) - A.astype(np.float64) @ B.astype(np.float64)).max()))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
