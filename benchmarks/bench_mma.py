"""mma.sync speed, in one run:

1. single-instruction ``Warp.run`` latency of m16n8k16 f16 -> f32 (after warm-up);
2. batched throughput: independent m16n8k16 instructions per second through ``MmaOp.execute_batch``
   (register files in, register files out), and the instruction rate the ``gemm`` fast path reaches;
3. ``emulator.gemm`` 1024 x 1024 x 1024 (f16 in, f32 accumulate, m16n8k16 in ascending K) against numpy's
   float32 matmul of the same size in the same process, as a ratio.

    python benchmarks/bench_mma.py [--size 1024] [--batch 20000]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from emulator import Warp, gemm  # noqa: E402
from emulator.ops.mma import get_mma  # noqa: E402

INSTR = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=20000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    f16 = lambda *s: rng.standard_normal(s).astype(np.float16)  # noqa: E731

    # 1. single instruction through Warp.run
    w = Warp()
    for i in range(4):
        w.write(f"%r{i}", f16(64).view(np.uint32))
        w.write(f"%f{4 + i}", rng.standard_normal(32).astype(np.float32).view(np.uint32))
    for i in range(2):
        w.write(f"%r{4 + i}", f16(64).view(np.uint32))
    text = f"{INSTR} {{%f0,%f1,%f2,%f3}}, {{%r0,%r1,%r2,%r3}}, {{%r4,%r5}}, {{%f4,%f5,%f6,%f7}};"
    for _ in range(300):
        w.run(text)
    n = 2000
    lat = best(lambda: [w.run(text) for _ in range(n)], 3) / n
    op = get_mma(INSTR)
    a1 = np.stack([w.read(f"%r{i}") for i in range(4)])
    b1 = np.stack([w.read(f"%r{4 + i}") for i in range(2)])
    c1 = np.stack([w.read(f"%f{4 + i}") for i in range(4)])
    ex = best(lambda: [op.execute(a1, b1, c1) for _ in range(n)], 3) / n
    print(f"single m16n8k16 f16->f32: Warp.run {lat * 1e6:.1f} us/instruction "
          f"(of which MmaOp.execute {ex * 1e6:.1f} us)   target <= 30 us, CPU time")

    # 2. batched independent instructions
    nb = args.batch
    a = f16(nb, 4, 64).view(np.uint32)
    b = f16(nb, 2, 64).view(np.uint32)
    c = rng.standard_normal((nb, 4, 32)).astype(np.float32).view(np.uint32)
    op.execute_batch(a[:10], b[:10], c[:10])
    tb = best(lambda: op.execute_batch(a, b, c), 3)
    print(f"batched execute_batch: {nb / tb:,.0f} m16n8k16 instructions/s ({nb / tb * 2048 / 1e9:.2f} G MAC/s)")

    # 3. gemm against numpy float32 matmul
    s = args.size
    A, B = f16(s, s), f16(s, s)
    C = rng.standard_normal((s, s)).astype(np.float32)
    gemm(A[:32, :32], B[:32, :16], C[:32, :16])                       # compile / load the cache
    tg = best(lambda: gemm(A, B, C), 2)
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    tn = best(lambda: A32 @ B32 + C, 5)
    instr = (s // 16) * (s // 8) * (s // 16)
    print(f"gemm {s}x{s}x{s} f16->f32: {tg:.3f} s = {instr / tg:,.0f} m16n8k16 instructions/s; "
          f"numpy float32 matmul {tn * 1e3:.1f} ms; ratio {tg / tn:.1f}x (CPU time)   target <= 10x")
    D = gemm(A, B, C)
    R = A.astype(np.float64) @ B.astype(np.float64) + C
    print(f"  (sanity, not exactness: max |D - exact| / max |exact| = {np.abs(D - R).max() / np.abs(R).max():.2e})")


if __name__ == "__main__":
    main()
