"""How long the corpus of compiler-written PTX takes to replay (tests/data/corpus), per source and in total.

    python benchmarks/bench_corpus.py [-k SUBSTRING]

Each case is loaded from its PTX text, launched and compared with the H100's outputs; the first pass includes
parsing and compiling every module, the second reuses nothing but numba's compiled kernels (a fresh
load_ptx per case, as a user would run it). Cases in CANNOT_RUN are skipped.
"""
import argparse
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
import corpus_lib  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-k", default="")
    a = p.parse_args()
    cases = corpus_lib.load_all()
    names = [n for n in sorted(cases) if a.k in n and n not in corpus_lib.CANNOT_RUN]
    for label in ("first pass (cold)", "second pass"):
        per_src, slow = {}, []
        t0 = time.perf_counter()
        for n in names:
            t = time.perf_counter()
            got, res, _ = corpus_lib.replay(cases[n])
            assert not corpus_lib.mismatches(cases[n], got), n
            dt = time.perf_counter() - t
            src = cases[n]["config"]["source"]
            k, s, i = per_src.get(src, (0, 0.0, 0))
            per_src[src] = (k + 1, s + dt, i + res.instructions)
            slow.append((dt, n, res.instructions))
        total = time.perf_counter() - t0
        print(f"{label}: {len(names)} cases in {total:.2f} s")
        for src, (k, s, i) in sorted(per_src.items()):
            print(f"  {src:7s} {k:4d} cases {s:7.2f} s  {i / max(s, 1e-9) / 1e3:8.1f} k warp-instructions/s")
        slow.sort(reverse=True)
        print("  slowest: " + ", ".join(f"{n} {dt:.2f} s" for dt, n, _ in slow[:3]))


if __name__ == "__main__":
    main()
