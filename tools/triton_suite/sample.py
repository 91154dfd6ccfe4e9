"""Choose the sample of Triton's language tests (``ids.txt``): stratified by test function, proportional to
each function's number of parametrisations (at least one each), in an order whose every prefix is itself
stratified (position within the function plus a seeded jitter, over the function's share). Input: the output
of ``pytest --collect-only -q`` over the six files.

    python tools/triton_suite/sample.py collected.txt 2000 > tools/triton_suite/ids.txt
"""
import random
import sys


def main(path, total, seed=24):
    ids = [line.strip() for line in open(path) if "::" in line]
    groups = {}
    for i in ids:
        groups.setdefault(i.split("[")[0], []).append(i)
    rng = random.Random(seed)
    scale = total / len(ids)
    keyed = []
    for name, members in groups.items():
        k = max(1, round(len(members) * scale))
        chosen = rng.sample(members, min(k, len(members)))
        for pos, tid in enumerate(chosen):
            keyed.append(((pos + rng.random()) / len(chosen), tid))
    keyed.sort()
    return [t for _, t in keyed if not t.startswith("Test: ")]     # (pytest warnings that name a test)


if __name__ == "__main__":
    out = main(sys.argv[1], int(sys.argv[2]))
    print(f"# {len(out)} test ids of Triton 3.6.0 python/test/unit/language, stratified; see sample.py")
    print("\n".join(out))
