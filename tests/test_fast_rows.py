"""The fast engine's common rows against the reference executors, byte for byte: loads and stores of every width
(global, shared, generic; two allocations; lanes storing to the same bytes; misaligned and out-of-range lanes,
predicated-off lanes, partial warps), the bit rows lop3/prmt/shf/bfi, the f16/bf16 conversions and barriers."""
import numpy as np
import pytest
from numba import njit

from emulator import load_ptx
from emulator.machine.fastcore import engine, fmath
from engines import compare_engines

OUT = 512           # bytes of the first allocation the lanes address (16-byte slots)
OTHER = 1024        # bytes of the second (32-byte slots)
SMEM = 512          # bytes of shared memory (16-byte slots)

LDST = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout, .param .u64 pb, .param .u64 pres)
{
    .reg .pred %p<4>;
    .reg .b32 %r<40>;
    .reg .b64 %rd<30>;
    .reg .b16 %h<4>;
    .reg .f32 %f<4>;
    .shared .align 16 .b8 sm[SMEM];
    ld.param.u64 %rd1, [pin];
    ld.param.u64 %rd2, [pout];
    ld.param.u64 %rd3, [pb];
    ld.param.u64 %rd4, [pres];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd5, %r1, 32;
    add.s64 %rd6, %rd1, %rd5;
    ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd6];
    ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd6+16];
    setp.ne.u32 %p1, %r4, 0;
    cvt.u64.u32 %rd7, %r2;
    add.s64 %rd8, %rd2, %rd7;
    cvt.u64.u32 %rd9, %r5;
    add.s64 %rd10, %rd3, %rd9;
    mov.u32 %r10, sm;
    add.u32 %r11, %r10, %r3;
    cvt.u64.u32 %rd11, %r11;
    cvta.shared.u64 %rd12, %rd11;
    mul.wide.u32 %rd13, %r1, 64;
    add.s64 %rd14, %rd4, %rd13;
    cvt.u16.u32 %h1, %r7;
    mov.b64 %rd15, {%r8, %r9};
    @%p1 st.global.v4.u32 [%rd8], {%r6, %r7, %r8, %r9};
    @%p1 st.shared.v4.u32 [%r11], {%r9, %r8, %r7, %r6};
    @!%p1 st.shared.v2.u32 [%r11+8], {%r6, %r7};
    @%p1 st.global.u8 [%rd10+1], %r6;
    @!%p1 st.global.u16 [%rd10+2], %h1;
    st.global.v2.u64 [%rd10+16], {%rd15, %rd7};
    bar.sync 0;
    ld.shared.v2.u32 {%r12, %r13}, [%r11+8];
    ld.shared.s8 %r14, [%r11+3];
    ld.shared.u16 %h2, [%r11+6];
    ld.global.v2.u32 {%r15, %r16}, [%rd10];
    ld.global.u64 %rd16, [%rd10+8];
    ld.s16 %r17, [%rd12+2];
    ld.u32 %r18, [%rd8+4];
    @%p1 ld.global.f32 %f1, [%rd10+4];
    @!%p1 ld.global.f32 %f1, [%rd8+12];
    st.u32 [%rd12+12], %r15;
    st.shared.u64 [%r11], %rd16;
    st.global.b16 [%rd8+2], %h2;
    st.global.f32 [%rd10+24], %f1;
    bar.sync 0;
    ld.shared.v4.u32 {%r20, %r21, %r22, %r23}, [%r11];
    ld.global.v4.u32 {%r24, %r25, %r26, %r27}, [%rd8];
    mov.b32 %r19, %f1;
    st.global.v4.u32 [%rd14], {%r12, %r13, %r14, %r15};
    st.global.v4.u32 [%rd14+16], {%r16, %r17, %r18, %r19};
    st.global.u16 [%rd14+32], %h2;
    st.global.u64 [%rd14+40], %rd16;
    st.global.v4.u32 [%rd14+48], {%r20, %r21, %r22, %r23};
    st.global.v2.u32 [%rd14+24], {%r24, %r27};
    ret;
}
""".replace("SMEM", str(SMEM))

# a lane's corruption: (column of its input row, value to add); columns: 0 global offset, 1 shared offset, 3 the
# second allocation's offset
BAD = [(0, 1), (0, 2), (0, 4), (0, 8), (0, OUT), (0, 1 << 20), (1, 2), (1, 8), (1, SMEM), (1, SMEM - 8), (3, 4),
       (3, OTHER), (3, 1 << 31)]


def _ldst_inputs(seed, nthreads, bad=None):
    rng = np.random.default_rng(seed)
    a = np.zeros((nthreads, 8), np.uint32)
    a[:, 0] = 16 * rng.integers(0, min(OUT // 16, 6 + seed % 20), nthreads)     # few slots: lanes collide
    a[:, 1] = 16 * rng.integers(0, min(SMEM // 16, 4 + seed % 30), nthreads)
    a[:, 2] = rng.random(nthreads) < 0.7
    a[:, 3] = 32 * rng.integers(0, OTHER // 32, nthreads)
    a[:, 4:] = rng.integers(0, 1 << 32, (nthreads, 4), dtype=np.uint64).astype(np.uint32)
    if bad is not None:
        lane = int(rng.integers(0, nthreads))
        col, add = bad
        a[lane, col] = (int(a[lane, col]) + add) & 0xFFFFFFFF
    return [a, rng.integers(0, 256, OUT, dtype=np.uint8), rng.integers(0, 256, OTHER, dtype=np.uint8),
            np.zeros(nthreads * 16, np.uint32)]


@pytest.mark.parametrize("seed,nthreads", [(s, n) for s, n in zip(range(12), (32, 64, 48, 40, 96, 33) * 2)])
def test_loads_and_stores_are_identical_on_both_engines(seed, nthreads):
    ref, fast, diffs = compare_engines(load_ptx(LDST), "k", 1, nthreads, _ldst_inputs(seed, nthreads))
    assert not diffs, diffs
    assert "error" not in ref, ref["error"]
    assert fast["fast_executed"] > 0


@pytest.mark.parametrize("k", range(len(BAD)))
def test_a_bad_lane_is_the_references_error(k):
    """A misaligned or out-of-range address in one lane (maybe predicated off for some of the accesses): the same
    error (instruction, lane, rule) and the same memory on both engines."""
    for seed in (100 + k, 200 + k):
        nthreads = (32, 48, 64)[seed % 3]
        ref, fast, diffs = compare_engines(load_ptx(LDST), "k", 1, nthreads, _ldst_inputs(seed, nthreads, BAD[k]))
        assert not diffs, diffs
        assert "error" in ref
        name, msg = ref["error"]
        assert "lane" in msg and ("align" in msg or "outside" in msg or "bounds" in msg or "range" in msg), msg


def test_the_loads_and_stores_are_the_loops_rows():
    """No ld/st of the kernel goes back to the reference executors, so the comparisons above test the loop."""
    from emulator import GlobalMemory
    m = load_ptx(LDST)
    g = GlobalMemory()
    addrs = [g.upload(x) for x in _ldst_inputs(0, 64)]
    m.launch("k", 1, 64, addrs, gmem=g, engine="fast")
    assert engine.handback_counts(m.program("k")) == {}


BITS = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{
    .reg .pred %p<4>;
    .reg .b32 %r<80>;
    .reg .b64 %rd<8>;
    .reg .b16 %h<8>;
    .reg .f32 %f<8>;
    ld.param.u64 %rd1, [pin];
    ld.param.u64 %rd2, [pout];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.v4.u32 {%r2, %r3, %r4, %r5}, [%rd4];
    mul.wide.u32 %rd5, %r1, NOUT4;
    add.s64 %rd6, %rd2, %rd5;
    and.b32 %r6, %r5, 1;
    setp.ne.u32 %p1, %r6, 0;
    mov.b32 %f1, %r2;
    mov.b32 %f2, %r3;
    cvt.u16.u32 %h1, %r4;
    shr.u32 %r7, %r4, 16;
    cvt.u16.u32 %h2, %r7;
BODY
    ret;
}
"""


def _bits_body(seed):
    rng = np.random.default_rng(seed)
    lines, out = [], []

    def put(ins, dst):
        lines.append(ins)
        out.append(dst)
    r = 10
    for lut in rng.integers(0, 256, 6).tolist() + [0, 255, 0x96, 0xE8, 0xF0, 0xCA]:
        a, b, c = rng.choice(["%r2", "%r3", "%r4", "%r5", "0x0F0F1234"], 3)
        put(f"lop3.b32 %r{r}, {a}, {b}, {c}, {lut};", f"%r{r}")
        r += 1
    put(f"@%p1 lop3.b32 %r{r}, %r2, %r3, %r4, 0x6A;", f"%r{r}")
    r += 1
    for mode in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"):
        put(f"prmt.b32.{mode} %r{r}, %r2, %r3, %r4;", f"%r{r}")
        r += 1
    put(f"prmt.b32.f4e %r{r}, %r2, %r3, 3;", f"%r{r}")
    r += 1
    for lr in ("l", "r"):
        for mode in ("wrap", "clamp"):
            put(f"shf.{lr}.{mode}.b32 %r{r}, %r2, %r3, %r4;", f"%r{r}")
            r += 1
            put(f"shf.{lr}.{mode}.b32 %r{r}, %r3, %r2, {int(rng.integers(0, 40))};", f"%r{r}")
            r += 1
    put(f"bfi.b32 %r{r}, %r2, %r3, %r4, %r5;", f"%r{r}")
    r += 1
    put(f"bfi.b32 %r{r}, %r3, %r2, {int(rng.integers(0, 34))}, {int(rng.integers(0, 40))};", f"%r{r}")
    r += 1
    put(f"@!%p1 bfi.b32 %r{r}, %r4, %r5, %r2, 7;", f"%r{r}")
    r += 1
    for ty in ("f16", "bf16"):
        put(f"cvt.rn.{ty}.f32 %h3, %f1;", "%h3")
        put(f"cvt.rn.{ty}x2.f32 %r{r}, %f1, %f2;", f"%r{r}")
        r += 1
        put(f"cvt.f32.{ty} %f3, %h1;", "%f3")
        put(f"cvt.f32.{ty} %f4, %h2;", "%f4")
    put("@%p1 cvt.rn.f16x2.f32 %r{0}, %f2, %f1;".format(r), f"%r{r}")
    r += 1
    body, k = [], 0
    for ins, dst in zip(lines, out):        # each result stored at once (a destination may be used again)
        body.append("    " + ins)
        op = "b16" if dst.startswith("%h") else "b32"
        body.append(f"    st.global.{op} [%rd6+{4 * k}], {dst};")
        k += 1
    return "\n".join(body), k


SPECIAL = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x00000001,
                    0x807FFFFF, 0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x38800000, 0x387FFFFF, 0x33000000,
                    0x33000001, 0x33800000, 0xB3000001, 0x3F800000, 0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x00008000,
                    0x3C007C00, 0x7C00FC00, 0x7C01FE00, 0x03FF8001], np.uint32)


def _bits_inputs(seed, nthreads):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 32, (nthreads, 4), dtype=np.uint64).astype(np.uint32)
    pick = rng.random((nthreads, 4)) < 0.5
    a[pick] = rng.choice(SPECIAL, int(pick.sum()))
    small = rng.random(nthreads) < 0.5          # positions and lengths and shift counts around 0..40
    a[small, 4 - 2] = rng.integers(0, 48, int(small.sum()))
    return a


@pytest.mark.parametrize("seed,nthreads", [(0, 32), (1, 64), (2, 48), (3, 40), (4, 96)])
def test_bit_rows_and_half_conversions_are_identical_on_both_engines(seed, nthreads):
    body, n = _bits_body(seed)
    m = load_ptx(BITS.replace("BODY", body).replace("NOUT4", str(4 * n)))
    ref, fast, diffs = compare_engines(m, "k", 1, nthreads, [_bits_inputs(seed, nthreads),
                                                             np.zeros(nthreads * n, np.uint32)])
    assert not diffs, diffs
    assert "error" not in ref, ref["error"]
    assert fast["fast_executed"] > 0
    assert engine.handback_counts(m.program("k")) == {}


@njit(cache=True)
def _both(bits, ref, got):
    for i in range(bits.shape[0]):
        a = bits[i]
        for bf in range(2):
            ref[i, bf] = fmath._round_half(fmath._f64_of(a), 7 if bf else 10, 127 if bf else 15)
            got[i, bf] = fmath.half_bits(a, bf)
        h = a & 0xFFFF
        ref[i, 2] = fmath.fcvt(fmath.CV_F16_F32, 0, False, h, 0)
        got[i, 2] = fmath.f32_of_half(h)


def test_the_direct_roundings_equal_the_readable_ones():
    """fmath.half_bits (f32 -> f16/bf16 on the bits) against _round_half (through binary64), and f32_of_half
    against _f16_value: every f16, every f32 exponent with the mantissas around the rounding points, random bits."""
    rng = np.random.default_rng(5)
    low = np.array([0, 1, 0xFFF, 0x1000, 0x1001, 0x2000, 0x3000, 0x7FFF, 0x8000, 0x8001, 0x18000, 0x7FFFFF,
                    0x400000, 0x3FFFFF, 0x2001, 0x1FFF], np.int64)
    every = ((np.arange(256, dtype=np.int64) << 23)[:, None] | low[None, :]).ravel()
    sub = ((np.arange(100, 116, dtype=np.int64) << 23)[:, None] | np.arange(0, 1 << 23, 331)[None, :]).ravel()
    bits = np.concatenate([every, sub, rng.integers(0, 1 << 32, 200_000, dtype=np.int64),
                           np.arange(1 << 16, dtype=np.int64)])
    bits = np.concatenate([bits, bits | (1 << 31)])
    ref = np.zeros((bits.size, 3), np.int64)
    got = np.zeros_like(ref)
    _both(bits, ref, got)
    bad = np.flatnonzero((ref != got).any(axis=1))
    assert bad.size == 0, [(hex(bits[i]), ref[i].tolist(), got[i].tolist()) for i in bad[:4]]


BARS = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pout)
{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    .shared .align 4 .b32 sm[256];
    ld.param.u64 %rd1, [pout];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, sm;
    shl.b32 %r3, %r1, 2;
    add.u32 %r4, %r2, %r3;
    mov.u32 %r5, 0;
    mov.u32 %r9, 0;
LOOP:
    add.u32 %r6, %r1, %r5;
    st.shared.u32 [%r4], %r6;
    bar.sync 0;
    xor.b32 %r7, %r3, 124;
    add.u32 %r8, %r2, %r7;
    ld.shared.u32 %r10, [%r8];
    add.u32 %r9, %r9, %r10;
    bar.sync 0;
    add.u32 %r5, %r5, 1;
    setp.lt.u32 %p1, %r5, 9;
    @%p1 bra LOOP;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r9;
    ret;
}
"""


@pytest.mark.parametrize("nthreads", [32, 96, 256, 80])
def test_barrier_loops_are_identical_on_both_engines(nthreads):
    ref, fast, diffs = compare_engines(load_ptx(BARS), "k", 1, nthreads, [np.zeros(nthreads, np.uint32)])
    assert not diffs, diffs
    assert "error" not in ref, ref["error"]
