"""wgmma in the fast engine's CTA loop (machine/fastcore/wgmmax.py), proved equal to the reference executors
(ops/wgmma) and to the H100: the capture kernels of every form, the sm_90a corpus kernels, and random wgmma
programs (every type, A from registers or a descriptor, swizzles, transposes, base offsets, scale-d and
imm-scale, several groups and wait_group depths, the hazards ptxas repairs and the errors) on both engines,
comparing memory, registers, shared memory, errors, notes and instruction counts."""
import collections

import numpy as np
import pytest

import corpus_lib
import wgmma_captures as wc
from emulator import GlobalMemory, WarpOptions, load_ptx
from emulator.machine.fastcore import table as T, translation
from emulator.machine.fastcore.engine import handback_counts
from emulator.ops.wgmma.desc import make_descriptor
from engines import compare_engines, launch_outcome, differences

SAFE, _ = wc.load("h100_safe.npz")
FORMS = wc.gen.forms()


def _capture(i, engine):
    f = FORMS[i]
    inp = wc.gen.form_inputs(i, f)
    g = GlobalMemory()
    args = [g.upload(inp["img"][:1]), g.upload(inp["desc"][:1]), g.upload(inp["a"][:1]), g.upload(inp["c"][:1])]
    d = g.upload(np.zeros_like(inp["c"][:1]))
    misc = g.upload(np.concatenate([inp["scale_d"][:1], np.zeros(1, np.uint32)]))
    module = load_ptx(wc.gen.ptx(f))
    module.launch("wgmma_cap", grid=(1, 1, 1), block=(128, 1, 1), args=args + [d, misc], gmem=g,
                  shared_bytes=wc.gen.DYN_SMEM, engine=engine)
    got = g.download(d, inp["c"][:1].nbytes).view(np.uint32).reshape(inp["c"][:1].shape)
    return got, module.program("wgmma_cap")


CAPTURED = [i for i in range(len(FORMS)) if f"d{i}" in SAFE]


@pytest.mark.parametrize("forms", [pytest.param(CAPTURED[::7], id="every-7th"),
                                   pytest.param(CAPTURED, id="all", marks=pytest.mark.slow)])
def test_every_capture_form_runs_in_the_cta_loop_as_the_h100(forms):
    """Every captured form (f16/bf16/tf32/e4m3/e5m2/s8/u8/b1, f32/f16/s32 accumulators, A from registers or
    shared memory, transposes, canonical and random descriptors, special values) on the fast engine: the
    H100's accumulator registers; everything but the .b1 forms (left to the executor) in the loop."""
    bad, slow = [], []
    for i in forms:
        got, prog = _capture(i, "fast")
        if not (got == SAFE[f"d{i}"][:1]).all():
            bad.append(FORMS[i]["spelling"])
        back = [k for k in handback_counts(prog) if k.startswith("wgmma")]
        if back and "b1" not in FORMS[i]["spelling"]:
            slow.append((FORMS[i]["spelling"], back))
    assert not bad, bad
    assert not slow, slow


def test_a_wrong_tile_in_the_loop_is_caught():
    """The capture comparison can fail: the loop's fp8 -> f32 cut to 13 fraction bits left out mismatches."""
    i = next(i for i in range(len(FORMS)) if f"d{i}" in SAFE and ".f32.e5m2.e4m3" in FORMS[i]["spelling"])
    from emulator.machine.fastcore import wgmmax
    real = wgmmax.WgProgram.__init__

    def uncut(self, t):
        real(self, t)
        self.ins[:, wgmmax.I_CUT] = 0
    try:
        wgmmax.WgProgram.__init__ = uncut
        got, prog = _capture(i, "fast")
    finally:
        wgmmax.WgProgram.__init__ = real
    assert not (got == SAFE[f"d{i}"][:1]).all()
    assert not handback_counts(prog)


def _capture_unbound(i, monkeypatch, bindable=True):
    """``_capture`` with the tile's fix-ups (families "wg_fix") unbound in the form's translation, as on a cache
    that lacks them; ``bindable`` False: they cannot be bound now either (another process compiles them).
    Returns (D, whether the launch bound them, wgmma hand-backs of this launch)."""
    from emulator.machine.fastcore import families, warmup
    slot = families.APART_SLOT["wg_fix"]
    f = FORMS[i]
    inp = wc.gen.form_inputs(i, f)
    g = GlobalMemory()
    args = [g.upload(inp["img"][:1]), g.upload(inp["desc"][:1]), g.upload(inp["a"][:1]), g.upload(inp["c"][:1])]
    d = g.upload(np.zeros_like(inp["c"][:1]))
    misc = g.upload(np.concatenate([inp["scale_d"][:1], np.zeros(1, np.uint32)]))
    module = load_ptx(wc.gen.ptx(f))
    prog = module.program("wgmma_cap")
    tr = translation(prog)
    tr.mufu_ptr[slot] = 0
    if "wg_fix" in tr.apart:
        tr.apart.remove("wg_fix")
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda name, wait=True: real(name, wait) if bindable or name != "wg_fix"
                        else 0)
    before = sum(v for k, v in handback_counts(prog).items() if k.startswith("wgmma"))
    module.launch("wgmma_cap", grid=(1, 1, 1), block=(128, 1, 1), args=args + [d, misc], gmem=g,
                  shared_bytes=wc.gen.DYN_SMEM, engine="fast")
    monkeypatch.setattr(warmup, "family", real)
    got = g.download(d, inp["c"][:1].nbytes).view(np.uint32).reshape(inp["c"][:1].shape)
    back = sum(v for k, v in handback_counts(prog).items() if k.startswith("wgmma")) - before
    return got, bool(tr.mufu_ptr[slot]), back


def test_the_fixups_are_bound_when_a_tile_first_needs_them(monkeypatch):
    """The float tiles' inf/NaN fix-ups (wgcall.wg_fix) are compiled apart and bound only when a tile needs them:
    captured forms with special values bind them at their first such tile and run it in the loop (the H100's
    bits, nothing handed back), forms of finite values never bind them; and where they cannot be bound now,
    the instruction goes to the reference executor (handed back, the same bits)."""
    floats = [i for i in CAPTURED[::3] if ".f32." in FORMS[i]["spelling"] and "s8" not in FORMS[i]["spelling"]
              and "u8" not in FORMS[i]["spelling"] and "b1" not in FORMS[i]["spelling"]]
    bound, unbound = [], []
    for i in floats:
        got, did, back = _capture_unbound(i, monkeypatch)
        assert (got == SAFE[f"d{i}"][:1]).all(), FORMS[i]["spelling"]
        assert back == 0, FORMS[i]["spelling"]
        (bound if did else unbound).append(i)
        if len(bound) >= 2 and len(unbound) >= 2:
            break
    assert len(bound) >= 2 and len(unbound) >= 2, (len(bound), len(unbound))
    for i in bound:
        got, did, back = _capture_unbound(i, monkeypatch, bindable=False)
        assert (got == SAFE[f"d{i}"][:1]).all(), FORMS[i]["spelling"]
        assert not did and back > 0, FORMS[i]["spelling"]


def test_descriptor_addresses_are_the_references():
    """The loop's operand addresses (wgmmax._addresses) equal ops.wgmma.desc.element_addresses for random
    descriptors: every swizzle and base offset, K- and MN-major, 1-, 2- and 4-byte elements, odd LBO/SBO."""
    from emulator.machine.fastcore.wgmmax import _addresses
    from emulator.ops.wgmma.desc import Descriptor, element_addresses
    rng = np.random.default_rng(7)
    for _ in range(300):
        d = make_descriptor(16 * int(rng.integers(0, 1 << 12)), lbo=16 * int(rng.integers(0, 1 << 10)),
                            sbo=16 * int(rng.integers(0, 1 << 10)), swizzle=int(rng.choice([0, 32, 64, 128])),
                            base_offset=int(rng.integers(0, 8)))
        eb = int(rng.choice([1, 2, 4]))
        mn = bool(rng.random() < 0.5)
        rows, k = int(rng.choice([8, 64, 256])), 32 // eb
        out = np.empty((rows, k), np.int64)
        _addresses(np.int64(np.uint64(d).view(np.int64)), rows, k, eb, mn, out)
        want = element_addresses(Descriptor.decode(d), rows, k, 8 * eb, mn)
        assert (out == want).all(), (hex(d), eb, mn)


def test_operand_bytes_by_chunk_are_the_bytes():
    """wgmmax._count (read counts kept per 16-byte chunk) and _read (16- and 32-bit elements read whole) equal the
    byte-by-byte rule for random descriptors of the legal forms: A (64 rows) and B (8 to 256 rows) of 1-, 2- or
    4-byte elements, K-major, or MN-major for the 16-bit types; every swizzle and base offset; A and B may
    overlap (each byte counted once)."""
    from numba import njit
    from emulator.machine.fastcore.wgmmax import _addresses, _count as count_, _read as read_

    @njit
    def _count(reads, stamp, sv, addr, eb, delta, mn):   # (INNER helpers: called from jitted code only)
        count_(reads, stamp, sv, addr, eb, delta, mn)

    @njit
    def _read(smem, addr, eb, out):
        read_(smem, addr, eb, out)
    rng = np.random.default_rng(11)
    for _ in range(200):
        eb = int(rng.choice([1, 2, 4]))
        k = 32 // eb
        ops = []
        for rows in (64, int(rng.choice([8, 64, 128, 256]))):
            mn = eb == 2 and bool(rng.random() < 0.5)
            d = make_descriptor(16 * int(rng.integers(0, 64)), lbo=16 * int(rng.integers(0, 1 << 7)),
                                sbo=16 * int(rng.integers(0, 1 << 7)), swizzle=int(rng.choice([0, 32, 64, 128])),
                                base_offset=int(rng.integers(0, 8)))
            addr = np.empty((rows, k), np.int64)
            _addresses(np.int64(np.uint64(d).view(np.int64)), rows, k, eb, mn, addr)
            ops.append((addr, mn))
        size = max(int(a.max()) for a, _ in ops) + 64
        smem = rng.integers(0, 256, size, dtype=np.uint8)
        union = np.union1d(*[(a[..., None] + np.arange(eb)).reshape(-1) for a, _ in ops])
        want = np.zeros(size, np.int32)
        want[union] += 3
        reads = np.zeros(size, np.int32)
        stamp = np.zeros(size, np.int64)
        for a, mn in ops:
            _count(reads, stamp, np.int64(5), a, np.int64(eb), np.int64(3), mn)
            got = np.empty(a.shape, np.uint64)
            _read(smem, a, np.int64(eb), got)
            byte = smem[a[..., None] + np.arange(eb)].astype(np.uint64) << (8 * np.arange(eb, dtype=np.uint64))
            assert (got == np.bitwise_or.reduce(byte, axis=-1)).all(), eb
        assert (reads == want).all(), (eb, np.flatnonzero(reads != want)[:8])
        for a, mn in ops:                           # the instruction's retirement: every count back to 0
            _count(reads, stamp, np.int64(6), a, np.int64(eb), np.int64(-3), mn)
        assert not reads.any()


SM90A = sorted(n for n, c in corpus_lib.load_all().items() if "wgmma" in c["ptx"] and n.endswith("sm90a"))
# a sample by default (every type, one and two warpgroups, stmatrix); the rest, and the kernels with mbarriers,
# bulk copies, clusters or calls (which keep the Python scheduler and the executors), under -m slow
QUICK = ("triton_matmul_f16_w8_sm90a", "cute_wgmma_tn_sm90a", "triton_matmul_tf32_64x64_sm90a",
         "triton_matmul_int8_64x64_sm90a", "triton_matmul_fp8e4_64x64_sm90a",
         "triton_scaled_dot_e4m3_e5m2_sb_64x64x128_ca_sm90a")
SM90A = [n if n in QUICK else pytest.param(n, marks=pytest.mark.slow) for n in SM90A]


@pytest.mark.parametrize("name", SM90A)
def test_corpus_wgmma_kernels_on_both_engines(name, monkeypatch):
    """The sm_90a corpus kernels with wgmma: both engines give the H100's outputs, the same instruction count
    and notes; where the CTA loop runs the CTA no wgmma instruction goes back to the executors."""
    from emulator.machine import cta as cta_mod
    case = corpus_lib.load_all()[name]
    count = collections.Counter()
    real = cta_mod.CTA._step

    def step(cta, w, p, mask, together):
        count[cta.prog.code[p].kind if cta.prog.code[p].kind != "op" else cta.prog.code[p].instr.base] += 1
        return real(cta, w, p, mask, together)
    monkeypatch.setattr(cta_mod.CTA, "_step", step)
    out = {}
    for engine in ("reference", "fast"):
        count.clear()
        got, res, text = corpus_lib.replay(case, engine=engine)
        assert corpus_lib.mismatches(case, got) == [], engine
        out[engine] = (res.instructions, list(res.notes), text)
    assert out["reference"] == out["fast"]
    if translation(load_ptx(case["ptx"]).program(case["config"]["kernel"])).cta_ok:
        assert not count["wgmma"], count


# ---------------------------------------------------------------------------------------------------------
# random wgmma programs

# (spelling without the shape, K, A/B element bytes, D registers per 8 columns, float, can transpose)
TYPES = [
    ("f32.f16.f16", 16, 2, 4, True, True), ("f16.f16.f16", 16, 2, 2, True, True),
    ("f32.bf16.bf16", 16, 2, 4, True, True), ("f32.tf32.tf32", 8, 4, 4, True, False),
    ("f32.e4m3.e5m2", 32, 1, 4, True, False), ("f16.e5m2.e4m3", 32, 1, 2, True, False),
    ("f32.e4m3.e4m3", 32, 1, 4, True, False), ("s32.s8.u8", 32, 1, 4, False, False),
    ("satfinite.s32.u8.s8", 32, 1, 4, False, False), ("s32.s8.s8", 32, 1, 4, False, False),
]
SMEM = 16384


def _desc(rng, rows, k_bytes, mn_major, eb, far=False):
    """A random descriptor whose reads stay inside shared memory (``far``: may leave it)."""
    sw = int(rng.choice([0, 32, 64, 128]))
    bo = int(rng.integers(0, 8)) if sw and rng.random() < 0.3 else 0
    if not mn_major:
        sbo = int(rng.choice([128, 256, 512, 1024])) if sw == 0 else 8 * sw * int(rng.integers(1, 3))
        lbo = int(rng.choice([16, 128 * (rows // 8), 256, 2048])) if sw == 0 else int(rng.choice([16, 1024]))
    else:
        sbo = int(rng.choice([128, 256, 512])) if sw == 0 else 8 * sw * int(rng.integers(1, 3))
        lbo = int(rng.choice([128 * max(1, rows * eb // 16), 1024, 2048])) if sw == 0 else int(rng.choice([1024, 2048]))
    start = 16 * int(rng.integers(0, 96))
    if far:
        start = SMEM - 16 * int(rng.integers(1, 32))
    return make_descriptor(start, lbo=lbo, sbo=sbo, swizzle=sw, base_offset=bo)


def _mma(rng, bank, st):
    """One wgmma.mma_async of a random form onto accumulator bank ``bank``; st: the kernel's state."""
    if not st or rng.random() < 0.03:      # (another shape onto registers in flight: an error)
        st[0] = TYPES[int(rng.integers(0, len(TYPES)))], int(rng.choice([8, 16, 24, 32]))
    (sp, K, eb, per8, flt, trans), n = st[0]
    nd = n // 8 * per8
    d = "{" + ", ".join(f"%c{bank}_{i}" for i in range(nd)) + "}"
    rs = rng.random() < 0.35 and not (eb == 4 and False)
    ta = int(trans and not rs and rng.random() < 0.4)
    tb = int(trans and rng.random() < 0.4)
    far = rng.random() < 0.015
    dA = _desc(rng, 64, K * eb, bool(ta), eb, far)
    dB = _desc(rng, n, K * eb, bool(tb), eb)
    lines = [f"mov.b64 %da, {dA};", f"mov.b64 %db, {dB};"]
    a = "{%a0, %a1, %a2, %a3}" if rs else "%da"
    r = rng.random()
    sd = "1" if r < 0.55 else ("0" if r < 0.65 else ("%psd" if r < 0.85 else "!%psd"))
    ops = [d, a, "%db", sd]
    if flt:
        ops += [str(int(rng.choice([1, -1]))), str(int(rng.choice([1, -1])))]
        if trans:
            ops += ([str(ta)] if not rs else []) + [str(tb)]
    lines.append(f"wgmma.mma_async.sync.aligned.m64n{n}k{K}.{sp} {', '.join(ops)};")
    return lines


def wgmma_kernel(rng, nsteps=10):
    """A random wgmma program for 128 or 256 threads: shared memory and A registers from random global bytes,
    accumulators from random bits; fences, mma_async, commit/wait of random depth, and now and then what
    ptxas repairs (a missing fence, a register written after it, an accumulator touched in flight), a store
    into the bytes a wgmma reads, or a warp that skips a wgmma; every accumulator stored at the end."""
    st = {}
    body = ["wgmma.fence.sync.aligned;"] if rng.random() < 0.92 else []
    pending = 0
    for _ in range(nsteps):
        r = rng.random()
        bank = int(rng.integers(0, 2))
        if r < 0.45:
            body += _mma(rng, bank, st)
            pending += 1
        elif r < 0.6:
            body.append("wgmma.commit_group.sync.aligned;")
        elif r < 0.72:
            body.append(f"wgmma.wait_group.sync.aligned {int(rng.integers(0, 3))};")
        elif r < 0.8:
            body.append("wgmma.fence.sync.aligned;")
        elif r < 0.85:
            body.append(f"add.u32 %c{bank}_1, %c{bank}_1, 1;")                 # a touch in flight / after the fence
        elif r < 0.88:
            body.append(f"mov.u32 %c{bank}_0, %a0;")
        elif r < 0.91:
            body.append(f"st.shared.u32 [%sw+{4 * int(rng.integers(0, 64))}], %a1;")   # beside or into A/B
        elif r < 0.93:
            k = len(body)
            body += ["setp.eq.u32 %pw, %w, 1;", f"@%pw bra SKIP{k};"]
            body += _mma(rng, bank, st)
            body.append(f"SKIP{k}:")
        elif r < 0.96:
            body.append("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%sm], {%c0_0, %c0_1};")
        else:
            body.append("bar.sync 0;")
    body += ["wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;"]
    decl = "\n    ".join(f".reg .b32 %c{b}_<32>;" for b in range(2))
    init = "\n    ".join(f"ld.global.u32 %c{b}_{i}, [%gi+{4 * (32 * b + i)}];" for b in range(2) for i in range(32))
    store = "\n    ".join(f"st.global.u32 [%go+{4 * (32 * b + i)}], %c{b}_{i};" for b in range(2) for i in range(32))
    return f"""
.version 8.5
.target sm_90a
.address_size 64
.shared .align 1024 .b8 smem[{SMEM}];
.visible .entry k(.param .u64 pimg, .param .u64 pin, .param .u64 pout)
{{
    .reg .b64 %gi, %go, %gimg, %da, %db, %t64;
    .reg .b32 %t, %w, %sw, %sm, %i, %step, %v<4>, %a<4>;
    .reg .pred %psd, %pw, %pl;
    {decl}
    ld.param.u64 %gimg, [pimg];
    ld.param.u64 %gi, [pin];
    ld.param.u64 %go, [pout];
    mov.u32 %t, %tid.x;
    shr.u32 %w, %t, 5;
    mul.wide.u32 %t64, %t, 256;
    add.s64 %gi, %gi, %t64;
    add.s64 %go, %go, %t64;
    mov.u32 %sw, smem;
    mov.u32 %step, %ntid.x;
    shl.b32 %step, %step, 4;
    mov.u32 %i, 0;
FILL:
    shl.b32 %v0, %t, 4;
    add.u32 %v0, %v0, %i;
    cvt.u64.u32 %t64, %v0;
    add.s64 %t64, %t64, %gimg;
    ld.global.v4.u32 {{%v0, %v1, %v2, %v3}}, [%t64];
    shl.b32 %a0, %t, 4;
    add.u32 %a0, %a0, %i;
    add.u32 %a0, %a0, %sw;
    st.shared.v4.u32 [%a0], {{%v0, %v1, %v2, %v3}};
    add.u32 %i, %i, %step;
    setp.lt.u32 %pl, %i, {SMEM};
    @%pl bra FILL;
    bar.sync 0;
    and.b32 %sm, %t, 7;
    shl.b32 %sm, %sm, 4;
    add.u32 %sm, %sm, %sw;
    add.u32 %sm, %sm, 12288;
    {init}
    ld.global.v4.u32 {{%a0, %a1, %a2, %a3}}, [%gi+240];
    and.b32 %v0, %a3, 1;
    setp.ne.u32 %psd, %v0, 0;
    {chr(10).join("    " + b for b in body)}
    {store}
    ret;
}}
"""


def _inputs(rng, nt, uniform_sd):
    img = rng.integers(0, 256, SMEM, dtype=np.uint8)
    words = rng.integers(0, 1 << 32, size=(nt, 64), dtype=np.uint64).astype(np.uint32)
    # keep the floats finite mostly: clear the top exponent bit of most accumulator words and A words
    words[rng.random(words.shape) < 0.8] &= np.uint32(0xBFFFFFFF)
    if uniform_sd:
        words[:, 63] = words[0, 63]                 # scale-d's predicate: the same in every lane
    return [img, words, np.zeros((nt, 64), np.uint32)]


def _outcome(module, nt, arrays, strict):
    kw = dict(options=WarpOptions(wgmma_hazards="error")) if strict else {}
    out = {}
    for engine in ("reference", "fast"):
        g = GlobalMemory()
        addrs = [g.upload(a) for a in arrays]
        try:
            r = module.launch("k", (1, 1, 1), nt, addrs, gmem=g, engine=engine, **kw)
            out[engine] = ("ok", g.download(addrs[2], arrays[2].nbytes).tobytes(), r.instructions, list(r.notes))
        except Exception as e:      # noqa: BLE001 (the engines must raise the same error)
            out[engine] = ("error", type(e).__name__, str(e))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_random_wgmma_programs_are_identical_on_both_engines(seed):
    rng = np.random.default_rng(seed)
    text = wgmma_kernel(rng, int(rng.integers(4, 14)))
    nt = 128 if rng.random() < 0.7 else 256
    module = load_ptx(text, validate=False)
    arrays = _inputs(rng, nt, rng.random() < 0.9)
    for strict in (False, True):
        out = _outcome(module, nt, arrays, strict)
        assert out["reference"] == out["fast"], (strict, out, text)
    full = compare_engines(module, "k", 1, nt, arrays)
    assert not full[2], full[2]


def test_the_random_programs_reach_the_loop_and_the_reference():
    """The random programs run wgmma in the CTA loop, and also hand it over to the reference (hazards,
    errors): the comparison covers both paths."""
    ran_in_loop = handed = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        text = wgmma_kernel(rng, int(rng.integers(4, 14)))
        nt = 128 if rng.random() < 0.7 else 256
        module = load_ptx(text, validate=False)
        arrays = _inputs(rng, nt, rng.random() < 0.9)
        o = launch_outcome(module, "k", 1, nt, arrays, engine="fast")
        back = sum(v for k, v in handback_counts(module.program("k")).items() if k.startswith("wgmma"))
        handed += back > 0
        ran_in_loop += back == 0 and "error" not in o
    assert ran_in_loop >= 5 and handed >= 10, (ran_in_loop, handed)


def test_a_wrong_fence_check_is_caught(monkeypatch):
    """The engine comparison can fail: a CTA loop whose fence keeps the wrong registers' values sees registers
    written after the fence where none were, and the reference then notes them: the notes differ."""
    text = wgmma_kernel(np.random.default_rng(0), 0).replace(
        "wgmma.commit_group.sync.aligned;\n", "mov.b64 %da, 0; mov.b64 %db, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%c0_0, %c0_1, %c0_2, %c0_3}, %da, %db, 1, 1, 1, 0, 0;\n"
        "wgmma.commit_group.sync.aligned;\n", 1)
    if "wgmma.fence" not in text:
        text = text.replace("mov.b64 %da, 0;", "wgmma.fence.sync.aligned; mov.b64 %da, 0;")
    arrays = _inputs(np.random.default_rng(1), 128, True)
    out = _outcome(load_ptx(text), 128, arrays, False)
    assert out["reference"] == out["fast"] and out["fast"][0] == "ok" and not out["fast"][3], out
    from emulator.machine.fastcore import wgmmax
    real = wgmmax.WgProgram.__init__

    def blind(self, t):
        real(self, t)
        self.wgr[:] = self.wgr[-1]
    monkeypatch.setattr(wgmmax.WgProgram, "__init__", blind)
    out = _outcome(load_ptx(text), 128, arrays, False)
    assert out["reference"] != out["fast"] and out["fast"][3], out


# ---------------------------------------------------------------------------------------------------------
# the CTAs of a launch reuse the CTA loop's wgmma tables

def test_the_ctas_of_a_launch_reuse_the_wgmma_tables(monkeypatch):
    """Triton's 8-warp wgmma matmul on 2 x 2 CTAs: each CTA after the first takes the tables (records,
    counters, control row) of the one before, reset to their starting values. Garbage left in them between
    CTAs changes nothing: the bytes, instruction counts and notes equal the reference's."""
    from emulator.machine.fastcore import wgmmax
    case = corpus_lib.load_all()["triton_matmul_f16_w8_sm90a"]
    M = N = 128
    K = 64
    rng = np.random.default_rng(5)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    tables = []
    real_init, real_end = wgmmax.WgTable.__init__, wgmmax.WgTable.end_check

    def init(self, *a, **k):
        real_init(self, *a, **k)
        tables.append((id(self.rec), id(self.ctl)))

    def end_check(self, cta):
        real_end(self, cta)
        if self.pool is not None and any(v[0] is self.rec for v in self.pool.values()):
            for arr in (self.rec, self.cnt, self.exp, self.known, self.log, self.loglen):
                arr[...] = 7                            # what a missing reset would leave to the next CTA
            self.ctl[wgmmax.K_NREAD] = 3                # (a count: the pointers stay valid)
    monkeypatch.setattr(wgmmax.WgTable, "__init__", init)
    monkeypatch.setattr(wgmmax.WgTable, "end_check", end_check)
    module = load_ptx(case["ptx"])
    out = {}
    for engine in ("reference", "fast"):
        tables.clear()
        g = GlobalMemory()
        a, b, c = g.upload(A), g.upload(B), g.upload(np.zeros((M, N), np.float16))
        r = module.launch("matmul_kernel", (M // 64, N // 64, 1), 256, [a, b, c, M, N, K, K, N, N, 0, 0], gmem=g,
                          shared_bytes=24576, engine=engine)
        out[engine] = (g.download(c, M * N * 2).tobytes(), r.instructions, list(r.notes))
        if engine == "fast":
            assert len(tables) == 4 and len(set(tables)) == 1, tables
    assert out["reference"] == out["fast"]
    want = (A.astype(np.float32) @ B.astype(np.float32))
    got = np.frombuffer(out["fast"][0], np.float16).reshape(M, N).astype(np.float32)
    assert np.allclose(got, want, atol=0.05, rtol=0.01)        # (a sanity check; the engines agree bit for bit)
