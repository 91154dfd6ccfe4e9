"""Cold start, as a fresh install sees it: ``import emulator`` + ``load_ptx`` + the first kernel launch in a new
process, in CPU seconds (this process and its children: on one core, the CPU time is what it waits). The columns:
import (numpy, numba with the launch path), ``load_ptx``, the first launch, their total, and the whole process as
the caller sees it (the interpreter's start and shutdown too).

The package (``emulator/``, ``isa/``) is copied into a temporary directory and its bytecode compiled (as ``pip
install`` does), and numba's cache is pointed at an empty directory there (``NUMBA_CACHE_DIR``), so the first
process finds nothing of numba's compiled, exactly as after ``pip install``. Then, each in its own process:

1. ``engine="fast"``, empty cache: the first launch compiles the fast engine's loops and the instruction
   families the kernel uses (``machine/fastcore/families.py``; the last column) in the process (under the
   compile lock) and runs on them: the cost of the first fast launch, compile included;
2. the same kernel in a second process: the cache is filled, nothing compiles (``--repeat N``: N such
   processes, with their median and range);
3. with ``--case all``: every kernel in turn on one more fresh install, each compiling only the families the
   kernels before it did not need;
4. ``engine="auto"`` (the default) with a new empty cache: the launch runs on the reference executors while a
   child process compiles; the child stops when the process exits (the table says whether it did);
5. ``python -c "import emulator"`` alone, cache filled.

``--parts`` instead compiles each part of the fast engine alone, each in a new process on a new empty cache
(after one trivial function, so that numba's own first-use cost is not counted in the part), and splits its CPU
time into what LLVM spends (every llvmlite call: optimisation passes, machine code, IR parsing) and numba's own
Python (type inference, lowering to LLVM IR, its IR passes): the warp loop, the
CTA loop on top of it, every instruction family and every other function compiled apart (``families.APART``:
xcall's, hopcall's, bulkcall's, wgcall's ``wg_c`` and its tile functions, one per wgmma form).

    python benchmarks/bench_coldstart.py [--case triton_matmul|nvcc_gemm|triton_softmax|triton_wgmma|all]
                                         [--skip-auto] [--repeat N] [--parts [--only alu,shfl,...]]
"""
import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
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
m = load_ptx(SOURCE)
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
tr = getattr(m.program(KERNEL), "_fast", None)
print(json.dumps({"import": t1 - t0, "load_ptx": t2 - t1, "launch": t3 - t2, "total": t3 - t0,
                  "second": t4 - t3, "instructions": r.instructions, "first_fast": first_fast,
                  "families": list(tr.families) + list(tr.apart) if tr is not None else [],
                  "child": p.pid if p is not None else None}))
"""

PART = r"""
import json, time, numpy as np
from llvmlite.binding import ffi
LLVM = [0.0]
_call = ffi._lib_fn_wrapper.__call__
def _timed(self, *a, **k):                  # the CPU time spent inside LLVM (every llvmlite call)
    t = time.process_time()
    try:
        return _call(self, *a, **k)
    finally:
        LLVM[0] += time.process_time() - t
ffi._lib_fn_wrapper.__call__ = _timed
import emulator.machine.module
from numba import njit
from emulator.machine.fastcore import families, warmup
@njit
def first(a):
    return a.sum()
first(np.zeros(2))
PART = PARTNAME
if PART in ("warp loop", "CTA loop"):
    families.address("alu", warmup.lock())      # (the family of the tiny kernels that make numba compile the loops)
if PART == "CTA loop":
    warmup._compile_loops("warp")
t = time.process_time()
LLVM[0] = 0.0
if PART in ("warp loop", "CTA loop"):
    warmup._compile_loops("warp" if PART == "warp loop" else "cta")
else:
    families.address(PART, warmup.lock())
print(json.dumps({"cpu": time.process_time() - t, "llvm": LLVM[0]}))
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
    "triton_softmax": ("benchmarks/data/triton_softmax.ptx", "softmax_kernel", (8,), 128, 16, """
x = g.upload(np.linspace(-3, 3, 8000, dtype=np.float32).reshape(8, 1000))
y = g.upload(np.zeros((8, 1000), np.float32))
args = [x, y, 1000, 0, 0]"""),
    # Triton's sm_90a matmul (wgmma.mma_async from shared memory fed by cp.async; two warpgroups), from the corpus
    "triton_wgmma": ("tests/data/corpus/triton.npz:triton_matmul_f16_w8_sm90a__ptx", "matmul_kernel", (1, 1, 1), 256,
                     24576, """
a = g.upload(np.ones((64, 64), np.float16)); b = g.upload(np.ones((64, 64), np.float16))
c = g.upload(np.zeros((64, 64), np.float16))
args = [a, b, c, 64, 64, 64, 64, 64, 64, 0, 0]"""),
}


def _source(ptx):
    """The expression the child reads the PTX text with (a file, or an array of an .npz: ``path:key``)."""
    if ":" in ptx:
        path, key = ptx.split(":")
        return (f"np.load({os.path.join(ROOT, path)!r}, allow_pickle=False)[{key!r}].tobytes().decode()")
    return f"open({os.path.join(ROOT, ptx)!r}).read()"


def fresh_install(tmp):
    """A copy of the package with its bytecode compiled (as pip does), and an empty numba cache directory; returns
    (root, cache)."""
    os.makedirs(tmp, exist_ok=True)
    root = os.path.join(tmp, "site")
    for pkg in ("emulator", "isa"):
        shutil.copytree(os.path.join(ROOT, pkg), os.path.join(root, pkg),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc", "warpemu.*"))
    # pip compiles the package's bytecode when it installs it: so does this copy (otherwise every process would
    # compile the bytecode of ~100 modules again under PYTHONDONTWRITEBYTECODE, about 0.3 s of CPU each)
    compileall.compile_dir(root, quiet=1)
    cache = os.path.join(tmp, "numba-cache")
    os.makedirs(cache)
    return root, cache


def child(case, root, cache, engine, background="1"):
    ptx, kernel, grid, block, shared, args = CASES[case]
    code = (CHILD.replace("SOURCE", _source(ptx)).replace("KERNEL", repr(kernel))
            .replace("GRID", repr(grid)).replace("BLOCK", repr(block)).replace("SHARED", repr(shared))
            .replace("ENGINE", repr(engine)).replace("ARGS", args))
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=root, WARPEMU_BACKGROUND_COMPILE=background)
    c0 = children_cpu()
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=root)
    whole = children_cpu() - c0
    if out.returncode:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["process"] = whole           # the whole process, seen from here: the interpreter's start and exit too
    return r


def children_cpu():
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_utime + c.ru_stime


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
    print(f"{label:44s}{r['import']:>8.2f}{r['load_ptx']:>10.2f}{r['launch']:>9.2f}{r['total']:>8.2f}"
          f"{r['process']:>9.2f}  {'fast' if r['first_fast'] else 'reference':<10s}{r['second']:>10.3f}  "
          f"{' '.join(r.get('families', []))}")


def header():
    print(f"{'':44s}{'import':>8s}{'load_ptx':>10s}{'launch':>9s}{'total':>8s}{'process':>9s}  {'engine':<10s}"
          f"{'2nd launch':>10s}  families")


def parts(tmp, only=None):
    """Each part of the fast engine compiled alone (a new process, a new empty cache): CPU seconds (``only``: the
    names of the parts to compile, all when None)."""
    sys.path.insert(0, ROOT)
    from emulator.machine.fastcore import families
    print("each part compiled alone, CPU seconds (a new process on an empty cache each): all, in LLVM (optimisation\n"
          "passes, machine code, IR parsing), in numba's own Python (typing, lowering, its IR passes)")
    print(f"  {'':12s}{'all':>7s}{'LLVM':>8s}{'numba':>8s}")
    names = ("warp loop", "CTA loop") + families.ORDER + tuple(families.APART)
    for k, name in enumerate(n for n in names if only is None or n in only):
        root, cache = fresh_install(os.path.join(tmp, f"part{k}"))
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=root, WARPEMU_BACKGROUND_COMPILE="0")
        out = subprocess.run([sys.executable, "-c", PART.replace("PARTNAME", repr(name))], env=env,
                             capture_output=True, text=True, cwd=root)
        if out.returncode == 0:
            r = json.loads(out.stdout.strip().splitlines()[-1])
            got = f"{r['cpu']:7.2f}{r['llvm']:8.2f}{r['cpu'] - r['llvm']:8.2f}"
        else:
            got = "error: " + (out.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {name:12s}{got}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=list(CASES) + ["all"], default="triton_matmul")
    ap.add_argument("--skip-auto", action="store_true", help="leave out the engine='auto' row")
    ap.add_argument("--parts", action="store_true", help="compile each part of the fast engine alone instead")
    ap.add_argument("--only", default=None, help="with --parts: the parts to compile, comma-separated (alu,shfl)")
    ap.add_argument("--repeat", type=int, default=1, help="the next process this many times (median and range)")
    a = ap.parse_args(argv)
    if a.parts:
        with tempfile.TemporaryDirectory() as tmp:
            parts(tmp, None if a.only is None else a.only.split(","))
        return
    cases = list(CASES) if a.case == "all" else [a.case]
    print("CPU seconds (this process and its children), each row a new process")
    header()
    with tempfile.TemporaryDirectory() as tmp:
        for k, case in enumerate(cases):
            root, cache = fresh_install(os.path.join(tmp, str(k)))
            show(f"{case}: fresh install, engine='fast'", child(case, root, cache, "fast", "0"))
            runs = [child(case, root, cache, "fast") for _ in range(a.repeat)]
            for r in runs:
                show(f"{case}: next process, cache filled", r)
            if a.repeat > 1 and all("error" not in r for r in runs):
                print(f"  {a.repeat} next processes: " + "; ".join(
                    f"{k} median {statistics.median(r[k] for r in runs):.2f} s "
                    f"({min(r[k] for r in runs):.2f}-{max(r[k] for r in runs):.2f})" for k in ("total", "process")))
        if len(cases) > 1:             # one install: each kernel compiles only the families the others left
            root, cache = fresh_install(os.path.join(tmp, "shared"))
            for case in cases:
                show(f"{case}: after the kernels above", child(case, root, cache, "fast", "0"))
        print(f"import emulator alone (cache filled): {import_cost(root, cache):.2f} s")
        if not a.skip_auto:
            root, cache2 = fresh_install(os.path.join(tmp, "auto"))
            r = child(cases[0], root, cache2, "auto")
            show(f"{cases[0]}: fresh install, engine='auto'", r)
            if r.get("child"):
                t = time.monotonic()
                while alive(r["child"]) and time.monotonic() - t < 30:
                    time.sleep(0.05)
                print(f"  its compile child " + (f"stopped {time.monotonic() - t:.2f} s after the process exited"
                                                 if not alive(r["child"]) else "is STILL RUNNING 30 s after the "
                                                 "process exited"))


if __name__ == "__main__":
    main()
