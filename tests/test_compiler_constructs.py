"""Constructs that Triton, nvcc (-lineinfo, -G) and CuTe write, each against its definition: carry chains,
lop3 (all 256 tables), dp4a/dp2a/vabsdiff4, min/max.xorsign.abs, createpolicy, cache-hinted loads, braced single
operands, 32-bit address wrap, debug sections, predicate guards by declared name, the machine model chosen
independently of .target, GlobalMemory.map, and emulator.triton's launch path."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator import EmulatorError, GlobalMemory, UnsupportedError, Warp, load_ptx
from emulator.frontend import ptx

U32 = st.lists(st.integers(0, 2**32 - 1), min_size=32, max_size=32)


def _w(**regs):
    w = Warp()
    for k, v in regs.items():
        w.write("%" + k, np.array(v, np.uint64).astype(np.uint32) if not isinstance(v, int) else v)
    return w


@settings(max_examples=40, deadline=None)
@given(U32, U32, U32, U32)
def test_carry_chain_64bit_add_sub(alo, ahi, blo, bhi):
    w = _w(a0=alo, a1=ahi, b0=blo, b1=bhi)
    w.run("""add.cc.u32 %s0, %a0, %b0;
             addc.u32 %s1, %a1, %b1;
             sub.cc.u32 %d0, %a0, %b0;
             subc.cc.u32 %d1, %a1, %b1;
             addc.u32 %e, 0, 0;""")
    a = np.array(alo, np.uint64) | (np.array(ahi, np.uint64) << np.uint64(32))
    b = np.array(blo, np.uint64) | (np.array(bhi, np.uint64) << np.uint64(32))
    s = w.read("%s0").astype(np.uint64) | (w.read("%s1").astype(np.uint64) << np.uint64(32))
    d = w.read("%d0").astype(np.uint64) | (w.read("%d1").astype(np.uint64) << np.uint64(32))
    assert (s == a + b).all() and (d == a - b).all()
    assert (w.read("%e") == (a < b)).all()          # the borrow out of the 64-bit subtraction


@settings(max_examples=40, deadline=None)
@given(U32, U32, U32, U32)
def test_carry_chain_mad_wide_product(alo, ahi, blo, bhi):
    """A 64x64 -> 128-bit product the way libdevice writes it (mad.lo.cc / madc.hi.cc / madc)."""
    w = _w(a0=alo, a1=ahi, b0=blo, b1=bhi)
    w.run("""mul.lo.u32 %q0, %a0, %b0;
             mul.hi.u32 %t, %a0, %b0;
             mad.lo.cc.u32 %q1, %a0, %b1, %t;
             madc.hi.u32 %q2, %a0, %b1, 0;
             mad.lo.cc.u32 %q1, %a1, %b0, %q1;
             madc.hi.cc.u32 %q2, %a1, %b0, %q2;
             madc.hi.u32 %q3, %a1, %b1, 0;
             mad.lo.cc.u32 %q2, %a1, %b1, %q2;
             addc.u32 %q3, %q3, 0;""")
    for lane in range(32):
        a = alo[lane] | ahi[lane] << 32
        b = blo[lane] | bhi[lane] << 32
        got = sum(int(w.read(f"%q{k}")[lane]) << (32 * k) for k in range(4))
        assert got == a * b


def test_lop3_every_table():
    rng = np.random.default_rng(1)
    a, b, c = (rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    w = _w(a=a, b=b, c=c)
    for lut in range(256):
        w.run(f"lop3.b32 %d, %a, %b, %c, {lut};")
        want = np.zeros(32, np.uint32)
        for bit in range(32):
            idx = ((a >> bit & 1) << 2) | ((b >> bit & 1) << 1) | (c >> bit & 1)
            want |= ((np.uint32(lut) >> idx) & 1) << np.uint32(bit)
        assert (w.read("%d") == want).all(), lut
    with pytest.raises(EmulatorError, match="immLut"):
        w.run("lop3.b32 %d, %a, %b, %c, 256;")


@settings(max_examples=40, deadline=None)
@given(U32, U32, U32)
def test_dp4a_dp2a_vabsdiff4(a, b, c):
    w = _w(a=a, b=b, c=c)
    w.run("""dp4a.s32.s32 %d0, %a, %b, %c;
             dp4a.u32.s32 %d1, %a, %b, %c;
             dp2a.lo.s32.u32 %d2, %a, %b, %c;
             dp2a.hi.u32.u32 %d3, %a, %b, %c;
             vabsdiff4.u32.u32.u32 %d4, %a, %b, %c;
             vabsdiff4.u32.u32.u32.add %d5, %a, %b, %c;""")

    def parts(x, n, signed):
        w_ = 32 // n
        v = [(x >> (w_ * i)) & ((1 << w_) - 1) for i in range(n)]
        return [p - (1 << w_) if signed and p >> (w_ - 1) else p for p in v]
    for i in range(32):
        A, B, C = a[i], b[i], c[i]
        m = 0xFFFFFFFF
        assert int(w.read("%d0")[i]) == (sum(x * y for x, y in zip(parts(A, 4, 1), parts(B, 4, 1))) + C) & m
        assert int(w.read("%d1")[i]) == (sum(x * y for x, y in zip(parts(A, 4, 0), parts(B, 4, 1))) + C) & m
        assert int(w.read("%d2")[i]) == (sum(x * y for x, y in zip(parts(A, 2, 1), parts(B, 4, 0)[:2])) + C) & m
        assert int(w.read("%d3")[i]) == (sum(x * y for x, y in zip(parts(A, 2, 0), parts(B, 4, 0)[2:])) + C) & m
        diffs = [abs(x - y) for x, y in zip(parts(A, 4, 0), parts(B, 4, 0))]
        assert int(w.read("%d4")[i]) == sum(d << (8 * k) for k, d in enumerate(diffs))
        assert int(w.read("%d5")[i]) == (sum(diffs) + C) & m


def test_xorsign_abs():
    x = np.array([1.5, -2.0, -0.0, 3.0] * 8, np.float32)
    y = np.array([-1.0, -3.0, 0.0, 3.0] * 8, np.float32)
    w = Warp()
    w.write("%fa", x.view(np.uint32))
    w.write("%fb", y.view(np.uint32))
    w.run("min.xorsign.abs.f32 %fm, %fa, %fb; max.xorsign.abs.f32 %fx, %fa, %fb;")
    sign = np.signbit(x) ^ np.signbit(y)
    mn = np.minimum(np.abs(x), np.abs(y))
    mx = np.maximum(np.abs(x), np.abs(y))
    assert (w.read("%fm").view(np.float32) == np.where(sign, -mn, mn)).all()
    assert (w.read("%fx").view(np.float32) == np.where(sign, -mx, mx)).all()
    assert (np.signbit(w.read("%fm").view(np.float32)) == sign).all()


def test_createpolicy_encoding_and_cache_hinted_access():
    g = GlobalMemory()
    a = g.upload(np.arange(64, dtype=np.float32))
    w = Warp(gmem=g)
    w.write("%rd1", a)
    w.run("""createpolicy.fractional.L2::evict_last.L2::evict_first.b64 %rd2, 0.25;
             mov.u32 %r0, %laneid;
             mul.wide.u32 %rd3, %r0, 4;
             add.s64 %rd4, %rd1, %rd3;
             ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.f32 %f1, [%rd4], %rd2;
             st.global.L1::no_allocate.L2::cache_hint.b32 [%rd4+128], { %f1 }, %rd2;""")
    assert int(w.read("%rd2")[0]) == 0x1530000000000000          # as the H100 makes it
    assert (g.download(a + 128, 128).view(np.float32) == np.arange(32)).all()
    with pytest.raises(EmulatorError, match="cache policy"):
        w.run("ld.global.L2::cache_hint.f32 %f1, [%rd4];")


def test_address_forms_and_32bit_wrap():
    w = Warp()
    w.smem[:16] = np.arange(16, dtype=np.uint8)
    w.write("%r1", 0xFFFFFFFC)                  # -4: [%r1+8] is shared address 4
    w.write("%r2", 8)
    w.run("ld.shared.b32 { %r3 }, [ %r1 + 8 ]; ld.shared.b32 %r4, [%r2+-4]; ld.shared.b32 %r5, [%r2 + 0];")
    assert int(w.read("%r3")[0]) == int(w.read("%r4")[0]) == 0x07060504
    assert int(w.read("%r5")[0]) == 0x0B0A0908


def test_tensor_address_operand_parses():
    (st_,) = ptx.parse("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                       "[%r1], [%rd1, {%r2, %r3}], [%r4];")
    assert isinstance(st_.operands[1], ptx.TensorAddr)
    assert str(st_.operands[1]) == "[%rd1, {%r2, %r3}]"


MODULE = """
//
// Generated by LLVM NVPTX Back-End
//
.version 8.7
.target sm_80
.address_size 64
.visible .entry k(
	.param .u64 .ptr .global .align 16 k_param_0
)
.reqntid 32
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<3>;
	.loc	1 5 0                           // x.py:5:0
$L__func_begin0:
	ld.param.b64 	%rd1, [k_param_0];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd2, %r1, 4;
	add.s64 	%rd1, %rd1, %rd2;
	{
	.reg .pred done;
	setp.ne.s32 done, %r1, 3;
	@!done st.global.b32 [ %rd1 + 0 ], { %r1 };
	}
	ret;
$L__func_end0:
}
	.file	1 "x.py"
	.section	.debug_abbrev
	{
.b8 1
.b8 17
	}
	.section	.debug_macinfo	{	}
"""


def test_triton_shaped_module_runs_on_the_h100_model():
    m = load_ptx(MODULE)
    assert m.arch == "sm_90" and m.target == "sm_80"      # .target only says which instructions are legal
    assert load_ptx(MODULE, arch="sm_80").arch == "sm_80"
    g = GlobalMemory()
    out = np.zeros(32, np.int32)
    m.launch("k", 1, 32, [g.map(out)], gmem=g)
    assert out[3] == 3 and (np.delete(out, 3) == 0).all()


def test_unknown_target_is_refused():
    with pytest.raises(UnsupportedError, match="sm_99"):
        load_ptx(MODULE.replace(".target sm_80", ".target sm_99"))


def test_global_memory_map_is_zero_copy():
    g = GlobalMemory()
    a = np.arange(10, dtype=np.int32)
    addr = g.map(a)
    assert addr % 256 == 0
    g.write(addr + 4, np.int32(-1))
    assert a[1] == -1
    assert (g.download(addr, 40).view(np.int32) == a).all()
    with pytest.raises(EmulatorError, match="contiguous"):
        g.map(np.arange(10)[::2])


def test_run_ptx_replays_a_triton_kernel_without_triton():
    import corpus_lib
    from emulator.triton import run_ptx
    case = corpus_lib.load_all()["triton_add_f32_sm90a"]
    x, y = case["in"]["x"].copy(), case["in"]["y"].copy()
    z = np.zeros_like(case["in"]["z"])
    n = case["config"]["args"][3][2]
    result, module = run_ptx(case["ptx"], case["config"]["kernel"], case["config"]["grid"], [x, y, z, n],
                             num_warps=case["config"]["block"][0] // 32)
    assert z.tobytes() == case["out"]["z"].tobytes()
    (ctaid, warps), = result.ctas[:1]
    assert len(warps) == 4 and warps[0].read("%r1").shape == (32,)      # every lane's registers stay readable


def test_triton_launch():
    triton = pytest.importorskip("triton")         # optional extra; the corpus replays above need no Triton
    import triton.language as tl
    import emulator.triton as et

    @triton.jit
    def scale(x_ptr, o_ptr, n, s, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * s + offs.to(tl.float32), mask=m)

    x = np.linspace(-3, 3, 300, dtype=np.float32)
    o = np.zeros_like(x)
    res = et.launch(scale, (3,), x, o, 300, 2.0, num_warps=2, BLOCK=128)
    assert res[1] is o
    assert (o == x * np.float32(2.0) + np.arange(300, dtype=np.float32)).all()
    assert len(res.result.ctas) == 3 and ".target sm_90a" in res.compiled.ptx
    res80 = et.launch(scale, lambda meta: (3,), x, np.zeros_like(x), 300, 2.0, num_warps=2, target="sm_80",
                      BLOCK=128)
    assert res80[1].tobytes() == o.tobytes()
