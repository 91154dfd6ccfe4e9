"""Speed of whole-kernel emulation: the tiled GEMM kernel (4 warps, cp.async double buffer, ldmatrix,
mma.sync) run from its nvcc PTX, against the same warp-instruction stream's straight-line cost
(Warp.run of one add per issued instruction) and the GEMM fast path, timed in the same process.

    python benchmarks/bench_kernel.py
"""
import os
import time

import numpy as np

from emulator import GlobalMemory, Warp, gemm, load_ptx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def best_of(fn, n=3):
    fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main():
    M = N = 128
    K = 64
    rng = np.random.default_rng(0)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    module = load_ptx(open(os.path.join(ROOT, "tests", "data", "kernels", "gemm_tiled.ptx")).read())
    stats = {}

    def launch():
        g = GlobalMemory()
        pa, pb, pc = g.upload(A), g.upload(B), g.upload(np.zeros((M, N), np.float32))
        r = module.launch("gemm_tiled", grid=(N // 64, M // 64, 1), block=(128, 1, 1), args=[pa, pb, pc, M, N, K],
                          gmem=g)
        stats["instructions"] = r.instructions

    t_kernel = best_of(launch)
    w = Warp()
    w.write("%r1", 1)
    t_add = best_of(lambda: [w.run("add.s32 %r2, %r1, %r1;") for _ in range(1000)]) / 1000
    t_gemm = best_of(lambda: gemm(A, B.astype(np.float16), np.zeros((M, N), np.float32),
                                  instr="mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"))
    n = stats["instructions"]
    print(f"gemm_tiled {M}x{N}x{K}, 4 CTAs of 4 warps: {n} warp instructions in {t_kernel * 1e3:.1f} ms "
          f"({n / t_kernel:,.0f} warp instructions/s, {t_kernel / n * 1e6:.0f} us each)")
    print(f"  Warp.run of one add.s32: {t_add * 1e6:.1f} us -> kernel cost per instruction is "
          f"{t_kernel / n / t_add:.1f}x a straight-line add")
    print(f"  emulator.gemm fast path for the same product: {t_gemm * 1e3:.2f} ms -> the kernel is "
          f"{t_kernel / t_gemm:.0f}x slower than the fast path (it also moves every byte through "
          f"cp.async and ldmatrix)")


if __name__ == "__main__":
    main()
