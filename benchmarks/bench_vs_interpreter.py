"""The corpus's Triton kernels on both engines and on Triton's interpreter, in one process, by CPU time.

Every Triton case of ``tests/data/corpus`` (the PTX Triton 3.6 wrote, with the inputs an H100 ran) is
launched on the fast engine and on the reference executors, each output compared bit for bit with the H100's;
when Triton is installed, the same kernel from its Python source (``tools/hwcapture/corpus/triton_kernels.py``)
runs on Triton's interpreter on the same inputs. Each figure is the best of ``--runs`` warm launches (the first
launch, which compiles and translates, is not timed), in CPU seconds of this process (``time.process_time``:
the ratios hold on a busy machine). Rates are millions of warp-instructions (the emulator's count for the
launch) per CPU second; the interpreter's rate is the same count over its own time.

Both sides time the same work: the interpreter builds its torch tensors from the inputs and launches; the
emulator makes a ``GlobalMemory``, uploads the inputs, launches and downloads the outputs. The comparison of the
outputs with the H100's is not timed (until this round it was, on the emulator's side only: ``--time-compare``
times it again, for figures comparable with earlier ones).

The cases are grouped by class (wgmma/TMA, mma.sync, atomics, no tensor cores); per class the table gives the
geometric means of the rates and of the ratio fast engine / interpreter, and the fraction of kernels the fast
engine runs faster than the interpreter.

    python benchmarks/bench_vs_interpreter.py [-k SUBSTRING] [--runs 2] [--no-interpreter] [--engines fast]
                                              [--no-grid-loop] [--time-compare]

``--engines fast`` times the fast engine alone (the reference's column is left empty) and ends with the
overall rate (all warp-instructions over all CPU seconds) and each launch's fixed cost: the CPU time outside
the jitted loops (of the timed work above: memory, uploads, launch, downloads), per launch and per CTA
(docs/speed.md, "The fixed cost of a launch").

Triton's interpreter needs the optional extra (Triton, torch): without it the script says so and times the
two engines only.
"""
import argparse
import contextlib
import math
import os
import re
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "tools", "hwcapture", "corpus")]

CLASSES = ("wgmma/TMA", "mma.sync", "atomics", "no tensor cores")


def classify(ptx):
    if "wgmma." in ptx or "cp.async.bulk" in ptx:
        return "wgmma/TMA"
    if "mma.sync" in ptx:
        return "mma.sync"
    if re.search(r"(^|[\s}])(@!?%?\w+\s+)?(atom|red)\.", ptx, re.M):
        return "atomics"
    return "no tensor cores"


TIME_COMPARE = [False]      # --time-compare: the comparison with the H100's outputs timed too (as before)


def emulate(module, case, engine):
    """One launch as a user's script makes it: a new GlobalMemory, the inputs uploaded, the launch, the outputs
    downloaded. Returns (CPU seconds of that, warp-instructions, bit-identical to the H100); the comparison with the
    H100's outputs is not timed (unless ``--time-compare``)."""
    import corpus_lib
    from emulator import GlobalMemory
    cfg = case["config"]
    t = time.process_time()
    g = GlobalMemory()
    args, addrs = corpus_lib.launch_args(case, g)
    res = module.launch(cfg["kernel"], cfg["grid"], cfg["block"], args, gmem=g, shared_bytes=cfg.get("shared", 0),
                        engine=engine)
    got = {k: g.download(addrs[k][0], addrs[k][1].nbytes).view(addrs[k][1].dtype).reshape(addrs[k][1].shape)
           for k in cfg["outputs"]}
    dt = time.process_time() - t
    same = not corpus_lib.mismatches(case, got)
    if TIME_COMPARE[0]:
        dt = time.process_time() - t
    return dt, res.instructions, same


def interpreter_runner(case, sources):
    """A function that runs the case's kernel once on Triton's interpreter, or None (no source here)."""
    src = sources.get(case["config"]["name"])
    if src is None:
        return None
    import torch
    cfg = case["config"]
    tensors = {}

    def tensor(arr):
        dt = arr.dtype.name
        if dt == "bfloat16":
            return torch.from_numpy(arr.view(np.uint16).copy()).view(torch.bfloat16)
        if dt.startswith("float8"):
            tdt = torch.float8_e4m3fn if "e4m3" in dt else torch.float8_e5m2
            return torch.from_numpy(arr.view(np.uint8).copy()).view(tdt)
        return torch.from_numpy(arr.copy())

    def run():
        args = []
        for k, v in src["args"].items():
            if isinstance(v, np.ndarray):
                tensors[k] = tensor(case["in"].get(k, v))
                args.append(tensors[k])
            else:
                args.append(v)
        src["kernel"][tuple(src["grid"])](*args, num_warps=src["num_warps"], **src["constexprs"])
    return run


def triton_sources():
    """{corpus case name: Triton case of triton_kernels.cases()} with every kernel built for the interpreter, or
    None when Triton is not installed."""
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        import torch  # noqa: F401
        import triton_kernels
    except Exception as e:                 # noqa: BLE001 (the optional extra is missing or broken)
        return None, f"{type(e).__name__}: {e}"
    _numpy2_scalars()
    out = {}
    for c in triton_kernels.cases():
        for t in c["targets"]:
            out[f"triton_{c['name']}_{t.replace('_', '')}"] = c
    return out, None


def _numpy2_scalars():
    """Triton 3.6's interpreter turns its scalar tensors (1-element arrays) into Python ints with ``int(array)``,
    which numpy 2.4 refuses for arrays of one dimension (``range(0, tl.cdiv(K, BK))`` fails): take the element
    instead, the value numpy used to give."""
    from triton.runtime import interpreter as it
    original = it._patch_lang_tensor
    if getattr(original, "_numpy2", False):
        return

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))
    patched._numpy2 = True
    it._patch_lang_tensor = patched


@contextlib.contextmanager
def loop_timer():
    """While open, the CPU seconds spent inside the fast engine's jitted loops (the warp loop, the CTA loop and
    the grid loop's calls) add up in the list it yields (element 0; set it to 0.0 to start again)."""
    from emulator.machine.fastcore import engine, gridloop
    spent = [0.0]

    def timed(f):
        def call(*args):
            t0 = time.process_time()
            try:
                return f(*args)
            finally:
                spent[0] += time.process_time() - t0
        return call
    loops = engine._loops()[:]                # (every launch takes the warp and CTA loops from this list)
    grid_loop = gridloop.grid_loop          # (the grid loop's calls: CTAs run in the CTA loop it calls)
    engine._LOOPS[:] = [timed(f) for f in loops]
    gridloop.grid_loop = timed(grid_loop)
    try:
        yield spent
    finally:
        engine._LOOPS[:] = loops
        gridloop.grid_loop = grid_loop


def fixed_cost(module, case, runs):
    """The best of ``runs`` warm fast-engine launches, with the jitted loops' calls timed apart: (CPU seconds,
    of which inside the loops)."""
    out = None
    with loop_timer() as spent:
        for _ in range(runs):
            spent[0] = 0.0
            dt, _, _ = emulate(module, case, "fast")
            if out is None or dt < out[0]:
                out = (dt, spent[0])
    return out


def best(fn, runs):
    times = []
    for _ in range(runs):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def best_emulated(module, case, engine, runs):
    """The best of ``runs`` launches' timed work (``emulate``)."""
    return min(emulate(module, case, engine)[0] for _ in range(runs))


def geo(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-interpreter", action="store_true")
    ap.add_argument("--engines", default="fast,reference", help="engines to time, comma-separated")
    ap.add_argument("--no-grid-loop", action="store_true",
                    help="run every CTA through the Python path (the grid loop off: before/after)")
    ap.add_argument("--time-compare", action="store_true",
                    help="time the comparison with the H100's outputs too (the timed region before this round)")
    a = ap.parse_args(argv)
    TIME_COMPARE[0] = a.time_compare
    if a.no_grid_loop:
        from emulator.machine.fastcore import gridloop
        gridloop.ON = False
    engines = [e for e in a.engines.split(",") if e]
    if not engines or any(e not in ("fast", "reference") for e in engines):
        ap.error("--engines takes fast, reference or both")
    sources, why = (None, "--no-interpreter") if a.no_interpreter else triton_sources()
    import corpus_lib
    from emulator import load_ptx
    cases = corpus_lib.load_all()
    names = [n for n in sorted(cases) if cases[n]["config"]["source"] == "triton" and a.k in n and
             n not in corpus_lib.CANNOT_RUN]
    if sources is None:
        print(f"Triton's interpreter: not run ({why}); the two engines only")
    print(f"{len(names)} Triton cases; CPU seconds of this process, best of {a.runs} warm launches; "
          f"M/s = million warp-instructions per CPU second")
    print(f"{'case':44s}{'class':>16s}{'instr':>9s}{'fast M/s':>10s}{'ref M/s':>9s}{'interp M/s':>11s}"
          f"{'fast/interp':>12s}  bits")
    rows = []
    fixed = []                   # fast engine, per case: (CPU s, of which in the jitted loops, warp-instr, CTAs)
    for n in names:
        case = cases[n]
        case["config"].setdefault("name", n)
        module = load_ptx(case["ptx"])
        cls = classify(case["ptx"])
        ok = True
        rate = {}
        instr = 0
        rate["reference"] = float("nan")
        for engine in engines:
            _, instr, same = emulate(module, case, engine)           # compiles, translates
            ok &= same
            dt = best_emulated(module, case, engine, a.runs)
            if engine == "fast" and engines == ["fast"]:
                fixed.append((*fixed_cost(module, case, a.runs), instr, int(np.prod(case["config"]["grid"]))))
            rate[engine] = instr / max(dt, 1e-9) / 1e6
        rate["interp"] = None
        run = interpreter_runner(case, sources) if sources else None
        if run is not None:
            try:
                run()
                rate["interp"] = instr / max(best(run, a.runs), 1e-9) / 1e6
            except Exception as e:         # noqa: BLE001 (what the interpreter cannot run is reported, not fatal)
                rate["interp"] = None
                print(f"  (interpreter failed on {n}: {type(e).__name__}: {str(e)[:80]})")
        ratio = rate["fast"] / rate["interp"] if rate["interp"] else None
        rows.append((n, cls, instr, rate, ratio, ok))
        ri = f"{rate['interp']:.3f}" if rate["interp"] else "-"
        rr = f"{ratio:.2f}x" if ratio else "-"
        print(f"{n:44s}{cls:>16s}{instr:>9d}{rate['fast']:>10.3f}{rate['reference']:>9.3f}{ri:>11s}{rr:>12s}  "
              f"{'same' if ok else 'DIFFER'}")
    print()
    print(f"{'class':16s}{'kernels':>8s}{'fast M/s':>10s}{'ref M/s':>9s}{'interp M/s':>11s}{'fast/interp':>12s}"
          f"{'faster':>9s}   (geometric means; 'faster': kernels the fast engine runs faster than the interpreter)")
    for cls in CLASSES + ("all",):
        rs = [r for r in rows if cls in ("all", r[1])]
        if not rs:
            continue
        cmp = [r for r in rs if r[4]]
        faster = f"{sum(r[4] > 1 for r in cmp)}/{len(cmp)}" if cmp else "-"
        gi = f"{geo([r[3]['interp'] for r in cmp]):.3f}" if cmp else "-"
        gr = f"{geo([r[4] for r in cmp]):.2f}x" if cmp else "-"
        print(f"{cls:16s}{len(rs):>8d}{geo([r[3]['fast'] for r in rs]):>10.3f}"
              f"{geo([r[3]['reference'] for r in rs]):>9.3f}{gi:>11s}{gr:>12s}{faster:>9s}")
    if fixed:
        t = sum(f[0] for f in fixed)
        lp = sum(f[1] for f in fixed)
        ins = sum(f[2] for f in fixed)
        x = np.array([[1.0, f[3]] for f in fixed])
        per = np.linalg.lstsq(x, np.array([f[0] - f[1] for f in fixed]), rcond=None)[0] if len(fixed) > 1 else \
            np.array([fixed[0][0] - fixed[0][1], 0.0])
        print(f"\nfast engine over the {len(fixed)} launches: {ins} warp-instructions in {t:.3f} CPU s = "
              f"{ins / max(t, 1e-9) / 1e6:.2f} M/s overall; in the jitted loops {lp:.3f} s "
              f"({ins / max(lp, 1e-9) / 1e6:.2f} M/s), outside them {t - lp:.3f} s "
              f"({100 * (t - lp) / max(t, 1e-9):.0f}%): about {per[0] * 1e6:.0f} us per launch + "
              f"{per[1] * 1e6:.0f} us per CTA (least squares)")
    bad = [r[0] for r in rows if not r[5]]
    on = "both engines" if len(engines) > 1 else f"the {engines[0]} engine"
    print(f"\nbit-identical to the H100 on {on}: {len(rows) - len(bad)}/{len(rows)}"
          + (f"; differ: {', '.join(bad)}" if bad else ""))


if __name__ == "__main__":
    main()
