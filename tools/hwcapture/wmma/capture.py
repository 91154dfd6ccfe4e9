"""Capture the WMMA instructions on a GPU: fragment layouts of every wmma.load / wmma.store form, and the
register-level results of every wmma.mma form.

    python tools/hwcapture/wmma/capture.py prepare /tmp/wmma_in.npz           # PTX text and inputs (no GPU)
    python tools/hwcapture/wmma/capture.py run /tmp/wmma_in.npz /tmp/raw.npz  # on the GPU (cupy)

* Loads: each form runs from global memory (generic and ``.global`` addressing) and from shared memory, with
  a stride operand larger than the tile (``min + one stride unit``) and without one.  Memory element ``j``
  holds digit ``p`` of ``j`` (base ``2**w`` for ``w``-bit elements, ``p`` = 0, 1, ...: one run per digit), so
  the registers each lane receives name the memory elements they came from.
* Stores: register element ``e`` of register ``i`` of lane ``l`` holds ``(l * n + i) * epr + e``; memory starts
  as 0xFF bytes.
* mma: every register of A, B and C holds random bits of its type (finite values of a modest range, with
  zeros, infinities, NaNs and subnormals sprinkled in; uniform bits for the integer forms), one warp per
  data set; the lanes' D registers come back raw.

The module text is loaded with ``cupy.cuda.function.Module.load``, so the driver compiles exactly this PTX.
"""
from __future__ import annotations

import json
import math
import os
import sys
from itertools import product

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
for p in (os.path.join(HERE, "..", "..", ".."), HERE):
    sys.path.insert(0, p)
from isa.wmma import MEM_FORMS, MMA_FORMS  # noqa: E402

SEED = 20260415
MMA_WARPS = 8
HEAD = ".version 8.3\n.target sm_90a\n.address_size 64\n"
SMEM = 16384


def _regs(prefix, base, n):
    return "{" + ", ".join(f"{prefix}{base + i}" for i in range(n)) + "}"


def _pfx(bits):
    return "%rd" if bits == 64 else "%r"


def _st(bits):
    return "b64" if bits == 64 else "b32"


def mem_cases():
    """(case name, form spelling, variant) for every load/store form: variant in
    'global' (the form's own space, with stride), 'nostride', 'shared' (.shared twin, with stride)."""
    out = []
    for sp, f in MEM_FORMS.items():
        if f.space == "global":
            out.append((sp, "stride"))
            out.append((sp, "nostride"))
        elif f.space == "shared":
            out.append((sp, "stride"))
        elif f.space is None:
            out.append((sp, "stride"))
    return out


def mem_kernel(name, sp, variant):
    f = MEM_FORMS[sp]
    n, bits = f.n_regs, f.reg_bits
    rb = bits // 8
    shared = f.space in ("shared", "shared::cta")
    L = [f".visible .entry {name}(.param .u64 src, .param .u64 out, .param .u32 stride, .param .u32 nbytes)", "{",
         " .reg .b32 %r<40>;", " .reg .b64 %rd<40>;", " .reg .pred %p<4>;",
         f" .shared .align 256 .b8 sm_{name}[{SMEM}];",
         " ld.param.u64 %rd30, [src];", " ld.param.u64 %rd31, [out];", " ld.param.u32 %r30, [stride];",
         " ld.param.u32 %r31, [nbytes];", " mov.u32 %r32, %laneid;"]
    if f.op == "load":
        if shared:
            # copy nbytes of the source into shared memory, 4 bytes per lane per step
            L += [" shl.b32 %r33, %r32, 2;", f" mov.u32 %r35, sm_{name};", "$Lcp:",
                  " setp.ge.u32 %p1, %r33, %r31;", " @%p1 bra $Ldone;",
                  " cvt.u64.u32 %rd32, %r33;", " add.s64 %rd33, %rd30, %rd32;", " ld.global.b32 %r34, [%rd33];",
                  " add.u32 %r36, %r35, %r33;", " st.shared.b32 [%r36], %r34;", " add.u32 %r33, %r33, 128;",
                  " bra $Lcp;", "$Ldone:", " bar.warp.sync -1;", f" mov.u32 %r37, sm_{name};"]
            addr = "%r37"
        else:
            addr = "%rd30"
        regs = _regs(_pfx(bits), 0, n)
        st = ", %r30" if variant != "nostride" else ""
        L.append(f" {sp} {regs}, [{addr}]{st};")
        L += [f" mul.wide.u32 %rd34, %r32, {n * rb};", " add.s64 %rd35, %rd31, %rd34;"]
        for i in range(n):
            L.append(f" st.global.{_st(bits)} [%rd35+{i * rb}], {_pfx(bits)}{i};")
    else:
        L += [f" mul.wide.u32 %rd34, %r32, {n * rb};", " add.s64 %rd35, %rd30, %rd34;"]
        for i in range(n):
            L.append(f" ld.global.{_st(bits)} {_pfx(bits)}{i}, [%rd35+{i * rb}];")
        regs = _regs(_pfx(bits), 0, n)
        st = ", %r30" if variant != "nostride" else ""
        if shared:
            L += [f" mov.u32 %r37, sm_{name};",
                  # fill shared with 0xFF bytes
                  " shl.b32 %r33, %r32, 2;", "$Lf:", " setp.ge.u32 %p1, %r33, %r31;", " @%p1 bra $Lfd;",
                  " add.u32 %r36, %r37, %r33;", " mov.b32 %r38, -1;", " st.shared.b32 [%r36], %r38;", " add.u32 %r33, %r33, 128;",
                  " bra $Lf;", "$Lfd:", " bar.warp.sync -1;",
                  f" {sp} [%r37], {regs}{st};", " bar.warp.sync -1;",
                  " shl.b32 %r33, %r32, 2;", "$Lc:", " setp.ge.u32 %p1, %r33, %r31;", " @%p1 bra $Lcd;",
                  " add.u32 %r36, %r37, %r33;", " ld.shared.b32 %r34, [%r36];", " cvt.u64.u32 %rd32, %r33;",
                  " add.s64 %rd33, %rd31, %rd32;", " st.global.b32 [%rd33], %r34;", " add.u32 %r33, %r33, 128;",
                  " bra $Lc;", "$Lcd:"]
        else:
            L.append(f" {sp} [%rd31], {regs}{st};")
    L += [" ret;", "}"]
    return "\n".join(L)


def extra_forms():
    """Register-level mma.sync / movmatrix forms (spelling -> register counts d, a, b, c)."""
    out = {}
    for k, types in ((16, ("s8", "u8")), (32, ("s4", "u4"))):
        for a, b in product(types, repeat=2):
            for sat in ("", ".satfinite"):
                out[f"mma.sync.aligned.m8n8k{k}.row.col{sat}.s32.{a}.{b}.s32"] = (2, 1, 1, 2)
    for shape, cnt in (("m8n8k128", (2, 1, 1, 2)), ("m16n8k128", (4, 2, 1, 4)), ("m16n8k256", (4, 4, 2, 4))):
        for bop in ("xor", "and"):
            out[f"mma.sync.aligned.{shape}.row.col.s32.b1.b1.s32.{bop}.popc"] = cnt
    out["movmatrix.sync.aligned.m8n8.trans.b16"] = (1, 1, 0, 0)
    return out


def b128_kernel(name):
    """ld/st/mov .b128: 16 bytes per lane in, the two halves out, and a repacked copy stored as .b128."""
    return "\n".join([
        f".visible .entry {name}(.param .u64 pa, .param .u64 pd)", "{", " .reg .b32 %r<8>;", " .reg .b64 %rd<16>;",
        " .reg .b128 %q<4>;", " ld.param.u64 %rd1, [pa];", " ld.param.u64 %rd2, [pd];", " mov.u32 %r1, %laneid;",
        " mul.wide.u32 %rd3, %r1, 16;", " add.s64 %rd4, %rd1, %rd3;", " ld.global.b128 %q1, [%rd4];",
        " mov.b128 {%rd5, %rd6}, %q1;", " mul.wide.u32 %rd7, %r1, 32;", " add.s64 %rd8, %rd2, %rd7;",
        " st.global.b64 [%rd8], %rd5;", " st.global.b64 [%rd8+8], %rd6;", " mov.b128 %q2, {%rd6, %rd5};",
        " st.global.b128 [%rd8+16], %q2;", " ret;", "}"])


def mma_kernel(name, sp, cnt=None, bits=None):
    if cnt is None:
        f = MMA_FORMS[sp]
        cnt = {op: f.n_regs(op) for op in "dabc"}
        bits = {op: f.reg_bits(op) for op in "dabc"}
    base = {"d": 0, "a": 10, "b": 20, "c": 30}
    L = [f".visible .entry {name}(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)", "{",
         " .reg .b32 %r<48>;", " .reg .b64 %rd<48>;",
         " mov.u32 %r40, %tid.x;", " mov.u32 %r41, %ctaid.x;", " mad.lo.u32 %r42, %r41, 32, %r40;"]
    for j, op in enumerate("abcd"):
        rb = bits[op] // 8
        if not cnt[op]:
            continue
        L += [f" ld.param.u64 %rd{40 + j}, [p{op}];", f" mul.wide.u32 %rd44, %r42, {cnt[op] * rb};",
              f" add.s64 %rd{40 + j}, %rd{40 + j}, %rd44;"]
    for j, op in enumerate("abc"):
        rb = bits[op] // 8
        for i in range(cnt[op]):
            L.append(f" ld.global.{_st(bits[op])} {_pfx(bits[op])}{base[op] + i}, [%rd{40 + j}+{i * rb}];")
    parts = [_regs(_pfx(bits[op]), base[op], cnt[op]) for op in "dabc" if cnt[op]]
    if sp.startswith("movmatrix"):
        parts = [p.strip("{}") for p in parts]
    L.append(f" {sp} {', '.join(parts)};")
    rb = bits["d"] // 8
    for i in range(cnt["d"]):
        L.append(f" st.global.{_st(bits['d'])} [%rd43+{i * rb}], {_pfx(bits['d'])}{i};")
    L += [" ret;", "}"]
    return "\n".join(L)


# ------------------------------------------------------------------------------------------------
# inputs

def mem_geometry(sp, variant):
    f = MEM_FORMS[sp]
    rows, cols = f.tile
    stride = f.capture_stride if variant != "nostride" else f.min_stride
    outer = rows if f.layout == "row" else cols
    nelem = outer * stride
    nbytes = -(-nelem * f.elem_bits // 8 // 128) * 128 + 128
    return stride, nelem, nbytes


def digits(nelem, w):
    w = min(w, 16)
    return max(1, math.ceil(math.log2(max(nelem, 2)) / w))


def pack_elems(vals, w):
    """Element values (uint64) -> little-endian memory bytes for w-bit elements."""
    vals = np.asarray(vals, np.uint64)
    if w >= 8:
        return vals.astype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[w]).view(np.uint8)
    per = 8 // w
    v = vals.reshape(-1, per) & np.uint64((1 << w) - 1)
    byte = np.zeros(v.shape[0], np.uint64)
    for e in range(per):
        byte |= v[:, e] << np.uint64(e * w)
    return byte.astype(np.uint8)


def _float_bits(rng, n, ebits, mbits, emin_off, espan, special=0.03):
    """Random floats (as raw bits) of a binary format: exponents within +-espan of the bias."""
    bias = (1 << (ebits - 1)) - 1
    sign = rng.integers(0, 2, n, dtype=np.uint64)
    exp = rng.integers(bias - espan + emin_off, bias + espan + emin_off + 1, n).astype(np.uint64)
    man = rng.integers(0, 1 << mbits, n, dtype=np.uint64)
    bits = (sign << np.uint64(ebits + mbits)) | (exp << np.uint64(mbits)) | man
    pick = rng.random(n)
    top = np.uint64(((1 << ebits) - 1) << mbits)
    s = sign << np.uint64(ebits + mbits)
    bits = np.where(pick < special * 0.25, s, bits)                                   # signed zeros
    bits = np.where((pick >= special * 0.25) & (pick < special * 0.5), s | top, bits)  # infinities
    nan = s | top | rng.integers(1, 1 << mbits, n, dtype=np.uint64)
    bits = np.where((pick >= special * 0.5) & (pick < special * 0.75), nan, bits)     # NaNs, any payload
    sub = s | rng.integers(1, 1 << mbits, n, dtype=np.uint64)
    bits = np.where((pick >= special * 0.75) & (pick < special), sub, bits)           # subnormals
    return bits


FMT = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "tf32": (8, 23), "f64": (11, 52)}


def reg_data(rng, t, nregs_total, bits, warp):
    """Random register contents for one operand type: array of (nregs_total,) uint32/uint64."""
    if t in FMT:
        eb, mb = FMT[t]
        per = bits // (1 + eb + mb) if t != "tf32" else 1
        n = nregs_total * per
        espan = 4 if warp % 2 == 0 else 12
        special = 0.0 if warp < 2 else 0.04
        e = _float_bits(rng, n, eb, mb, 0, espan, special)
        if per == 1:
            return e.astype(np.uint64 if bits == 64 else np.uint32)
        e = e.reshape(nregs_total, per)
        w = bits // per
        out = np.zeros(nregs_total, np.uint64)
        for i in range(per):
            out |= e[:, i] << np.uint64(i * w)
        return out.astype(np.uint32)
    if t == "s32":
        if warp % 2 == 0:
            return rng.integers(-2 ** 12, 2 ** 12, nregs_total).astype(np.int64).astype(np.uint32)
        big = rng.integers(0, 2 ** 32, nregs_total, dtype=np.uint64).astype(np.uint32)
        edge = rng.choice(np.array([0x7FFFFFFF, 0x80000000, 0x7FFFF000, 0x80000FFF], np.uint32), nregs_total)
        return np.where(rng.random(nregs_total) < 0.3, edge, big)
    return rng.integers(0, 2 ** 32, nregs_total, dtype=np.uint64).astype(np.uint32)


def prepare(path):
    rng = np.random.default_rng(SEED)
    kernels, meta, arrays = [], [], {}
    for i, (sp, variant) in enumerate(mem_cases()):
        f = MEM_FORMS[sp]
        name = f"m{i}"
        kernels.append(mem_kernel(name, sp, variant))
        stride, nelem, nbytes = mem_geometry(sp, variant)
        runs = []
        if f.op == "load":
            w = f.elem_bits
            nd = digits(nelem, w)
            for p in range(nd):
                wd = min(w, 16)
                vals = (np.arange(nelem, dtype=np.uint64) >> np.uint64(p * wd)) & np.uint64((1 << wd) - 1)
                if w > 16:
                    vals = np.arange(nelem, dtype=np.uint64)
                mem = np.zeros(nbytes, np.uint8)
                b = pack_elems(np.concatenate([vals, np.zeros((-nelem) % 8, np.uint64)]), w)
                mem[:len(b)] = b
                arrays[f"{name}_in{p}"] = mem
                runs.append(p)
        meta.append({"name": name, "spelling": sp, "variant": variant, "stride": stride, "nelem": nelem,
                     "nbytes": nbytes, "runs": len(runs)})
    for i, sp in enumerate(MMA_FORMS):
        f = MMA_FORMS[sp]
        name = f"x{i}"
        kernels.append(mma_kernel(name, sp))
        for op in "abc":
            t = {"a": f.atype, "b": f.btype, "c": f.ctype}[op]
            n = f.n_regs(op)
            data = [reg_data(rng, t, 32 * n, f.reg_bits(op), w) for w in range(MMA_WARPS)]
            arrays[f"{name}_{op}"] = np.stack(data).reshape(MMA_WARPS, 32, n)
        meta.append({"name": name, "spelling": sp})
    for i, (sp, c) in enumerate(extra_forms().items()):
        name = f"e{i}"
        cnt = dict(zip("dabc", c))
        kernels.append(mma_kernel(name, sp, cnt, dict.fromkeys("dabc", 32)))
        for op in "abc":
            if cnt[op]:
                t = "s32" if op == "c" else "u32"
                data = [reg_data(rng, t, 32 * cnt[op], 32, w) for w in range(MMA_WARPS)]
                arrays[f"{name}_{op}"] = np.stack(data).reshape(MMA_WARPS, 32, cnt[op])
        meta.append({"name": name, "spelling": sp, "counts": c})
    kernels.append(b128_kernel("q0"))
    arrays["q0_a"] = rng.integers(0, 256, 32 * 16, dtype=np.uint64).astype(np.uint8)
    meta.append({"name": "q0", "spelling": "b128"})
    ptx = HEAD + "\n\n".join(kernels) + "\n"
    np.savez_compressed(path, ptx=np.array(ptx), meta=np.array(json.dumps(meta)), **arrays)
    print(f"{len(meta)} kernels, {len(ptx)} bytes of PTX")


def run(inp, out):
    import cupy as cp
    z = np.load(inp, allow_pickle=False)
    ptx = str(z["ptx"])
    meta = json.loads(str(z["meta"]))
    mod = cp.cuda.function.Module()
    mod.load(ptx.encode())
    res = {}
    for m in meta:
        fn = mod.get_function(m["name"])
        if m["name"].startswith("m"):
            f = MEM_FORMS[m["spelling"]]
            n, rb = f.n_regs, f.reg_bits // 8
            if f.op == "load":
                for p in range(m["runs"]):
                    src = cp.asarray(z[f"{m['name']}_in{p}"])
                    o = cp.zeros(32 * n * rb, cp.uint8)
                    fn((1,), (32,), (src, o, np.uint32(m["stride"]), np.uint32(m["nbytes"])))
                    res[f"{m['name']}_out{p}"] = cp.asnumpy(o)
            else:
                ew = max(1, f.elem_bits // 8)
                epr = f.reg_bits // f.elem_bits
                vals = np.arange(32 * n * epr, dtype=np.uint64)
                src = cp.asarray(pack_elems(vals, f.elem_bits))
                o = cp.full(m["nbytes"], 0xFF, cp.uint8)
                fn((1,), (32,), (src, o, np.uint32(m["stride"]), np.uint32(m["nbytes"])))
                res[f"{m['name']}_out"] = cp.asnumpy(o)
                assert ew
        elif m["name"].startswith("e"):
            c = dict(zip("dabc", m["counts"]))
            ins = [cp.asarray(z[f"{m['name']}_{op}"]) for op in "abc" if c[op]]
            d = cp.zeros((MMA_WARPS, 32, c["d"]), cp.uint32)
            fn((MMA_WARPS,), (32,), (*ins, d) if len(ins) == 3 else (ins[0], d, d, d))
            res[f"{m['name']}_d"] = cp.asnumpy(d)
        elif m["name"] == "q0":
            a = cp.asarray(z["q0_a"])
            d = cp.zeros(32 * 32, cp.uint8)
            fn((1,), (32,), (a, d))
            res["q0_d"] = cp.asnumpy(d)
        else:
            f = MMA_FORMS[m["spelling"]]
            a, b, c = (cp.asarray(z[f"{m['name']}_{op}"]) for op in "abc")
            dt = np.uint64 if f.reg_bits("d") == 64 else np.uint32
            d = cp.zeros((MMA_WARPS, 32, f.n_regs("d")), dt)
            fn((MMA_WARPS,), (32,), (a, b, c, d))
            res[f"{m['name']}_d"] = cp.asnumpy(d)
    cp.cuda.runtime.deviceSynchronize()
    props = cp.cuda.runtime.getDeviceProperties(0)
    info = {"gpu": props["name"].decode(), "cc": f"{props['major']}.{props['minor']}",
            "driver": cp.cuda.runtime.driverGetVersion(), "runtime": cp.cuda.runtime.runtimeGetVersion()}
    np.savez_compressed(out, info=np.array(json.dumps(info)), **res)
    print(info, len(res), "arrays")


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(sys.argv[2])
    else:
        run(sys.argv[2], sys.argv[3])
