"""Forms, PTX kernels and inputs of the wgmma capture (shared by the capture and by the replay tests).

Everything here is deterministic and needs only numpy: inputs come from a counter-based hash
(splitmix64) of (form, CTA, stream, element index), built in bit space per number format, so the GPU
machine and the test suite rebuild the very same bytes from the form list alone; only outputs travel.

One kernel per form.  Every CTA (one warpgroup of 128 threads) copies its own 64 KiB shared-memory image
from global memory, adds the dynamic shared window's base to the start-address field of its two
descriptors, loads its A registers (``rs`` forms) and its accumulator registers, fences, issues the one
``wgmma.mma_async``, commits, waits and stores the accumulator registers.  The capture knows nothing of
layouts or descriptor decoding: what the hardware read is what it read.
"""
import numpy as np

from isa.wgmma import N_INT, VARIANTS, WgmmaVariant  # noqa: F401

IMG = 65536             # bytes of the shared-memory image per CTA
A_REGION = (0, 24576)   # A descriptors point here, filled with A's type
B_REGION = (24576, IMG)  # B descriptors point here, filled with B's type
DYN_SMEM = 160 * 1024   # dynamic shared memory per CTA (the image plus room under any reading)
DISTS = ("normal", "wide", "special", "raw", "iota")
SWIZZLES = {0: 0, 1: 128, 2: 64, 3: 32}      # descriptor bits 62-63 -> swizzle width in bytes (0: none)

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


# ------------------------------------------------------------------------------------------------
# counter-based random bits
def _mix(x):
    x = np.asarray(x, np.uint64)
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def rbits(key, n):
    """n pseudo-random uint64 for a tuple of small ints ``key``."""
    h = np.uint64(0x1234567)
    for k in key:
        h = _mix(h ^ np.uint64(k))
    with np.errstate(over="ignore"):
        return _mix(h + np.arange(n, dtype=np.uint64) * np.uint64(0xD1B54A32D192ED03))


# ------------------------------------------------------------------------------------------------
# element generation in bit space
FMT = {"f16": (5, 10, 16), "bf16": (8, 7, 16), "tf32": (8, 23, 32), "f32": (8, 23, 32),
       "e4m3": (4, 3, 8), "e5m2": (5, 2, 8)}
INTS = {"s8": 8, "u8": 8, "s32": 32, "b1": 32}


def _float_bits(sign, e, m, fmt):
    eb, mb, w = FMT[fmt]
    return (sign.astype(np.uint64) << np.uint64(w - 1)) | (e.astype(np.uint64) << np.uint64(mb)) | m


def _small_int_bits(v, fmt):
    """Exact encodings of small integers |v| <= 15 (fp formats with >= 2 fraction bits hold them exactly
    up to 7; larger ones are only asked of formats that hold them)."""
    eb, mb, w = FMT[fmt]
    out = np.zeros(v.shape, np.uint64)
    bias = (1 << (eb - 1)) - 1
    for i, x in np.ndenumerate(v):
        x = int(x)
        if x == 0:
            continue
        a = abs(x)
        e = a.bit_length() - 1
        frac = (a - (1 << e)) << mb >> e if e <= mb else ((a - (1 << e)) >> (e - mb))
        out[i] = ((1 if x < 0 else 0) << (w - 1)) | ((e + bias) << mb) | frac
    return out


def elements(fmt, dist, n, key):
    """n raw element bits (uint64) of format ``fmt`` drawn from ``dist``."""
    r = rbits(key, n)
    r2 = rbits(key + (99,), n)
    if fmt in INTS:
        w = INTS[fmt]
        mask = np.uint64((1 << w) - 1)
        if dist == "normal":
            v = (r % np.uint64(17)).astype(np.int64) - (0 if fmt == "u8" else 8)
            return v.astype(np.uint64) & mask
        if dist == "iota":
            v = (np.arange(n) * 7 % 15) - (0 if fmt == "u8" else 7)
            return v.astype(np.int64).astype(np.uint64) & mask
        if dist == "special":
            if fmt == "s32":
                edge = np.array([0x7FFFFFFF, 0x80000000, 0x7FFFFF00, 0x80000100, 0, 1, 0xFFFFFFFF], np.uint64)
            elif fmt == "b1":
                edge = np.array([0, 0xFFFFFFFF, 0x55555555, 0x0F0F0F0F], np.uint64)
            else:
                edge = np.array([0x80, 0x7F, 0xFF, 0x00, 0x01, 0x81], np.uint64)
            return edge[(r % np.uint64(len(edge))).astype(np.int64)]
        return r & mask
    eb, mb, w = FMT[fmt]
    emaxf = (1 << eb) - 1
    sign = (r >> np.uint64(63)) & np.uint64(1)
    mant = r2 & np.uint64((1 << mb) - 1)
    bias = (1 << (eb - 1)) - 1
    if dist == "raw":
        out = r & np.uint64((1 << w) - 1)
    elif dist == "iota":
        v = (np.arange(n) * 7 % 15) - 7
        out = _small_int_bits(v, fmt)
    else:
        if dist == "wide":
            e = (r >> np.uint64(8)) % np.uint64(emaxf)           # 0 .. emaxf-1: subnormals .. max binade
        else:
            e = np.uint64(bias - 4) + (r >> np.uint64(8)) % np.uint64(7)
        out = _float_bits(sign, e, mant, fmt)
        if fmt == "e4m3":
            out = np.where((out & np.uint64(0x7F)) == np.uint64(0x7F), out & np.uint64(0xF8), out)
        if dist == "special":
            top = np.uint64(1 << (w - 1))
            inf = np.uint64(emaxf << mb) if fmt != "e4m3" else np.uint64(0x7E)     # e4m3: max finite
            nan = np.uint64((emaxf << mb) | (1 << (mb - 1))) if fmt != "e4m3" else np.uint64(0x7F)
            specials = np.array([0, top, inf, inf | top, nan, nan | top | np.uint64(1), 1, top | np.uint64(1),
                                 np.uint64(((emaxf - 1) << mb) | ((1 << mb) - 1)), (1 << mb) - 1], np.uint64)
            pick = (r >> np.uint64(40)) % np.uint64(8) == 0
            which = ((r >> np.uint64(20)) % np.uint64(len(specials))).astype(np.int64)
            out = np.where(pick, specials[which], out)
    if fmt == "tf32":                                    # the low 13 bits are junk the hardware ignores
        out = (out & np.uint64(0xFFFFE000)) | (r2 >> np.uint64(50)) & np.uint64(0x1FFF)
    return out


def pack32(elems, w):
    """Pack consecutive w-bit elements into uint32 words (element e of a word at bits e*w)."""
    per = 32 // w
    e = elems.reshape(-1, per)
    word = np.zeros(e.shape[0], np.uint64)
    for j in range(per):
        word |= (e[:, j] & np.uint64((1 << w) - 1)) << np.uint64(j * w)
    return word.astype(np.uint32)


# ------------------------------------------------------------------------------------------------
# forms
def _form(spelling, op_form="ss", n_cta=4, scale_a=1, scale_b=1, trans_a=0, trans_b=0, desc="canonical",
          phase="safe", dist=None):
    return dict(spelling=spelling, op_form=op_form, n_cta=n_cta, scale_a=scale_a, scale_b=scale_b,
                trans_a=trans_a, trans_b=trans_b, desc=desc, phase=phase, dist=dist)


def _sp(n, d, a, b=None, sat=False):
    return WgmmaVariant(n, d, a, b or a, sat).spelling


COMBOS = ([("f32", "f16", "f16", False), ("f16", "f16", "f16", False), ("f32", "bf16", "bf16", False),
           ("f32", "tf32", "tf32", False)]
          + [(d, a, b, False) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2") for d in ("f32", "f16")]
          + [("s32", a, b, s) for a in ("s8", "u8") for b in ("s8", "u8") for s in (False, True)]
          + [("s32", "b1", "b1", False)])


def forms():
    out = []
    for d, a, b, sat in COMBOS:
        ints = d == "s32"
        ns = (8, 64, 256) if not ints else (8, 64, 256)
        out.append(_form(_sp(ns[0], d, a, b, sat), n_cta=10))
        out.append(_form(_sp(ns[1], d, a, b, sat), n_cta=5))
        out.append(_form(_sp(ns[2], d, a, b, sat), n_cta=1))
        out.append(_form(_sp(16, d, a, b, sat), op_form="rs", n_cta=5))
        out.append(_form(_sp(144 if ints else 136, d, a, b, sat), op_form="rs", n_cta=1))
        out.append(_form(_sp(24 if not ints else 48, d, a, b, sat), n_cta=10, desc="random"))
    # every N once: f16 -> f32, one CTA each, canonical descriptors
    for n in range(8, 257, 8):
        if n not in (8, 64, 256):
            out.append(_form(_sp(n, "f32", "f16"), n_cta=1, dist=DISTS[n // 8 % 5]))
    for n in N_INT:
        out.append(_form(_sp(n, "s32", "s8"), n_cta=1, dist=DISTS[n // 8 % 5]))
    # descriptors: random layouts, both major-nesses, every swizzle
    for a in ("f16", "bf16"):
        for ta in (0, 1):
            for tb in (0, 1):
                out.append(_form(_sp(16, "f32", a), n_cta=40, trans_a=ta, trans_b=tb, desc="random"))
                out.append(_form(_sp(64, "f32", a), n_cta=4, trans_a=ta, trans_b=tb, desc="canonical"))
        out.append(_form(_sp(16, "f32", a), op_form="rs", n_cta=20, trans_b=1, desc="random"))
    for d, a in (("f32", "tf32"), ("f32", "e4m3"), ("s32", "s8"), ("s32", "b1")):
        out.append(_form(_sp(16, d, a), n_cta=30, desc="random"))
    # imm-scale-a/b
    for sa, sb in ((-1, 1), (1, -1), (-1, -1)):
        out.append(_form(_sp(16, "f32", "f16"), n_cta=5, scale_a=sa, scale_b=sb))
        out.append(_form(_sp(16, "f32", "e5m2", "e4m3"), n_cta=5, scale_a=sa, scale_b=sb))
    out.append(_form(_sp(16, "f32", "bf16"), op_form="rs", n_cta=5, scale_a=-1, scale_b=-1, trans_b=1))
    out.append(_form(_sp(16, "f32", "tf32"), n_cta=5, scale_a=-1, scale_b=1))
    out.append(_form(_sp(16, "f16", "f16"), n_cta=5, scale_a=1, scale_b=-1, trans_a=1))
    # risky: start addresses off the swizzle atom, base offsets (run last, in a separate process)
    for ta in (0, 1):
        for tb in (0, 1):
            out.append(_form(_sp(16, "f32", "f16"), n_cta=48, trans_a=ta, trans_b=tb, desc="offset",
                             phase="risky"))
    return out


# ------------------------------------------------------------------------------------------------
# descriptors
def make_desc(start, lbo, sbo, swz_code, base_offset=0):
    """Descriptor bits: start>>4 at 0-13, LBO>>4 at 16-29, SBO>>4 at 32-45, base offset 49-51, swizzle 62-63."""
    return ((start >> 4) & 0x3FFF) | (((lbo >> 4) & 0x3FFF) << 16) | (((sbo >> 4) & 0x3FFF) << 32) \
        | ((base_offset & 7) << 49) | ((swz_code & 3) << 62)


def canonical(rows, kbytes, mn_major, swz_code, elem_bytes):
    """(LBO, SBO, bytes) of a dense canonical layout of ``rows`` M/N rows x ``kbytes`` bytes of K."""
    W = SWIZZLES[swz_code]
    if not mn_major:
        if W == 0:
            return 128 * (rows // 8), 128, 128 * (rows // 8) * (kbytes // 16)    # LBO: next K core matrix
        return 16, 8 * W, (rows // 8) * 8 * W
    # MN-major: rows*elem bytes along MN, kbytes/elem_bytes K rows
    mnb = rows * elem_bytes
    krows = kbytes // elem_bytes
    if W == 0:
        return 128 * (krows // 8), 128, 128 * (krows // 8) * max(1, mnb // 16)
    chunks = max(1, mnb // W)
    return 8 * W * (krows // 8), 8 * W, 8 * W * (krows // 8) * chunks


def reach_bytes(rows, kbytes, mn_major, elem_bytes, lbo, sbo, swz):
    """Bytes past the start that any plausible reading reaches (both roles of LBO/SBO, both majors), plus
    the swizzle pattern's span: the capture must never leave shared memory."""
    W = SWIZZLES[swz]
    x = max(lbo, sbo)
    kmaj = (rows // 8) * max(x, 8 * max(W, 16)) + 2 * x + 8 * max(W, 16)
    mnb = rows * elem_bytes
    mnmaj = (mnb // 16 + 1) * x + (kbytes // elem_bytes // 8 + 1) * max(x, 8 * max(W, 16)) + 8 * max(W, 16)
    return max(kmaj, mnmaj) + 1024


def choose_desc(key, rows, kbytes, mn_major, elem_bytes, region, mode):
    """One descriptor (offset within the image) for an operand of ``rows`` M/N x ``kbytes`` K bytes."""
    r = [int(x) for x in rbits(key, 8)]
    lo, hi = region
    swz = r[0] % 4
    W = SWIZZLES[swz]
    atom = 8 * W if W else 128
    if mode == "canonical":
        lbo, sbo, size = canonical(rows, kbytes, mn_major, swz, elem_bytes)
        room = (hi - lo - size) // 1024
        start = lo + 1024 * (r[1] % max(1, room))
        if not mn_major and W:                        # a K step inside the swizzle row, as CUTLASS does
            start += 32 * (r[2] % (W // 32))
        return make_desc(start, lbo, sbo, swz), dict(swz=swz, lbo=lbo, sbo=sbo, start=start)
    lbo = 16 * (1 + r[3] % 32)                        # up to 512 bytes
    sbo = 16 * (1 + r[4] % 32)
    if r[5] % 3 == 0:
        lbo, sbo, _ = canonical(rows, kbytes, mn_major, swz, elem_bytes)
    room = hi - lo - reach_bytes(rows, kbytes, mn_major, elem_bytes, lbo, sbo, swz)
    while room <= 1024:                               # too far-reaching for the region: halve the strides
        lbo, sbo = max(16, lbo // 32 * 16), max(16, sbo // 32 * 16)
        room = hi - lo - reach_bytes(rows, kbytes, mn_major, elem_bytes, lbo, sbo, swz)
    if mode == "random":
        start = lo + atom * (r[6] % (room // atom))
        if not mn_major and W:
            start += 32 * (r[2] % (W // 32))
        base = 0
    else:                                             # "offset": any 16-byte start, any base offset
        start = lo + 16 * (r[6] % (room // 16))
        base = r[7] % 8
    return make_desc(start, lbo, sbo, swz, base), dict(swz=swz, lbo=lbo, sbo=sbo, start=start, base=base)


# ------------------------------------------------------------------------------------------------
# inputs of one form
def form_inputs(fi, f):
    """dict: img (n_cta, IMG) u8, desc (n_cta, 2) u64, a (n_cta, 128, n_a) u32, c (n_cta, 128, n_d) u32,
    scale_d (n_cta,) u32, dist (n_cta,) index into DISTS."""
    v = VARIANTS[f["spelling"]]
    n = f["n_cta"]
    eb = {x: max(1, v.elem_bits(x) // 8) for x in "ABD"}
    img = np.zeros((n, IMG), np.uint8)
    desc = np.zeros((n, 2), np.uint64)
    a = np.zeros((n, 128, v.n_a), np.uint32)
    c = np.zeros((n, 128, v.n_d), np.uint32)
    sd = np.zeros(n, np.uint32)
    dist = np.zeros(n, np.int64)
    for j in range(n):
        di = DISTS.index(f["dist"]) if f["dist"] else (j + fi) % len(DISTS)
        dname = DISTS[di]
        dist[j] = di
        for (lo, hi), t, s in ((A_REGION, v.atype, 1), (B_REGION, v.btype, 2)):
            w = v.elem_bits("A" if s == 1 else "B")
            e = elements(t, dname, (hi - lo) * 8 // w, (fi, j, s))
            if w >= 8:
                img[j, lo:hi] = e.astype(f"<u{w // 8}").view(np.uint8) if w > 8 else e.astype(np.uint8)
            else:
                img[j, lo:hi] = pack32(e, w).view(np.uint8)
        kbytes = 32
        rdesc = dict(canonical="canonical", random="random", offset="offset")[f["desc"]]
        da, _ = choose_desc((fi, j, 11), 64, kbytes, bool(f["trans_a"]), eb["A"], A_REGION, rdesc)
        db, _ = choose_desc((fi, j, 12), v.n, kbytes, bool(f["trans_b"]), eb["B"], B_REGION, rdesc)
        desc[j] = (da, db)
        wa = v.elem_bits("A")
        a[j] = pack32(elements(v.atype, dname, 128 * v.n_a * (32 // wa), (fi, j, 3)), wa).reshape(128, v.n_a)
        wd = v.elem_bits("D")
        cd = "normal" if dname == "iota" and v.dtype != "s32" else dname
        c[j] = pack32(elements(v.dtype, cd, 128 * v.n_d * (32 // wd), (fi, j, 4)), wd).reshape(128, v.n_d)
        sd[j] = int(rbits((fi, j, 5), 1)[0] % np.uint64(4) != 0)
    return dict(img=img, desc=desc, a=a, c=c, scale_d=sd, dist=dist)


# ------------------------------------------------------------------------------------------------
# PTX
def instruction(f, dregs, aop, bop, pred):
    v = VARIANTS[f["spelling"]]
    imms = []
    if v.is_float:
        imms = [str(f["scale_a"]), str(f["scale_b"])]
        if v.can_transpose:
            if f["op_form"] == "ss":
                imms.append(str(f["trans_a"]))
            imms.append(str(f["trans_b"]))
    ops = ["{" + ", ".join(dregs) + "}", aop, bop, pred] + imms
    return f"{v.spelling} {', '.join(ops)};"


def ptx(f, name="wgmma_cap"):
    v = VARIANTS[f["spelling"]]
    nd, na = v.n_d, v.n_a
    dt = "f32" if v.dtype == "f32" else "b32"
    L = [".version 8.5", ".target sm_90a", ".address_size 64", "",
         ".extern .shared .align 1024 .b8 dsmem[];", "",
         f".visible .entry {name}(.param .u64 p_img, .param .u64 p_desc, .param .u64 p_a, .param .u64 p_c, "
         f".param .u64 p_d, .param .u64 p_misc)", "{",
         "  .reg .pred %p<4>;", "  .reg .b32 %r<32>;", "  .reg .b64 %rd<32>;",
         f"  .reg .{dt} %d<{nd}>;", "  .reg .b32 %a<4>;",
         "  ld.param.u64 %rd1, [p_img];", "  ld.param.u64 %rd2, [p_desc];", "  ld.param.u64 %rd3, [p_a];",
         "  ld.param.u64 %rd4, [p_c];", "  ld.param.u64 %rd5, [p_d];", "  ld.param.u64 %rd6, [p_misc];",
         "  cvta.to.global.u64 %rd1, %rd1;", "  cvta.to.global.u64 %rd2, %rd2;", "  cvta.to.global.u64 %rd3, %rd3;",
         "  cvta.to.global.u64 %rd4, %rd4;", "  cvta.to.global.u64 %rd5, %rd5;", "  cvta.to.global.u64 %rd6, %rd6;",
         "  mov.u32 %r1, %tid.x;", "  mov.u32 %r2, %ctaid.x;", "  mov.u32 %r3, %nctaid.x;",
         "  mov.u32 %r4, dsmem;",
         f"  mul.wide.u32 %rd7, %r2, {IMG};", "  add.s64 %rd8, %rd1, %rd7;",
         "  mov.u32 %r5, 0;",
         "COPY:",
         "  shl.b32 %r6, %r5, 7;", "  add.s32 %r6, %r6, %r1;", "  shl.b32 %r6, %r6, 4;",
         "  cvt.u64.u32 %rd9, %r6;", "  add.s64 %rd10, %rd8, %rd9;",
         "  ld.global.v4.u32 {%r7, %r8, %r9, %r10}, [%rd10];",
         "  add.s32 %r11, %r4, %r6;", "  st.shared.v4.u32 [%r11], {%r7, %r8, %r9, %r10};",
         "  add.s32 %r5, %r5, 1;", f"  setp.lt.u32 %p1, %r5, {IMG // 2048};", "  @%p1 bra COPY;",
         "  fence.proxy.async.shared::cta;", "  bar.sync 0;",
         # descriptors: the start field gets the shared window's base
         "  mul.wide.u32 %rd11, %r2, 16;", "  add.s64 %rd11, %rd2, %rd11;",
         "  ld.global.u64 %rd12, [%rd11];", "  ld.global.u64 %rd13, [%rd11+8];",
         "  shr.u32 %r12, %r4, 4;", "  cvt.u64.u32 %rd14, %r12;",
         "  add.s64 %rd12, %rd12, %rd14;", "  add.s64 %rd13, %rd13, %rd14;",
         # this thread's register rows
         "  mad.lo.s32 %r13, %r2, 128, %r1;",
         f"  mul.wide.u32 %rd15, %r13, {4 * na};", "  add.s64 %rd15, %rd3, %rd15;",
         f"  mul.wide.u32 %rd16, %r13, {4 * nd};", "  add.s64 %rd17, %rd4, %rd16;", "  add.s64 %rd18, %rd5, %rd16;",
         "  mul.wide.u32 %rd19, %r2, 4;", "  add.s64 %rd19, %rd6, %rd19;",
         "  ld.global.u32 %r14, [%rd19];", "  setp.ne.u32 %p2, %r14, 0;"]
    if f["op_form"] == "rs":
        L += [f"  ld.global.u32 %a{r}, [%rd15+{4 * r}];" for r in range(na)]
    L += [f"  ld.global.{'f32' if dt == 'f32' else 'b32'} %d{i}, [%rd17+{4 * i}];" for i in range(nd)]
    aop = "{%a0, %a1, %a2, %a3}" if f["op_form"] == "rs" else "%rd12"
    L += ["  wgmma.fence.sync.aligned;",
          "  " + instruction(f, [f"%d{i}" for i in range(nd)], aop, "%rd13", "%p2"),
          "  wgmma.commit_group.sync.aligned;", "  wgmma.wait_group.sync.aligned 0;"]
    L += [f"  st.global.{'f32' if dt == 'f32' else 'b32'} [%rd18+{4 * i}], %d{i};" for i in range(nd)]
    L += ["  setp.ne.u32 %p3, %r1, 0;", "  @%p3 bra DONE;",
          # misc[ncta + ctaid]: the shared window's base
          "  mul.wide.u32 %rd21, %r3, 4;", "  add.s64 %rd20, %rd19, %rd21;", "  st.global.u32 [%rd20], %r4;",
          "DONE:", "  ret;", "}", ""]
    return "\n".join(L)
