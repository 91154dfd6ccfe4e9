"""Forms, PTX kernels and inputs of the sparse tensor-core capture (``mma.sp`` and ``wgmma.mma_async.sp``).

Deterministic and numpy-only, like ``tools/hwcapture/wgmma/wgmma_gen.py`` (whose counter-based element
generator it uses): the GPU machine and the replay tests rebuild the same input bytes from the form list, so
only outputs travel.

mma.sp: one kernel per (sparsity variant, form, selector) that ptxas 13 accepts for sm_90a.  Each warp loads its
A, B, C and metadata registers as raw bits, issues the instruction and stores D.  Warps 0..23 hold random tiles
(five distributions, metadata nibbles drawn from the valid index pairs in every lane, so the selector matters);
the ``probe`` warps hold A = 1 / 16 on the two kept elements of each chunk, B = 2**(k - chunk start) on its own
column, C = 0, so D spells out which positions the metadata picked.  ``EXPERIMENTS``: metadata PTX calls
undefined or that the H100 may refuse (unsorted pairs, equal indices, bad tf32 nibbles, odd selectors), each
launched in a process of its own (an illegal-instruction trap ends the CUDA context).

wgmma.sp: one kernel per form, one warpgroup per CTA, A (compressed, 64 x K/2) and B (K x N) from a shared-memory
image through descriptors (or A from registers), a metadata register per thread and the selector.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "wgmma"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
import wgmma_gen as W  # noqa: E402

ELEM = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "s4": 4, "u4": 4,
        "f32": 32, "s32": 32}
DISTS = ("normal", "wide", "special", "raw", "iota")
N_RANDOM = 24
TF32_NIBBLES = (0x4, 0xE)


def chunk(atype):
    """(elements per metadata chunk, kept elements per chunk): 2:4, tf32 1:2, 4-bit types 4:8 in pairs."""
    return {"tf32": (2, 1), "s4": (8, 4), "u4": (8, 4)}.get(atype, (4, 2))


# ------------------------------------------------------------------------------------------------
# mma.sp forms: (spvariant, K, dtype, atype, btype, ctype, satfinite, selector), from ptxas (sm_90a)
def _mma_forms():
    out = []
    for sp in ("sp", "sp::ordered_metadata"):
        for k, d, a, c, sels in ((16, "f16", "f16", "f16", 4), (16, "f32", "f16", "f32", 4),
                                 (32, "f16", "f16", "f16", 2), (32, "f32", "f16", "f32", 4),
                                 (16, "f32", "bf16", "f32", 4), (32, "f32", "bf16", "f32", 2),
                                 (8, "f32", "tf32", "f32", 4), (16, "f32", "tf32", "f32", 2)):
            out += [(sp, k, d, a, a, c, False, s) for s in range(sels)]
        for a in ("e4m3", "e5m2"):
            for b in ("e4m3", "e5m2"):
                out.append((sp, 64, "f32", a, b, "f32", False, 0))
        for types, ks in ((("s8", "u8"), (32, 64)), (("s4", "u4"), (64, 128))):
            for a in types:
                for b in types:
                    for sat in (False, True):
                        for k in ks:
                            out += [(sp, k, "s32", a, b, "s32", sat, s) for s in range(2 if k == ks[0] else 1)]
    return out


MMA_FORMS = _mma_forms()


def mma_spelling(f):
    sp, k, d, a, b, c, sat, _ = f
    return f"mma.{sp}.sync.aligned.m16n8k{k}.row.col{'.satfinite' if sat else ''}.{d}.{a}.{b}.{c}"


def mma_regs(f):
    """(n_a, n_b, n_c, n_d) 32-bit registers."""
    sp, k, d, a, b, c, sat, _ = f
    return (16 * k // 2 * ELEM[a] // 1024, k * 8 * ELEM[b] // 1024, 128 * ELEM[c] // 1024, 128 * ELEM[d] // 1024)


def mma_warps(f):
    return N_RANDOM + len(probe_offsets(f))


# Forms whose selector ptxas accepts although PTX calls it undefined (m16n8k32 .f16 -> .f32 with 2 or 3): run
# apart, as experiments.
def risky(f):
    return f[1] == 32 and f[3] == "f16" and f[7] >= 2


def _experiments():
    """(form index, metadata mode, warps) run one per process: 'unsorted' (idx0 > idx1: valid for mma.sp, undefined
    for ::ordered_metadata), 'equal' (idx0 == idx1, undefined), 'tf32bad' (nibbles other than 0x4/0xE),
    'sorted' (a risky selector)."""
    out = []
    pick = {}
    for i, f in enumerate(MMA_FORMS):
        key = (f[0], f[1], f[3], f[4], f[2], f[6])
        if f[7] == 0:
            pick.setdefault(key, i)
    def idx(sp, k, a, b, d, sat=False):
        return pick[(sp, k, a, b, d, sat)]
    for sp in ("sp", "sp::ordered_metadata"):
        for k, a, b, d in ((16, "f16", "f16", "f32"), (32, "f16", "f16", "f16"), (32, "bf16", "bf16", "f32"),
                           (32, "s8", "s8", "s32"), (64, "s8", "u8", "s32"), (64, "e4m3", "e5m2", "f32"),
                           (64, "s4", "s4", "s32"), (128, "u4", "s4", "s32")):
            out.append((idx(sp, k, a, b, d), "unsorted"))
        out.append((idx(sp, 16, "f16", "f16", "f32"), "equal"))
        out.append((idx(sp, 64, "s8", "s8", "s32"), "equal"))
        out.append((idx(sp, 8, "tf32", "tf32", "f32"), "tf32bad"))
        out.append((idx(sp, 16, "tf32", "tf32", "f32"), "tf32bad"))
    out += [(i, "sorted") for i, f in enumerate(MMA_FORMS) if risky(f)]
    return out


EXPERIMENTS = _experiments()
N_EXP_WARPS = 8


def probe_offsets(f):
    k, a = f[1], f[3]
    if a in ("s4", "u4"):
        return []
    width = chunk(a)[0]
    return list(range(0, k, 8 * width))


def _pack_elems(e, w):
    """(..., n) w-bit elements -> (..., n*w/32) uint32, element j of a word at bits j*w."""
    per = 32 // w
    e = e.reshape(e.shape[:-1] + (-1, per)).astype(np.uint64) & np.uint64((1 << w) - 1)
    word = np.zeros(e.shape[:-1], np.uint64)
    for j in range(per):
        word |= e[..., j] << np.uint64(j * w)
    return word.astype(np.uint32)


def _meta_words(a, key, n, mode):
    """n random 32-bit metadata words, every nibble of the kind ``mode``: 'sorted' (idx0 < idx1; tf32: 0x4 or
    0xE), 'unsorted' (idx0 > idx1), 'equal' (idx0 == idx1), 'tf32bad' (a tf32 nibble other than 0x4, 0xE)."""
    r = W.rbits(key, n * 8)
    if mode == "tf32bad":
        tab = [x for x in range(16) if x not in TF32_NIBBLES]
    elif a == "tf32" and mode == "sorted":
        tab = list(TF32_NIBBLES)
    else:
        rel = {"sorted": lambda i, j: i < j, "unsorted": lambda i, j: i > j, "equal": lambda i, j: i == j}[mode]
        tab = [i | (j << 2) for i in range(4) for j in range(4) if rel(i, j)]
    tab = np.array(tab, np.uint64)
    words = np.zeros(n, np.uint64)
    for j in range(8):                       # eight nibbles per word
        nib = tab[(r[j::8] % np.uint64(len(tab))).astype(np.int64)]
        words |= nib << np.uint64(4 * j)
    return words.astype(np.uint32)


def _small_float(v, fmt):
    return W._small_int_bits(np.asarray(v), fmt)


def mma_inputs(fi, f, mode=None):
    """dict: a (W, 32, n_a), b (W, 32, n_b), c (W, 32, n_c), e (W, 32) uint32 register bits, kind (W,)
    0 random, 1 probe; the raw per-lane registers, fragments play no part (except in the probes' A and B).
    ``mode`` (an experiment): N_EXP_WARPS random warps whose metadata is of that kind."""
    sp, k, d, a, b, c, sat, sel = f
    na, nb, nc, nd = mma_regs(f)
    nw = mma_warps(f) if mode is None else N_EXP_WARPS
    A = np.zeros((nw, 32, na), np.uint32)
    B = np.zeros((nw, 32, nb), np.uint32)
    C = np.zeros((nw, 32, nc), np.uint32)
    E = np.zeros((nw, 32), np.uint32)
    kind = np.zeros(nw, np.int64)
    salt = 0 if mode is None else 100 + ("unsorted", "equal", "tf32bad", "sorted").index(mode)
    for j in range(nw):
        dist = DISTS[j % len(DISTS)]
        key = (7000 + fi, salt, j)
        if mode is not None or j < N_RANDOM:
            for arr, t, n, s in ((A, a, na, 1), (B, b, nb, 2), (C, c, nc, 3)):
                w = ELEM[t]
                el = W.elements(t if t in W.FMT or t in W.INTS else "u8", dist, 32 * n * 32 // w, key + (s,))
                if t in ("s4", "u4"):
                    el = el & np.uint64(0xF)
                arr[j] = _pack_elems(el, w).reshape(32, n)
            E[j] = _meta_words(a, key + (4,), 32, mode or "sorted")
        else:
            kind[j] = 1
            E[j] = _meta_words(a, key + (4,), 32, "sorted")
            A[j], B[j] = _probe(f, probe_offsets(f)[j - N_RANDOM])
    return dict(a=A, b=B, c=C, e=E, kind=kind)


def _frag_pack(frag, tile, w):
    """tile (rows, cols) raw bits -> (32, n_regs) uint32 through a (n_regs, 32, epr, 2) fragment."""
    el = tile[frag[..., 0], frag[..., 1]].astype(np.uint64) & np.uint64((1 << w) - 1)    # (n_regs, 32, epr)
    word = np.zeros(el.shape[:2], np.uint64)
    for e in range(el.shape[2]):
        word |= el[..., e] << np.uint64(e * w)
    return word.T.astype(np.uint32)


def _probe(f, off):
    """A (compressed 16 x K/2): 1 and 16 on the kept elements of the chunks in [off, off + 8 chunks); B: column
    n holds 2**(k - chunk start) on chunk n of that window. Fragments: the dense m16n8k(K/2) A layout and the
    m16n8kK B layout (isa.mma)."""
    from isa.mma import _m16n8_a, _m16n8_b
    sp, k, d, a, b, c, sat, _ = f
    na, nb, nc, nd = mma_regs(f)
    width, kept = chunk(a)
    one = {"f16": 0x3C00, "bf16": 0x3F80, "tf32": 0x3F800000, "e4m3": 0x38, "e5m2": 0x3C, "s8": 1, "u8": 1}
    sixteen = {"f16": 0x4C00, "bf16": 0x4180, "tf32": 0x41800000, "e4m3": 0x58, "e5m2": 0x4C, "s8": 16, "u8": 16}
    At = np.zeros((16, k // 2), np.uint64)
    Bt = np.zeros((k, 8), np.uint64)
    for n in range(8):
        c0 = off + n * width
        if c0 >= k:
            continue
        q = c0 // width * kept
        At[:, q] = one[a]
        if kept > 1:
            At[:, q + 1] = sixteen[a]
        for p in range(width):
            Bt[c0 + p, n] = _small_float(np.array([1 << p]), b)[0] if b not in ("s8", "u8") else (1 << p)
    epa, epb = 32 // ELEM[a], 32 // ELEM[b]
    return _frag_pack(_m16n8_a(na, epa), At, ELEM[a]), _frag_pack(_m16n8_b(nb, epb), Bt, ELEM[b])


# ------------------------------------------------------------------------------------------------
def mma_ptx(forms, names):
    L = [".version 8.7", ".target sm_90a", ".address_size 64", ""]
    for f, name in zip(forms, names):
        na, nb, nc, nd = mma_regs(f)
        nin = na + nb + nc + 1
        L += [f".visible .entry {name}(.param .u64 p_in, .param .u64 p_out)", "{",
              "  .reg .b32 %r<4>;", "  .reg .b64 %rd<8>;", f"  .reg .b32 %a<{na}>;", f"  .reg .b32 %b<{nb}>;",
              f"  .reg .b32 %c<{nc}>;", f"  .reg .b32 %d<{nd}>;", "  .reg .b32 %e;",
              "  ld.param.u64 %rd1, [p_in];", "  ld.param.u64 %rd2, [p_out];",
              "  cvta.to.global.u64 %rd1, %rd1;", "  cvta.to.global.u64 %rd2, %rd2;",
              "  mov.u32 %r1, %tid.x;", "  mov.u32 %r2, %ctaid.x;", "  mad.lo.s32 %r3, %r2, 32, %r1;",
              f"  mul.wide.u32 %rd3, %r3, {4 * nin};", "  add.s64 %rd3, %rd1, %rd3;",
              f"  mul.wide.u32 %rd4, %r3, {4 * nd};", "  add.s64 %rd4, %rd2, %rd4;"]
        pos = 0
        for p, n in (("a", na), ("b", nb), ("c", nc)):
            for i in range(n):
                L.append(f"  ld.global.u32 %{p}{i}, [%rd3+{4 * pos}];")
                pos += 1
        L.append(f"  ld.global.u32 %e, [%rd3+{4 * pos}];")
        rl = lambda p, n: "{" + ", ".join(f"%{p}{i}" for i in range(n)) + "}"  # noqa: E731
        L.append(f"  {mma_spelling(f)} {rl('d', nd)}, {rl('a', na)}, {rl('b', nb)}, {rl('c', nc)}, %e, {f[7]};")
        L += [f"  st.global.u32 [%rd4+{4 * i}], %d{i};" for i in range(nd)]
        L += ["  ret;", "}", ""]
    return "\n".join(L)


# ------------------------------------------------------------------------------------------------
# wgmma.mma_async.sp
WG_K = {"f16": 32, "bf16": 32, "tf32": 16, "e4m3": 64, "e5m2": 64, "s8": 64, "u8": 64}


def wg_spelling(f):
    n, d, a, b, sat = f["n"], f["dtype"], f["atype"], f["btype"], f["sat"]
    return f"wgmma.mma_async.sp.sync.aligned.m64n{n}k{WG_K[a]}{'.satfinite' if sat else ''}.{d}.{a}.{b}"


def _wf(n, d, a, b=None, sat=False, op_form="ss", n_cta=2, sel=0, trans_a=0, trans_b=0, scale_a=1, scale_b=1):
    return dict(n=n, dtype=d, atype=a, btype=b or a, sat=sat, op_form=op_form, n_cta=n_cta, sel=sel,
                trans_a=trans_a, trans_b=trans_b, scale_a=scale_a, scale_b=scale_b)


def _wg_forms():
    out = []
    combos = ([("f32", "f16", "f16", False), ("f16", "f16", "f16", False), ("f32", "bf16", "bf16", False),
               ("f32", "tf32", "tf32", False)]
              + [(d, a, b, False) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2") for d in ("f32", "f16")]
              + [("s32", a, b, s) for a in ("s8", "u8") for b in ("s8", "u8") for s in (False, True)])
    for d, a, b, sat in combos:
        sels = (0, 1) if a in ("f16", "bf16", "tf32") else (0,)
        for sel in sels:
            out.append(_wf(8, d, a, b, sat, n_cta=6, sel=sel))
            out.append(_wf(16, d, a, b, sat, op_form="rs", n_cta=4, sel=sel))
        out.append(_wf(64, d, a, b, sat, n_cta=2))
        out.append(_wf(256 if d != "s32" else 256, d, a, b, sat, n_cta=1, op_form="rs" if a == "f16" else "ss"))
    for a in ("f16", "bf16"):
        for ta in (0, 1):
            for tb in (0, 1):
                out.append(_wf(16, "f32", a, n_cta=8, trans_a=ta, trans_b=tb, sel=(ta + tb) % 2))
        out.append(_wf(32, "f32", a, op_form="rs", n_cta=4, trans_b=1, sel=1))
    for sa, sb in ((-1, 1), (1, -1), (-1, -1)):
        out.append(_wf(16, "f32", "f16", n_cta=3, scale_a=sa, scale_b=sb))
        out.append(_wf(16, "f32", "e5m2", "e4m3", n_cta=3, scale_a=sa, scale_b=sb))
    return out


WG_FORMS = _wg_forms()


def _wg_experiments():
    """(form index, metadata mode): wgmma.sp with metadata PTX leaves undefined (unsorted or equal index pairs,
    tf32 nibbles other than 0x4/0xE), one kind per job."""
    out = []
    for i, f in enumerate(WG_FORMS):
        if f["n"] == 8 and f["sel"] == 0 and not f["sat"] and f["dtype"] in ("f32", "s32") and \
                f["atype"] == f["btype"]:
            if f["atype"] == "tf32":
                out.append((i, "tf32bad"))
            else:
                out += [(i, "unsorted"), (i, "equal")]
    return out


WG_EXPERIMENTS = _wg_experiments()


def _dense_bits(t):
    return ELEM[t]


def wg_regs(f):
    """(n_a, n_d): A registers (rs), accumulator registers."""
    nd = f["n"] * 64 * ELEM[f["dtype"]] // (128 * 32)
    return 4, nd


def wg_inputs(fi, f, mode=None):
    """``mode`` (an experiment, see WG_EXPERIMENTS): every metadata nibble of that kind instead of 'sorted'.
    dict: img (n_cta, IMG) u8, desc (n_cta, 2) u64, a (n_cta, 128, 4), c (n_cta, 128, n_d), e (n_cta, 128)
    u32, scale_d (n_cta,), and the descriptor choices."""
    n = f["n_cta"]
    na, nd = wg_regs(f)
    ka = WG_K[f["atype"]] // 2
    eb = {"A": max(1, ELEM[f["atype"]] // 8), "B": max(1, ELEM[f["btype"]] // 8)}
    img = np.zeros((n, W.IMG), np.uint8)
    desc = np.zeros((n, 2), np.uint64)
    a = np.zeros((n, 128, na), np.uint32)
    c = np.zeros((n, 128, nd), np.uint32)
    e = np.zeros((n, 128), np.uint32)
    sd = np.zeros(n, np.uint32)
    for j in range(n):
        dname = DISTS[(j + fi) % len(DISTS)]
        for (lo, hi), t, s in ((W.A_REGION, f["atype"], 1), (W.B_REGION, f["btype"], 2)):
            w = ELEM[t]
            el = W.elements(t, dname, (hi - lo) * 8 // w, (8000 + fi, j, s))
            img[j, lo:hi] = el.astype(f"<u{w // 8}").view(np.uint8) if w > 8 else el.astype(np.uint8)
        kbytes_a = ka * ELEM[f["atype"]] // 8
        kbytes_b = 2 * kbytes_a
        da, _ = W.choose_desc((8000 + fi, j, 11), 64, kbytes_a, bool(f["trans_a"]), eb["A"], W.A_REGION,
                              "canonical")
        db, _ = _b_desc((8000 + fi, j, 12), f["n"], kbytes_b, bool(f["trans_b"]), eb["B"])
        desc[j] = (da, db)
        wa = ELEM[f["atype"]]
        a[j] = _pack_elems(W.elements(f["atype"], dname, 128 * na * 32 // wa, (8000 + fi, j, 3)), wa).reshape(128, na)
        wd = ELEM[f["dtype"]]
        cd = "normal" if dname == "iota" and f["dtype"] != "s32" else dname
        c[j] = _pack_elems(W.elements(f["dtype"], cd, 128 * nd * 32 // wd, (8000 + fi, j, 4)), wd).reshape(128, nd)
        e[j] = _meta_words(f["atype"], (8000 + fi, j, 6), 128, mode or "sorted")
        sd[j] = int(W.rbits((8000 + fi, j, 5), 1)[0] % np.uint64(4) != 0)
    return dict(img=img, desc=desc, a=a, c=c, e=e, scale_d=sd)


def _b_desc(key, rows, kbytes, mn_major, elem_bytes):
    """A canonical descriptor for B (rows N x kbytes of K) in the B region: any swizzle; a K-major start
    may sit at a multiple of kbytes inside the swizzle row (the K blocks of a wider tile)."""
    r = [int(x) for x in W.rbits(key, 4)]
    lo, hi = W.B_REGION
    swz = r[0] % 4
    Wd = W.SWIZZLES[swz]
    lbo, sbo, size = W.canonical(rows, kbytes, mn_major, swz, elem_bytes)
    room = (hi - lo - 2 * size) // 1024
    start = lo + 1024 * (r[1] % max(1, room))
    if not mn_major and Wd > kbytes:
        start += kbytes * (r[2] % (Wd // kbytes))
    return W.make_desc(start, lbo, sbo, swz), dict(swz=swz, lbo=lbo, sbo=sbo, start=start)


def wg_instruction(f, dregs, aop, bop):
    imms = []
    if f["dtype"] != "s32":
        imms = [str(f["scale_a"]), str(f["scale_b"])]
        if f["atype"] in ("f16", "bf16"):
            if f["op_form"] == "ss":
                imms.append(str(f["trans_a"]))
            imms.append(str(f["trans_b"]))
    ops = ["{" + ", ".join(dregs) + "}", aop, bop, "%e", str(f["sel"]), "%p2"] + imms
    return f"{wg_spelling(f)} {', '.join(ops)};"


def wg_ptx(f, name="wgmma_sp_cap"):
    """The dense capture's kernel (wgmma_gen.ptx) with a metadata register per thread (p_e)."""
    na, nd = wg_regs(f)
    dt = "f32" if f["dtype"] == "f32" else "b32"
    dense = {"spelling": "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16", "op_form": f["op_form"],
             "scale_a": 1, "scale_b": 1, "trans_a": 0, "trans_b": 0}
    text = W.ptx(dense, name)
    text = text.replace(".param .u64 p_misc)", ".param .u64 p_misc, .param .u64 p_e)")
    text = text.replace("  mul.wide.u32 %rd16, %r13, 16;", f"  mul.wide.u32 %rd16, %r13, {4 * nd};")
    text = text.replace(".reg .f32 %d<4>;", f".reg .{dt} %d<{nd}>;\n  .reg .b32 %e;")
    text = text.replace("  ld.param.u64 %rd6, [p_misc];",
                        "  ld.param.u64 %rd6, [p_misc];\n  ld.param.u64 %rd22, [p_e];\n"
                        "  cvta.to.global.u64 %rd22, %rd22;")
    lines = text.split("\n")
    out = []
    for ln in lines:
        if "wgmma.mma_async.sync" in ln:
            aop = "{%a0, %a1, %a2, %a3}" if f["op_form"] == "rs" else "%rd12"
            out.append("  mul.wide.u32 %rd23, %r13, 4;")
            out.append("  add.s64 %rd23, %rd22, %rd23;")
            out.append("  ld.global.u32 %e, [%rd23];")
            out.append("  " + wg_instruction(f, [f"%d{i}" for i in range(nd)], aop, "%rd13"))
            continue
        if "ld.global.f32 %d" in ln or "st.global.f32 [%rd18" in ln:
            continue
        if ln.startswith("  wgmma.fence"):
            out += [f"  ld.global.{dt} %d{i}, [%rd17+{4 * i}];" for i in range(nd)]
        if ln.startswith("  setp.ne.u32 %p3"):
            out += [f"  st.global.{dt} [%rd18+{4 * i}], %d{i};" for i in range(nd)]
        out.append(ln)
    return "\n".join(out)
