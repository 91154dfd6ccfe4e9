"""The numpy tensor-core tile (numerics.tile_numpy), which runs the common mma.sync forms while numba
compiles the jitted kernels on a fresh install: equal to the H100's captures and to the jitted kernel, bit for
bit, on every form it takes."""
import numpy as np
import pytest

from emulator.numerics import tile_numpy
from emulator.ops.mma import get_mma
from isa.mma import VARIANTS

from mma_captures import all_captures

CAPS = all_captures()
COLD = sorted(s for s in VARIANTS if VARIANTS[s].family == "tc" and tile_numpy.eligible(get_mma(s, "sm_90")._prm))


def test_the_cold_forms():
    """f16, bf16 and tf32 inputs with an f32 or f16 accumulator, in every shape: what GEMMs issue."""
    assert {"mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16","mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"} <= set(COLD)
    assert not any("e4m3" in s or "e5m2" in s or ".s8." in s or "f64" in s for s in COLD)


def _jitted(op, a, b, c):
    d = np.empty((a.shape[0], op.n_d, 32), op._dt["D"])
    op._kern(np.ascontiguousarray(a), np.ascontiguousarray(b), np.ascontiguousarray(c), d, op._maps, op._prm,
             *op._extra)
    return d


@pytest.mark.parametrize("spelling", COLD)
def test_cold_path_replays_the_h100(spelling):
    cap = CAPS[spelling]
    got = get_mma(spelling, "sm_90")._run_cold(cap["a"], cap["b"], cap["c"])
    assert got.dtype == cap["d"].dtype
    assert np.array_equal(got, cap["d"]), f"{int((got != cap['d']).sum())} D words differ"


def _operands(rng, op, dist, n):
    regs = []
    for k, bits in (("a", op.a_bits), ("b", op.b_bits), ("c", op.c_bits)):
        shape = (n, {"a": op.n_a, "b": op.n_b, "c": op.n_c}[k], 32)
        x = rng.integers(0, 1 << 32, size=shape, dtype=np.uint64).astype(np.uint32)
        v = op.variant
        t = {"a": v.atype, "b": v.btype, "c": v.ctype}[k]
        if dist != "rawbits":
            if t in ("f32", "tf32"):
                scale = {"normal": 4, "wide": 60, "tiny": 2}[dist]
                f = (rng.standard_normal(shape) * np.exp2(rng.integers(-scale, scale + 1, shape))).astype(np.float32)
                if dist == "tiny":
                    f *= np.float32(2.0 ** -120)
                x = f.view(np.uint32)
            else:
                dt = np.float16 if t == "f16" else __import__("ml_dtypes").bfloat16
                lim = {"normal": 3, "wide": 12 if t == "f16" else 60, "tiny": 2}[dist]
                lo = (rng.standard_normal(shape + (2,)) * np.exp2(rng.integers(-lim, lim + 1, shape + (2,))))
                if dist == "tiny":
                    lo *= 2.0 ** (-14 if t == "f16" else -126)
                h = lo.astype(dt).view(np.uint16).astype(np.uint32)
                x = h[..., 0] | (h[..., 1] << 16)
            zero = rng.random(shape) < 0.1
            x = np.where(zero, np.uint32(0x80000000) * (rng.random(shape) < 0.5), x).astype(np.uint32)
        regs.append(x)
    return regs


@pytest.mark.parametrize("dist", ["normal", "wide", "tiny", "rawbits"])
@pytest.mark.parametrize("spelling", COLD)
def test_cold_path_equals_the_jitted_kernel(spelling, dist):
    """Random tiles (raw bits include inf/NaN and overflowing sums, which go to the jitted kernel)."""
    rng = np.random.default_rng(hash((spelling, dist)) % 2**32)
    for arch in ("sm_80", "sm_90"):
        op = get_mma(spelling, arch)
        a, b, c = _operands(rng, op, dist, 96)
        want = _jitted(op, a, b, c)
        got = op._run_cold(a, b, c)
        assert np.array_equal(got, want), f"{arch} {dist}: {int((got != want).sum())} D words differ"


def test_cold_path_hands_specials_and_overflow_to_the_jitted_kernel():
    op = get_mma("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "sm_90")
    a = np.full((3, op.n_a, 32), 0x3F803F80, np.uint32)         # bf16 1.0
    b = a[:, :op.n_b].copy()
    c = np.zeros((3, op.n_c, 32), np.uint32)
    a[1], b[1] = 0x7F7F7F7F, 0x7F7F7F7F                          # bf16 max squared: past f32's range
    a[2, 0, 0] = 0x7F80                                          # an inf in one A element
    d, bad = tile_numpy.tile_f32(a, b, c, op._maps, op._prm)
    assert bad.tolist() == [False, True, True]
    assert np.array_equal(op._run_cold(a, b, c), _jitted(op, a, b, c))
    assert set(np.unique(op._run_cold(a, b, c)[0])) == {0x41800000}   # 16 products of 1.0


def test_cold_path_runs_only_while_the_background_compile_runs(monkeypatch):
    """With the loops compiled (or WARPEMU_BACKGROUND_COMPILE=0, as in this suite) the jitted kernel runs."""
    import emulator.ops.mma as mma
    op = get_mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "sm_90")
    calls = []
    monkeypatch.setattr(op, "_run_cold", lambda *x: calls.append(1) or _jitted(op, *x))
    a, b, c = (np.zeros((1, n, 32), np.uint32) for n in (op.n_a, op.n_b, op.n_c))
    op.execute(a[0], b[0], c[0])
    assert not calls
    monkeypatch.setattr(mma, "_compiling", lambda: True)
    op.execute(a[0], b[0], c[0])
    op.execute_batch(a, b, c)
    assert len(calls) == 2


INT_FORMS = sorted(s for s in VARIANTS if VARIANTS[s].family in ("int", "b1"))


@pytest.mark.parametrize("spelling", INT_FORMS)
def test_integer_cold_path_equals_the_jitted_kernel(spelling, monkeypatch):
    """The integer and .b1 forms (s8/u8/s4/u4, .satfinite, and/xor): numpy equals fast.int_batch."""
    import emulator.ops.mma as mma
    rng = np.random.default_rng(hash(spelling) % 2**32)
    op = get_mma(spelling, "sm_90")
    a, b, c = (rng.integers(0, 1 << 32, size=(64, n, 32), dtype=np.uint64).astype(np.uint32)
               for n in (op.n_a, op.n_b, op.n_c))
    c[:8] = rng.choice(np.array([0x7FFFFFFF, 0x80000000, 0x7FFFFF00, 0x800000FF], np.uint32), size=c[:8].shape)
    want = op.execute_batch(a, b, c)
    monkeypatch.setattr(mma, "_compiling", lambda: True)
    calls = []
    monkeypatch.setattr(tile_numpy, "int_batch", lambda *x: calls.append(1) or INT_BATCH(*x))
    got = op.execute_batch(a, b, c)
    assert calls and np.array_equal(got, want)


INT_BATCH = tile_numpy.int_batch


@pytest.mark.parametrize("atype,dtype", [("f16", "f32"), ("bf16", "f32"), ("tf32", "f32"), ("f16", "f16")])
def test_wgmma_tile_cold_path_equals_the_jitted_path(atype, dtype, monkeypatch):
    """wgmma's tiles (gemm_fast.tc_gemm) run in numpy while compiling: equal, specials included."""
    import emulator.numerics.gemm_fast as gf
    from emulator.numerics.wgmma import wgmma_tile
    rng = np.random.default_rng(7)
    K = 8 if atype == "tf32" else 16
    w = 32 if atype == "tf32" else 16
    A = rng.integers(0, 1 << w, size=(64, K), dtype=np.uint64)
    B = rng.integers(0, 1 << w, size=(K, 64), dtype=np.uint64)
    if atype != "tf32":
        dt = np.float16 if atype == "f16" else __import__("ml_dtypes").bfloat16
        A[8:] = (rng.standard_normal((56, K)) * 8).astype(dt).view(np.uint16)
        B[:, 8:] = (rng.standard_normal((K, 56)) * 8).astype(dt).view(np.uint16)
    C = rng.integers(0, 1 << (32 if dtype == "f32" else 16), size=(64, 64), dtype=np.uint64)
    C[16:] = (rng.standard_normal((48, 64))).astype(np.float32 if dtype == "f32" else np.float16).view(
        np.uint32 if dtype == "f32" else np.uint16)
    want = wgmma_tile(atype, atype, dtype, A, B, C)
    monkeypatch.setattr(gf, "compiling", lambda: True)
    calls = []
    monkeypatch.setattr(tile_numpy, "steps", lambda *x: calls.append(1) or STEPS(*x))
    got = wgmma_tile(atype, atype, dtype, A, B, C)
    assert calls and np.array_equal(got, want)


STEPS = tile_numpy.steps
