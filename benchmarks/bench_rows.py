"""The fast engine's jitted loops, one row kind at a time: CPU nanoseconds per warp-instruction.

Each case is a one-CTA kernel whose loop body repeats one instruction ``BODY`` times (plus the loop's own
counter, compare and branch), run ``ITERS`` times by every warp; only the time inside the jitted loops
(``loop.run_cta``) is counted, best of ``--runs`` warm launches, in CPU time of this process. The ``loop``
case is the loop alone (add, setp, @p bra): what the dispatch of a row costs with nothing else to do.

    python benchmarks/bench_rows.py [-k SUBSTRING] [--runs 3] [--iters 200]
"""
import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

BODY = 32

HEAD = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p0, .param .u32 p1)
{
    .reg .pred %p<4>;
    .reg .b32 %r<40>;
    .reg .f32 %f<40>;
    .reg .b64 %rd<16>;
    .reg .b16 %h<8>;
    .reg .f64 %fd<8>;
    .shared .align 16 .b8 sm[8192];
    ld.param.u64 %rd1, [p0];
    ld.param.u32 %r30, [p1];
    mov.u32 %r1, %tid.x;
    cvt.u64.u32 %rd2, %r1;
    shl.b64 %rd3, %rd2, 4;
    add.u64 %rd4, %rd1, %rd3;
    mov.u32 %r2, 0;
    mov.u32 %r3, 1;
    mov.u32 %r4, 7;
    mov.b16 %h1, 0x3C00;
    mov.f32 %f1, 0f3F800000;
    mov.f32 %f2, 0f3F000000;
    mov.f32 %f3, 0f3E800000;
    mov.f32 %f4, 0f00000000;
    mov.f32 %f5, 0f00000000;
    mov.f32 %f6, 0f00000000;
    mov.f32 %f7, 0f00000000;
    mov.u32 %r5, sm;
    shl.b32 %r6, %r1, 4;
    add.u32 %r7, %r5, %r6;
    and.b32 %r8, %r1, 15;
    shl.b32 %r9, %r8, 4;
    add.u32 %r10, %r5, %r9;
    mov.b32 %r11, 0;
    mov.b32 %r12, 0;
    mov.b32 %r13, 0;
    mov.b32 %r14, 0;
    mov.b32 %r15, 0;
    mov.b32 %r16, 0;
    mov.b32 %r17, 0;
    mov.b32 %r18, 0;
    mov.f32 %f8, 0f00000000;
    mov.f32 %f9, 0f00000000;
    mov.f32 %f10, 0f00000000;
    mov.f32 %f11, 0f00000000;
    mov.f64 %fd0, 0d0000000000000000;
    mov.f64 %fd1, 0d0000000000000000;
    mov.f64 %fd2, 0d3FF0000000000000;
    mov.f64 %fd3, 0d3FE0000000000000;
    st.shared.v4.f32 [%r7], {%f1, %f2, %f3, %f4};
    bar.sync 0;
LOOP:
"""
TAIL = """    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r30;
    @%p1 bra LOOP;
    st.global.v4.f32 [%rd4], {%f4, %f5, %f6, %f7};
    ret;
}
"""

KINDS = {
    "loop": "",
    "mov.u32": "    mov.u32 %r11, %r3;\n",
    "add.u32": "    add.u32 %r11, %r11, %r3;\n",
    "mad.lo.u32": "    mad.lo.u32 %r11, %r11, %r4, %r3;\n",
    "setp.ne.u32": "    setp.ne.u32 %p2, %r11, %r3;\n",
    "selp.b32": "    selp.b32 %r11, %r3, %r4, %p1;\n",
    "shl.b32": "    shl.b32 %r11, %r3, 2;\n",
    "add.f32": "    add.f32 %f4, %f4, %f1;\n",
    "fma.rn.f32": "    fma.rn.f32 %f4, %f2, %f3, %f4;\n",
    "ex2.approx.f32": "    ex2.approx.f32 %f5, %f2;\n",
    "max.f32": "    max.f32 %f5, %f5, %f2;\n",
    "cvt.rn.f16.f32": "    cvt.rn.f16.f32 %h1, %f2;\n",
    "lop3.b32": "    lop3.b32 %r11, %r3, %r4, %r11, 0x96;\n",
    "prmt.b32": "    prmt.b32 %r11, %r3, %r4, 0x5410;\n",
    "prmt.b32.f4e": "    prmt.b32.f4e %r11, %r3, %r4, %r11;\n",
    "bfe.u32": "    bfe.u32 %r11, %r3, 3, 7;\n",
    "bfi.b32": "    bfi.b32 %r11, %r3, %r4, 4, 9;\n",
    "shf.l.wrap.b32": "    shf.l.wrap.b32 %r11, %r3, %r4, %r11;\n",
    "cvt.rn.bf16.f32": "    cvt.rn.bf16.f32 %h1, %f2;\n",
    "cvt.rn.f16x2.f32": "    cvt.rn.f16x2.f32 %r11, %f2, %f3;\n",
    "cvt.rn.bf16x2.f32": "    cvt.rn.bf16x2.f32 %r11, %f2, %f3;\n",
    "cvt.f32.f16": "    cvt.f32.f16 %f5, %h1;\n",
    "ld.global.v4.f32": "    ld.global.v4.f32 {%f4, %f5, %f6, %f7}, [%rd4];\n",
    "ld.global.f32": "    ld.global.f32 %f4, [%rd4];\n",
    "st.global.f32": "    st.global.f32 [%rd4], %f1;\n",
    "st.global.v4.f32": "    st.global.v4.f32 [%rd4], {%f4, %f5, %f6, %f7};\n",
    "ld.shared.f32": "    ld.shared.f32 %f4, [%r7];\n",
    "ld.shared.v4.f32": "    ld.shared.v4.f32 {%f4, %f5, %f6, %f7}, [%r7];\n",
    "st.shared.f32": "    st.shared.f32 [%r7], %f1;\n",
    "st.shared.v4.f32": "    st.shared.v4.f32 [%r7], {%f4, %f5, %f6, %f7};\n",
    "shfl.bfly.b32": "    shfl.sync.bfly.b32 %r11, %r3, 1, 31, -1;\n",
    "ldmatrix.x4": "    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r11, %r12, %r13, %r14}, [%r10];\n",
    "mma.m16n8k16.f16": "    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f8, %f9, %f10, %f11}, "
                        "{%r3, %r4, %r3, %r4}, {%r3, %r4}, {%f8, %f9, %f10, %f11};\n",
    "mma.m16n8k16.bf16": "    mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f8, %f9, %f10, %f11}, "
                         "{%r3, %r4, %r3, %r4}, {%r3, %r4}, {%f8, %f9, %f10, %f11};\n",
    "mma.m16n8k16.f16acc": "    mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%r15, %r16}, "
                           "{%r3, %r4, %r3, %r4}, {%r3, %r4}, {%r15, %r16};\n",
    "mma.m16n8k8.tf32": "    mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f8, %f9, %f10, %f11}, "
                        "{%r3, %r4, %r3, %r4}, {%r3, %r4}, {%f8, %f9, %f10, %f11};\n",
    "mma.m16n8k32.e4m3": "    mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%f8, %f9, %f10, %f11}, "
                         "{%r3, %r4, %r3, %r4}, {%r3, %r4}, {%f8, %f9, %f10, %f11};\n",
    "mma.m16n8k32.s8": "    mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r11, %r12, %r13, %r14}, "
                       "{%r3, %r4, %r3, %r4}, {%r3, %r4}, {%r11, %r12, %r13, %r14};\n",
    "mma.m8n8k4.f64": "    mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%fd0, %fd1}, {%fd2}, {%fd3}, "
                      "{%fd0, %fd1};\n",
    "bar.sync": "    bar.sync 0;\n",
}
SM90 = ("e4m3",)        # kinds whose instruction needs sm_90


def kernel(kind, body=BODY):
    head = HEAD.replace(".target sm_80", ".target sm_90") if any(k in kind for k in SM90) else HEAD
    return head + KINDS[kind] * body + TAIL


def measure(kind, warps, iters, runs):
    """(warp-instructions, best CPU seconds inside the jitted loops)."""
    from emulator import GlobalMemory, load_ptx
    from bench_vs_interpreter import loop_timer
    mod = load_ptx(kernel(kind))
    best = None
    with loop_timer() as spent:
        for r in range(runs + 1):
            g = GlobalMemory()
            buf = g.alloc(16 * 32 * warps)
            spent[0] = 0.0
            res = mod.launch("k", (1, 1, 1), (32 * warps, 1, 1), [buf, iters], gmem=g, engine="fast")
            if r and (best is None or spent[0] < best):
                best = spent[0]
    return res.instructions, best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warps", type=int, default=4)
    a = ap.parse_args(argv)
    base = None
    print(f"{'row kind':20s}{'warp-instr':>12s}{'ns/instr':>10s}{'ns/row':>9s}   (ns/row: the kind's own row, "
          f"the loop's {3} rows taken off)")
    for kind in KINDS:
        if a.k not in kind and kind != "loop":
            continue
        n, t = measure(kind, a.warps, a.iters, a.runs)
        per = t / n * 1e9
        if kind == "loop":
            base = per
            print(f"{kind:20s}{n:>12d}{per:>10.1f}{per:>9.1f}")
            continue
        rows = BODY * a.iters * a.warps
        own = (t - base * 1e-9 * (n - rows)) / rows * 1e9
        print(f"{kind:20s}{n:>12d}{per:>10.1f}{own:>9.1f}")


if __name__ == "__main__":
    main()
