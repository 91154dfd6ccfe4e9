"""get_mma / MmaOp / mma / gemm: spellings, errors, architectures, and gemm equal to issuing the
instructions one by one."""
import ml_dtypes
import numpy as np
import pytest

from emulator import EmulatorError, Warp
from emulator.errors import OperandError, UnsupportedError
from emulator.ops.mma import canonical_spelling, get_mma
from emulator.tiles import _elem_bits_of, _gemm_by_instructions, gemm, mma
from isa.mma import VARIANTS


def test_table_covers_the_issue_list():
    fams = {}
    for v in VARIANTS.values():
        fams.setdefault(v.family, []).append(v)
    assert len(VARIANTS) == 94
    assert {v.shape_name for v in fams["tc"]} == {"m16n8k4", "m16n8k8", "m16n8k16"}
    assert len(fams["int"]) == 48 and len(fams["fp8"]) == 16 and len(fams["f64"]) == 4
    assert {v.shape_name for v in fams["int"] if v.shape[0] == 8} == {"m8n8k16", "m8n8k32"}
    assert len(fams["b1"]) == 6 and {v.bop for v in fams["b1"]} == {"xor", "and"}
    assert len(fams["m8n8k4_f16"]) == 12


def test_satfinite_position_and_modifier_order():
    canon = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32"
    assert canon in VARIANTS
    for spelled in ("mma.sync.aligned.m16n8k32.satfinite.row.col.s32.s8.u8.s32",
                    "mma.aligned.sync.satfinite.m16n8k32.row.col.s32.s8.u8.s32",
                    "mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32.satfinite"):
        assert canonical_spelling(spelled) == canon
        assert get_mma(spelled).spelling == canon
    assert get_mma("mma.sync.aligned.row.col.m16n8k16.f32.f16.f16.f32").n_a == 4


def test_register_counts_and_widths():
    op = get_mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    assert (op.n_a, op.n_b, op.n_c, op.n_d) == (4, 2, 4, 4)
    assert (op.a_bits, op.b_bits, op.c_bits, op.d_bits) == (32, 32, 32, 32)
    op = get_mma("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64")
    assert (op.n_a, op.n_b, op.n_c, op.n_d, op.a_bits) == (8, 4, 4, 4, 64)
    op = get_mma("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16")
    assert (op.n_a, op.n_b, op.n_c, op.n_d) == (2, 2, 4, 8)
    op = get_mma("mma.sync.aligned.m16n8k64.row.col.s32.u4.s4.s32")
    assert (op.n_a, op.n_b, op.n_c, op.n_d) == (4, 2, 4, 4)
    op = get_mma("mma.sync.aligned.m8n8k16.row.col.s32.s8.u8.s32")
    assert (op.n_a, op.n_b, op.n_c, op.n_d) == (1, 1, 2, 2)
    op = get_mma("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc")
    assert (op.n_a, op.n_b, op.n_c, op.n_d) == (4, 2, 4, 4)
    assert get_mma("mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc").family == "b1"
    with pytest.raises(UnsupportedError):
        get_mma("mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.xor")           # .popc is required


def test_unsupported_spelling_lists_supported():
    with pytest.raises(UnsupportedError) as e:
        get_mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16")   # ptxas rejects mixed C here
    msg = str(e.value)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16" in msg
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in msg and "supported" in msg
    with pytest.raises(UnsupportedError):
        get_mma("mma.sync.aligned.m16n8k16.col.row.f32.f16.f16.f32")
    with pytest.raises(UnsupportedError):
        get_mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.f32")


def test_architecture_rows():
    fp8 = "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"
    for arch in ("sm_80", "sm_86"):
        with pytest.raises(UnsupportedError, match=arch):
            get_mma(fp8, arch)
        with pytest.raises(UnsupportedError, match=arch):
            get_mma("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64", arch)
        get_mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", arch)
        get_mma("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", arch)
    assert get_mma(fp8, "sm_90a").spelling == fp8
    with pytest.raises(UnsupportedError, match="sm_89"):
        get_mma(fp8, "sm_89")
    p80 = get_mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "sm_80").params
    p90 = get_mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "sm_90").params
    assert (p80.L, p80.F, p80.e_zero) == (8, 24, -132) and (p90.L, p90.F, p90.e_zero) == (16, 25, -133)
    w = Warp(arch="sm_80")
    with pytest.raises(EmulatorError, match="sm_80"):
        w.run(f"{fp8} {{%f0,%f1,%f2,%f3}}, {{%r0,%r1,%r2,%r3}}, {{%r4,%r5}}, {{%f4,%f5,%f6,%f7}};")


def test_execute_checks_shapes():
    op = get_mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    with pytest.raises(OperandError):
        op.execute(np.zeros((3, 32), np.uint32), np.zeros((2, 32), np.uint32), np.zeros((4, 32), np.uint32))
    with pytest.raises(OperandError):
        op.execute(np.zeros((4, 32), np.float32), np.zeros((2, 32), np.uint32), np.zeros((4, 32), np.uint32))
    d = op.execute(np.zeros((4, 32), np.uint32), np.zeros((2, 32), np.uint32), np.zeros((4, 32), np.uint32))
    assert d.shape == (4, 32) and d.dtype == np.uint32 and not d.any()


def test_mma_checks_dtypes_and_ranges():
    with pytest.raises(OperandError):
        mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", np.zeros((16, 16), np.float32),
            np.zeros((16, 8), np.float16), np.zeros((16, 8), np.float32))
    with pytest.raises(OperandError):
        mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", np.zeros((16, 8), np.float16),
            np.zeros((16, 8), np.float16), np.zeros((16, 8), np.float32))
    with pytest.raises(OperandError, match="s4"):
        mma("mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32", np.full((16, 64), 9, np.int8),
            np.zeros((64, 8), np.int8), np.zeros((16, 8), np.int32))


def test_mma_tiles_of_every_family():
    rng = np.random.default_rng(5)
    D = mma("mma.sync.aligned.m16n8k64.row.col.satfinite.s32.s4.u4.s32", rng.integers(-8, 8, (16, 64)).astype(np.int8),
            rng.integers(0, 16, (64, 8)).astype(np.uint8), np.full((16, 8), 2**31 - 1, np.int32))
    assert D.dtype == np.int32 and (D[D > 2**31 - 2000] == 2**31 - 1).any()
    A, B, C = rng.standard_normal((8, 4)), rng.standard_normal((4, 8)), rng.standard_normal((8, 8))
    D = mma("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", A, B, C)
    assert D.dtype == np.float64 and np.allclose(D, A @ B + C, rtol=1e-14, atol=1e-14)
    A16 = rng.standard_normal((8, 4)).astype(np.float16)
    B16 = rng.standard_normal((4, 8)).astype(np.float16)
    C16 = rng.standard_normal((8, 8)).astype(np.float16)
    for lay in ("row.col", "row.row", "col.row", "col.col"):
        D = mma(f"mma.sync.aligned.m8n8k4.{lay}.f16.f16.f16.f16", A16, B16, C16)
        assert D.shape == (8, 8) and D.dtype == np.float16
        assert np.allclose(D.astype(np.float64), A16.astype(np.float64) @ B16.astype(np.float64) + C16, atol=1e-2)


CASES = [
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", np.float16, np.float32, "sm_90"),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", np.float16, np.float32, "sm_80"),
    ("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", np.float16, np.float16, "sm_90"),
    ("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", ml_dtypes.bfloat16, np.float32, "sm_86"),
    ("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32", np.float32, np.float32, "sm_90"),
    ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32", ml_dtypes.float8_e4m3fn, np.float32, "sm_90"),
    ("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32", np.int8, np.int32, "sm_90"),
    ("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64", np.float64, np.float64, "sm_90"),
]


@pytest.mark.parametrize("instr,ad,cd,arch", CASES)
def test_gemm_equals_instruction_by_instruction(instr, ad, cd, arch):
    """gemm (decoded-once fast path for the tensor-core forms) == the same instructions issued one by
    one, each K step's D fed back as C; both with values that overflow, cancel and include NaN/Inf."""
    rng = np.random.default_rng(11)
    v = VARIANTS[canonical_spelling(instr)]
    Mt, Nt = v.tile_shape("D")
    Kt = v.tile_shape("A")[1]
    M, N, K = 2 * Mt, 3 * Nt, 4 * Kt
    bt = v.btype

    def make(shape, dt, t):
        if np.dtype(dt).kind in "iu":
            info = np.iinfo(dt)
            return rng.integers(info.min, info.max, shape, endpoint=True).astype(dt)
        x = (rng.standard_normal(shape) * 2.0 ** rng.integers(-8, 8, shape)).astype(dt)
        bits = x.view(f"u{np.dtype(dt).itemsize}").reshape(-1)
        bits[rng.integers(0, bits.size, 3)] = rng.integers(0, 2 ** (8 * np.dtype(dt).itemsize), 3,
                                                            dtype=np.uint64).astype(bits.dtype)
        return x

    A = make((M, K), ad, v.atype)
    B = make((K, N), ml_dtypes.float8_e5m2 if bt == "e5m2" else ad, bt)
    C = make((M, N), cd, v.ctype)
    if v.family == "int":
        C[0, :] = 2**31 - 5
    D = gemm(A, B, C, instr=instr, arch=arch)
    op = get_mma(instr, arch)
    ref = _gemm_by_instructions(op, _elem_bits_of(A, v.atype, "A", instr), _elem_bits_of(B, bt, "B", instr),
                                _elem_bits_of(C, v.ctype, "C", instr))
    assert np.array_equal(D.view(f"u{D.dtype.itemsize}").astype(np.uint64), ref)


def test_gemm_checks_shapes():
    with pytest.raises(OperandError):
        gemm(np.zeros((16, 24), np.float16), np.zeros((24, 8), np.float16), np.zeros((16, 8), np.float32))


def test_gemm_against_numpy_sanity():
    """Sanity check only (a tolerance, not the proof): tensor-core f16 -> f32 GEMM is close to numpy's
    float64 result; its truncating accumulation gives a small bias toward zero."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((64, 256)).astype(np.float16)
    B = rng.standard_normal((256, 32)).astype(np.float16)
    C = np.zeros((64, 32), np.float32)
    D = gemm(A, B, C)
    R = A.astype(np.float64) @ B.astype(np.float64)
    rel = np.abs(D - R) / np.abs(R).max()
    assert rel.max() < 1e-5
