"""A grid on every core: the same launch with workers=1 and workers=N (default: every core), timed in one
process, results compared byte for byte; then the same launch through an executor: a local process pool
(``concurrent.futures``) and, when ``dask.distributed`` is installed, a local Dask cluster of processes
(``Client.get_executor()``), the way a grid too big for one machine is spread over a cluster.

    python benchmarks/bench_grid.py [N] [--size S]      (S x S x 64 GEMM, S/64 x S/64 CTAs; default 512)
"""
import concurrent.futures
import multiprocessing
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from emulator import GlobalMemory, load_ptx  # noqa: E402


def main(workers, size=512):
    M = N = size
    K = 64
    rng = np.random.default_rng(0)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    module = load_ptx(open(os.path.join(ROOT, "tests", "data", "kernels", "gemm_tiled.ptx")).read())

    def run(w, executor=None, engine="auto"):
        g = GlobalMemory()
        pa, pb, pc = g.upload(A), g.upload(B), g.upload(np.zeros((M, N), np.float32))
        t = time.perf_counter()
        r = module.launch("gemm_tiled", grid=(N // 64, M // 64, 1), block=(128, 1, 1), args=[pa, pb, pc, M, N, K],
                          gmem=g, workers=w, progress=False, executor=executor, engine=engine)
        return time.perf_counter() - t, r.instructions, g.download(pc, M * N * 4)

    run(1, engine="fast")          # the jitted loops compiled (or loaded from numba's cache) before timing
    t1, n, out1 = run(1)
    tn, _, outn = run(workers)
    print(f"nvcc gemm_tiled {M}x{N}x{K}: {(N // 64) * (M // 64)} CTAs of 4 warps, {n:,} warp-instructions; "
          f"cores: {os.cpu_count()}")
    print(f"  workers=1: {t1:.2f} s ({n / t1:,.0f} warp-instr/s)")
    print(f"  workers={workers}: {tn:.2f} s ({n / tn:,.0f} warp-instr/s), {t1 / tn:.2f}x, "
          f"{'identical' if out1.tobytes() == outn.tobytes() else 'DIFFERENT'} result")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as ex:
        run(workers, ex)
        te, _, oute = run(workers, ex)
    print(f"  ProcessPoolExecutor({workers}): {te:.2f} s, {t1 / te:.2f}x, "
          f"{'identical' if out1.tobytes() == oute.tobytes() else 'DIFFERENT'} result")
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        print("  dask.distributed not installed: pip install 'dask[distributed]' to run the grid on a Dask cluster")
        return
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        ex = client.get_executor()
        run(workers, ex)
        td, _, outd = run(workers, ex)
    print(f"  Dask LocalCluster({workers} processes): {td:.2f} s, {t1 / td:.2f}x, "
          f"{'identical' if out1.tobytes() == outd.tobytes() else 'DIFFERENT'} result")


if __name__ == "__main__":
    argv = sys.argv[1:]
    size = 512
    if "--size" in argv:
        i = argv.index("--size")
        size = int(argv[i + 1])
        del argv[i:i + 2]
    main(int(argv[0]) if argv else os.cpu_count(), size)
