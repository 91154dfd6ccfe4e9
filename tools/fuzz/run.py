"""The long fuzz run: every input must work or raise an EmulatorError (tools/fuzz/fuzzlib.py says what the
inputs are). Prints the counts per kind and every crash (deduplicated by exception and place), with the
kind and seed that reproduce it: ``python tools/fuzz/run.py --repro warp:1234``.

    nice python tools/fuzz/run.py --procs 1 --count warp=600000,api=350000,ptx=50000 --log fuzz.jsonl
    nice -n 19 python tools/fuzz/run.py --count warp=400000,api=300000,types=200000,grammar=50000,ptx=50000 \
        --seconds 3600         # stops after an hour: the counts say how many inputs ran, at what rate

Every kind's generator is driven: ``ptx`` (mutated compiler output), ``warp`` (inline asm on a warp), ``api``
(the public calls, odd numpy arrays, the command line), ``types`` (every public callable with arguments of
the wrong kind), ``grammar`` (PTX from a grammar: deep scopes, printf formats, duplicates, immediates). An
escape is any exception that is not an ``EmulatorError`` (or a hang).

Inputs are numbered per kind; ``--start`` picks the first number, so runs can continue one another.
"""
import argparse
import json
import multiprocessing as mp
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzzlib  # noqa: E402

CHUNK = 200
TIMEOUT_S = 60


class _Timeout(BaseException):            # not an Exception: fuzzlib.check must not take it for a crash
    pass


def _alarm(signum, frame):
    raise _Timeout()


def work(job):
    kind, start, n = job
    # the limit counts this process's CPU time, not the wall clock: on a shared machine (or at nice 19) an
    # input that waits for a core is not a hang
    signal.signal(signal.SIGVTALRM, _alarm)
    crashes = []
    t0 = time.time()
    for seed in range(start, start + n):
        signal.setitimer(signal.ITIMER_VIRTUAL, TIMEOUT_S)
        try:
            bad = fuzzlib.check(kind, seed)
        except _Timeout:
            bad = (f"hang (over {TIMEOUT_S} CPU seconds)", "", "")
        finally:
            signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        if bad:
            crashes.append((kind, seed) + tuple(bad))
    return kind, n, crashes, time.time() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", default="warp=1000,api=1000,ptx=100", help="KIND=N,... inputs per kind")
    p.add_argument("--start", type=int, default=0, help="first input number of every kind")
    p.add_argument("--procs", type=int, default=1)
    p.add_argument("--seconds", type=float, default=None, help="time budget: stop after this many seconds")
    p.add_argument("--log", help="append a JSON line per finished chunk (counts, crashes) to this file")
    p.add_argument("--repro", metavar="KIND:SEED", help="run one input and show its traceback")
    a = p.parse_args()
    if a.repro:
        kind, seed = a.repro.split(":")
        rng = fuzzlib.np.random.default_rng([fuzzlib.KINDS.index(kind), int(seed)])
        run, text = fuzzlib.GENERATORS[kind](rng)
        print(text)
        run()
        return 0
    counts = {k: int(v) for k, v in (x.split("=") for x in a.count.split(","))}
    jobs = []
    for kind, n in counts.items():
        for s in range(a.start, a.start + n, CHUNK):
            jobs.append((kind, s, min(CHUNK, a.start + n - s)))
    jobs.sort(key=lambda j: (j[1], fuzzlib.KINDS.index(j[0])))      # interleave the kinds
    done = {k: 0 for k in counts}
    secs = {k: 0.0 for k in counts}
    seen = {}
    log = open(a.log, "a") if a.log else None
    t0 = time.time()
    fuzzlib.seeds()
    fuzzlib.warm_up()                                   # the jitted kernels compile once, before the clock runs
    pool = mp.Pool(a.procs) if a.procs > 1 else None
    results = pool.imap_unordered(work, jobs) if pool else map(work, jobs)
    for kind, n, crashes, dt in results:
        done[kind] += n
        secs[kind] += dt
        for c in crashes:
            key = (c[2], c[3])
            if key not in seen:
                seen[key] = c
                print(f"CRASH {c[0]}:{c[1]}  {c[2]}  at {c[3]}\n    {c[4][:300]}", flush=True)
        if log:
            log.write(json.dumps({"kind": kind, "n": n, "seconds": round(dt, 2),
                                  "crashes": [list(map(str, c)) for c in crashes]}) + "\n")
            log.flush()
        total = sum(done.values())
        if total % (CHUNK * 25) < n:
            print(f"[{time.time() - t0:7.0f} s] " + ", ".join(f"{k} {done[k]}" for k in done) +
                  f"; {len(seen)} distinct crash(es)", flush=True)
        if a.seconds is not None and time.time() - t0 > a.seconds:
            break
    print("inputs per kind: " + ", ".join(f"{k} {done[k]} ({done[k] / max(secs[k], 1e-9):.0f}/s)" for k in done))
    print(f"total {sum(done.values())} inputs in {time.time() - t0:.0f} s; {len(seen)} distinct crash(es)",
          flush=True)
    if pool:
        pool.terminate()
    return 1 if seen else 0


if __name__ == "__main__":
    sys.exit(main())
