"""Hopper kernels (wgmma, TMA, mbarrier, clusters) on the fast engine: warp-instructions per CPU-second beside
the reference engine and beside sm_80 builds of the same Triton kernels, and what each kernel still hands
back to the reference executors (a histogram by instruction), in one process.

Kernels: sm_90a cases of tests/data/corpus (Triton, CuTe, clusters of 2 and 4 CTAs, and warp-specialised CUTLASS, ThunderKittens and
DeepGEMM kernels; replayed from their committed inputs, checked against the H100's
outputs), Triton's 8-warp wgmma matmul on 256 x 256 x 128 (benchmarks/bench_kernel.py's ``mm_wgmma``), and
Triton's 4-warp matmul in its sm_90a (wgmma) and sm_80 (mma.sync) builds on 256 x 256 x 128 (``mm_256_*``). Warm:
each runs once before it is timed (numba's compile is not counted). Times are CPU time of this process
(``time.process_time``).

    python benchmarks/bench_hopper.py              # every kernel
    python benchmarks/bench_hopper.py tma flash    # those whose name contains a word
    python benchmarks/bench_hopper.py --no-reference
"""
import collections
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import corpus_lib  # noqa: E402
from emulator import GlobalMemory, load_ptx  # noqa: E402
from emulator.machine import cta as cta_mod  # noqa: E402

CLOCK = time.process_time
CASES = [   # (sm_90a case, its sm_80 build or None)
    ("triton_matmul_f16_w8_sm90a", None),
    ("triton_matmul_f16_64x64_sm90a", "triton_matmul_f16_64x64_sm80"),
    ("triton_matmul_f16_sm90a", "triton_matmul_f16_sm80"),
    ("triton_flash_attention_sm90a", "triton_flash_attention_sm80"),
    ("triton_tma_matmul_sm90a", None),
    ("triton_scaled_dot_e4m3_e5m2_sb_64x64x128_ca_sm90a", None),
    ("cute_wgmma_tn_sm90a", None),
    ("cute_tutorial_wgmma_cpasync_tn_sm90a", None),
    ("cute_tutorial_wgmma_tma_tn_sm90a", None),
    ("nvcc_cluster_dsmem_sm90a", None),
    ("cute_tutorial_wgmma_tma_nt_sm90a", None),     # clusters of 2 CTAs (their CTAs in the CTA loop, docs/speed.md)
    ("cutlass_cluster1x2_f16_sm90a", None),
    ("cutlass_cluster2x1_f16_sm90a", None),
    ("nvcc_deepgemm_fp8_1d2d_256x256x512_mcast_a", None),
    ("nvcc_deepgemm_fp8_1d2d_256x256x512_mcast_b", None),
    ("cutlass_pingpong_bf16_sm90a", None),          # warp-specialised: mbarriers, named barriers, TMA
    ("cutlass_cooperative_f16_sm90a", None),
    ("cutlass_streamk_f16_sm90a", None),
    ("cutlass_ws_f16_f32out_sm90a", None),
    ("nvcc_tk_gemm_bf16_256x512x256_1cta", None),
    ("nvcc_tk_attn_fwd_d64_n384", None),
    ("nvcc_deepgemm_bf16_128x256x512", None),
]


class HandBacks:
    """Counts the instructions the CTA scheduler steps itself (those the fast loop hands back), by spelling."""

    def __init__(self):
        self.count = collections.Counter()
        self._real = cta_mod.CTA._step

    def __enter__(self):
        real, count = self._real, self.count

        def step(cta, w, p, mask, together):
            op = cta.prog.code[p]
            count[op.kind if op.kind != "op" else ".".join((op.instr.base,) + tuple(op.instr.mods[:2]))] += 1
            return real(cta, w, p, mask, together)
        cta_mod.CTA._step = step
        return self

    def __exit__(self, *exc):
        cta_mod.CTA._step = self._real


def timed(fn, n=2):
    fn()                                                   # warm
    best = None
    for _ in range(n):
        t = CLOCK()
        r = fn()
        dt = CLOCK() - t
        best = dt if best is None or dt < best else best
    return best, r


def corpus_run(case, engine):
    def fn():
        got, res, _ = corpus_lib.replay(case, engine=engine)
        return res.instructions, corpus_lib.mismatches(case, got)
    return fn


def wgmma_matmul_run(engine, M=256, N=256, K=128):
    z = np.load(os.path.join(ROOT, "tests", "data", "corpus", "triton.npz"), allow_pickle=False)
    module = load_ptx(z["triton_matmul_f16_w8_sm90a__ptx"].tobytes().decode())
    rng = np.random.default_rng(0)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    want = (A.astype(np.float32) @ B.astype(np.float32))

    def fn():
        g = GlobalMemory()
        a, b, c = g.upload(A), g.upload(B), g.upload(np.zeros((M, N), np.float16))
        r = module.launch("matmul_kernel", (M // 64, N // 64, 1), 256, [a, b, c, M, N, K, K, N, N, 0, 0], gmem=g,
                          shared_bytes=24576, engine=engine)
        got = g.download(c, M * N * 2).view(np.float16).reshape(M, N).astype(np.float32)
        return r.instructions, [] if np.allclose(got, want, atol=0.1, rtol=0.02) else ["numpy disagrees"]
    return fn


def triton_matmul_run(case, tile, M=256, N=256, K=128):
    """A corpus Triton matmul (``case``: its sm_90a or sm_80 build, output tile ``tile`` x ``tile``) launched on
    M x N x K: the two builds of one kernel at the same size (the corpus's own launches are tiny)."""
    def make(engine):
        z = np.load(os.path.join(ROOT, "tests", "data", "corpus", "triton.npz"), allow_pickle=False)
        module = load_ptx(z[case + "__ptx"].tobytes().decode())
        cfg = corpus_lib.load_all()[case]["config"]
        rng = np.random.default_rng(0)
        A = rng.standard_normal((M, K)).astype(np.float16)
        B = rng.standard_normal((K, N)).astype(np.float16)
        want = A.astype(np.float32) @ B.astype(np.float32)

        def fn():
            g = GlobalMemory()
            a, b, c = g.upload(A), g.upload(B), g.upload(np.zeros((M, N), np.float16))
            r = module.launch("matmul_kernel", (M // tile, N // tile, 1), cfg["block"][0], [a, b, c, M, N, K, K, N,
                              N, 0, 0], gmem=g, shared_bytes=cfg["shared"], engine=engine)
            got = g.download(c, M * N * 2).view(np.float16).reshape(M, N).astype(np.float32)
            return r.instructions, [] if np.allclose(got, want, atol=0.1, rtol=0.02) else ["numpy disagrees"]
        return fn
    return make


def row(name, make, reference):
    tf, (n, bad) = timed(make("fast"))
    with HandBacks() as hb:
        make("fast")()
    line = f"{name:<52}{n:>9,}{n / tf / 1e6:>9.3f}"
    if reference:
        tr, (nr, bad_r) = timed(make("reference"), 1)
        line += f"{nr / tr / 1e6:>9.3f}{tr / tf:>8.1f}x"
        bad = bad or bad_r
    else:
        line += f"{'-':>9}{'-':>9}"
    back = sum(hb.count.values())
    top = ", ".join(f"{k} {v}" for k, v in hb.count.most_common(4))
    print(line + f"{back:>8,}  {top}" + (f"   MISMATCH {bad}" if bad else ""))
    sys.stdout.flush()
    return n / tf


def main(args):
    reference = "--no-reference" not in args
    words = [a for a in args if not a.startswith("--")]
    cases = corpus_lib.load_all()
    print(f"{'kernel':<52}{'w-instr':>9}{'fast M/s':>9}{'ref M/s':>9}{'speedup':>9}{'handed':>8}  most handed back")
    rates = {}
    if not words or any(w in "mm_wgmma_256" for w in words):
        rates["mm_wgmma_256"] = row("mm_wgmma_256 (triton_matmul_f16_w8_sm90a, 256^2x128)", wgmma_matmul_run,
                                    reference)
    for arch in ("sm90a", "sm80"):           # Triton's 4-warp matmul, 32 x 32 tiles, both builds at 256^2 x 128
        name = f"mm_256_{arch}"
        if not words or any(w in name for w in words):
            rates[name] = row(f"{name} (triton_matmul_f16_{arch}, 256^2x128)",
                              triton_matmul_run(f"triton_matmul_f16_{arch}", 32), reference)
    for name, sm80 in CASES:
        for n in (name, sm80):
            if n is None or n not in cases or (words and not any(w in n for w in words)):
                continue
            rates[n] = row(n, lambda engine, c=cases[n]: corpus_run(c, engine), reference)
    pairs = [(a, b) for a, b in CASES + [("mm_256_sm90a", "mm_256_sm80")] if a in rates and b in rates]
    for a, b in pairs:
        print(f"sm_90a / sm_80 rate, {a[:-6].rstrip('_')}: {rates[a] / rates[b]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
