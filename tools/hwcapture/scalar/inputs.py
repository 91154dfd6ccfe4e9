"""Edge-heavy, deterministic inputs for the scalar differential capture.

Every input *kind* (a float format, an integer width, shift amounts, bit-field positions, ...) gives
``SLOTS`` arrays of ``N`` raw values (uint64, the operand's bits in the low end). A form's k-th source
operand reads slot k of its kind. The lanes are laid out in three parts:

* lanes [0, 1024): the 32 core edge values of each kind crossed with each other: slot 0 runs through
  them fastest, slot 1 next, slots 2 and 3 in a scrambled order (every pair of operands meets every
  pair of core edges);
* lanes [1024, 1024 + len(extra)): the kind's longer list of edge values, for unary forms (every slot
  sees every value, in rotated order);
* the rest: random bits, and random values of nearby magnitudes (so that additions cancel and round).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

N = 2048
SLOTS = 4
CROSS = 1024
SEED = 20251124

# float formats: (exponent bits, fraction bits, numpy dtype or None)
FLOATS = {"f16": (5, 10, np.float16), "bf16": (8, 7, ml_dtypes.bfloat16), "f32": (8, 23, np.float32),
          "f64": (11, 52, np.float64)}
WIDTH = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def _fbits(fmt, x):
    """Raw bits of a Python float rounded to nearest in ``fmt``."""
    dt = FLOATS[fmt][2]
    w = WIDTH[fmt]
    with np.errstate(over="ignore"):
        return int(np.array(x, np.float64).astype(dt).view(np.dtype(f"u{w // 8}")))


def _special(fmt):
    eb, fb, _ = FLOATS[fmt]
    w = 1 + eb + fb
    sign = 1 << (w - 1)
    inf = ((1 << eb) - 1) << fb
    quiet = 1 << (fb - 1)
    maxf = inf - 1
    minn = 1 << fb
    return dict(sign=sign, inf=inf, quiet=quiet, maxf=maxf, minn=minn, maxsub=minn - 1, one=_fbits(fmt, 1.0),
                w=w, fb=fb)


def float_core(fmt):
    s = _special(fmt)
    sg, inf, q = s["sign"], s["inf"], s["quiet"]
    one = s["one"]
    v = [0, sg, 1, sg | s["maxsub"], s["minn"], sg | s["minn"], one, sg | one,
         _fbits(fmt, 1.5), _fbits(fmt, -2.0), _fbits(fmt, 0.5), _fbits(fmt, 3.0),
         _fbits(fmt, 2.5), one + 1, sg | (one + 1), s["maxf"],
         sg | s["maxf"], inf, sg | inf, inf | q | (q - 1),              # +inf, -inf, canonical-style NaN
         sg | inf | q, inf | 1, inf | q | 0x12 if s["fb"] > 6 else inf | q | 2, sg | inf | 2,   # NaN payloads, sNaN
         _fbits(fmt, 0.1), s["minn"] * 3 // 2, s["maxf"] - (1 << (s["fb"] - 1)), _fbits(fmt, 1 / 3),
         _fbits(fmt, -1 / 3), _fbits(fmt, 7.0), _fbits(fmt, -0.75), s["maxsub"]]
    assert len(v) == 32, len(v)
    return v


def float_extra(fmt):
    s = _special(fmt)
    sg, inf, q = s["sign"], s["inf"], s["quiet"]
    eb, fb, _ = FLOATS[fmt]
    vals = []
    big = {"f16": 15, "bf16": 127, "f32": 127, "f64": 1023}[fmt]
    small = {"f16": -24, "bf16": -133, "f32": -149, "f64": -1074}[fmt]
    # powers of two across the range, and their neighbours
    for e in range(small, big + 1, max(1, (big - small) // 40)):
        vals += [_fbits(fmt, 2.0 ** e), _fbits(fmt, -(2.0 ** e)) if e % 3 == 0 else _fbits(fmt, 1.75 * 2.0 ** e)]
    # values around integer and format boundaries (cvt)
    for x in (0.25, 0.75, 0.49999997, 0.5000001, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 127.5, 128.0, 255.5, 256.0,
              -128.5, -129.0, 32767.5, 32768.0, 65535.5, 65536.0, -32768.5, -32769.0, 2.0 ** 31, 2.0 ** 31 - 128,
              -(2.0 ** 31), -(2.0 ** 31) - 256, 2.0 ** 32, 2.0 ** 32 - 256, 2.0 ** 63, -(2.0 ** 63), 2.0 ** 64,
              2.0 ** 64 * 1.5, -(2.0 ** 64), 4294967295.0, 65504.0, 65519.0, 65520.0, 65536.0 * 2, -65520.0,
              448.0, 464.0, 480.0, -448.0, 57344.0, 61440.0, 61439.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26,
              2.0 ** -14, 1.5 * 2.0 ** -24, 2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 1.75 * 2.0 ** -10, 2.0 ** -16,
              2.0 ** -17, 1.25 * 2.0 ** -16, 3.3895313892515355e38, 3.4e38, 3.39e38, -3.39e38,
              1 + 2.0 ** -11, 1 + 2.0 ** -11 + 2.0 ** -23, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8,
              1 + 2.0 ** -4, 1 + 2.0 ** -3, 1 + 3 * 2.0 ** -4, 1 + 2.0 ** -2, 1 + 3 * 2.0 ** -5, 1e10, -1e10,
              1e20, 1e-20, 1e-40, 1e-45, 2.0 ** -1023, 2.0 ** -1074, 1e300, 1e-300, 1e-310, 0.1, 0.2, 0.3):
        vals.append(_fbits(fmt, x))
    # NaNs: every sign, quiet and signalling, small and large payloads
    for p in (0, 1, 2, q - 1, q >> 1, 0x5 << (fb - 4)):
        for qq in (0, q):
            if p | qq:
                vals += [inf | qq | p, sg | inf | qq | p]
    # subnormals and the largest values
    vals += [2, 3, s["maxsub"] - 1, s["maxsub"] >> 1, sg | 1, sg | 3, s["minn"] + 1, s["maxf"] - 1, sg | (s["maxf"] - 1)]
    # every f16/bf16 bit pattern with a few fraction values in every exponent
    if fmt in ("f16", "bf16"):
        for e in range(1 << eb):
            for m in (0, 1, (1 << fb) - 1, 1 << (fb - 1)):
                vals += [(e << fb) | m, sg | (e << fb) | m]
    out = []
    for v in vals:
        if v not in out:
            out.append(v)
    return out


def float_random(fmt, rng, n):
    """n x SLOTS: random bits; values near one; pairs of close magnitudes (cancellation, rounding ties)."""
    eb, fb, _ = FLOATS[fmt]
    w = 1 + eb + fb
    bias = (1 << (eb - 1)) - 1
    out = np.empty((SLOTS, n), np.uint64)
    raw = rng.integers(0, 1 << w, size=(SLOTS, n), dtype=np.uint64) if w < 64 else \
        rng.integers(0, 1 << 63, size=(SLOTS, n), dtype=np.uint64) * np.uint64(2) + \
        rng.integers(0, 2, size=(SLOTS, n), dtype=np.uint64)
    k = n // 3
    out[:, :k] = raw[:, :k]
    # near one: exponent within +-4 of the bias, random fraction and sign
    e = (bias + rng.integers(-4, 5, size=(SLOTS, n))).astype(np.uint64)
    frac = raw & np.uint64((1 << fb) - 1)
    sgn = rng.integers(0, 2, size=(SLOTS, n)).astype(np.uint64) << np.uint64(w - 1)
    near = sgn | (e << np.uint64(fb)) | frac
    out[:, k:2 * k] = near[:, k:2 * k]
    # close pairs: slot 1 = -slot 0 with its low fraction bits changed; slot 2 as slot 0 with other low bits
    c = near[:, 2 * k:].copy()
    low = np.uint64((1 << max(1, fb // 3)) - 1)
    c[1] = (c[0] ^ np.uint64(1 << (w - 1))) & ~low | (raw[1, 2 * k:] & low)
    c[2] = c[0] & ~low | (raw[2, 2 * k:] & low)
    out[:, 2 * k:] = c
    return out


def _int_core(w):
    m = (1 << w) - 1
    h = 1 << (w - 1)
    v = [0, 1, 2, 3, m, m - 1, h - 1, h, h + 1, h - 2, 7, m - 6, 31 % (1 << w), 32, 33, 63, 64, 0xff & m, 0x80,
         0x100 & m, 0x7fff & m, 0x8000 & m, 0xffff & m, (0x10000 & m) or 5, 0x55555555 & m, 0xaaaaaaaa & m,
         0x12345678 & m, 0xdeadbeef & m, 0x00ffffff & m or 9, 0x00800000 & m or 0x7f, 0xff800000 & m or 0xff80,
         (0x8000000000000000 >> 31) & m]
    assert len(v) == 32
    return v


def _int_extra(w):
    m = (1 << w) - 1
    vals = []
    for b in range(w):
        vals += [1 << b, (1 << b) - 1, m ^ ((1 << b) - 1), (m >> b)]
    vals += [x & m for x in (0x7f, 0x81, 0xfe, 0xff00, 0x7ffe, 0x8001, 0x00ff00ff, 0x0f0f0f0f, 0xf0f0f0f0,
                             0x7fffffff, 0x80000000, 0xffffffff, 0x100000000, 0x7fffffffffffffff,
                             0x8000000000000000, 0xfffffffffffffffe, 1000000007, 12345, 65535, 2 ** 53, 2 ** 53 + 1,
                             2 ** 24 + 1, 2 ** 54 - 1, 2 ** 63 - 1024, 2 ** 31 + 64, 2 ** 31 - 64)]
    out = []
    for v in vals:
        if v not in out:
            out.append(v)
    return out


def _ints(w, rng):
    core, extra = _int_core(w), _int_extra(w)
    rnd = rng.integers(0, 1 << min(w, 63), size=(SLOTS, N), dtype=np.uint64)
    if w == 64:
        rnd = rnd * np.uint64(2) + rng.integers(0, 2, size=(SLOTS, N), dtype=np.uint64)
    # a third of the random lanes are small (magnitudes below 2^12, either sign): divisions, mul24
    small = rng.integers(-4096, 4096, size=(SLOTS, N)).astype(np.int64).astype(np.uint64) & np.uint64((1 << w) - 1)
    pick = rng.integers(0, 3, size=(SLOTS, N)) == 0
    rnd = np.where(pick, small, rnd)
    return core, extra, rnd


def _list_kind(core, extra, rnd):
    return core, extra, rnd


def layout(core, extra, rnd):
    """SLOTS x N uint64 from a kind's core edges (32), extra edges and random values."""
    assert len(core) == 32
    i = np.arange(N)
    out = rnd.astype(np.uint64).copy()
    c = np.array(core, np.uint64)
    ic = i[:CROSS]
    idx = [ic % 32, (ic // 32) % 32, (ic * 7 + ic // 32 * 3 + 1) % 32, (ic * 11 + ic // 32 + 5) % 32]
    for s in range(SLOTS):
        out[s, :CROSS] = c[idx[s]]
    x = np.array(extra, np.uint64)
    m = min(len(x), N - CROSS)
    for s in range(SLOTS):
        out[s, CROSS:CROSS + m] = x[(np.arange(m) * (1 + 2 * s) + 5 * s) % len(x)][:m] if s else x[:m]
    return out


def _shift_amounts(rng):
    core = [0, 1, 2, 7, 8, 15, 16, 17, 23, 24, 31, 32, 33, 47, 48, 63, 64, 65, 96, 127, 128, 129, 255, 256,
            257, 511, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff, 0x80000001]
    extra = list(range(0, 300)) + [0xfffffffe, 0xffffff00, 0x100, 0x101, 0x120, 0x1ff, 0x200]
    rnd = np.where(rng.integers(0, 2, size=(SLOTS, N)) == 0, rng.integers(0, 140, size=(SLOTS, N)),
                   rng.integers(0, 1 << 32, size=(SLOTS, N))).astype(np.uint64)
    return core, extra, rnd


def _pairs(lo, hi, w):
    """Pack two half-width slot arrays into one (x2 types)."""
    return (lo & np.uint64((1 << w) - 1)) | ((hi & np.uint64((1 << w) - 1)) << np.uint64(w))


def make_inputs(seed=SEED):
    """{kind: uint64 array (SLOTS, N)}; kinds named after the operand types they feed."""
    rng = np.random.default_rng(seed)
    kinds = {}
    for fmt in ("f16", "bf16", "f32", "f64"):
        core, extra = float_core(fmt), float_extra(fmt)
        kinds[fmt] = layout(core, extra, float_random(fmt, rng, N))
    for w in (16, 32, 64):
        kinds[f"i{w}"] = layout(*_ints(w, rng))
    # 8-bit operands live in 16-bit registers; half the lanes carry garbage in the upper byte
    b = np.arange(N, dtype=np.uint64)
    i8 = np.stack([(b * (2 * s + 1) + 17 * s) % 256 for s in range(SLOTS)])
    junk = rng.integers(0, 256, size=(SLOTS, N)).astype(np.uint64) << np.uint64(8)
    kinds["i8"] = np.where((b // 256) % 2 == 1, i8 | junk, i8)
    kinds["sh"] = layout(*_shift_amounts(rng))
    kinds["pred"] = np.stack([(b >> np.uint64(s)) & np.uint64(1) for s in range(SLOTS)])
    # x2 kinds: two half-width kinds paired with a lane permutation for the upper half
    perm = rng.permutation(N)
    for fmt in ("f16", "bf16"):
        f = kinds[fmt]
        kinds[fmt + "x2"] = np.stack([_pairs(f[s], f[(s + 1) % SLOTS][perm], 16) for s in range(SLOTS)])
    i16 = kinds["i16"]
    kinds["i16x2"] = np.stack([_pairs(i16[s], i16[(s + 1) % SLOTS][perm], 16) for s in range(SLOTS)])
    # packed fp8 pairs (16 bits): every byte value in each half, many combinations
    kinds["fp8x2"] = np.stack([((b + 29 * s) % 256) | ((((b // 8) * 7 + b + 3 * s) % 256) << np.uint64(8))
                               for s in range(SLOTS)])
    # packed fp6/fp4 pairs and the 32-bit packs of four fp8: random bits and iota
    kinds["i8x4"] = np.stack([(b * np.uint64(0x01010101) * np.uint64(s + 1) + rng.integers(0, 1 << 32, N).astype(np.uint64) *
                               (b >= 512)) & np.uint64(0xffffffff) for s in range(SLOTS)])
    return {k: np.ascontiguousarray(v, np.uint64) for k, v in kinds.items()}


if __name__ == "__main__":
    ins = make_inputs()
    for k, v in ins.items():
        print(k, v.shape, len(np.unique(v[0])))
