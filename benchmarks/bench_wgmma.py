"""How fast wgmma runs: the arithmetic of one instruction per type, the whole-tile API (a one-warpgroup kernel
through load_ptx) and the Triton matmuls of tests/data/wgmma from their PTX.

    python benchmarks/bench_wgmma.py
"""
import os
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
import emulator  # noqa: E402
from emulator.numerics import wgmma as num  # noqa: E402


def timeit(fn, n=5):
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def main():
    rng = np.random.default_rng(0)
    print("arithmetic of one 64xNxK instruction (numerics.wgmma.wgmma_tile):")
    for at, dt, k, w in (("f16", "f32", 16, 16), ("bf16", "f32", 16, 16), ("tf32", "f32", 8, 32),
                         ("e4m3", "f32", 32, 8), ("s8", "s32", 32, 8)):
        for n in (64, 256):
            A = rng.integers(0, 2**w, (64, k), dtype=np.uint64) & np.uint64(0x3FFF3FFF)
            B = rng.integers(0, 2**w, (k, n), dtype=np.uint64) & np.uint64(0x3FFF3FFF)
            C = np.zeros((64, n), np.uint64)
            s = timeit(lambda: num.wgmma_tile(at, at, dt, A, B, C))
            print(f"  {at}->{dt} N={n:3d}: {1e3 * s:7.2f} ms")
    A = rng.standard_normal((64, 16)).astype(np.float16)
    B = rng.standard_normal((16, 128)).astype(np.float16)
    C = np.zeros((64, 128), np.float32)
    s = timeit(lambda: emulator.wgmma("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", A, B, C), 3)
    print(f"emulator.wgmma m64n128k16 (a one-warpgroup kernel): {1e3 * s:.1f} ms")
    import test_wgmma_triton as T
    for name in sorted(T.KERNELS):
        s = timeit(lambda: T.run_triton_kernel(name), 1)
        print(f"Triton {name:16s}: {1e3 * s:7.1f} ms")


if __name__ == "__main__":
    main()
