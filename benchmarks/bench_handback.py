"""What the fast engine still hands back to the reference executors, per corpus kernel (tests/data/corpus, and
the control-flow and divergence captures tests/data/ctrlflow.npz, tests/data/divergence/h100.npz).

    python benchmarks/bench_handback.py [-k SUBSTRING] [--top N] [--time] [--save F.json] [--before F.json]

Every case is replayed on the fast engine (``engine="fast"``) and checked against the H100's outputs. For each
kernel the table gives the warp-instructions it ran, how many of them went back to the Python executors
(counted where the loop hands an instruction back, ``fastcore.engine.handback_counts``; instructions run inside
a ``call`` are run by the Python scheduler and counted in the column "in Python" only) and the opcodes handed
back most often (calls by what they call: ``call vprintf``, printf, which stays with the executor; ``call (function)``, a
function with a body). The summary sums the opcodes over the whole corpus. With ``--time`` each case is also timed
(CPU time of the launches, parsing excluded) on both engines, and the rates are printed per class of kernel
(M warp-instructions per CPU-second; the ratio is the same run's). ``--save`` writes the counts as JSON;
``--before`` reads such a file (an earlier version's) and prints both summaries and the kernels that changed.
The cases the tests list as known differences (racy order probes, a merged wgmma) are run and marked, not failed.
"""
import json
import argparse
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
import corpus_lib  # noqa: E402
from bench_vs_interpreter import classify as kernel_class  # noqa: E402


def _extra_cases():
    """The ctrlflow and divergence captures, in the corpus format, and the cases their tests know to differ."""
    from test_ctrlflow import KNOWN_DIFFERENCES
    from test_divergence import KNOWN
    cases = {}
    for f in ("ctrlflow.npz", os.path.join("divergence", "h100.npz")):
        for n, c in corpus_lib.load_npz(os.path.join(ROOT, "tests", "data", f)).items():
            c["file"] = f
            cases[n] = c
    return cases, set(KNOWN_DIFFERENCES) | set(KNOWN)


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
    p.add_argument("--save", default="", help="write the per-kernel counts to this JSON file")
    p.add_argument("--before", default="", help="a --save file of an earlier version: compare")
    p.add_argument("--corpus-only", action="store_true", help="tests/data/corpus only")
    a = p.parse_args()
    try:
        from emulator.machine.fastcore.engine import handback_counts
    except ImportError:                      # an older emulator (timing only): no counter
        def handback_counts(prog):
            return {}
    _timed_launches()
    cases = corpus_lib.load_all()
    known = set()
    if not a.corpus_only:
        extra, known = _extra_cases()
        assert not set(extra) & set(cases)
        cases.update(extra)
    names = [n for n in sorted(cases) if a.k in n and n not in corpus_lib.CANNOT_RUN]
    total, rows, by_class, per_kernel = {}, [], {}, []
    for n in names:
        case = cases[n]
        t = time.process_time()
        got, res, _ = corpus_lib.replay(case, engine="fast")
        t_fast = time.process_time() - t
        bad = corpus_lib.mismatches(case, got)
        if bad and n in known:
            bad = "known"
        prog_counts = {}
        for prog in _programs(res):
            for k, v in _by_callee(prog, handback_counts(prog)).items():
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
        flag = "  (known difference)" if bad == "known" else ("  MISMATCH" if bad else "")
        print(f"{n:{w}s} {ni:9d} {back:11d} {py:9d}  " + ", ".join(f"{k} {v}" for k, v in top) + flag)
    now = {n: {"instr": ni_, "back": back, "python": py, "ops": cnt} for n, ni_, back, py, cnt, _ in rows}
    if a.before:
        with open(a.before) as f:
            old = {k: v for k, v in json.load(f).items() if k in now}
        print(f"\nbefore: {_summary(old)}")
        print(f"after:  {_summary(now)}")
        changed = [(n, old[n]["back"], now[n]["back"]) for n in sorted(now) if n in old and
                   old[n]["back"] != now[n]["back"]]
        print(f"kernels whose hand-backs changed: {len(changed)}")
        for n, b0, b1 in sorted(changed, key=lambda r: r[2] - r[1]):
            print(f"  {n:{w}s} {b0:9d} -> {b1:9d}")
    else:
        print(f"\n{_summary(now)}")
    print("\nhanded back per class of kernel (% of its warp-instructions):")
    by = {}
    for n, ni_, back, py, cnt, _ in rows:
        c = by.setdefault(classify(n, cases[n]), [0, 0, 0])
        c[0] += 1
        c[1] += ni_
        c[2] += back
    for c, (k, ni_, back) in sorted(by.items()):
        print(f"  {c:18s} {k:4d} kernels {ni_:9d} instr {back:8d} back {100 * back / max(ni_, 1):6.2f}%  "
              + "#" * int(round(50 * back / max(ni_, 1))))
    print("opcodes handed back, whole corpus:")
    for k, v in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"  {v:9d}  {k}")
    if a.save:
        with open(a.save, "w") as f:
            json.dump(now, f, indent=0, sort_keys=True)
    if a.time:
        print(f"\n{'class':18s} {'kernels':>7s} {'instr':>9s} {'fast M/s':>9s} {'ref M/s':>8s} {'fast/ref':>8s}")
        for c, (ni, tf, tr, k) in sorted(by_class.items()):
            print(f"{c:18s} {k:7d} {ni:9d} {ni / tf / 1e6:9.3f} {ni / tr / 1e6:8.3f} {tr / tf:8.1f}")
        if a.rates:
            with open(a.rates, "w") as f:
                for n, ni, tf, tr in per_kernel:
                    f.write(f"{n} {ni} {tf:.6f} {tr:.6f}\n")
    if any(r[5] and r[5] != "known" for r in rows):
        sys.exit("some kernels differ from the H100")


def _summary(counts):
    """One line: kernels, warp-instructions, the fraction handed back and the fraction run in Python."""
    ni = sum(v["instr"] for v in counts.values())
    nb = sum(v["back"] for v in counts.values())
    npy = sum(v["python"] for v in counts.values())
    return (f"{len(counts)} kernels, {ni} warp-instructions, {nb} handed back ({100 * nb / max(ni, 1):.2f}%), "
            f"{npy} run in Python ({100 * npy / max(ni, 1):.2f}%); kernels with a hand-back: "
            f"{sum(1 for v in counts.values() if v['back'])}")


def _by_callee(prog, counts):
    """``counts`` with the calls split by what they call: "call vprintf" (printf, which stays with the Python
    executor), "call __assertfail", "call (function)" (a function with a body: its frame is the Python
    scheduler's)."""
    if "call" not in counts:
        return counts
    out = {k: v for k, v in counts.items() if k != "call"}
    tr = getattr(prog, "_fast", None)
    import numpy as np
    for p in np.flatnonzero(tr.handed_back).tolist():
        op = prog.code[p]
        if op.kind == "call":
            callee = op.call.callee
            k = f"call {callee}" if callee in ("vprintf", "__assertfail") else "call (function)"
            out[k] = out.get(k, 0) + int(tr.handed_back[p])
    return out


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
