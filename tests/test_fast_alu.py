"""The fast engine's ALU rows (``fastcore/alu.py``: the "alu", "alu_x" and "alu_f32" families), the loop's guard
read and its store order against the reference executors, bit for bit.

Every form (``setp`` of each integer and float code, signed and unsigned, ``selp``, shifts by 0..40, ``mad.lo``,
``not``, the binary32 arithmetic, the 64-bit address arithmetic, ``mul.wide``/``mad.wide``, ``cvt`` between 32
and 64 bits) runs with registers and immediates as operands, over special values (signed zeros, infinities,
NaNs, the integer extremes) and random bits, on full warps and under a guard that leaves lanes out; a second
destination of ``setp``; stores of every vector width (``spaces.store_order``)."""
import numpy as np
import pytest

from emulator import load_ptx
from engines import compare_engines

SPECIAL = np.array([0, 1, 2, 31, 32, 33, 40, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x80000001, 0x3F800000, 0xBF800000,
                    0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x00000001, 0x807FFFFF], np.uint32)
ICODES = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
FCODES = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


def _body():
    out = []
    k = 0

    def put(ins, dst="%r9"):
        nonlocal k
        out.append(ins)
        t = "f32" if dst.startswith("%f") else ("u64" if dst.startswith("%rd") else "u32")
        out.append(f"st.global.{t} [%rd3+{8 * k}], {dst};")
        k += 1

    def pred(ins):
        put(f"{ins} selp.u32 %r9, 1, 0, %p1; selp.u32 %r8, 1, 0, %p2; add.u32 %r9, %r9, %r8; shl.b32 %r8, %r8, 1; "
            "or.b32 %r9, %r9, %r8;")
    for c in ICODES:
        for t in ("u32", "s32", "b32"):
            if (t == "b32" and c not in ("eq", "ne")) or (t == "s32" and c in ("lo", "ls", "hi", "hs")):
                continue
            pred(f"setp.{c}.{t} %p1, %r1, %r2;")
            pred(f"setp.{c}.{t} %p1|%p2, %r2, -7;")
            pred(f"@%p3 setp.{c}.{t} %p1, 5, %r1;")
    for c in FCODES:
        pred(f"setp.{c}.f32 %p1, %f1, %f2;")
        pred(f"setp.{c}.f32 %p1|%p2, %f2, 0f3F800000;")
        pred(f"@!%p3 setp.{c}.f32 %p1, 0fFF800000, %f1;")
    for c in ("lt", "ge", "ne", "hs"):          # the boolean operators and 64-bit operands (SETP's truth table)
        pred(f"setp.{c}.and.{'u' if c == 'hs' else 's'}32 %p1|%p2, %r1, %r2, %p3;")
        pred(f"setp.{c}.or.{'u' if c == 'hs' else 's'}64 %p1|%p2, %rd4, %rd1, !%p4;")
        pred(f"setp.{c}.xor.{'u' if c == 'hs' else 's'}64 %p1, %rd4, -2, %p3;")
    for c in ("ltu", "ge", "num", "nan"):
        pred(f"setp.{c}.and.f32 %p1|%p2, %f1, %f2, !%p3;")
    for ins in ("selp.b32 %r9, %r1, %r2, %p3;", "selp.s32 %r9, %r1, -3, %p3;", "@%p3 selp.u32 %r9, 9, %r2, %p4;",
                "shl.b32 %r9, %r1, %r2;", "shl.b32 %r9, %r1, 31;", "shr.u32 %r9, %r1, %r2;", "shr.s32 %r9, %r1, %r2;",
                "shr.b32 %r9, %r1, 33;", "@%p4 shl.b32 %r9, %r2, %r1;",
                "add.u32 %r9, %r1, %r2;", "add.s32 %r9, %r1, -1;", "sub.s32 %r9, %r1, %r2;", "sub.u32 %r9, 3, %r2;",
                "mul.lo.u32 %r9, %r1, %r2;", "mul.lo.s32 %r9, %r1, -5;", "mad.lo.s32 %r9, %r1, %r2, %r1;",
                "mad.lo.u32 %r9, %r1, 7, 11;", "and.b32 %r9, %r1, %r2;", "or.b32 %r9, %r1, 0xF0F0;",
                "xor.b32 %r9, %r1, %r2;", "not.b32 %r9, %r1;", "mov.u32 %r9, %r2;", "mov.b32 %r9, 0xDEADBEEF;",
                "@!%p4 mov.u32 %r9, %r1;", "@%p3 add.u32 %r9, %r9, %r2;",
                "add.f32 %f9, %f1, %f2;", "sub.f32 %f9, %f1, 0f3F800000;", "mul.f32 %f9, %f1, %f2;",
                "fma.rn.f32 %f9, %f1, %f2, %f1;", "@%p3 mul.rn.f32 %f9, %f2, 0fC0000000;",
                "cvt.rna.tf32.f32 %r9, %r1;",
                "add.s64 %rd5, %rd4, %rd1;", "sub.u64 %rd5, %rd4, 77;", "mul.lo.u64 %rd5, %rd4, %rd4;",
                "and.b64 %rd5, %rd4, %rd1;", "or.b64 %rd5, %rd4, 0xFF00;", "xor.b64 %rd5, %rd4, %rd2;",
                "mov.b64 %rd5, %rd4;", "mov.u64 %rd5, -9;", "shl.b64 %rd5, %rd4, %r2;", "shl.b64 %rd5, %rd4, 63;",
                "shr.u64 %rd5, %rd4, %r2;", "shr.s64 %rd5, %rd4, %r2;", "@%p3 add.u64 %rd5, %rd5, %rd4;",
                "mul.wide.s32 %rd5, %r1, %r2;", "mul.wide.u32 %rd5, %r1, %r2;", "mul.wide.s32 %rd5, %r1, -3;",
                "mad.wide.s32 %rd5, %r1, %r2, %rd4;", "mad.wide.u32 %rd5, %r1, 5, %rd4;",
                "@!%p4 mul.wide.u32 %rd5, %r2, %r1;", "cvt.s64.s32 %rd5, %r1;", "cvt.u64.u32 %rd5, %r1;",
                "cvt.u64.s32 %rd5, %r2;", "cvt.s64.u32 %rd5, %r2;", "@%p3 cvt.s64.s32 %rd5, %r2;"):
        dst = "%f9" if "%f9" in ins else ("%rd5" if "%rd5," in ins else "%r9")
        put(ins, dst)
    for ins in ("cvt.u32.u64 %r9, %rd4;", "cvt.s32.s64 %r9, %rd4;", "cvt.u32.s64 %r9, %rd4;"):
        dst = "%r9"
        put(ins, dst)
    return out, k


BODY, NOUT = _body()
KERNEL = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{
    .reg .pred %p<5>;
    .reg .b32 %r<10>;
    .reg .f32 %f<10>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [pin];
    ld.param.u64 %rd2, [pout];
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd4, %r3, 16;
    add.s64 %rd1, %rd1, %rd4;
    mul.wide.u32 %rd4, %r3, NOUT8;
    add.s64 %rd3, %rd2, %rd4;
    ld.global.u32 %r1, [%rd1];
    ld.global.u32 %r2, [%rd1+4];
    ld.global.u32 %r4, [%rd1+8];
    mov.b32 %f1, %r1;
    mov.b32 %f2, %r2;
    setp.ne.u32 %p3, %r4, 0;
    and.b32 %r5, %r4, 2;
    setp.eq.u32 %p4, %r5, 0;
    mov.u32 %r9, 0;
    mov.f32 %f9, 0f00000000;
    mov.b64 %rd4, {%r1, %r2};
    mov.u64 %rd5, 0;
    BODY
    ret;
}
""".replace("NOUT8", str(8 * NOUT)).replace("BODY", "\n    ".join(BODY))


def _inputs(seed, nthreads):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 32, size=(nthreads, 4), dtype=np.uint64).astype(np.uint32)
    pick = rng.random((nthreads, 2)) < 0.6
    a[:, :2][pick] = rng.choice(SPECIAL, size=int(pick.sum()))
    a[:, 2] = rng.integers(0, 4, size=nthreads)
    return [a, np.zeros((nthreads, 2 * NOUT), np.uint32)]


@pytest.mark.parametrize("seed,nthreads", [(0, 32), (1, 64), (2, 48)])
def test_alu32_rows_are_identical_on_both_engines(seed, nthreads):
    ref, fast, diffs = compare_engines(load_ptx(KERNEL), "k", 1, nthreads, _inputs(seed, nthreads))
    assert not diffs, diffs
    assert "error" not in ref
    assert fast["fast_executed"] > 0


def test_every_comparison_reaches_the_fast_rows():
    """The kernel's rows are the fast engine's (none handed back), so the comparison above tests them."""
    from emulator import GlobalMemory
    from emulator.machine.fastcore import engine
    m = load_ptx(KERNEL)
    g = GlobalMemory()
    ins = _inputs(0, 32)
    a, o = g.upload(ins[0]), g.upload(ins[1])
    m.launch("k", 1, 32, [a, o], gmem=g, engine="fast")
    assert engine.handback_counts(m.program("k")) == {}


STORES = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pout)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    .reg .b16 %h<3>;
    ld.param.u64 %rd1, [pout];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 3;
    mul.wide.u32 %rd2, %r2, 32;
    add.s64 %rd3, %rd1, %rd2;
    add.u32 %r3, %r1, 100;
    add.u32 %r4, %r1, 200;
    add.u32 %r5, %r1, 300;
    cvt.u16.u32 %h1, %r1;
    st.global.u8 [%rd3], %r1;
    st.global.u16 [%rd3+2], %h1;
    st.global.u32 [%rd3+4], %r1;
    st.global.v2.u32 [%rd3+8], {%r1, %r3};
    st.global.v4.u32 [%rd3+16], {%r1, %r3, %r4, %r5};
    ret;
}
"""


def test_stores_of_every_width_keep_the_reference_order():
    """Lanes storing to the same bytes: the last lane of each phase wins, as ``spaces.store_order`` says."""
    ref, fast, diffs = compare_engines(load_ptx(STORES), "k", 1, 32, [np.zeros(32, np.uint32)])
    assert not diffs, diffs
    assert "error" not in ref


def _rare_body():
    """The integer rows of the "alu_x" family (mul.hi, mad.hi, not, neg, abs, min, max, prmt, mov unpack) and the
    16- and 64-bit forms of both integer families, each result stored as 64 bits."""
    out = []
    k = 0

    def put(ins, dst):
        nonlocal k
        out.append(ins)
        if dst.startswith("%p"):
            out.append(f"selp.u64 %rd9, 1, 0, {dst}; st.global.u64 [%rd3+{8 * k}], %rd9;")
        elif dst.startswith("%h"):
            out.append(f"cvt.u64.u16 %rd9, {dst}; st.global.u64 [%rd3+{8 * k}], %rd9;")
        elif dst.startswith("%rd"):
            out.append(f"st.global.u64 [%rd3+{8 * k}], {dst};")
        else:
            out.append(f"cvt.u64.u32 %rd9, {dst}; st.global.u64 [%rd3+{8 * k}], %rd9;")
        k += 1
    for t, a, b, c, d in (("32", "%r1", "%r2", "%r4", "%r9"), ("64", "%rd4", "%rd1", "%rd6", "%rd5"),
                          ("16", "%h1", "%h2", "%h3", "%h9")):
        for s in ("u", "s"):
            put(f"mul.hi.{s}{t} {d}, {a}, {b};", d)
            put(f"mul.hi.{s}{t} {d}, {a}, -3;", d)
            put(f"mad.hi.{s}{t} {d}, {a}, {b}, {c};", d)
            put(f"min.{s}{t} {d}, {a}, {b};", d)
            put(f"max.{s}{t} {d}, {a}, -5;", d)
            put(f"@%p3 min.{s}{t} {d}, 7, {b};", d)
            put(f"shr.{s}{t} {d}, {a}, %r2;", d)
            put(f"shr.{s}{t} {d}, {a}, {int(t) - 1};", d)
            put(f"mul.lo.{s}{t} {d}, {a}, {b};", d)
            put(f"mad.lo.{s}{t} {d}, {a}, {b}, {c};", d)
            put(f"setp.lt.{s}{t} %p1, {a}, {b};", "%p1")
            put(f"setp.ge.and.{s}{t} %p1|%p2, {a}, -2, !%p3;", "%p2")
            put(f"bfe.{s}{t} {d}, {a}, %r2, %r4;" if t != "16" else f"add.{s}{t} {d}, {a}, {b};", d)
        put(f"neg.s{t} {d}, {a};", d)
        put(f"abs.s{t} {d}, {a};", d)
        put(f"@!%p4 abs.s{t} {d}, {b};", d)
        put(f"not.b{t} {d}, {a};", d)
        put(f"sub.s{t} {d}, {a}, {b};", d)
        put(f"xor.b{t} {d}, {a}, {b};", d)
        put(f"selp.b{t} {d}, {a}, {b}, %p3;", d)
    for ins, d in (("prmt.b32 %r9, %r1, %r2, %r4;", "%r9"), ("prmt.b32 %r9, %r1, %r2, 0x7531;", "%r9"),
                   ("prmt.b32 %r9, %r1, 0x80FF7F01, 0xC840;", "%r9"), ("@%p3 prmt.b32 %r9, %r2, %r1, %r4;", "%r9"),
                   ("not.pred %p1, %p3;", "%p1"), ("@%p4 not.pred %p1, %p3;", "%p1"),
                   ("mul.wide.s16 %r9, %h1, %h2;", "%r9"), ("mad.wide.u16 %r9, %h1, %h2, %r1;", "%r9"),
                   ("cvt.s16.s32 %h9, %r1;", "%h9"), ("cvt.s32.s16 %r9, %h1;", "%r9"), ("cvt.u64.u16 %rd5, %h2;", "%rd5"),
                   ("mov.b64 {%h5, %h6, %h7, %h8}, %rd4;", "%h7"), ("mov.b64 {%h5, %h6, %h7, %h8}, %rd1;", "%h8")):
        put(ins, d)
    return out, k


RARE, NRARE = _rare_body()
RARE_KERNEL = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{
    .reg .pred %p<5>;
    .reg .b32 %r<10>;
    .reg .b16 %h<10>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [pin];
    ld.param.u64 %rd2, [pout];
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd4, %r3, 16;
    add.s64 %rd1, %rd1, %rd4;
    mul.wide.u32 %rd4, %r3, NOUT8;
    add.s64 %rd3, %rd2, %rd4;
    ld.global.u32 %r1, [%rd1];
    ld.global.u32 %r2, [%rd1+4];
    ld.global.u32 %r4, [%rd1+8];
    ld.global.u32 %r5, [%rd1+12];
    setp.ne.u32 %p3, %r4, 0;
    and.b32 %r6, %r4, 2;
    setp.eq.u32 %p4, %r6, 0;
    and.b32 %r4, %r5, 0x3F3F3F3F;
    mov.b64 %rd4, {%r1, %r2};
    mov.b64 %rd6, {%r5, %r1};
    cvt.u64.u32 %rd1, %r2;
    mul.lo.u64 %rd1, %rd1, 0x9E3779B97F4A7C15;
    mov.b32 {%h1, %h2}, %r1;
    mov.b32 {%h3, %h4}, %r5;
    mov.u32 %r9, 0;
    mov.u16 %h9, 0;
    mov.u64 %rd5, 0;
    BODY
    ret;
}
""".replace("NOUT8", str(8 * NRARE)).replace("BODY", "\n    ".join(RARE))


def _rare_inputs(seed, nthreads):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 32, size=(nthreads, 4), dtype=np.uint64).astype(np.uint32)
    pick = rng.random((nthreads, 4)) < 0.5
    a[pick] = rng.choice(SPECIAL, size=int(pick.sum()))
    return [a, np.zeros((nthreads, NRARE), np.uint64)]


@pytest.mark.parametrize("seed,nthreads", [(3, 32), (4, 48)])
def test_rare_and_narrow_integer_rows_are_identical_on_both_engines(seed, nthreads):
    ref, fast, diffs = compare_engines(load_ptx(RARE_KERNEL), "k", 1, nthreads, _rare_inputs(seed, nthreads))
    assert not diffs, diffs
    assert "error" not in ref
    assert fast["fast_executed"] > 0


def test_rare_integer_rows_run_in_their_family():
    """The rows above are the fast engine's (none handed back), "alu_x" among the kernel's families."""
    from emulator import GlobalMemory
    from emulator.machine.fastcore import engine
    m = load_ptx(RARE_KERNEL)
    g = GlobalMemory()
    ins = _rare_inputs(0, 32)
    a, o = g.upload(ins[0]), g.upload(ins[1])
    m.launch("k", 1, 32, [a, o], gmem=g, engine="fast")
    assert engine.handback_counts(m.program("k")) == {}
    assert {"alu", "alu_x"} <= set(engine.translation(m.program("k")).families)
