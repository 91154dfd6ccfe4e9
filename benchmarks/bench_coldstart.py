"""Cold start, as a fresh install sees it: ``import emulator`` + ``load_ptx`` + the first kernel launch in a new
process, in CPU seconds (this process and its children: on one core, the CPU time is what it waits).

The package (``emulator/``, ``isa/``) is copied into a temporary directory (no ``__pycache__``) and numba's
cache is pointed at an empty directory there (``NUMBA_CACHE_DIR``), so the first process finds nothing
compiled, exactly as after ``pip install``. Then, each in its own process:

1. ``engine="fast"``, empty cache: the first launch compiles the fast engine's loops in the process (under
   the compile lock) and runs on them: the cost of the first fast launch, compile included;
2. the same kernel in a second process: the cache is filled, nothing compiles;
3. ``engine="auto"`` (the default) with a new empty cache: the launch runs on the reference executors while a
   child process compiles; the child stops when the process exits (the table says whether it did);
4. ``python -c "import emulator"`` alone, cache filled.

    python benchmarks/bench_coldstart.py [--case triton_matmul|nvcc_gemm] [--skip-auto]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import os, resource, sys, time, json
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
t0 = cpu()
import numpy as np
import emulator
from emulator import GlobalMemory, load_ptx
t1 = cpu()
m = load_ptx(open(PTX).read())
t2 = cpu()
g = GlobalMemory()
ARGS
r = m.launch(KERNEL, GRID, BLOCK, args, gmem=g, shared_bytes=SHARED, engine=ENGINE)
t3 = cpu()
first_fast = r.ctas[0][1][0].fast is not None
g = GlobalMemory()
ARGS
r2 = m.launch(KERNEL, GRID, BLOCK, args, gmem=g, shared_bytes=SHARED, engine=ENGINE)
t4 = cpu()
from emulator.machine.fastcore import warmup
p = warmup._STATE["proc"]
print(json.dumps({"import": t1 - t0, "load_ptx": t2 - t1, "launch": t3 - t2, "total": t3 - t0,
                  "second": t4 - t3, "instructions": r.instructions, "first_fast": first_fast,
                  "child": p.pid if p is not None else None}))
"""

CASES = {
    "triton_matmul": ("benchmarks/data/triton_matmul.ptx", "matmul_kernel", (1, 1), 128, 16384, """
a = g.upload(np.ones((64, 64), np.float16)); b = g.upload(np.ones((64, 64), np.float16))
c = g.upload(np.zeros((64, 64), np.float32))
args = [a, b, c, 64, 64, 64, 64, 1, 64, 1, 64, 1, 0, 0]"""),
    "nvcc_gemm": ("tests/data/kernels/gemm_tiled.ptx", "gemm_tiled", (1, 1), 128, 0, """
a = g.upload(np.ones((64, 64), np.float16)); b = g.upload(np.ones((64, 64), np.float16))
c = g.upload(np.zeros((64, 64), np.float32))
args = [a, b, c, 64, 64, 64]"""),
}


def fresh_install(tmp):
    """A copy of the package without bytecode, and an empty numba cache directory; returns (root, cache)."""
    root = os.path.join(tmp, "site")
    for pkg in ("emulator", "isa"):
        shutil.copytree(os.path.join(ROOT, pkg), os.path.join(root, pkg),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc", "warpemu.*"))
    cache = os.path.join(tmp, "numba-cache")
    os.makedirs(cache)
    return root, cache


def child(case, root, cache, engine, background="1"):
    ptx, kernel, grid, block, shared, args = CASES[case]
    code = (CHILD.replace("PTX", repr(os.path.join(ROOT, ptx))).replace("KERNEL", repr(kernel))
            .replace("GRID", repr(grid)).replace("BLOCK", repr(block)).replace("SHARED", repr(shared))
            .replace("ENGINE", repr(engine)).replace("ARGS", args))
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=root, WARPEMU_BACKGROUND_COMPILE=background)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=root)
    if out.returncode:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def import_cost(root, cache, repeat=3):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=root)
    code = ("import resource, time; t = time.process_time(); import emulator; "
            "print(time.process_time() - t)")
    return min(float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                    cwd=root).stdout) for _ in range(repeat))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def show(label, r):
    if "error" in r:
        print(f"{label:44s} error: {r['error']}")
        return
    print(f"{label:44s}{r['import']:>8.2f}{r['load_ptx']:>10.2f}{r['launch']:>9.2f}{r['total']:>8.2f}  "
          f"{'fast' if r['first_fast'] else 'reference':<10s}{r['second']:>10.3f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=list(CASES), default="triton_matmul")
    ap.add_argument("--skip-auto", action="store_true", help="leave out the engine='auto' row")
    a = ap.parse_args(argv)
    print(f"{a.case}: CPU seconds (this process and its children), each row a new process")
    print(f"{'':44s}{'import':>8s}{'load_ptx':>10s}{'launch':>9s}{'total':>8s}  {'engine':<10s}{'2nd launch':>10s}")
    with tempfile.TemporaryDirectory() as tmp:
        root, cache = fresh_install(tmp)
        show("fresh install, engine='fast' (compiles)", child(a.case, root, cache, "fast", "0"))
        show("next process, cache filled", child(a.case, root, cache, "fast"))
        print(f"import emulator alone (cache filled): {import_cost(root, cache):.2f} s")
        if not a.skip_auto:
            cache2 = os.path.join(tmp, "numba-cache-2")
            os.makedirs(cache2)
            r = child(a.case, root, cache2, "auto")
            show("fresh install, engine='auto' (the default)", r)
            if r.get("child"):
                t = time.monotonic()
                while alive(r["child"]) and time.monotonic() - t < 30:
                    time.sleep(0.05)
                print(f"  its compile child " + (f"stopped {time.monotonic() - t:.2f} s after the process exited"
                                                 if not alive(r["child"]) else "is STILL RUNNING 30 s after the "
                                                 "process exited"))


if __name__ == "__main__":
    main()
