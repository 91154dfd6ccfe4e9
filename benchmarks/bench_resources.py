"""Peak memory against grid size and kernel length: every point runs in a fresh process and reports its peak
resident set (``ru_maxrss``) and CPU seconds.

* grids of a ``ret;`` kernel with the default ``keep`` (all of at most 4096 CTAs, else the last one) and with
  ``keep="all"``, and the largest CUDA grid with ``max_instructions=10_000`` (it stops at the limit);
* kernels of N PTX instructions (a mix of integer, float, compare, branch, load and store), loaded and
  launched once on the fast engine: peak RSS, and the bytes that stay held (``tracemalloc``) per instruction
  added from one length to the next (the first ``program.EAGER_FNS`` instructions keep their compiled
  executors: a fixed part).

    python benchmarks/bench_resources.py [--quick]
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RET = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k() { ret; }"""


def kernel(n):
    body = []
    for i in range(n // 8):
        body += [f"add.s32 %r1, %r2, {i};", "mul.lo.s32 %r3, %r1, %r2;", "setp.lt.s32 %p1, %r3, 100;",
                 f"@%p1 bra L{i};", "ld.global.u32 %r2, [%rd1+4];", "st.global.u32 [%rd1], %r3;", f"L{i}:",
                 "fma.rn.f32 %f1, %f2, %f3, %f1;", "cvt.rn.f32.s32 %f2, %r3;"]
    return (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 p) {\n"
            ".reg .b32 %r<4>; .reg .b64 %rd<2>; .reg .pred %p<2>; .reg .f32 %f<4>;\nld.param.u64 %rd1, [p];\n"
            + "\n".join(body) + "\nret;\n}\n")


def point(kind, arg, keep):
    """One measurement, in this (fresh) process."""
    import resource
    import time
    import tracemalloc
    sys.path.insert(0, ROOT)
    from emulator import GlobalMemory, load_ptx
    from emulator.errors import EmulatorError
    res = {}
    t = time.process_time()
    if kind == "grid":
        m = load_ptx(RET)
        kw = {} if keep == "default" else {"keep": keep}
        grid = (int(arg), 1, 1) if int(arg) > 0 else (2**31 - 1, 65535, 65535)
        try:
            r = m.launch("k", grid=grid, max_instructions=10_000 if int(arg) <= 0 else 1 << 40, **kw)
            res["ctas kept"] = len(r.ctas)
        except EmulatorError as e:
            res["error"] = str(e).split(":")[-1].strip()[:60]
    else:
        g = GlobalMemory()
        buf = g.alloc(64)
        text = kernel(int(arg))
        load_ptx(RET).launch("k", grid=(1, 1, 1), engine="fast")       # imports and compiled loops first
        tracemalloc.start()
        m = load_ptx(text)
        del text
        m.launch("k", args=[buf], gmem=g, engine="fast")
        res["held bytes"] = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    res["cpu s"] = round(time.process_time() - t, 2)
    res["peak RSS MB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(res))


def measure(kind, arg, keep="default"):
    out = subprocess.run([sys.executable, __file__, "--point", kind, str(arg), keep], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(quick=False):
    print("grid of a ret; kernel (CTAs)            keep     peak RSS MB   CPU s   result")
    for n in ([1, 1000, 10_000] if quick else [1, 1000, 10_000, 100_000]):
        for keep in ("default", "all"):
            r = measure("grid", n, keep)
            print(f"{n:>38}  {keep:>8}  {r['peak RSS MB']:>11}  {r['cpu s']:>6}   {r.get('ctas kept')} CTA(s) kept")
    r = measure("grid", 0)
    print(f"{'(2^31-1) x 65535 x 65535, 10k instr.':>38}  {'default':>8}  {r['peak RSS MB']:>11}  {r['cpu s']:>6}   "
          f"{r.get('error')}")
    print()
    print("kernel length (PTX instructions)   peak RSS MB   CPU s   held bytes per added instruction")
    prev = None
    for n in ([4000, 20_000] if quick else [4000, 20_000, 100_000]):
        r = measure("kernel", n)
        per = "" if prev is None else f"{(r['held bytes'] - prev[1]) / (n - prev[0]):.0f}"
        print(f"{n:>32}  {r['peak RSS MB']:>11}  {r['cpu s']:>6}   {per}")
        prev = (n, r["held bytes"])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--point":
        point(*sys.argv[2:5])
    else:
        main("--quick" in sys.argv)
