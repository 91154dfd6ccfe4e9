"""What loading a kernel again costs: ``load_ptx``, the first launch of a fresh module (the fast engine's
translation included) and the second launch, for corpus kernels of different sizes, in CPU seconds (best of N),
and a whole ``corpus_lib.replay``.

    python benchmarks/bench_reload.py [-k SUBSTRING] [--repeat N] [--no-cache] [--profile]

Each round loads the case's PTX text again, as a test suite or Triton's driver does. With the module cache
(``emulator.machine.modcache``, the default) every round after the first reuses the parsed module, its programs
and their translations; ``--no-cache`` turns it off (``WARPEMU_MODULE_CACHE=0``), which is what every load cost
before the cache. ``--profile`` prints cProfile's top entries of one uncached load and first launch.
"""
import argparse
import io
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

CASES = ("triton_add_f32_sm80", "triton_matmul_f16_sm90a", "cutlass_pingpong_bf16_sm90a",
         "nvcc_deepgemm_bf16_128x256x512", "nvcc_tk_attn_fwd_d64_n384")


def _launch(module, case):
    from emulator import GlobalMemory
    import corpus_lib
    cfg = case["config"]
    g = GlobalMemory()
    args, _ = corpus_lib.launch_args(case, g)
    t = time.process_time()
    module.launch(cfg["kernel"], cfg["grid"], cfg["block"], args, gmem=g, out=io.StringIO(), engine="fast",
                  shared_bytes=cfg.get("shared", 0), **({"cluster": tuple(cfg["cluster"])} if cfg.get("cluster")
                                                        else {}))
    return time.process_time() - t


def measure(case, repeat):
    """(load, first launch, second launch, whole replay): CPU seconds, best of ``repeat``."""
    from emulator import load_ptx
    import corpus_lib
    best = [float("inf")] * 4
    for _ in range(repeat):
        t = time.process_time()
        m = load_ptx(case["ptx"])
        load = time.process_time() - t
        first = _launch(m, case)
        second = _launch(m, case)
        t = time.process_time()
        got, _, _ = corpus_lib.replay(case, engine="fast")
        whole = time.process_time() - t
        if corpus_lib.mismatches(case, got):
            raise AssertionError(f"{case['config']['kernel']}: differs from the H100")
        best = [min(b, x) for b, x in zip(best, (load, first, second, whole))]
    return best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-k", default=None)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--profile", action="store_true")
    a = p.parse_args(argv)
    if a.no_cache:
        os.environ["WARPEMU_MODULE_CACHE"] = "0"
    import corpus_lib
    import emulator.machine.module  # noqa: F401  (sets the warm-up launches)
    from emulator.machine.fastcore import warmup
    warmup.wait("cta")
    warmup.wait("warp")
    cases = corpus_lib.load_all()
    names = [n for n in CASES if a.k is None or a.k in n]
    print(f"{'case':44s} {'PTX KB':>7s} {'load ms':>8s} {'1st ms':>8s} {'2nd ms':>8s} {'replay ms':>10s}")
    for n in names:
        c = cases[n]
        load, first, second, whole = measure(c, a.repeat)
        print(f"{n:44s} {len(c['ptx']) / 1e3:7.0f} {load * 1e3:8.1f} {first * 1e3:8.1f} {second * 1e3:8.1f} "
              f"{whole * 1e3:10.1f}")
    if a.profile:
        import cProfile
        import pstats
        from emulator import load_ptx
        for n in names:
            os.environ["WARPEMU_MODULE_CACHE"] = "0"
            pr = cProfile.Profile()
            pr.enable()
            m = load_ptx(cases[n]["ptx"])
            _launch(m, cases[n])
            pr.disable()
            print(f"\n== {n}: an uncached load and first launch")
            pstats.Stats(pr, stream=sys.stdout).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    main()
