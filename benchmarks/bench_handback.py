"""What the fast engine still hands back to the reference executors, per corpus kernel (tests/data/corpus).

    python benchmarks/bench_handback.py [-k SUBSTRING] [--top N] [--time]

Every case is replayed on the fast engine (``engine="fast"``) and checked against the H100's outputs. For each
kernel the table gives the warp-instructions it ran, how many of them went back to the Python executors
(counted where the loop hands an instruction back, ``fastcore.engine.handback_counts``; instructions run inside
a ``call`` are run by the Python scheduler and counted in the column "in Python" only) and the opcodes handed
back most often. The summary sums the opcodes over the whole corpus. With ``--time`` each case is also timed
(CPU time of the launches, parsing excluded) on both engines, and the rates are printed per class of kernel
(M warp-instructions per CPU-second; the ratio is the same run's).
"""
import argparse
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
import corpus_lib  # noqa: E402
from bench_vs_interpreter import classify as kernel_class  # noqa: E402


def _fast_executed(res):
    n = 0
    for _, warps in res.ctas:
        for w in warps:
            if getattr(w, "fast", None) is not None:
                n += w.fast.executed
    return n


def classify(name, case):
    """A coarse class of a corpus kernel: bench_vs_interpreter's classes, with f64 kernels apart."""
    cls = kernel_class(case["ptx"])
    return "f64" if cls == "no tensor cores" and ".f64" in case["ptx"] else cls


_LAUNCH_CPU = [0.0]


def _timed_launches():
    """Module.launch, timed (CPU seconds summed in _LAUNCH_CPU): parsing and loading stay out of the rates."""
    from emulator.machine import module as M
    launch = M.Module.launch

    def timed(self, *a, **k):
        t = time.process_time()
        try:
            return launch(self, *a, **k)
        finally:
            _LAUNCH_CPU[0] += time.process_time() - t
    M.Module.launch = timed


def _launch_cpu(case, engine):
    _LAUNCH_CPU[0] = 0.0
    corpus_lib.replay(case, engine=engine)
    return _LAUNCH_CPU[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-k", default="")
    p.add_argument("--top", type=int, default=4, help="opcodes listed per kernel")
    p.add_argument("--time", action="store_true", help="time both engines (CPU time of the launches), per class")
    p.add_argument("--rates", default="", help="with --time: write 'kernel instructions fast_s reference_s' lines")
    a = p.parse_args()
    try:
        from emulator.machine.fastcore.engine import handback_counts
    except ImportError:                      # an older emulator (timing only): no counter
        def handback_counts(prog):
            return {}
    _timed_launches()
    cases = corpus_lib.load_all()
    names = [n for n in sorted(cases) if a.k in n and n not in corpus_lib.CANNOT_RUN]
    total, rows, by_class, per_kernel = {}, [], {}, []
    for n in names:
        case = cases[n]
        t = time.process_time()
        got, res, _ = corpus_lib.replay(case, engine="fast")
        t_fast = time.process_time() - t
        bad = corpus_lib.mismatches(case, got)
        prog_counts = {}
        for prog in _programs(res):
            for k, v in handback_counts(prog).items():
                prog_counts[k] = prog_counts.get(k, 0) + v
        for k, v in prog_counts.items():
            total[k] = total.get(k, 0) + v
        back = sum(prog_counts.values())
        python = res.instructions - _fast_executed(res)
        rows.append((n, res.instructions, back, python, prog_counts, bad))
        if a.time:
            t_fast = _launch_cpu(case, "fast")
            t_ref = _launch_cpu(case, "reference")
            per_kernel.append((n, res.instructions, t_fast, t_ref))
            c = by_class.setdefault(classify(n, case), [0, 0.0, 0.0, 0])
            c[0] += res.instructions
            c[1] += t_fast
            c[2] += t_ref
            c[3] += 1
    w = max(len(r[0]) for r in rows) if rows else 10
    print(f"{'kernel':{w}s} {'instr':>9s} {'handed back':>11s} {'in Python':>9s}  opcodes handed back")
    for n, ni, back, py, cnt, bad in rows:
        top = sorted(cnt.items(), key=lambda kv: -kv[1])[:a.top]
        flag = "  MISMATCH" if bad else ""
        print(f"{n:{w}s} {ni:9d} {back:11d} {py:9d}  " + ", ".join(f"{k} {v}" for k, v in top) + flag)
    ni = sum(r[1] for r in rows)
    nb = sum(r[2] for r in rows)
    npy = sum(r[3] for r in rows)
    print(f"\n{len(rows)} kernels, {ni} warp-instructions, {nb} handed back ({100 * nb / max(ni, 1):.2f}%), "
          f"{npy} run in Python ({100 * npy / max(ni, 1):.2f}%); kernels with a hand-back: "
          f"{sum(1 for r in rows if r[2])}")
    print("opcodes handed back, whole corpus:")
    for k, v in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"  {v:9d}  {k}")
    if a.time:
        print(f"\n{'class':18s} {'kernels':>7s} {'instr':>9s} {'fast M/s':>9s} {'ref M/s':>8s} {'fast/ref':>8s}")
        for c, (ni, tf, tr, k) in sorted(by_class.items()):
            print(f"{c:18s} {k:7d} {ni:9d} {ni / tf / 1e6:9.3f} {ni / tr / 1e6:8.3f} {tr / tf:8.1f}")
        if a.rates:
            with open(a.rates, "w") as f:
                for n, ni, tf, tr in per_kernel:
                    f.write(f"{n} {ni} {tf:.6f} {tr:.6f}\n")
    if any(r[5] for r in rows):
        sys.exit("some kernels differ from the H100")


def _programs(res):
    seen = {}
    for _, warps in res.ctas:
        for w in warps:
            prog = getattr(w, "program", None)
            if prog is not None:
                seen[id(prog)] = prog
    return seen.values()


if __name__ == "__main__":
    main()
