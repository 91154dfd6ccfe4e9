"""wgmma: the whole-tile API, GEMMs, the async rules (hazards, fence, warpgroup agreement), descriptor
helpers and errors; the readable reference equals the fast path."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import emulator
from emulator import (AsyncHazardError, EmulatorError, GlobalMemory, MemoryAccessError, OperandError,
                      UnsupportedError, Warp, WarpOptions, WarpSyncError, load_ptx)
from emulator.numerics import wgmma as num
from emulator.ops.wgmma import Descriptor, canonical_descriptor, core_matrix_map, make_descriptor
from emulator.ops.wgmma import desc as D
from isa.wgmma import VARIANTS

F16 = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"
RNG = np.random.default_rng(7)


def _f16(shape):
    return RNG.standard_normal(shape).astype(np.float16)


def test_isa_table():
    assert len(VARIANTS) == 546
    v = VARIANTS["wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"]
    assert (v.n_a, v.n_d) == (4, 128)
    assert VARIANTS["wgmma.mma_async.sync.aligned.m64n256k16.f16.f16.f16"].n_d == 64


@pytest.mark.parametrize("kw", [dict(), dict(swizzle=0), dict(swizzle=32, trans_a=1), dict(swizzle=64, trans_b=1),
                                dict(a="registers", trans_b=1), dict(scale_a=-1, scale_b=-1)])
def test_tile_api_equals_numpy_and_gemm(kw):
    A, B, C = _f16((64, 16)), _f16((16, 8)), RNG.standard_normal((64, 8)).astype(np.float32)
    D_ = emulator.wgmma(F16, A, B, C, **kw)
    sign = kw.get("scale_a", 1) * kw.get("scale_b", 1)
    ref = sign * (A.astype(np.float64) @ B.astype(np.float64)) + C
    assert np.abs(D_ - ref).max() < 1e-5
    assert D_.dtype == np.float32


def test_scale_d_false_ignores_c():
    A, B = _f16((64, 16)), _f16((16, 8))
    C = np.full((64, 8), np.nan, np.float32)
    D_ = emulator.wgmma(F16, A, B, C, scale_d=False)
    assert not np.isnan(D_).any()


@pytest.mark.parametrize("instr,at,bt", [
    ("wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16", ml_dtypes.bfloat16, ml_dtypes.bfloat16),
    ("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32", np.float32, np.float32),
    ("wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e5m2", ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2),
    ("wgmma.mma_async.sync.aligned.m64n8k32.f16.e5m2.e5m2", ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2)])
def test_gemm_is_the_instruction_chain(instr, at, bt):
    v = VARIANTS[instr]
    A = RNG.standard_normal((64, 2 * v.k)).astype(at)
    B = RNG.standard_normal((2 * v.k, v.n)).astype(bt)
    C = RNG.standard_normal((64, v.n)).astype(np.float32 if v.dtype == "f32" else np.float16)
    G = emulator.gemm(A, B, C, instr=instr)
    step = emulator.wgmma(instr, A[:, :v.k], B[:v.k], C)
    step = emulator.wgmma(instr, A[:, v.k:], B[v.k:], step)
    assert G.tobytes() == step.tobytes()


def test_integer_and_b1():
    A = RNG.integers(-128, 128, (64, 32)).astype(np.int8)
    B = RNG.integers(0, 256, (32, 16)).astype(np.uint8)
    C = np.full((64, 16), 2**31 - 100, np.int32)
    sat = emulator.wgmma("wgmma.mma_async.sync.aligned.m64n16k32.satfinite.s32.s8.u8", A, B, C)
    exact = A.astype(np.int64) @ B.astype(np.int64) + C
    assert (sat == np.clip(exact, -2**31, 2**31 - 1)).all()
    wrap = emulator.wgmma("wgmma.mma_async.sync.aligned.m64n16k32.s32.s8.u8", A, B, C)
    assert (wrap == exact.astype(np.int64).astype(np.int32)).all()
    a1, b1 = RNG.integers(0, 2, (64, 256)), RNG.integers(0, 2, (256, 8))
    popc = emulator.wgmma("wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc", a1, b1,
                          np.zeros((64, 8), np.int32), swizzle=0)
    assert (popc == a1 @ b1).all()


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([("f16", "f16", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32"),
                        ("tf32", "tf32", "f32"), ("e4m3", "e5m2", "f32"), ("e5m2", "e4m3", "f16"),
                        ("e4m3", "e4m3", "f32")]),
       st.integers(0, 2**32 - 1))
def test_reference_equals_fast_path(types, seed):
    at, bt, dt = types
    K = {"f16": 16, "bf16": 16, "tf32": 8}.get(at, 32)
    r = np.random.default_rng(seed)
    wa = {"f16": 16, "bf16": 16, "tf32": 32}.get(at, 8)
    wb = {"f16": 16, "bf16": 16, "tf32": 32}.get(bt, 8)
    A = r.integers(0, 2**wa, (2, K), dtype=np.uint64)
    B = r.integers(0, 2**wb, (K, 3), dtype=np.uint64)
    C = r.integers(0, 2**(32 if dt == "f32" else 16), (2, 3), dtype=np.uint64)
    fast = num.wgmma_tile(at, bt, dt, A, B, C)
    ref = num.reference_tile(at, bt, dt, A, B, C)
    assert (fast == ref).all()


# ------------------------------------------------------------------------------------------------
# descriptors
def test_descriptor_fields_roundtrip():
    d = make_descriptor(0x1230, lbo=32, sbo=1024, swizzle=64, base_offset=3)
    x = Descriptor.decode(d)
    assert (x.start, x.lbo, x.sbo, x.base_offset, x.swizzle) == (0x1230, 32, 1024, 3, 64)
    assert x.encode() == d
    assert d >> 62 == 2 and (d >> 49) & 7 == 3
    with pytest.raises(OperandError):
        make_descriptor(8)
    with pytest.raises(OperandError):
        make_descriptor(0, swizzle=16)


def test_core_matrix_map_k_sw128():
    m = core_matrix_map(canonical_descriptor(0, 64, swizzle=128), 64)
    assert m[(0, 0)] == [r * 128 + (r << 4 & 0x70) for r in range(8)]      # row r's chunk 0 moves to r
    assert m[(0, 1)][0] == 16 and m[(0, 1)][1] == 0x80 + 0   # row 1: chunk 1 -> 1 ^ 1 = 0
    assert m[(1, 0)][0] == 1024
    rows = [a for k in m.values() for a in k]
    assert len(set(rows)) == len(rows)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**14 - 1), st.integers(0, 2**14 - 1), st.integers(0, 2**14 - 1), st.integers(0, 7),
       st.integers(0, 3), st.booleans())
def test_addresses_are_16_byte_rows(start, lbo, sbo, base, swz, mn):
    d = Descriptor.decode(start | lbo << 16 | sbo << 32 | base << 49 | swz << 62)
    if mn:
        a = D.mn_major_addresses(d, 64, 16, 2)
        assert ((a[1:] - a[:-1])[(np.arange(63) % 8) != 7] == 2).all()        # 8 elements a row, contiguous
    else:
        a = D.k_major_addresses(d, 64)
        assert ((a[:, 1:] - a[:, :-1])[:, np.arange(31) != 15] == 1).all()
    assert (a & 15).min() >= 0


def test_descriptor_outside_shared_memory():
    d = make_descriptor(0xFFF0, sbo=1024, swizzle=128)
    with pytest.raises(MemoryAccessError, match="outside shared memory"):
        D.read_operand(np.zeros(4096, np.uint8), Descriptor.decode(d), 8, 16, 16, False, "wgmma", "B")


# ------------------------------------------------------------------------------------------------
# kernels: async rules
HEAD = """.version 8.5
.target sm_90a
.address_size 64
.shared .align 1024 .b8 smem[8192];
.visible .entry k(.param .u64 out)
{
.reg .pred %p<4>; .reg .b32 %r<8>; .reg .f32 %f<8>; .reg .b64 %rd<8>;
mov.u32 %r1, %tid.x;
mov.f32 %f0, 0f00000000; mov.f32 %f1, 0f00000000; mov.f32 %f2, 0f00000000; mov.f32 %f3, 0f00000000;
"""
DA = make_descriptor(0, sbo=1024, swizzle=128)
DB = make_descriptor(4096, sbo=1024, swizzle=128)
MMA = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd1, %rd2, 1, 1, 1, 0, 0;"
TAIL = """ld.param.u64 %rd3, [out];
mul.wide.u32 %rd4, %r1, 4;
add.s64 %rd3, %rd3, %rd4;
st.global.f32 [%rd3], %f0;
ret;
}
"""


def _kernel(body, threads=128, strict=True, notes=None):
    """Run ``body``; ``strict``: WarpOptions(wgmma_hazards="error"), the PTX manual's rules; else as ptxas
    compiles it, the launch's notes appended to ``notes``."""
    text = HEAD + f"mov.b64 %rd1, {DA};\nmov.b64 %rd2, {DB};\n" + body + "\n" + TAIL
    g = GlobalMemory()
    out = g.alloc(4 * threads)
    res = load_ptx(text).launch("k", grid=(1, 1, 1), block=(threads, 1, 1), args=[out], gmem=g,
                                options=WarpOptions(wgmma_hazards="error" if strict else "wait"))
    if notes is not None:
        notes.extend(res.notes)
    return g.download(out, 4 * threads).view(np.float32)


def test_kernel_ok_and_chained_accumulation():
    body = ("wgmma.fence.sync.aligned;\n" + MMA + "\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n"
            "wgmma.wait_group.sync.aligned 0;")
    out = _kernel(body)
    assert (out == 0).all()                       # zero shared memory: 0 * 0 + 0


def test_wait_group_keeps_newest():
    body = ("wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n"
            "wgmma.wait_group.sync.aligned 1;\nadd.f32 %f5, %f0, %f0;")
    with pytest.raises(AsyncHazardError, match="reads register %f0 while a wgmma.mma_async"):
        _kernel(body)


def test_reading_an_in_flight_accumulator_waits_as_ptxas_injects():
    # wait_group 1 keeps the group in flight; reading %f0 then makes ptxas inject a warpgroup.wait
    # ("(C7517) warpgroup.wait is injected ... to allow use of registers defined by GMMA"): no error, the value
    # is the wgmma's, and the group is retired (wait_group 0 finds nothing left)
    body = ("wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n"
            "wgmma.wait_group.sync.aligned 1;\nadd.f32 %f5, %f0, %f0;\nwgmma.wait_group.sync.aligned 0;")
    notes = []
    assert (_kernel(body, strict=False, notes=notes) == 0).all()
    assert len(notes) == 1 and "C7517" in notes[0], notes


@pytest.mark.parametrize("body, line, what", [
    ("wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 1;\n"
     "add.f32 %f5, %f0, %f0;", 16, "reads %f0, a register of an in-flight wgmma.mma_async (line 13)"),
    ("wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\nmov.f32 %f6, %f2;",
     15, "reads %f2"),
    ("wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\nmov.f32 %f2, 0f3F800000;\n"
     "wgmma.wait_group.sync.aligned 0;", 15, "writes %f2"),
    (MMA + "\nwgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;", 12, "no wgmma.fence"),
    ("wgmma.fence.sync.aligned;\nmov.f32 %f1, 0f3F800000;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n"
     "wgmma.wait_group.sync.aligned 0;", 14, "%f1 was written after the last wgmma.fence"),
])
def test_hazards_ptxas_repairs_are_notes(body, line, what):
    """By default the hazards ptxas repairs itself (C7517 wait, C7519 arrive) run as compiled, with a note."""
    notes = []
    _kernel(body, strict=False, notes=notes)
    assert len(notes) == 1 and notes[0].startswith(f"line {line}: ") and what in notes[0], notes
    assert ("C7519" if "fence" in what else "C7517") in notes[0]
    with pytest.raises(AsyncHazardError):
        _kernel(body)


def test_hazard_wait_retires_every_group():
    """ptxas's injected wait is WARPGROUP.DEPBAR.LE gsb0, 0x0: after it no wgmma of the warp is in flight,
    so a later touch of another group's register needs no second wait (one note)."""
    mmb = MMA.replace("%f0, %f1, %f2, %f3", "%f4, %f5, %f6, %f7")
    body = ("wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n" + mmb +
            "\nwgmma.commit_group.sync.aligned;\nadd.f32 %f1, %f2, %f2;\nwgmma.wait_group.sync.aligned 1;\n"
            "add.f32 %f3, %f6, %f6;\nwgmma.wait_group.sync.aligned 0;")
    notes = []
    _kernel(body, strict=False, notes=notes)
    assert len(notes) == 1 and "reads %f2" in notes[0], notes


def test_missing_fence():
    with pytest.raises(AsyncHazardError, match="no wgmma.fence"):
        _kernel(MMA + "\nwgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;")


def test_write_after_fence_needs_another_fence():
    body = ("wgmma.fence.sync.aligned;\nmov.f32 %f1, 0f3F800000;\n" + MMA +
            "\nwgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;")
    with pytest.raises(AsyncHazardError, match="%f1 was written after the last wgmma.fence"):
        _kernel(body)


def test_accumulator_read_before_wait():
    body = "wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\nmov.f32 %f6, %f2;"
    with pytest.raises(AsyncHazardError, match="%f2"):
        _kernel(body)


def test_accumulator_read_before_wait_is_serialized():
    # as ptxas does (C7517): the read waits for the wgmma, whose accumulators it then sees
    body = "wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\nmov.f32 %f6, %f2;"
    assert (_kernel(body, strict=False) == 0).all()


def test_shared_write_while_read():
    body = ("wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n"
            "mov.u32 %r2, smem;\nst.shared.u32 [%r2+4100], %r1;\nwgmma.wait_group.sync.aligned 0;")
    with pytest.raises(AsyncHazardError, match="in-flight wgmma.mma_async reads"):
        _kernel(body)


def test_shared_write_after_wait_is_fine():
    body = ("wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n"
            "wgmma.wait_group.sync.aligned 0;\nmov.u32 %r2, smem;\nst.shared.u32 [%r2+4100], %r1;")
    _kernel(body)


def test_absent_warp():
    with pytest.raises(WarpSyncError, match="warp 3 is absent or partial"):
        _kernel("wgmma.fence.sync.aligned;\n" + MMA, threads=96)


def test_diverged_warp():
    body = ("setp.ge.u32 %p1, %r1, 96;\nwgmma.fence.sync.aligned;\n@%p1 bra SKIP;\n" + MMA +
            "\nSKIP:\nwgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;")
    with pytest.raises(WarpSyncError, match="warp 3 of warpgroup 0 never executed"):
        _kernel(body)


def test_partial_warp():
    body = ("setp.ge.u32 %p1, %r1, 100;\nwgmma.fence.sync.aligned;\n@%p1 bra SKIP;\n" + MMA +
            "\nSKIP:\nwgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;")
    with pytest.raises(WarpSyncError, match="lanes 4-31 of warp 3"):
        _kernel(body)


def test_lone_warp_and_unsupported():
    with pytest.raises(WarpSyncError, match="lone Warp"):
        Warp().run("wgmma.fence.sync.aligned;")
    with pytest.raises(UnsupportedError, match="unsupported wgmma.mma_async variant"):
        Warp().run("wgmma.mma_async.sync.aligned.m64n8k16.f16.bf16.bf16 {%r0, %r1}, %rd1, %rd2, 1, 1, 1, 0, 0;")
    with pytest.raises(UnsupportedError, match="unsupported wgmma.mma_async.sp variant"):
        Warp().run("wgmma.mma_async.sp.sync.aligned.m64n8k512.s32.b1.b1.and.popc {%r0}, %rd1, %rd2, %r1, 0, 1;")
    with pytest.raises(OperandError, match="imm-scale-a"):
        Warp().run("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd1, %rd2, 1, 2, 1, 0, 0;")
    with pytest.raises(EmulatorError, match="takes 8 operands"):
        Warp().run("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd1, %rd2, 1;")


# ------------------------------------------------------------------------------------------------
# layouts and pictures
@pytest.mark.parametrize("atom", ["SM90_64x64x16_F32F16F16_SS", "SM90_64x128x16_F32BF16BF16_RS",
                                  "SM90_64x256x8_F32TF32TF32_RS_TN"])
def test_cute_gmma_layouts(atom):
    from emulator.layouts.fragments import CUTE_SM90
    e = CUTE_SM90[atom]
    for op in ("A", "C"):
        if op in e:
            r = emulator.check_layout(e["instr"], op, e[op])
            assert r.ok, str(r)


def test_check_layout_names_wrong_cells():
    from emulator.layouts.fragments import gmma_c_layout
    r = emulator.check_layout("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16", "D",
                              gmma_c_layout(16).replace("_16)", "_32)", 1))
    assert not r.ok and "of 1024 cells differ" in str(r)
    with pytest.raises(UnsupportedError, match="descriptor"):
        emulator.check_layout("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16", "B", "(_1,_1):(_0,_0)")


def test_show_wgmma_and_descriptor_pictures():
    from emulator.layouts.show import descriptor_view, mma_figure, mma_view
    g = mma_view("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16", "D")
    assert g.cell(16, 0) == "T32:d0" and g.cell(8, 9) == "T0:d7"        # warp 1 owns rows 16..31
    a = mma_view("wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16", "A")
    assert a.cell(8, 0) == "T0:a1.0" and a.cell(0, 9) == "T0:a2.1"
    assert "<svg" in mma_figure("wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3").svg()
    d = descriptor_view((128, False), rows=16)
    assert d.cell(1, 0) == "0x90" and d.cell(1, 1) == "0x80" and d.cell(8, 0) == "0x400"
    m = descriptor_view((64, True), rows=64)
    assert m.cell(2, 0) == "0x90" and m.cell(0, 4) == "0x400"


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**64 - 1), st.sampled_from(["wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16",
                                                  "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2",
                                                  "wgmma.mma_async.sync.aligned.m64n16k256.s32.b1.b1.and.popc"]),
       st.booleans())
def test_fuzz_descriptor_reads(bits, instr, trans):
    """Any 64-bit descriptor either reads inside shared memory or raises MemoryAccessError naming it."""
    from emulator.ops.wgmma import get_wgmma
    op = get_wgmma(instr)
    smem = np.arange(48 * 1024, dtype=np.uint32).astype(np.uint8)
    trans = trans and op.variant.can_transpose
    try:
        tile, idx = op.read(smem, bits, "B", trans, instr, op.n)
    except MemoryAccessError as e:
        assert "descriptor" in str(e) and "outside shared memory" in str(e)
        return
    assert tile.shape == (op.n, op.k) and idx.max() < smem.size


@pytest.mark.parametrize("name", ["Layout_K_INTER_Atom", "Layout_K_SW32_Atom", "Layout_K_SW64_Atom",
                                  "Layout_K_SW128_Atom", "Layout_MN_INTER_Atom", "Layout_MN_SW32_Atom",
                                  "Layout_MN_SW64_Atom", "Layout_MN_SW128_Atom"])
def test_cute_gmma_atoms_are_what_the_hardware_reads(name):
    from emulator.layouts.gmma import check_atom
    for eb in ((1, 2, 4) if "_K_" in name else (2,)):
        assert check_atom(name, eb) == [], (name, eb)


@pytest.mark.parametrize("w", [32, 64, 128])
def test_triton_nvmma_is_what_the_hardware_reads(w):
    from emulator.layouts.gmma import check_nvmma
    assert check_nvmma(w) == []
    assert check_nvmma(w, elem_bytes=1) == []


def test_atom_check_can_fail(monkeypatch):
    from emulator.layouts.gmma import check_atom
    monkeypatch.setattr(D, "swizzle", lambda a, w, b=0: a)
    assert len(check_atom("Layout_K_SW128_Atom")) > 0


def test_fast_engine_runs_on_while_a_wgmma_is_in_flight():
    """Between commit and wait the fast engine's loop runs the instructions that touch no register a wgmma
    holds (they are not handed back), and both engines leave the same state; one that reads an accumulator
    waits for the wgmma (ptxas's injected wait), or raises the hazard under wgmma_hazards="error"."""
    from engines import compare_engines
    work = "\n".join(f"add.s32 %r{2 + i % 4}, %r{2 + i % 4}, %r1;" for i in range(40))
    body = ("wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n" + work +
            "\nwgmma.wait_group.sync.aligned 0;\nadd.f32 %f0, %f0, 0f3F800000;")
    text = HEAD + f"mov.b64 %rd1, {DA};\nmov.b64 %rd2, {DB};\n" + body + "\n" + TAIL
    ref, fast, diffs = compare_engines(load_ptx(text), "k", 1, 128, [np.zeros(128, np.float32)])
    assert not diffs and "error" not in ref
    assert fast["fast_executed"] >= 4 * 40
    bad = text.replace("wgmma.wait_group.sync.aligned 0;\nadd.f32", "add.f32 %f4, %f3, %f3;\n"
                       "wgmma.wait_group.sync.aligned 0;\nadd.f32")
    ref, fast, diffs = compare_engines(load_ptx(bad), "k", 1, 128, [np.zeros(128, np.float32)])
    assert not diffs and "error" not in ref          # as ptxas compiles it: the read waits for the wgmma
    ref, fast, diffs = compare_engines(load_ptx(bad), "k", 1, 128, [np.zeros(128, np.float32)],
                                       options=WarpOptions(wgmma_hazards="error"))
    assert not diffs and "reads register %f3" in ref["error"][1]


def test_cp_async_into_bytes_an_in_flight_wgmma_reads():
    """A cp.async whose destination an in-flight wgmma.mma_async reads is a hazard on both engines (the fast
    engine's loop checks the CTA's wgmma read counts, fastcore/memx.py, and hands it back on a hit)."""
    from engines import compare_engines
    body = ("ld.param.u64 %rd5, [out];\nwgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n"
            "mov.u32 %r2, smem;\ncp.async.ca.shared.global [%r2+4100], [%rd5], 4;\ncp.async.wait_all;\n"
            "wgmma.wait_group.sync.aligned 0;")
    text = HEAD + f"mov.b64 %rd1, {DA};\nmov.b64 %rd2, {DB};\n" + body + "\n" + TAIL
    ref, fast, diffs = compare_engines(load_ptx(text), "k", 1, 128, [np.zeros(128, np.float32)])
    assert not diffs and "in-flight wgmma.mma_async reads" in ref["error"][1]
    ok = text.replace("[%r2+4100]", "[%r2+8000]")
    ref, fast, diffs = compare_engines(load_ptx(ok), "k", 1, 128, [np.zeros(128, np.float32)])
    assert not diffs and "error" not in ref


def test_warpgroup_reads_what_every_warp_wrote_before_its_issue():
    """The warpgroup's wgmma starts once all four warps issued it: each warp fills its quarter of shared memory
    and issues, with no barrier between (CUTLASS's CuTe tutorial wgmma_sm90.cu does this with cp.async, and the
    H100 computes the full product: tests/data/corpus/regressions.npz). Every D element is then 16 * 1 * 1."""
    body = ("shr.u32 %r2, %r1, 5;\nand.b32 %r3, %r1, 31;\nmul.lo.u32 %r2, %r2, 2048;\nmad.lo.u32 %r2, %r3, 64, %r2;\n"
            "mov.u32 %r4, smem;\nadd.u32 %r2, %r2, %r4;\nmov.b32 %r5, 0x3C003C00;\n"
            + "".join(f"st.shared.v4.b32 [%r2+{16 * i}], {{%r5, %r5, %r5, %r5}};\n" for i in range(4))
            + "wgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n"
            "wgmma.wait_group.sync.aligned 0;")
    out = _kernel(body)
    assert (out == 16).all(), np.unique(out)


def test_wait_group_waits_for_the_other_warps():
    """A warp that reaches wgmma.wait_group before the others issued the instruction waits for them: the
    accumulator it reads afterwards holds the product of what all four warps stored."""
    body = ("shr.u32 %r2, %r1, 5;\nsetp.eq.u32 %p1, %r2, 3;\nmov.u32 %r4, smem;\nmov.b32 %r5, 0x3C003C00;\n"
            "@!%p1 bra GO;\n"
            "mul.lo.u32 %r6, %r1, 8;\nsub.u32 %r6, %r6, 768;\n"          # warp 3 (tid 96..127) fills 8 KB
            "mad.lo.u32 %r6, %r6, 32, %r4;\n"
            + "".join(f"st.shared.v4.b32 [%r6+{16 * i}], {{%r5, %r5, %r5, %r5}};\n" for i in range(16))
            + "GO:\nwgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n"
            "wgmma.wait_group.sync.aligned 0;")
    out = _kernel(body)
    assert (out == 16).all(), np.unique(out)


_WARP3_FILLS = ("shr.u32 %r2, %r1, 5;\nsetp.eq.u32 %p1, %r2, 3;\nmov.u32 %r4, smem;\nmov.b32 %r5, 0x3C003C00;\n"
                "@!%p1 bra GO;\n"
                "mul.lo.u32 %r6, %r1, 8;\nsub.u32 %r6, %r6, 768;\n"          # warp 3 (tid 96..127) fills 8 KB
                "mad.lo.u32 %r6, %r6, 32, %r4;\n"
                + "".join(f"st.shared.v4.b32 [%r6+{16 * i}], {{%r5, %r5, %r5, %r5}};\n" for i in range(16))
                + "GO:\nwgmma.fence.sync.aligned;\n" + MMA + "\nwgmma.commit_group.sync.aligned;\n")


@pytest.mark.parametrize("after, what", [("", "reads %f0"), ("mov.f32 %f1, 0f3F800000;\n", "writes %f1"),
                                         ("mov.f32 %f6, %f2;\n", "reads %f2")])
def test_injected_wait_waits_for_the_other_warps(after, what):
    """ptxas's injected wait (C7517) before an instruction that touches an in-flight accumulator needs the
    warpgroup to have computed the wgmma, like wgmma.wait_group: warps 0-2 reach it before warp 3 issued the
    instruction and stall there, so what they read (the kernel's store of %f0) is the product of what warp 3
    stored, never the accumulator's old value; one note."""
    notes = []
    out = _kernel(_WARP3_FILLS + after, strict=False, notes=notes)
    assert (out == 16).all(), np.unique(out)
    assert len(notes) == 1 and what in notes[0] and "C7517" in notes[0], notes
    with pytest.raises(AsyncHazardError, match=what.replace("s ", "s register ")):
        _kernel(_WARP3_FILLS + after)


def test_injected_wait_for_a_warp_that_never_issues():
    """The injected wait of warps 0-2 waits for a wgmma warp 3 skips: the deadlock report names warp 3."""
    body = ("setp.ge.u32 %p1, %r1, 96;\nwgmma.fence.sync.aligned;\n@%p1 bra SKIP;\n" + MMA +
            "\nSKIP:\nwgmma.commit_group.sync.aligned;\nmov.f32 %f6, %f1;")
    with pytest.raises(WarpSyncError, match="warp 3 of warpgroup 0 never executed"):
        _kernel(body, strict=False)
