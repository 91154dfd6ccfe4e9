"""The fast engine's mma.sync rows of the float forms (``numerics.tc_row``: the ``mma`` and ``mma_ext`` families)
against the reference executor's tile (``ops.mma.MmaOp.execute``), raw bits, on every f16/bf16/tf32/fp8 form and
architecture: random fragments with NaN payloads, infinities, signed zeros, subnormals, the largest and smallest
exponents side by side. The row hands an instruction back (returns 1, nothing written) only for an inf or NaN
operand or an accumulator that overflows; then the reference executor runs it, so the engine's bits are the
reference's either way; on tame fragments it never hands back."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from emulator.numerics import tc_row
from emulator.numerics.params import FORMATS
from emulator.ops.mma import MODEL_ARCHS, get_mma
from isa.mma import VARIANTS

EXAMPLES = int(os.environ.get("WARPEMU_FUZZ_EXAMPLES", "60"))
FORMS = [(s, a) for s, v in VARIANTS.items() if v.family in ("tc", "fp8") for a in v.archs
         if a in MODEL_ARCHS[v.family]]
WIDTH = {"f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8, "tf32": 32, "f32": 32}
IDX = (1 << 40) - 1


def _elements(rng, fmt, n, spread, special):
    """n codes of ``fmt``: exponents over the whole range (spread) or near 1 (not), with zeros of both signs and
    subnormals; ``special``: the chance of an inf or NaN (random payloads), the largest finite or the smallest
    subnormal."""
    f = FORMATS[fmt]
    eb, mb = f.ebits, f.mbits
    top = (1 << eb) - 1
    if spread:
        e = rng.integers(0, top, n)
    else:
        e = np.clip(f.bias + rng.integers(-4, 5, n), 1, top - 1)
    frac = rng.integers(0, 1 << mb, n)
    r = rng.random(n)
    e = np.where(r < 0.1, 0, e)                            # subnormals
    frac = np.where(r < 0.04, 0, frac)                     # zeros (either sign)
    if fmt == "e4m3":                                      # S.1111.111 is e4m3's only NaN
        frac = np.where((e == top) & (frac == (1 << mb) - 1), 0, frac)
    if special:
        s = rng.random(n)
        nan = 1 + rng.integers(0, (1 << mb) - 1, n) if mb > 1 else np.ones(n, np.int64)
        pick = np.where(s < special / 4, 0, np.where(s < special / 2, 1, np.where(s < 3 * special / 4, 2, np.where(
            s < special, 3, 4))))
        if fmt == "e4m3":
            e = np.where(pick <= 1, top, e)
            frac = np.where(pick <= 1, (1 << mb) - 1, frac)        # NaN (no infinities)
        else:
            e = np.where(pick <= 1, top, e)
            frac = np.where(pick == 0, 0, np.where(pick == 1, nan, frac))
        e = np.where(pick == 2, top - 1 if fmt != "e4m3" else top, e)     # the largest finite
        frac = np.where(pick == 2, (1 << mb) - 1 - (fmt == "e4m3"), frac)
        e = np.where(pick == 3, 0, e)                                      # the smallest subnormal
        frac = np.where(pick == 3, 1, frac)
    sign = rng.integers(0, 2, n)
    x = (sign << (eb + mb)) | (e << mb) | frac
    if fmt == "tf32":                                      # the low 13 bits of a tf32 register are ignored
        x = (x << 13) | rng.integers(0, 1 << 13, n)
    return x.astype(np.uint64)


def _regs(rng, fmt, nregs, spread, special):
    w = WIDTH[fmt]
    epr = 32 // w
    x = _elements(rng, fmt, nregs * 32 * epr, spread, special).reshape(nregs, 32, epr)
    word = np.zeros((nregs, 32), np.uint64)
    for e in range(epr):
        word |= x[..., e] << np.uint64(e * w)
    return word.astype(np.uint32)


def _arena(op, a, b, c):
    """An arena holding D (apart), A, B and C of ``op``, a register of 32 words each; the offsets of its
    registers as the row takes them (four slots for each of D, A, B, C; -1 for none)."""
    n = [op.n_d, op.n_a, op.n_b, op.n_c]
    offs = np.full(16, -1, np.int64)
    pos = 0
    for g in range(4):
        for i in range(n[g]):
            offs[4 * g + i] = pos
            pos += 32
    arena = np.zeros(pos, np.uint32)
    for g, x in ((1, a), (2, b), (3, c)):
        arena[offs[4 * g]:offs[4 * g] + x.size] = x.ravel()
    return arena, offs


def _row(op, a, b, c, alias=False):
    """(returned code, D) of the row on an arena holding A, B, C (D over C when ``alias``: accumulate in place,
    as kernels do)."""
    arena, offs = _arena(op, a, b, c)
    if alias and op.n_d == op.n_c:
        offs[:4] = offs[12:16]
    before = arena.copy()
    rc = tc_row.run_regs(arena, offs, IDX, op.n_d, op.n_a, op.n_b, op.n_c, op._maps, op._prm,
                         np.zeros(4096, np.uint64))
    if rc:
        assert np.array_equal(arena, before), "a handed-back row wrote registers"
    return rc, np.stack([arena[o:o + 32] for o in offs[:op.n_d]])


def _has_special(words, fmt):
    w = WIDTH[fmt]
    f = FORMATS[fmt]
    x = words.astype(np.uint64)
    for e in range(32 // w):
        el = (x >> np.uint64(e * w)) & np.uint64((1 << w) - 1)
        if fmt == "tf32":
            el >>= np.uint64(13)
        ex = (el >> np.uint64(f.mbits)) & np.uint64((1 << f.ebits) - 1)
        fr = el & np.uint64((1 << f.mbits) - 1)
        top = (1 << f.ebits) - 1
        bad = (ex == top) & (fr == (1 << f.mbits) - 1) if fmt == "e4m3" else ex == top
        if bad.any():
            return True
    return False


@settings(max_examples=EXAMPLES * 3, deadline=None, derandomize=EXAMPLES <= 100,
          suppress_health_check=[HealthCheck.too_slow])
@given(form=st.integers(0, len(FORMS) - 1), seed=st.integers(0, 2 ** 32 - 1), spread=st.booleans(),
       special=st.sampled_from([0.0, 0.002, 0.05]), alias=st.booleans())
def test_row_equals_the_reference_executor(form, seed, spread, special, alias):
    spelling, arch = FORMS[form]
    op = get_mma(spelling, arch)
    v = op.variant
    rng = np.random.default_rng(seed)
    a = _regs(rng, v.atype, op.n_a, spread, special)
    b = _regs(rng, v.btype, op.n_b, spread, special)
    c = _regs(rng, v.ctype, op.n_c, spread or rng.random() < 0.5, special)
    want = op.execute(a, b, c).astype(np.uint32)
    rc, got = _row(op, a, b, c, alias)
    if rc == 0:
        assert np.array_equal(got, want), (spelling, arch, np.argwhere(got != want)[:4])
    elif not (_has_special(a, v.atype) or _has_special(b, v.btype)
              or (v.family != "fp8" and _has_special(c, v.ctype))):
        # no inf or NaN: only an overflow hands back, and an overflow leaves an inf or a clamped value in D
        assert spread or special, (spelling, arch, "handed back on tame fragments")


@pytest.mark.parametrize("spelling,arch", FORMS)
def test_row_runs_every_form_without_handing_back_tame_fragments(spelling, arch):
    op = get_mma(spelling, arch)
    v = op.variant
    rng = np.random.default_rng(len(spelling) * 7 + len(arch))
    for _ in range(3):
        a, b, c = (_regs(rng, t, n, False, 0.0) for t, n in ((v.atype, op.n_a), (v.btype, op.n_b),
                                                              (v.ctype, op.n_c)))
        rc, got = _row(op, a, b, c)
        assert rc == 0, (spelling, arch)
        assert np.array_equal(got, op.execute(a, b, c).astype(np.uint32)), (spelling, arch)


@pytest.mark.parametrize("fmt", ["f16", "bf16", "tf32", "e4m3", "e5m2", "f32"])
def test_decode_hands_back_exactly_the_infs_and_nans(fmt):
    """Every code of the 8- and 16-bit formats (a sample of the 32-bit ones) through ``tc_row.decode``, one at a
    time in a group of eight, in every lane: the value and nominal exponent of ``gemm_fast``'s tables, the special codes flagged."""
    from emulator.numerics import gemm_fast
    from numba import njit

    @njit
    def one(codes, fmtc, vals, exps, bad):
        """each code alone, in lane i % 8 of a group of eight whose other lanes hold +0 (never special)"""
        c8 = np.zeros(8, np.uint64)
        v8 = np.zeros(8)
        e8 = np.zeros(8, np.int64)
        for i in range(codes.size):
            c8[:] = 0
            c8[i % 8] = codes[i]
            bad[i] = tc_row.decode(c8, 0, 8, fmtc, v8, e8)
            vals[i] = v8[i % 8]
            exps[i] = e8[i % 8]
    f = FORMATS[fmt]
    if f.width <= 16:
        codes = np.arange(1 << f.width, dtype=np.uint64)
    else:
        rng = np.random.default_rng(5)
        codes = rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint64)
    vals = np.zeros(codes.size)
    exps = np.zeros(codes.size, np.int64)
    bad = np.zeros(codes.size, np.bool_)
    one(codes, f.code, vals, exps, bad)
    from emulator.numerics.fast import NUM, decode as sdecode
    for i in range(0, codes.size, 1 if f.width <= 16 else 7):
        kind, sign, M, q, t = sdecode(int(codes[i]), f.code)
        assert bad[i] == (kind != NUM), (fmt, hex(int(codes[i])))
        if kind == NUM:
            assert vals[i] == (-1) ** sign * M * 2.0 ** q, (fmt, hex(int(codes[i])))
            if M:
                lead = q + int(M).bit_length() - 1            # the 8-bit formats: the leading bit's, as f16's
                assert exps[i] == (max(lead, -14) if fmt in ("e4m3", "e5m2") else t), (fmt, hex(int(codes[i])))
            else:
                assert exps[i] == tc_row.NOEXP
    if f.width <= 16 and fmt != "f32":
        lut = gemm_fast.lut(fmt)
        num = lut[:, 3] == NUM
        nz = num & (lut[:, 0] != 0)
        assert np.array_equal(exps[nz], lut[nz, 2])


# ------------------------------------------------------------------------------------------------
# the integer (.satfinite too), .b1 (AND) and f64 forms: the fast engine's K_MMAX rows (fastcore.mmatile)
TILE_FORMS = [(s, a) for s, v in VARIANTS.items() if v.family in ("int", "b1", "f64") and v.bop != "xor"
              for a in v.archs if a in MODEL_ARCHS[v.family]]
_F64_SPECIAL = np.array([0x7FF0000000000000, 0xFFF0000000000000, 0x8000000000000000, 0, 1, 0x800FFFFFFFFFFFFF,
                         0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF, 0x0010000000000000, 0x7FF8000000000000,
                         0x7FF0000000000123, 0xFFF4000000000001, 0x3FF0000000000000], np.uint64)


def _tile_regs(rng, op, g, special):
    """Register words of operand g (0: A, 1: B, 2: C): random bits (integers), or binary64 values over a wide
    exponent range with infinities, NaN payloads, signed zeros, subnormals (f64)."""
    n = (op.n_a, op.n_b, op.n_c)[g]
    if op.family != "f64":
        x = rng.integers(0, 1 << 32, (n, 32), dtype=np.int64)
        if g == 2:                  # C near the int32 limits too, where .satfinite clamps and the others wrap
            near = rng.integers(0, 1 << 18, (n, 32))
            r = rng.random((n, 32))
            x = np.where(r < 0.3, 0x7FFFFFFF - near, np.where(r < 0.6, 0x80000000 + near, x))
        return x.astype(np.uint32)
    x = (rng.integers(0, 2, (n, 32)).astype(np.uint64) << np.uint64(63)) | (
        (1023 + rng.integers(-60, 60, (n, 32))).astype(np.uint64) << np.uint64(52)) | rng.integers(
        0, 1 << 52, (n, 32), dtype=np.uint64)
    pick = rng.random((n, 32)) < special
    return np.where(pick, _F64_SPECIAL[rng.integers(0, _F64_SPECIAL.size, (n, 32))], x)


def _tile_row(op, a, b, c, alias):
    from numba import njit
    from emulator.machine.fastcore import mmatile
    global _TILE_RUN
    if "_TILE_RUN" not in globals():
        @njit
        def run(kind, regs, arena, maps, prm, na, nb, nc, nd):
            if kind == 0:
                return mmatile._f64_mma(regs, arena.view(np.uint64), maps, prm, na, nb, nc, nd)
            return mmatile._int_mma(regs, arena.view(np.uint32), maps, prm, na, nb, nc, nd)
        _TILE_RUN = run
    n = [op.n_d, op.n_a, op.n_b, op.n_c]
    regs = np.full(20, -1, np.int64)
    pos, k, offs = 0, 0, []
    for g in range(4):
        for i in range(n[g]):
            regs[k] = pos
            offs.append(pos)
            pos += 32
            k += 1
    dt = np.uint64 if op.family == "f64" else np.uint32
    arena = np.zeros(pos, dt)
    for g, x in ((1, a), (2, b), (3, c)):
        o = regs[sum(n[:g])]
        arena[o:o + x.size] = x.ravel()
    if alias and op.n_d == op.n_c:
        regs[:op.n_d] = regs[sum(n[:3]):sum(n[:3]) + op.n_c]
    kind = 0 if op.family == "f64" else 1
    rc = _TILE_RUN(kind, regs, arena.view(np.uint8), op._maps, op._prm, op.n_a, op.n_b, op.n_c, op.n_d)
    return rc, np.stack([arena[o:o + 32] for o in regs[:op.n_d]])


@settings(max_examples=EXAMPLES * 2, deadline=None, derandomize=EXAMPLES <= 100,
          suppress_health_check=[HealthCheck.too_slow])
@given(form=st.integers(0, len(TILE_FORMS) - 1), seed=st.integers(0, 2 ** 32 - 1),
       special=st.sampled_from([0.0, 0.01, 0.2]), alias=st.booleans())
def test_integer_and_f64_rows_equal_the_reference_executor(form, seed, special, alias):
    spelling, arch = TILE_FORMS[form]
    op = get_mma(spelling, arch)
    rng = np.random.default_rng(seed)
    a, b, c = (_tile_regs(rng, op, g, special) for g in range(3))
    want = op.execute(a, b, c)
    rc, got = _tile_row(op, a, b, c, alias)
    assert rc == 0
    assert np.array_equal(got, want.astype(got.dtype)), (spelling, arch, np.argwhere(got != want)[:4])


@pytest.mark.parametrize("spelling,arch", [f for f in TILE_FORMS if "satfinite" in f[0] or "f64" in f[0]][:40])
def test_integer_and_f64_rows_every_form(spelling, arch):
    op = get_mma(spelling, arch)
    rng = np.random.default_rng(len(spelling))
    for special in (0.0, 0.3):
        a, b, c = (_tile_regs(rng, op, g, special) for g in range(3))
        rc, got = _tile_row(op, a, b, c, False)
        assert rc == 0 and np.array_equal(got, op.execute(a, b, c).astype(got.dtype)), (spelling, arch)


@pytest.mark.parametrize("spelling,arch", [f for f in FORMS if get_mma(*f).variant.dtype == "f32"
                                           and get_mma(*f).variant.atype in ("bf16", "tf32")])
def test_row_cuts_subnormal_results_toward_zero(spelling, arch):
    """Products near 2**-140, below binary32's smallest normal, with C +0 or tiny: D is subnormal and has bits below
    its last place, which the row's slow rounding path (not every lane normal) cuts as the executor does."""
    op = get_mma(spelling, arch)
    v = op.variant
    rng = np.random.default_rng(len(spelling) + len(arch))

    def tiny(fmt, nregs):
        f = FORMATS[fmt]
        epr = 32 // WIDTH[fmt]
        n = nregs * 32 * epr
        e = f.bias - 70 + rng.integers(-4, 5, n)
        x = (rng.integers(0, 2, n) << (f.ebits + f.mbits)) | (e << f.mbits) | rng.integers(0, 1 << f.mbits, n)
        x = (x << 13 if fmt == "tf32" else x).reshape(nregs, 32, epr)
        return sum(x[..., i] << (i * WIDTH[fmt]) for i in range(epr)).astype(np.uint32)
    for _ in range(4):
        a, b = tiny(v.atype, op.n_a), tiny(v.btype, op.n_b)
        c = np.where(rng.random((op.n_c, 32)) < 0.5, 0, rng.integers(1, 1 << 20, (op.n_c, 32))).astype(np.uint32)
        want = op.execute(a, b, c).astype(np.uint32)
        assert ((want & 0x7F800000) == 0).mean() > 0.5          # mostly subnormal results
        rc, got = _row(op, a, b, c)
        assert rc == 0 and np.array_equal(got, want), (spelling, arch)
