"""Replay a corpus bundle (or the committed corpus) on the emulator and print each case's outcome.

    python tools/hwcapture/corpus/emulate.py [BUNDLE.npz ...] [-k SUBSTRING]

With outputs in the bundle (after ``run_gpu.py``/``pack.py``) it compares them byte for byte with the H100.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))


import corpus_lib  # noqa: E402


def load(paths):
    cases = {}
    for path in paths:
        with np.load(path, allow_pickle=False) as z:
            for key in z.files:
                if "__" not in key:
                    continue
                name, kind, *rest = key.split("__")
                c = cases.setdefault(name, {"in": {}, "out": {}})
                a = z[key]
                if kind == "ptx":
                    c["ptx"] = a.tobytes().decode()
                elif kind == "config":
                    c["config"] = json.loads(str(a))
                elif kind in ("in", "out"):
                    c[kind][rest[0]] = a
                else:
                    c[kind] = a
    for c in cases.values():
        corpus_lib.resolve(c, cases)
    return cases


def main():
    p = argparse.ArgumentParser()
    p.add_argument("paths", nargs="*")
    p.add_argument("-k", default="")
    a = p.parse_args()
    cases = load(a.paths) if a.paths else corpus_lib.load_all()
    stats = {}
    for name in sorted(cases):
        if a.k not in name:
            continue
        c = cases[name]
        t = time.time()
        try:
            got, res, _ = corpus_lib.replay(c)
            bad = corpus_lib.mismatches(c, got) if c["out"] else None
            status = "nogpu" if bad is None else ("MATCH" if not bad else f"DIFF {bad}")
        except Exception as e:  # noqa: BLE001 - report every case
            status = f"ERROR {type(e).__name__}: {str(e)[:300]}"
        key = status.split()[0]
        stats[key] = stats.get(key, 0) + 1
        print(f"{name}: {status} ({time.time() - t:.1f}s)", flush=True)
    print(stats)


if __name__ == "__main__":
    main()


def cannot_run_entries(cases):
    """{case: reason} for the cases that do not run or differ, in the form tests/corpus_lib.py lists them."""
    import re
    out = {}
    for name in sorted(cases):
        c = cases[name]
        try:
            got, _, _ = corpus_lib.replay(c)
        except Exception as e:  # noqa: BLE001
            m = re.match(r"(line \d+, column \d+: \S+)", str(e))
            out[name] = f"refused: {m.group(1) if m else str(e)[:120]}"
            continue
        bad = corpus_lib.mismatches(c, got)
        if bad:
            out[name] = "differs: " + ", ".join(f"{k} ({n} bytes)" for k, _, n in bad)
    return out
