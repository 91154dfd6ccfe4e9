"""What the sanitizer costs: each kernel of a set of real ones (tests/data/corpus) runs plain and with
``sanitize="all"`` on each engine (the fast engine, the default, and the reference executors), in one process,
after one warm-up run of each; times are CPU time of this process (``time.process_time``), the median of
``--repeat`` runs. The ratios that matter compare a sanitised launch with the plain one on the same engine.

    python benchmarks/bench_sanitize.py                    # the default set
    python benchmarks/bench_sanitize.py nvcc_reduce_sum_sm90a --repeat 5
    python benchmarks/bench_sanitize.py --fast-only        # skip the reference engine
"""
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import corpus_lib  # noqa: E402

DEFAULT = ["nvcc_reduce_sum_sm90a", "nvcc_transpose_smem_sm80", "nvcc_histogram_smem_sm90a", "nvcc_pipeline_copy_sm80",
           "triton_softmax_sm90a", "triton_layernorm_sm90a", "triton_matmul_f16_sm80", "cute_sgemm_nt_sm80",
           "cute_tutorial_wgmma_tma_nt_sm90a"]
CLOCK = time.process_time


def timed(case, repeat, **kw):
    corpus_lib.replay(case, **kw)                     # warm: programs compiled, jitted loops loaded
    ts = []
    for _ in range(repeat):
        t0 = CLOCK()
        _, res, _ = corpus_lib.replay(case, **kw)
        ts.append(CLOCK() - t0)
    return statistics.median(ts), res


def main(argv):
    repeat = 3
    if "--repeat" in argv:
        k = argv.index("--repeat")
        repeat = int(argv[k + 1])
        argv = argv[:k] + argv[k + 2:]
    ref = "--fast-only" not in argv
    argv = [a for a in argv if a != "--fast-only"]
    names = argv or DEFAULT
    cases = corpus_lib.load_all()
    from emulator.machine.fastcore import warmup
    warmup.wait()
    print(f"{'kernel':36s} {'instr':>7s} {'fast s':>7s} {'san s':>7s} {'ratio':>6s}"
          + (f" {'ref s':>7s} {'san s':>7s} {'ratio':>6s}" if ref else ""))
    ratios, rratios = [], []
    for n in names:
        c = cases[n]
        tf, res = timed(c, repeat, engine="fast")
        ts, sres = timed(c, repeat, engine="fast", sanitize="all")
        assert not sres.reports, [str(r) for r in sres.reports]
        ratios.append(ts / tf)
        line = f"{n:36s} {res.instructions:7d} {tf:7.3f} {ts:7.3f} {ts / tf:6.2f}"
        if ref:
            tr, _ = timed(c, repeat, engine="reference")
            trs, rres = timed(c, repeat, engine="reference", sanitize="all")
            assert not rres.reports, [str(r) for r in rres.reports]
            rratios.append(trs / tr)
            line += f" {tr:7.3f} {trs:7.3f} {trs / tr:6.2f}"
        print(line, flush=True)
    print(f"sanitize='all' / plain, fast engine: median {statistics.median(ratios):.2f}, worst {max(ratios):.2f}")
    if rratios:
        print(f"sanitize='all' / plain, reference engine: median {statistics.median(rratios):.2f}, "
              f"worst {max(rratios):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
