"""What the sanitizer costs: each kernel of a set of real ones (tests/data/corpus) runs plain on the reference
executors, plain on the fast engine, and with ``sanitize="all"`` (which runs on the reference executors), in one
process, after one warm-up run of each; times are CPU time of this process (``time.process_time``), the
median of ``--repeat`` runs. The ratio that matters is sanitised / reference (the same engine); sanitised / fast
says what a user gives up against the default engine.

    python benchmarks/bench_sanitize.py                    # the default set
    python benchmarks/bench_sanitize.py nvcc_reduce_sum_sm90a --repeat 5
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
    names = argv or DEFAULT
    cases = corpus_lib.load_all()
    from emulator.machine.fastcore import warmup
    warmup.wait()
    print(f"{'kernel':36s} {'instr':>8s} {'fast s':>8s} {'ref s':>8s} {'san s':>8s} {'san/ref':>8s} {'san/fast':>9s}")
    ratios = []
    for n in names:
        c = cases[n]
        tf, res = timed(c, repeat, engine="fast")
        tr, _ = timed(c, repeat, engine="reference")
        ts, sres = timed(c, repeat, sanitize="all")
        assert not sres.reports, [str(r) for r in sres.reports]
        ratios.append(ts / tr)
        print(f"{n:36s} {res.instructions:8d} {tf:8.3f} {tr:8.3f} {ts:8.3f} {ts / tr:8.2f} {ts / tf:9.1f}", flush=True)
    print(f"sanitize='all' / reference: median {statistics.median(ratios):.2f}, worst {max(ratios):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
