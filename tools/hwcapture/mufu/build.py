"""Read the MUFU tables off the GPU, then check ``emulator.numerics.mufu`` against the hardware on every input.

    python tools/hwcapture/mufu/build.py OUTDIR        # needs an H100 and cupy

Steps:
1. Each table is read off the GPU from the PTX form that exposes it (``rcp.approx.ftz.f32`` on [1, 2), ...;
   sin/cos from every positive f32 input, indexed by the fixed-point revolution ``emulator.numerics.mufu``
   computes, which checks on the way that every input of a cell gives the same result).
2. The model (the emulator's own code, run with cupy) is compared with the PTX instruction itself over all
   2^32 inputs of every f32 unary form, all 2^32 inputs of the f16x2/bf16x2 forms, all 2^32 high words of
   the f64 forms (with random low words), and 2^28 random plus edge-value pairs of each division form.
3. OUTDIR gets ``mufu_tables.npz`` (the emulator's data file), ``report.json`` (mismatch counts with
   examples) and ``mufu_sample.npz`` (inputs and H100 outputs of every form, for the test suite).
"""
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

def _load_model():
    """emulator/numerics/mufu.py by path: it needs only numpy, so no emulator install (numba) is needed."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("mufu", os.path.join(ROOT, "emulator", "numerics", "mufu.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


M = _load_model()

HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"
IDX = ("mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mad.lo.s32 %r4, %r1, %r2, %r3;"
       "ld.param.u32 %r9, [n]; setp.ge.u32 %p1, %r4, %r9; @%p1 bra DONE;")


def k_f32(name, form, nsrc):
    srcs = ", ".join(f"%f{i + 1}" for i in range(nsrc))
    loads = "".join(f"ld.param.u64 %rd{10 + i}, [in{i}]; mul.wide.u32 %rd5, %r4, 4; add.s64 %rd6, %rd{10 + i}, %rd5;"
                    f"ld.global.f32 %f{i + 1}, [%rd6];" for i in range(nsrc))
    params = ", ".join(f".param .u64 in{i}" for i in range(nsrc))
    return f"""
.visible .entry {name}({params}, .param .u64 out, .param .u32 n)
{{ .reg .b32 %r<12>; .reg .f32 %f<6>; .reg .b64 %rd<16>; .reg .pred %p<2>;
  {IDX} {loads}
  {form} %f5, {srcs};
  ld.param.u64 %rd7, [out]; mul.wide.u32 %rd5, %r4, 4; add.s64 %rd6, %rd7, %rd5; st.global.f32 [%rd6], %f5;
DONE: ret; }}
"""


def k_bits(name, form, width):
    t = {16: "b16", 32: "b32", 64: "f64"}[width]
    reg = {16: "%h", 32: "%r", 64: "%d"}[width]
    nb = width // 8
    return f"""
.visible .entry {name}(.param .u64 in0, .param .u64 out, .param .u32 n)
{{ .reg .b32 %r<12>; .reg .b16 %h<4>; .reg .f64 %d<4>; .reg .b64 %rd<16>; .reg .pred %p<2>;
  {IDX}
  ld.param.u64 %rd10, [in0]; mul.wide.u32 %rd5, %r4, {nb}; add.s64 %rd6, %rd10, %rd5; ld.global.{t} {reg}1, [%rd6];
  {form} {reg}2, {reg}1;
  ld.param.u64 %rd7, [out]; add.s64 %rd6, %rd7, %rd5; st.global.{t} [%rd6], {reg}2;
DONE: ret; }}
"""


def main(outdir):
    import cupy as cp
    os.makedirs(outdir, exist_ok=True)
    t0 = time.time()
    forms32 = M.F32_UNARY
    names = {}
    src = HEAD
    for i, f in enumerate(forms32):
        names[f] = f"u{i}"
        src += k_f32(f"u{i}", f, 1)
    for i, f in enumerate(M.F32_DIV):
        names[f] = f"d{i}"
        src += k_f32(f"d{i}", f, 2)
    for i, f in enumerate(M.HALF):
        names[f] = f"h{i}"
        src += k_bits(f"h{i}", f, 32 if f.endswith("x2") else 16)
    for i, f in enumerate(M.F64):
        names[f] = f"w{i}"
        src += k_bits(f"w{i}", f, 64)
    mod = cp.cuda.function.Module()
    mod.load(src.encode())
    fn = {f: mod.get_function(k) for f, k in names.items()}

    def run(form, *ins, dtype=cp.uint32):
        n = ins[0].size
        out = cp.empty(n, dtype)
        fn[form](((n + 255) // 256,), (256,), (*ins, out, np.uint32(n)))
        return out

    def f32in(base, count, step=1):
        return (cp.uint32(base) + cp.arange(count, dtype=cp.uint32) * cp.uint32(step)).astype(cp.uint32)

    report = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
              "driver": cp.cuda.runtime.driverGetVersion(), "tables": {}, "forms": {}}
    # self-test: cupy's float32 arithmetic keeps subnormals (the model's FMUL relies on it)
    a = cp.asarray(np.array([0x00400000, 0x3F800000], np.uint32)).view(cp.float32)
    report["cupy_subnormal_mul"] = int((a * cp.float32(1.0)).view(cp.uint32)[0])

    # ---------------------------------------------------------------- 1. tables
    n23 = 1 << 23
    T = {}
    T["rcp"] = run("rcp.approx.ftz.f32", f32in(127 << 23, n23))
    T["rsq_even"] = run("rsqrt.approx.ftz.f32", f32in(127 << 23, n23))
    T["rsq_odd"] = run("rsqrt.approx.ftz.f32", f32in(128 << 23, n23))
    T["sqrt_even"] = run("sqrt.approx.ftz.f32", f32in(127 << 23, n23))
    T["sqrt_odd"] = run("sqrt.approx.ftz.f32", f32in(128 << 23, n23))
    T["ex2"] = run("ex2.approx.ftz.f32", f32in(127 << 23, n23)) - cp.uint32(1 << 23)
    negx = np.arange(n23, dtype=np.float32) * np.float32(2.0 ** -23)
    T["ex2_neg"] = run("ex2.approx.ftz.f32", cp.asarray(negx.view(np.uint32) | np.uint32(0x80000000)))
    T["lg2_e0"] = run("lg2.approx.ftz.f32", f32in(127 << 23, n23))
    T["lg2_em1"] = run("lg2.approx.ftz.f32", f32in(126 << 23, n23))
    for be, k in M.TANH_SHIFT.items():
        T[f"tanh_{be}"] = run("tanh.approx.f32", f32in(be << 23, n23 >> k, 1 << k)) & cp.uint32(0x7FFFFFFF)
    # sin/cos: every positive input, scattered by its revolution cell
    full = {"sin": cp.zeros(1 << 25, cp.uint32), "cos": cp.zeros(1 << 25, cp.uint32)}
    seen = cp.zeros(1 << 25, cp.bool_)
    for e in range(1, 160):
        x = f32in(e << 23, n23)
        r = M.fmul_rz_revolutions(cp, x)
        _, q = M._revolutions(cp, r)
        for op in ("sin", "cos"):
            full[op][q] = run(f"{op}.approx.ftz.f32", x)
        seen[q] = True
    incons = {}
    for op in ("sin", "cos"):
        bad = 0
        for e in range(1, 160):
            x = f32in(e << 23, n23)
            _, q = M._revolutions(cp, M.fmul_rz_revolutions(cp, x))
            bad += int((full[op][q] != run(f"{op}.approx.ftz.f32", x)).sum())
        incons[op] = bad
    q0 = cp.arange(n23)
    report["sincos"] = {"cells_reached": int(seen.sum()), "q0_reached": int(seen[:n23].sum()),
                        "inconsistent": incons}
    S, C = full["sin"], full["cos"]
    sym = {}
    for quad in range(4):
        t = q0 + quad * n23
        ok = seen[t]
        for name, a, b in (("sin_q%d=sin_q0" % quad, S[t], S[q0]), ("sin_q%d=cos_q0" % quad, S[t], C[q0]),
                           ("sin_q%d=-sin_q0" % quad, S[t], S[q0] ^ cp.uint32(1 << 31)),
                           ("sin_q%d=-cos_q0" % quad, S[t], C[q0] ^ cp.uint32(1 << 31)),
                           ("cos_q%d=cos_q0" % quad, C[t], C[q0]), ("cos_q%d=-sin_q0" % quad, C[t], S[q0] ^ cp.uint32(1 << 31)),
                           ("cos_q%d=-cos_q0" % quad, C[t], C[q0] ^ cp.uint32(1 << 31)), ("cos_q%d=sin_q0" % quad, C[t], S[q0])):
            sym[name] = [int((ok & (a != b)).sum()), int(ok.sum())]
    report["sincos"]["symmetry"] = sym
    T["sin_q0"] = S[:n23].copy()
    T["cos_q0"] = C[:n23].copy()
    # f64 high words
    m20 = cp.arange(1 << 20, dtype=cp.uint64)
    T["rcp64h"] = (run("rcp.approx.ftz.f64", (m20 | cp.uint64(1023 << 20)) << 32, dtype=cp.uint64) >> 32).astype(cp.uint32)
    T["rsq64h_even"] = (run("rsqrt.approx.ftz.f64", (m20 | cp.uint64(1023 << 20)) << 32, dtype=cp.uint64) >> 32).astype(cp.uint32)
    T["rsq64h_odd"] = (run("rsqrt.approx.ftz.f64", (m20 | cp.uint64(1024 << 20)) << 32, dtype=cp.uint64) >> 32).astype(cp.uint32)
    T["nan64h"] = (run("rcp.approx.ftz.f64", cp.asarray(np.array([0x7FF8000000000001], np.uint64)), dtype=cp.uint64) >> 32).astype(cp.uint32)
    for f, key in M.HALF_FORMS.items():
        T[key] = run(f, cp.arange(1 << 16, dtype=cp.uint32).astype(cp.uint16), dtype=cp.uint16)
    host = {k: cp.asnumpy(v) for k, v in T.items()}
    packed = M.pack_tables(host)
    for k, v in host.items():
        assert (M.unpack_table(packed[f"{k}__{v.dtype.name}"], v.dtype) == v).all(), k
    np.savez(os.path.join(outdir, "mufu_tables.npz"), **packed)
    report["tables"] = {k: int(v.size) for k, v in host.items()}
    report["tables_bytes"] = os.path.getsize(os.path.join(outdir, "mufu_tables.npz"))
    print("tables", time.time() - t0, report["tables_bytes"], flush=True)

    # ---------------------------------------------------------------- 2. every input
    def compare(form, got, want, ins, rec):
        bad = got != want
        nb = int(bad.sum())
        rec["compared"] += int(got.size)
        rec["mismatches"] += nb
        if nb and len(rec["examples"]) < 12:
            i = cp.nonzero(bad)[0][:12 - len(rec["examples"])]
            for j in cp.asnumpy(i):
                rec["examples"].append([int(v[j]) for v in ins] + [int(want[j]), int(got[j])])

    chunk = 1 << 24
    rng = np.random.default_rng(1)
    sample = {}
    for f in forms32:
        rec = {"compared": 0, "mismatches": 0, "examples": []}
        for c in range(1 << 8):
            x = f32in(c * chunk, chunk)
            compare(f, M.ptx_f32_unary(cp, f, x, T), run(f, x), [x], rec)
        report["forms"][f] = rec
        print(f, rec["compared"], rec["mismatches"], time.time() - t0, flush=True)
    edge = np.array([0, 1, 0x7FFFFF, 0x800000, 0x800001, 0x3F800000, 0x3F800001, 0x3FFFFFFF, 0x40000000,
                     0x7E800000, 0x7E800001, 0x7F000000, 0x7F7FFFFF, 0x7F800000, 0x7F800001, 0x7FC00000,
                     0x7FFFFFFF, 0x00000010, 0x0B800000, 0x33800000, 0x4B800000, 0x5F000000], np.uint32)
    edge = np.concatenate([edge, edge | np.uint32(0x80000000)])
    for f in M.F32_DIV:
        rec = {"compared": 0, "mismatches": 0, "examples": []}
        ea, eb = np.meshgrid(edge, edge)
        a0 = cp.asarray(ea.ravel())
        b0 = cp.asarray(eb.ravel())
        compare(f, M.ptx_f32_div(cp, f, a0, b0, T), run(f, a0, b0), [a0, b0], rec)
        for c in range(16):
            a = cp.random.randint(0, 1 << 32, chunk, dtype=cp.uint64).astype(cp.uint32)
            b = cp.random.randint(0, 1 << 32, chunk, dtype=cp.uint64).astype(cp.uint32)
            if c % 2:      # quotients near 1 and large/small divisors
                b = (a ^ (b & cp.uint32(0x807FFFFF)))
            compare(f, M.ptx_f32_div(cp, f, a, b, T), run(f, a, b), [a, b], rec)
        report["forms"][f] = rec
        print(f, rec["compared"], rec["mismatches"], flush=True)
    for f in M.HALF:
        rec = {"compared": 0, "mismatches": 0, "examples": []}
        if f.endswith("x2"):
            for c in range(1 << 8):
                x = f32in(c * chunk, chunk)
                compare(f, M.ptx_half(cp, f, x, T), run(f, x), [x], rec)
        else:
            x = cp.arange(1 << 16, dtype=cp.uint32).astype(cp.uint16)
            compare(f, M.ptx_half(cp, f, x, T), run(f, x, dtype=cp.uint16), [x], rec)
        report["forms"][f] = rec
        print(f, rec["compared"], rec["mismatches"], flush=True)
    for f in M.F64:
        rec = {"compared": 0, "mismatches": 0, "examples": []}
        for c in range(1 << 8):
            hi = f32in(c * chunk, chunk).astype(cp.uint64)
            lo = cp.random.randint(0, 1 << 32, chunk, dtype=cp.uint64)
            x = (hi << 32) | lo
            compare(f, M.ptx_f64(cp, f, x, T), run(f, x, dtype=cp.uint64), [x], rec)
        report["forms"][f] = rec
        print(f, rec["compared"], rec["mismatches"], flush=True)

    # ---------------------------------------------------------------- 3. a sample for the tests
    def pick32(k):
        r = rng.integers(0, 1 << 32, k, dtype=np.uint64).astype(np.uint32)
        return np.concatenate([edge, r])
    for f in forms32:
        x = cp.asarray(pick32(3000))
        sample[f"{f}__in0"], sample[f"{f}__out"] = cp.asnumpy(x), cp.asnumpy(run(f, x))
    for f in M.F32_DIV:
        a, b = cp.asarray(pick32(3000)), cp.asarray(pick32(3000))
        sample[f"{f}__in0"], sample[f"{f}__in1"], sample[f"{f}__out"] = cp.asnumpy(a), cp.asnumpy(b), cp.asnumpy(run(f, a, b))
    for f in M.HALF:
        if f.endswith("x2"):
            x = cp.asarray(pick32(3000))
            sample[f"{f}__in0"], sample[f"{f}__out"] = cp.asnumpy(x), cp.asnumpy(run(f, x))
        else:
            x = cp.arange(1 << 16, dtype=cp.uint32).astype(cp.uint16)
            sample[f"{f}__in0"], sample[f"{f}__out"] = cp.asnumpy(x), cp.asnumpy(run(f, x, dtype=cp.uint16))
    for f in M.F64:
        x = cp.asarray(rng.integers(0, 1 << 63, 3000, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, 3000, dtype=np.uint64))
        sample[f"{f}__in0"], sample[f"{f}__out"] = cp.asnumpy(x), cp.asnumpy(run(f, x, dtype=cp.uint64))
    np.savez_compressed(os.path.join(outdir, "mufu_sample.npz"), **sample)
    report["seconds"] = time.time() - t0
    json.dump(report, open(os.path.join(outdir, "report.json"), "w"), indent=1)
    print("done", report["seconds"], flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
