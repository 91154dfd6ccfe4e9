"""How the time per warp-instruction grows with the grid and with the problem, and how much memory it takes.

Two Triton matmuls from the corpus (the PTX Triton 3.6 wrote, f16 in, f32 accumulate, f16 out): an sm_80
kernel on ``mma.sync`` (32x32 tiles, 4 warps) and an sm_90a kernel on ``wgmma`` (64x64 tiles, one warpgroup).

* grid: K = 64 and M x N chosen so that the grid has 1, 4, 16, ... CTAs (the work per CTA stays the same);
* size: M = N = K = 64, 128, 256, ... (the grid and the work per CTA both grow).

Each row is one launch on the fast engine after a warm-up launch (the jitted loops compiled, the kernel
translated), timed in CPU seconds of this process; the rate is warp-instructions per CPU second, and "peak RSS"
is the process's peak resident memory after the launch (``resource.getrusage``). Every result is checked
against numpy's float32 product of the same f16 inputs (a sanity check: the corpus tests compare the bits with
the H100's), and the smallest launch of each kernel against the reference executors, bit for bit.

    python benchmarks/bench_scale.py            # up to 256 CTAs and 256-sized matrices (a minute or two)
    python benchmarks/bench_scale.py --full     # up to 4,096 CTAs and 2,048-sized matrices (long)
"""
import argparse
import os
import resource
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

KERNELS = {"mma.sync": ("triton_matmul_f16_sm80", 32, 32), "wgmma": ("triton_matmul_f16_64x64_sm90a", 64, 64)}


def _rss_mib():
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / (1024 * 1024) if sys.platform == "darwin" else r / 1024


def launch(module, case, M, N, K, engine="fast", seed=0):
    """One launch of the matmul: (CPU seconds, warp-instructions, C as float16, A, B)."""
    from emulator import GlobalMemory
    cfg = case["config"]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    g = GlobalMemory()
    pa, pb, pc = g.upload(a), g.upload(b), g.upload(np.zeros((M, N), np.float16))
    _, bm, bn = KERNELS[case["kind"]]
    grid = (-(-M // bm), -(-N // bn))
    t = time.process_time()
    res = module.launch(cfg["kernel"], grid, cfg["block"], [pa, pb, pc, M, N, K, K, N, N, 0, 0], gmem=g,
                        shared_bytes=cfg.get("shared", 0), engine=engine)
    dt = time.process_time() - t
    c = g.download(pc, M * N * 2).view(np.float16).reshape(M, N)
    return dt, res.instructions, c, a, b


def row(kind, label, module, case, M, N, K):
    dt, n, c, a, b = launch(module, case, M, N, K)
    want = a.astype(np.float32) @ b.astype(np.float32)
    err = float(np.max(np.abs(c.astype(np.float32) - want) / (1 + np.abs(want))))
    ok = err < 1e-2
    _, bm, bn = KERNELS[kind]
    ctas = -(-M // bm) * -(-N // bn)
    print(f"{kind:9s}{label:>14s}{ctas:>7d}{n:>12,d}{dt:>9.2f}{n / max(dt, 1e-9) / 1e6:>9.3f}"
          f"{dt / max(n, 1) * 1e6:>10.2f}{_rss_mib():>10.0f}  {'ok' if ok else f'WRONG (rel. error {err:.3g})'}")
    return dt / max(n, 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="up to 4,096 CTAs and 2,048-sized matrices")
    ap.add_argument("--only", choices=list(KERNELS), help="one of the two kernels")
    a = ap.parse_args(argv)
    import corpus_lib
    from emulator import load_ptx
    cases = corpus_lib.load_all()
    grids = (1, 4, 16, 64, 256) + ((1024, 4096) if a.full else ())
    sizes = (64, 128, 256) + ((512, 1024, 2048) if a.full else ())
    print("one launch each on the fast engine, after a warm-up launch; CPU seconds of this process")
    print(f"{'kernel':9s}{'shape MxNxK':>14s}{'CTAs':>7s}{'warp-instr':>12s}{'CPU s':>9s}{'M/s':>9s}"
          f"{'us/instr':>10s}{'peak RSS':>10s}")
    for kind, (name, bm, bn) in KERNELS.items():
        if a.only and kind != a.only:
            continue
        case = cases[name]
        case["kind"] = kind
        module = load_ptx(case["ptx"])
        fast = launch(module, case, bm, bn, 64)              # warm-up: compile, translate
        ref = launch(module, case, bm, bn, 64, engine="reference")
        if not np.array_equal(fast[2].view(np.uint16), ref[2].view(np.uint16)):
            print(f"{kind}: the fast engine and the reference executors DIFFER")
        per = []
        for g in grids:
            gx = 1 << ((g.bit_length() - 1 + 1) // 2)        # a near-square grid of g CTAs
            gy = g // gx
            per.append(row(kind, f"{bm * gx}x{bn * gy}x64", module, case, bm * gx, bn * gy, 64))
        print(f"{'':9s}grid 1 to {grids[-1]:,} CTAs: time per warp-instruction varies "
              f"{max(per) / min(per):.2f}x")
        per = [row(kind, f"{s}x{s}x{s}", module, case, s, s, s) for s in sizes]
        print(f"{'':9s}size {sizes[0]} to {sizes[-1]}: time per warp-instruction varies {max(per) / min(per):.2f}x")


if __name__ == "__main__":
    main()
