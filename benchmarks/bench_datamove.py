"""Speed of the data-movement path: ldmatrix / stmatrix / cp.async through Warp.run, and the numba
ldmatrix kernel against a numpy gather doing the same work, timed in the same process.

    python benchmarks/bench_datamove.py
"""
import time

import numpy as np

from emulator import GlobalMemory, Warp
from emulator.ops.datamove.matrix import ldmatrix_fast, ldmatrix_reference


def per_call(fn, n):
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n


def main():
    lane = np.arange(32, dtype=np.uint32)
    g = GlobalMemory()
    w = Warp(gmem=g)
    w.write("%r8", lane * 16)
    w.write("%rd1", np.uint64(g.upload(np.arange(4096, dtype=np.uint8))) + lane.astype(np.uint64) * 16)
    cases = {
        "ldmatrix.x4": "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r0,%r1,%r2,%r3}, [%r8];",
        "ldmatrix.x4.trans": "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r0,%r1,%r2,%r3}, [%r8];",
        "stmatrix.x4": "stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r8], {%r0,%r1,%r2,%r3};",
        "cp.async.cg 16 + commit + wait": "cp.async.cg.shared.global [%r8], [%rd1], 16; cp.async.commit_group; "
                                          "cp.async.wait_group 0;",
        "ld.shared.v4.u32": "ld.shared.v4.u32 {%r0,%r1,%r2,%r3}, [%r8];",
    }
    print("Warp.run latency, one instruction (after warm-up):")
    for name, text in cases.items():
        t = per_call(lambda: w.run(text), 5000)
        w._smem_log.clear()
        print(f"  {name:32s} {t * 1e6:8.1f} us")

    # Batched: many warps' worth of ldmatrix.x4.trans from one shared image.
    smem = np.random.default_rng(0).integers(0, 256, 48 * 1024, dtype=np.uint8)
    addrs = (np.random.default_rng(1).integers(0, 48 * 1024 // 16, (2000, 32)) * 16).astype(np.int64)
    out = np.empty((4, 32), np.uint32)

    def numba_batch():
        for a in addrs:
            ldmatrix_fast(smem, a, 4, True, out)

    g_, t_ = lane // 4, lane % 4
    j = np.arange(4)[:, None]

    def numpy_batch():          # the same gather written with numpy fancy indexing
        for a in addrs:
            a0 = a[8 * j + 2 * t_] + 2 * g_
            a1 = a[8 * j + 2 * t_ + 1] + 2 * g_
            lo = smem[a0].astype(np.uint32) | (smem[a0 + 1].astype(np.uint32) << 8)
            hi = smem[a1].astype(np.uint32) | (smem[a1 + 1].astype(np.uint32) << 8)
            out[:] = lo | (hi << 16)

    def reference_batch():
        for a in addrs[:200]:
            ldmatrix_reference(smem, a, 4, True)

    tn = per_call(numba_batch, 5) / len(addrs)
    tp = per_call(numpy_batch, 5) / len(addrs)
    tr = per_call(reference_batch, 2) / 200
    print("\nldmatrix.x4.trans kernel, per warp-instruction:")
    print(f"  numba fast path  {tn * 1e6:8.2f} us  ({1 / tn:,.0f} instr/s)")
    print(f"  numpy gather     {tp * 1e6:8.2f} us  -> fast path is {tp / tn:.1f}x the numpy baseline")
    print(f"  python reference {tr * 1e6:8.2f} us  -> fast path is {tr / tn:.1f}x the readable reference")


if __name__ == "__main__":
    main()
