"""Survey the H100's MUFU approximate-math forms over every f32 input, one (sign, exponent) slice at a time.

For each PTX form and slice (2^23 inputs) it records: how many low mantissa bits the result ignores, the
count of distinct results, classes of results (zero, subnormal, inf, NaN), and the deviation from the
correctly rounded result in units in the last place. Chosen slices also keep the deviations themselves.
Needs an H100 and cupy:

    python tools/hwcapture/mufu/explore.py OUTDIR
"""
import json
import os
import sys

import numpy as np

FORMS = {
    "ex2": "ex2.approx.ftz.f32", "lg2": "lg2.approx.ftz.f32", "rcp": "rcp.approx.ftz.f32",
    "rsq": "rsqrt.approx.ftz.f32", "sqrt": "sqrt.approx.ftz.f32", "sin": "sin.approx.ftz.f32",
    "cos": "cos.approx.ftz.f32", "tanh": "tanh.approx.f32",
}
KEEP = {  # slices whose deviations are stored: (sign, biased exponent)
    "rcp": [(0, 127)], "rsq": [(0, 127), (0, 128)], "sqrt": [(0, 127), (0, 128)],
    "ex2": [(0, 127), (0, 128)], "lg2": [(0, 127)], "sin": [(0, 127)], "cos": [(0, 127)], "tanh": [(0, 127)],
}
GROUPS = [("rcp", "rsq"), ("sqrt",), ("ex2",), ("lg2", "tanh"), ("sin",), ("cos",)]


def ptx_unary(name, instr):
    return f"""
.visible .entry {name}(.param .u64 out, .param .u32 base)
{{
  .reg .b32 %r<8>; .reg .f32 %f<4>; .reg .b64 %rd<4>;
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mad.lo.s32 %r4, %r1, %r2, %r3;
  ld.param.u32 %r5, [base]; add.s32 %r5, %r5, %r4; mov.b32 %f1, %r5;
  {instr} %f2, %f1;
  ld.param.u64 %rd1, [out]; mul.wide.u32 %rd2, %r4, 4; add.s64 %rd3, %rd1, %rd2; st.global.f32 [%rd3], %f2;
}}
"""


def main(outdir):
    import cupy as cp
    os.makedirs(outdir, exist_ok=True)
    src = ".version 8.0\n.target sm_90a\n.address_size 64\n" + "".join(ptx_unary(k, v) for k, v in FORMS.items())
    mod = cp.cuda.function.Module()
    mod.load(src.encode())
    n = 1 << 23
    out = cp.empty(n, cp.uint32)
    idx = cp.arange(n, dtype=cp.uint32)
    ref_fn = {
        "ex2": lambda x: cp.exp2(x), "lg2": lambda x: cp.log2(x), "rcp": lambda x: 1.0 / x,
        "rsq": lambda x: 1.0 / cp.sqrt(x), "sqrt": cp.sqrt, "sin": cp.sin, "cos": cp.cos, "tanh": cp.tanh,
    }
    stats, keep = {}, {}
    for name in FORMS:
        fn = mod.get_function(name)
        rows = []
        for s in (0, 1):
            for e in range(256):
                base = (s << 31) | (e << 23)
                fn((n // 256,), (256,), (out, np.uint32(base)))
                hw = out
                k = 0
                for kk in range(1, 24):
                    v = hw.reshape(-1, 1 << kk)
                    if bool((v == v[:, :1]).all()):
                        k = kk
                    else:
                        break
                x = (idx | np.uint32(base)).view(cp.float32).astype(cp.float64)
                ref = ref_fn[name](x).astype(cp.float32).view(cp.int32)
                h = hw.view(cp.int32)
                ex = (hw >> 23) & 0xFF
                fin = (ex != 255) & ((ref.view(cp.uint32) >> 23) & 0xFF != 255) & ((h < 0) == (ref < 0))
                dev = cp.where(fin, h - ref, 0)
                hist = [int(((dev == d) & fin).sum()) for d in range(-3, 4)]
                row = dict(s=s, e=e, k=k, uniq=int(cp.unique(hw).size),
                           zero=int(((hw & 0x7FFFFFFF) == 0).sum()), sub=int(((ex == 0) & ((hw & 0x7FFFFF) != 0)).sum()),
                           inf=int(((hw & 0x7FFFFFFF) == 0x7F800000).sum()), nan=int(((ex == 255) & ((hw & 0x7FFFFF) != 0)).sum()),
                           dmin=int(dev.min()), dmax=int(dev.max()), hist=hist, nfin=int(fin.sum()),
                           first=[int(v) for v in hw[:4].get()], last=int(hw[-1].get()))
                if e == 255 or e == 0:
                    row["uniq_vals"] = [int(v) for v in cp.unique(hw)[:8].get()]
                rows.append(row)
                if (s, e) in KEEP[name]:
                    keep[f"{name}_{s}_{e}_dev"] = cp.clip(dev, -127, 127).astype(cp.int8).get()
                if k >= 7:
                    keep[f"{name}_{s}_{e}_sub"] = hw[:: 1 << k].get().copy()
        stats[name] = rows
        print(name, "done", flush=True)
    json.dump(stats, open(os.path.join(outdir, "stats.json"), "w"))
    for g in GROUPS:
        path = os.path.join(outdir, "slices_" + "_".join(g) + ".npz")
        np.savez_compressed(path, **{k: v for k, v in keep.items() if k.split("_")[0] in g})
        print(path, os.path.getsize(path), flush=True)


HALF = {"ex2_f16": ("ex2.approx.f16", "b16"), "tanh_f16": ("tanh.approx.f16", "b16"),
        "ex2_bf16": ("ex2.approx.ftz.bf16", "b16"), "tanh_bf16": ("tanh.approx.bf16", "b16"),
        "ex2_f16x2": ("ex2.approx.f16x2", "b32"), "tanh_f16x2": ("tanh.approx.f16x2", "b32"),
        "ex2_bf16x2": ("ex2.approx.ftz.bf16x2", "b32"), "tanh_bf16x2": ("tanh.approx.bf16x2", "b32")}
WIDE = {"rcp64": "rcp.approx.ftz.f64", "rsq64": "rsqrt.approx.ftz.f64", "rsq64_full": "rsqrt.approx.f64"}


def ptx_half(name, instr, t):
    return f"""
.visible .entry {name}(.param .u64 out, .param .u32 base)
{{
  .reg .b32 %r<9>; .reg .b16 %h<4>; .reg .b64 %rd<4>;
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mad.lo.s32 %r4, %r1, %r2, %r3;
  ld.param.u32 %r5, [base]; add.s32 %r5, %r5, %r4;
  {"cvt.u16.u32 %h1, %r5; " + instr + " %h2, %h1; cvt.u32.u16 %r6, %h2;" if t == "b16" else
   "mul.lo.u32 %r7, %r5, 0x9E3779B1; " + instr + " %r6, %r7;"}
  ld.param.u64 %rd1, [out]; mul.wide.u32 %rd2, %r4, 4; add.s64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r6;
}}
"""


def ptx_wide(name, instr):
    return f"""
.visible .entry {name}(.param .u64 out, .param .u32 base, .param .u32 lo)
{{
  .reg .b32 %r<9>; .reg .f64 %d<4>; .reg .b64 %rd<6>;
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mad.lo.s32 %r4, %r1, %r2, %r3;
  ld.param.u32 %r5, [base]; add.s32 %r5, %r5, %r4; ld.param.u32 %r6, [lo];
  mov.b64 %d1, {{%r6, %r5}};
  {instr} %d2, %d1;
  ld.param.u64 %rd1, [out]; mul.wide.u32 %rd2, %r4, 8; add.s64 %rd3, %rd1, %rd2; st.global.f64 [%rd3], %d2;
}}
"""


def extra(outdir):
    import cupy as cp
    src = (".version 8.0\n.target sm_90a\n.address_size 64\n" + "".join(ptx_half(k, *v) for k, v in HALF.items())
           + "".join(ptx_wide(k, v) for k, v in WIDE.items()))
    mod = cp.cuda.function.Module()
    mod.load(src.encode())
    res = {}
    out = cp.empty(1 << 16, cp.uint32)
    for k in HALF:
        mod.get_function(k)((256,), (256,), (out, np.uint32(0)))
        res[k] = out.get().copy()
    # f64: every high word of chosen exponents, low word 0 and a random low word; stats for all high words
    n = 1 << 20
    out = cp.empty(n, cp.uint64)
    wstats = {}
    for k in WIDE:
        fn = mod.get_function(k)
        rows = []
        for s in (0, 1):
            for e in range(2048):
                base = (s << 31) | (e << 20)
                fn((n // 256,), (256,), (out, np.uint32(base), np.uint32(0)))
                a = out.copy()
                fn((n // 256,), (256,), (out, np.uint32(base), np.uint32(0x9E3779B9)))
                same = bool((a == out).all())
                lo_zero = bool(((a & 0xFFFFFFFF) == 0).all())
                rows.append([s, e, int(same), int(lo_zero), int(cp.unique(a >> 32).size), int((a >> 32)[0].get()), int((a >> 32)[-1].get())])
                if s == 0 and e in (1023, 1024):
                    res[f"{k}_{e}"] = a.get().copy()
        wstats[k] = rows
    json.dump(wstats, open(os.path.join(outdir, "wide_stats.json"), "w"))
    np.savez_compressed(os.path.join(outdir, "halves_wide.npz"), **res)
    print("extra done", os.path.getsize(os.path.join(outdir, "halves_wide.npz")), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "extra":
        extra(sys.argv[1])
    else:
        main(sys.argv[1])
