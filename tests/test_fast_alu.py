"""The fast engine's 32- and 64-bit ALU rows (``fastcore/alu.py``: ``_fast32``, ``_fast64`` and ``entry_f32``'s
plain copies), the loop's guard read and its store order against the reference executors, bit for bit.

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
