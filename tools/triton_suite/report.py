"""The table of a suite run: per mode (JSON lines from the conftest's TRITON_SUITE_LOG) pass/fail/skip counts
over the ids every given mode finished, and the emulator's failures among the tests the H100 passes.

    python tools/triton_suite/report.py results/h100.jsonl emu.jsonl interp.jsonl
"""
import collections
import json
import sys


def load(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        out[r["id"]] = r          # a later line (a re-run) replaces an earlier one
    return out


def main(paths):
    runs = {p: load(p) for p in paths}
    common = set.intersection(*(set(r) for r in runs.values()))
    print(f"{len(common)} ids finished by every run")
    for p, r in runs.items():
        c = collections.Counter(r[i]["outcome"] for i in common)
        secs = sum(r[i]["seconds"] for i in common)
        print(f"{p:40s} passed {c['passed']:5d}  failed {c['failed'] + c['error']:5d}  skipped {c['skipped']:5d}"
              f"  test time {secs:8.0f} s")
    h100, emu = runs[paths[0]], runs[paths[1]]
    hp = [i for i in common if h100[i]["outcome"] == "passed"]
    ep = [i for i in hp if emu[i]["outcome"] == "passed"]
    print(f"of the {len(hp)} the H100 passes, {paths[1]} passes {len(ep)} ({100 * len(ep) / max(len(hp), 1):.1f}%)")
    for i in sorted(set(hp) - set(ep)):
        print(f"  {emu[i]['outcome']:8s} {i}  {emu[i]['error'][:160]}")


if __name__ == "__main__":
    main(sys.argv[1:])
