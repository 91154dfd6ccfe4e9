"""The H100's multi-function unit (MUFU): the approximate math behind ``ex2``, ``lg2``, ``rcp``, ``rsqrt``,
``sqrt``, ``sin``, ``cos`` and ``tanh`` ``.approx``, ``div.approx`` and ``div.full``.

These instructions are not correctly rounded: the unit reads its result from tables and interpolation
hardware. Here each MUFU operation is the measured function of the bits that reach it, written as

* the argument reduction the unit does (exponent and sign handling, fixed-point conversion of the input),
* one table per operation, read off the H100 on the inputs that fix it (for example ``MUFU.RCP`` on
  [1, 2): the result for any other exponent is the same mantissa with the exponent moved), and
* the special values (zeros, subnormals, infinities, NaN) as the H100 returns them.

Every rule below was checked on an H100 over all 2^32 inputs of each f32 form (docs/numerics.md, "MUFU",
and ``tools/hwcapture/mufu/``). The PTX forms are the SASS sequences ptxas 13 emits around the MUFU
operation (range scaling with FMUL/FADD for the non-``.ftz`` forms), pinned in ``PTX_SEQUENCES``.

The functions are written for an array module ``xp`` (numpy here; the capture tool runs the very same code
with cupy on the GPU to compare it against the hardware over every input). Inputs and outputs are raw bits:
``uint32`` for f32, ``uint16`` for f16/bf16, ``uint64`` for f64.
"""
from __future__ import annotations

import lzma
import os

import numpy as np

_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "mufu_tables.npz")

CANON_NAN = 0x7FFFFFFF
F32_MIN_NORMAL = 0x00800000
TWO_PI_RECIP = 0x3E22F983          # 0.15915493667125701904f, the FMUL.RZ constant ptxas puts before MUFU.SIN/COS
TANH_SHIFT = {119: 6, 120: 6, 121: 6, 122: 5, 123: 5, 124: 4, 125: 4, 126: 4, 127: 3, 128: 2, 129: 3}

# The SASS ptxas 13.0 emits for each PTX form on sm_90 (tests/test_mufu.py pins the spelling -> sequence map).
PTX_SEQUENCES = {
    "ex2.approx.ftz.f32": "MUFU.EX2",
    "ex2.approx.f32": "FSETP.GEU x,-126; @!p FMUL x,0.5; MUFU.EX2; @!p FMUL r,r",
    "lg2.approx.ftz.f32": "MUFU.LG2",
    "lg2.approx.f32": "FSETP.GEU |x|,2^-126; @!p FMUL x,2^24; MUFU.LG2; @!p FADD r,-24",
    "rcp.approx.ftz.f32": "MUFU.RCP",
    "rcp.approx.f32": "s = |x|<2^-126 ? 2^24 : 1; s = |x|>2^126 ? 0.25 : s; MUFU.RCP(x*s); FMUL s,r",
    "rsqrt.approx.ftz.f32": "MUFU.RSQ",
    "rsqrt.approx.f32": "FSETP.GEU |x|,2^-126; @!p FMUL x,2^24; MUFU.RSQ; @!p FMUL r,4096",
    "sqrt.approx.ftz.f32": "MUFU.SQRT",
    "sqrt.approx.f32": "FSETP.GEU |x|,2^-126; @!p FMUL x,2^24; MUFU.SQRT; @!p FMUL r,2^-12",
    "sin.approx.f32": "FMUL.RZ x,1/(2pi); MUFU.SIN", "sin.approx.ftz.f32": "FMUL.RZ x,1/(2pi); MUFU.SIN",
    "cos.approx.f32": "FMUL.RZ x,1/(2pi); MUFU.COS", "cos.approx.ftz.f32": "FMUL.RZ x,1/(2pi); MUFU.COS",
    "tanh.approx.f32": "MUFU.TANH",
    "div.approx.f32": "FSETP.GEU |b|,2^-126; @!p FMUL b,2^24; @!p FMUL a,2^24; MUFU.RCP b; FMUL r,a",
    "div.approx.ftz.f32": "MUFU.RCP b; FMUL.FTZ a,r",
    "div.full.f32": ("FSETP.GT |b|,2^126 -> p0; FSETP.GEU |b|,2^-126 -> p1; @p0 FMUL b,a by 0.25; "
                     "@!p1 FMUL b,a by 2^24; MUFU.RCP b; FMUL r,a"),
    "div.full.ftz.f32": "FSETP.GT.FTZ |b|,2^126 -> p0; @p0 FMUL.FTZ b,a by 0.25; MUFU.RCP b; FMUL.FTZ r,a",
    "rcp.approx.ftz.f64": "MUFU.RCP64H on the high word; low word 0",
    "rsqrt.approx.ftz.f64": "MUFU.RSQ64H on the high word; low word 0",
    "ex2.approx.f16": "MUFU.EX2.F16", "ex2.approx.f16x2": "MUFU.EX2.F16 on each half",
    "ex2.approx.ftz.bf16": "MUFU.EX2.BF16", "ex2.approx.ftz.bf16x2": "MUFU.EX2.BF16 on each half",
    "tanh.approx.f16": "MUFU.TANH.F16", "tanh.approx.f16x2": "MUFU.TANH.F16 on each half",
    "tanh.approx.bf16": "MUFU.TANH.BF16", "tanh.approx.bf16x2": "MUFU.TANH.BF16 on each half",
}


# ----------------------------------------------------------------------------------------------- tables
def encode_table(a):
    """A smooth uint32/uint64 table as int64 second differences (they compress to a few bits an entry)."""
    a = np.asarray(a).astype(np.int64)
    if a.size < 2:
        return a.copy()
    d1 = np.diff(a)
    return np.concatenate([a[:1], d1[:1], np.diff(d1)])


def decode_table(enc, dtype=np.uint32):
    """The table of ``encode_table``'s second differences: two running sums, exact modulo 2^64 and cast (numpy's
    int64 sums wrap)."""
    enc = np.asarray(enc, np.int64)
    if enc.size < 3:
        return np.cumsum(enc).astype(dtype) if enc.size == 2 else enc.astype(dtype)
    d1 = np.cumsum(enc[1:])
    return np.concatenate([enc[:1], enc[0] + np.cumsum(d1)]).astype(dtype)


def _decode_narrow(first, body, dtype):
    """``decode_table(concatenate([first, body]), dtype)`` for an integer ``dtype``, computed in place in the unsigned
    type of its width: sums modulo 2^64 cast to that width are the same sums modulo 2^width (two passes over a
    uint32 array instead of five over int64 ones: the tables are 8 million entries, decoded on a first launch)."""
    dtype = np.dtype(dtype)
    n = first.size + body.size
    if dtype.kind not in "iu" or n < 3:
        return decode_table(np.concatenate([first, body.astype(np.int64)]), dtype)
    u = np.dtype(f"u{dtype.itemsize}")
    e = np.empty(n, u)
    e[:2] = first.astype(u)              # (int64 -> u: the low bits, as the int64 sums' cast keeps them)
    e[2:] = body                         # (a negative difference: its two's complement in u)
    np.cumsum(e[1:], dtype=u, out=e[1:])
    np.cumsum(e, dtype=u, out=e)
    return e.view(dtype)


def pack_tables(tabs):
    """{name: table} -> {"name__dtype": uint8 array}: second differences in the narrowest integer type that
    holds them, lzma-compressed (1.7 MB for all the tables)."""
    out = {}
    for name, a in tabs.items():
        enc = encode_table(a)
        body = enc[2:]
        dt = np.int64
        for cand in (np.int8, np.int16, np.int32):
            if body.size == 0 or (body.min() >= np.iinfo(cand).min and body.max() <= np.iinfo(cand).max):
                dt = cand
                break
        head = np.array([enc.size, np.dtype(dt).itemsize], np.int64)
        raw = head.tobytes() + enc[:2].astype(np.int64).tobytes() + body.astype(dt).tobytes()
        out[f"{name}__{np.dtype(a.dtype).name}"] = np.frombuffer(
            lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME), np.uint8)
    return out


def unpack_table(blob, dtype):
    raw = lzma.decompress(np.asarray(blob, np.uint8).tobytes())
    n, size = np.frombuffer(raw[:16], np.int64)
    first = np.frombuffer(raw[16:16 + 8 * min(int(n), 2)], np.int64)
    dt = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[int(size)]
    return _decode_narrow(first, np.frombuffer(raw[16 + 8 * min(int(n), 2):], dt), dtype)


def _stored_table(name, blob, dt):
    """The table ``name`` decompressed: from the copy a process before stored in numba's cache directory (mapped
    read-only, no decompression: an 8-million-entry table costs 0.15-0.5 s of CPU to decompress), else
    decompressed here and stored there for the next process. The file is named by a hash of the compressed
    blob, written under another name and renamed, so a reader never sees a partial or foreign table."""
    path = None
    try:
        import hashlib
        from .jitcache import _cache_dir
        d = _cache_dir(__file__)
        if d is not None:
            h = hashlib.sha1(np.asarray(blob, np.uint8).tobytes()).hexdigest()[:20]
            path = os.path.join(d, f"warpemu.table.{name}.{np.dtype(dt).name}.{h}.npy")
            v = np.load(path, mmap_mode="r", allow_pickle=False)
            if v.dtype == dt and v.ndim == 1:
                return v
    except Exception:                      # noqa: BLE001 (absent, unreadable or foreign: decompress)
        pass
    v = unpack_table(blob, dt)
    if path is not None:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                np.save(f, v, allow_pickle=False)
            os.replace(tmp, path)
        except OSError:                    # a read-only or full cache directory: decompress every time
            pass
    return v


class _LazyTables(dict):
    """The tables of ``_DATA``, each decompressed on first use (an instruction needs one or two of them)."""

    def __init__(self, path):
        super().__init__()
        with np.load(path, allow_pickle=False) as z:
            self._blobs = {k.rpartition("__")[0]: (z[k], np.dtype(k.rpartition("__")[2])) for k in z.files}

    def __missing__(self, name):
        blob, dt = self._blobs[name]
        v = _stored_table(name, blob, dt)
        self[name] = v
        return v

    def names(self):
        return sorted(self._blobs)


_TABLES = None


def tables(xp=np):
    """{name: array} of the measured MUFU tables (decompressed on first use; moved to ``xp`` if not numpy)."""
    global _TABLES
    if _TABLES is None:
        _TABLES = _LazyTables(_DATA)
    if xp is np:
        return _TABLES
    return {k: xp.asarray(_TABLES[k]) for k in _TABLES.names()}


# ----------------------------------------------------------------------------------------------- helpers
def _u32(xp, v):
    return xp.asarray(v).astype(xp.uint32)


def _fields(xp, x):
    x = _u32(xp, x)
    return x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF


def _is_nan(xp, x):
    return (x & 0x7FFFFFFF) > 0x7F800000


def f32_to_f64(xp, bits):
    """f32 bits -> float64 values, exactly (integer arithmetic: no flush of subnormals on any device)."""
    b = _u32(xp, bits)
    s, e, m = b >> 31, (b >> 23) & 0xFF, b & 0x7FFFFF
    sig = (m | xp.where(e != 0, xp.uint32(0x800000), xp.uint32(0))).astype(xp.float64)
    v = xp.ldexp(sig, (xp.maximum(e, 1).astype(xp.int64) - 150).astype(xp.int32))
    v = xp.where(e == 255, xp.where(m == 0, xp.float64(np.inf), xp.float64(np.nan)), v)
    return xp.where(s == 1, -v, v)


def round_to_f32(xp, v64, mode="rn", ftz=False):
    """float64 values -> f32 bits rounded to nearest even ("rn") or toward zero ("rz"), subnormals kept;
    with ``ftz`` a result that is tiny after rounding with an unbounded exponent is a zero of its sign (the
    H100's .ftz rule). Integer arithmetic on the float64 bits, so every device gives the same bits.
    NaN -> 0x7FFFFFFF."""
    v64 = xp.asarray(v64, dtype=xp.float64)
    b = v64.view(xp.uint64)
    s = (b >> 63).astype(xp.uint32)
    E = ((b >> 52) & 0x7FF).astype(xp.int64)
    sig = ((b & ((1 << 52) - 1)) | (1 << 52)).astype(xp.int64)
    e = E - 1023
    shift = xp.full(e.shape, 29, xp.int64) if ftz else xp.clip(29 + xp.maximum(-126 - e, 0), 29, 60)
    mant = sig >> shift
    rem = sig & ((xp.int64(1) << shift) - 1)
    if mode == "rn":
        half = xp.int64(1) << (shift - 1)
        mant = mant + ((rem > half) | ((rem == half) & ((mant & 1) == 1))).astype(xp.int64)
    normal = e >= -126
    mag = xp.where(normal, ((e + 127) << 23) + (mant - (1 << 23)), mant)
    if ftz:
        mag = xp.where(e + (mant >> 24) < -126, 0, ((e + 127) << 23) + (mant - (1 << 23)))
        normal = xp.ones(e.shape, bool)
    top = 0x7F800000 if mode == "rn" else 0x7F7FFFFF
    mag = xp.where(normal & (e + 127 >= 255), top, xp.minimum(mag, top))
    mag = xp.where(E == 0, 0, mag)
    r = (s << 31) | mag.astype(xp.uint32)
    r = xp.where(E == 0x7FF, xp.where((b & ((1 << 52) - 1)) != 0, xp.uint32(CANON_NAN), (s << 31) | xp.uint32(0x7F800000)), r)
    return r.astype(xp.uint32)


def fmul(xp, a, b, ftz=False):
    """FMUL (.rn), the H100's: the exact product rounded once, canonical NaN; .ftz flushes inputs and result."""
    a, b = _u32(xp, a), _u32(xp, b)
    if ftz:
        a, b = flush(xp, a), flush(xp, b)
    with np.errstate(invalid="ignore", over="ignore"):       # inf * 0 is NaN on purpose
        p = f32_to_f64(xp, a) * f32_to_f64(xp, b)
    return round_to_f32(xp, p, ftz=ftz)


def fadd(xp, a, b):
    """FADD (.rn) of two f32 whose exact sum float64 holds (the uses here add small integers)."""
    with np.errstate(invalid="ignore", over="ignore"):       # inf - inf is NaN on purpose
        p = f32_to_f64(xp, a) + f32_to_f64(xp, b)
    return round_to_f32(xp, p)


def flush(xp, x):
    """Subnormal f32 bits -> zero of the same sign."""
    x = _u32(xp, x)
    return xp.where((x & 0x7F800000) == 0, x & 0x80000000, x)


def rz32(xp, v64):
    """float64 values -> f32 bits, rounded toward zero."""
    return round_to_f32(xp, v64, "rz")


def _rz32_sum(xp, a, v):
    """RZ to f32 of the exact sum a + v (a: small integers as float64, v: float64 from f32), by TwoSum."""
    s = a + v
    bb = s - a
    err = (a - (s - bb)) + (v - bb)
    r = rz32(xp, s)
    on_grid = f32_to_f64(xp, r) == s
    shrink = on_grid & (((s > 0) & (err < 0)) | ((s < 0) & (err > 0)))
    return xp.where(shrink & ((r & 0x7FFFFFFF) != 0), r - 1, r).astype(xp.uint32)


# ------------------------------------------------------------------------------------- f32 MUFU operations
def mufu_rcp(xp, x, T=None):
    """MUFU.RCP: the mantissa's reciprocal from a table; exponent negated; results below 2^-126 flush to 0."""
    T = tables(xp) if T is None else T
    s, e, m = _fields(xp, x)
    t = T["rcp"][m.astype(xp.int64)]
    te = ((t >> 23) & 0xFF).astype(xp.int64)
    re = te - (e.astype(xp.int64) - 127)
    mag = xp.where(re >= 1, ((re << 23) | (t & 0x7FFFFF).astype(xp.int64)), 0).astype(xp.uint32)
    r = (s << 31) | mag
    r = xp.where(e == 0, (s << 31) | xp.uint32(0x7F800000), r)
    r = xp.where(e == 255, xp.where(m == 0, s << 31, xp.uint32(CANON_NAN)), r)
    return r.astype(xp.uint32)


def _rsq_sqrt(xp, x, ta, tb, sign):
    s, e, m = _fields(xp, x)
    E = e.astype(xp.int64) - 127
    odd = (E & 1) == 1
    t = xp.where(odd, tb[m.astype(xp.int64)], ta[m.astype(xp.int64)])
    half = (E - (E & 1)) >> 1
    te = ((t >> 23) & 0xFF).astype(xp.int64)
    mag = (((te + sign * half) << 23) | (t & 0x7FFFFF).astype(xp.int64)).astype(xp.uint32)
    return s, e, m, mag


def mufu_rsq(xp, x, T=None):
    T = tables(xp) if T is None else T
    s, e, m, mag = _rsq_sqrt(xp, x, T["rsq_even"], T["rsq_odd"], -1)
    r = xp.where(s == 1, xp.uint32(CANON_NAN), mag)
    r = xp.where(e == 0, (s << 31) | xp.uint32(0x7F800000), r)
    r = xp.where(e == 255, xp.where((m == 0) & (s == 0), xp.uint32(0), xp.uint32(CANON_NAN)), r)
    return r.astype(xp.uint32)


def mufu_sqrt(xp, x, T=None):
    T = tables(xp) if T is None else T
    s, e, m, mag = _rsq_sqrt(xp, x, T["sqrt_even"], T["sqrt_odd"], 1)
    r = xp.where(s == 1, xp.uint32(CANON_NAN), mag)
    r = xp.where(e == 0, s << 31, r)
    r = xp.where(e == 255, xp.where((m == 0) & (s == 0), xp.uint32(0x7F800000), xp.uint32(CANON_NAN)), r)
    return r.astype(xp.uint32)


def mufu_ex2(xp, x, T=None):
    """MUFU.EX2: |x| to fixed point with 23 fraction bits (truncated), then 2^(+-int) times a table entry
    for the fraction: one table for x >= 0, another for x < 0 (the H100 does not take 2^-f from 2^(1-f))."""
    T = tables(xp) if T is None else T
    s, e, m = _fields(xp, x)
    ei = e.astype(xp.int64)
    full = (m | 0x800000).astype(xp.int64)
    sh = ei - 127
    qm = xp.where(sh >= 0, full << xp.clip(sh, 0, 40), full >> xp.clip(-sh, 0, 63))
    qm = xp.where(e == 0, 0, qm)
    big = ei >= 134                              # |x| >= 128
    q = xp.where(big, 0, qm)
    i = q >> 23
    f = q & 0x7FFFFF
    # x >= 0: 2^i * 2^(f/2^23), the table in [1, 2); x < 0: 2^-i * 2^(-f/2^23), a table of its own in (0.5, 1]
    t = xp.where(s == 1, T["ex2_neg"][f], T["ex2"][f]).astype(xp.int64)
    i = xp.where(s == 1, -i, i)
    re = ((t >> 23) & 0xFF) + i
    mag = xp.where(re >= 1, (re << 23) | (t & 0x7FFFFF), 0)
    mag = xp.where(re >= 255, 0x7F800000, mag).astype(xp.uint32)
    r = xp.where(big, xp.where(s == 1, xp.uint32(0), xp.uint32(0x7F800000)), mag)
    r = xp.where(e == 255, xp.where(m != 0, xp.uint32(CANON_NAN), xp.where(s == 1, xp.uint32(0),
                                                                             xp.uint32(0x7F800000))), r)
    return r.astype(xp.uint32)


def mufu_lg2(xp, x, T=None):
    """MUFU.LG2: log2 of the mantissa from a table, plus the exponent, truncated toward zero to f32."""
    T = tables(xp) if T is None else T
    s, e, m = _fields(xp, x)
    mi = m.astype(xp.int64)
    E = e.astype(xp.int64) - 127
    t127 = T["lg2_e0"][mi]
    t126 = T["lg2_em1"][mi]
    v127 = f32_to_f64(xp, t127)
    v126 = f32_to_f64(xp, t126)
    hi = _rz32_sum(xp, E.astype(xp.float64), v127)
    lo = _rz32_sum(xp, (E + 1).astype(xp.float64), v126)
    r = xp.where(E >= 1, hi, lo)
    r = xp.where(E == 0, t127, r)
    r = xp.where(E == -1, t126, r)
    r = xp.where(s == 1, xp.uint32(CANON_NAN), r)
    r = xp.where(e == 0, xp.uint32(0xFF800000), r)
    r = xp.where(e == 255, xp.where((m == 0) & (s == 0), xp.uint32(0x7F800000), xp.uint32(CANON_NAN)), r)
    return r.astype(xp.uint32)


def mufu_tanh(xp, x, T=None):
    """MUFU.TANH: x itself below 2^-8, a table per binade [2^-8, 8) read at a binade-dependent number of
    mantissa bits, +-1 from 8 on; odd."""
    T = tables(xp) if T is None else T
    s, e, m = _fields(xp, x)
    r = xp.asarray(x).astype(xp.uint32) & 0x7FFFFFFF
    for be, k in TANH_SHIFT.items():
        tab = T[f"tanh_{be}"]
        idx = (m >> k).astype(xp.int64)
        r = xp.where(e == be, tab[xp.clip(idx, 0, tab.size - 1)], r)
    r = xp.where(e >= 130, xp.uint32(0x3F800000), r)
    r = (s << 31) | r
    r = xp.where((e == 255) & (m != 0), xp.uint32(CANON_NAN), r)
    return r.astype(xp.uint32)


def _revolutions(xp, r):
    """f32 revolutions -> (sign, the fraction of a revolution as a 25-bit fixed-point integer, truncated)."""
    s, e, m = _fields(xp, r)
    full = (m | 0x800000).astype(xp.int64)
    sh = e.astype(xp.int64) - 125
    q = xp.where(sh >= 0, full << xp.clip(sh, 0, 40), full >> xp.clip(-sh, 0, 63))
    q = xp.where(e == 0, 0, q) & ((1 << 25) - 1)
    return s, q


def _sincos_table(xp, T, q, cos):
    quad = q >> 23
    t = q & 0x7FFFFF
    S, C = T["sin_q0"], T["cos_q0"]
    if cos:
        quad = (quad + 1) & 3
    v = xp.where((quad & 1) == 0, S[t], C[t])
    neg = quad >= 2
    return xp.where(neg, v ^ xp.uint32(0x80000000), v).astype(xp.uint32)


def mufu_sin(xp, r, T=None):
    """MUFU.SIN of an angle in revolutions."""
    T = tables(xp) if T is None else T
    s, q = _revolutions(xp, r)
    v = _sincos_table(xp, T, q, False)
    v = v ^ (s << 31)
    rr = _u32(xp, r)
    return xp.where((rr & 0x7F800000) == 0x7F800000, xp.uint32(CANON_NAN), v).astype(xp.uint32)


def mufu_cos(xp, r, T=None):
    T = tables(xp) if T is None else T
    s, q = _revolutions(xp, r)
    v = _sincos_table(xp, T, q, True)
    rr = _u32(xp, r)
    return xp.where((rr & 0x7F800000) == 0x7F800000, xp.uint32(CANON_NAN), v).astype(xp.uint32)


def fmul_rz_revolutions(xp, x):
    """FMUL.RZ x, 0.15915493667125701904 (not .ftz): the exact product truncated to f32."""
    x = _u32(xp, x)
    c = float(np.uint32(TWO_PI_RECIP).view(np.float32))
    p = f32_to_f64(xp, x) * c
    r = rz32(xp, p)
    return xp.where(_is_nan(xp, x), xp.uint32(CANON_NAN), r).astype(xp.uint32)


# --------------------------------------------------------------------------------------- PTX forms (f32)
def _abs_ge(xp, x, bits):
    """FSETP.GEU |x|, c: true also for NaN (unordered)."""
    return (_u32(xp, x) & 0x7FFFFFFF) >= bits


def ptx_f32_unary(xp, form, x, T=None):
    """The PTX instruction ``form`` (e.g. "ex2.approx.f32") on f32 bits, as the H100 runs it."""
    T = tables(xp) if T is None else T
    x = _u32(xp, x)
    op, _, rest = form.partition(".")
    ftz = ".ftz." in form
    if op in ("sin", "cos"):
        r = fmul_rz_revolutions(xp, x)
        return (mufu_sin if op == "sin" else mufu_cos)(xp, r, T)
    if op == "tanh":
        return mufu_tanh(xp, x, T)
    prim = {"ex2": mufu_ex2, "lg2": mufu_lg2, "rcp": mufu_rcp, "rsqrt": mufu_rsq, "sqrt": mufu_sqrt}[op]
    if ftz:
        return prim(xp, x, T)
    if op == "ex2":
        p = (f32_to_f64(xp, x) >= -126.0) | _is_nan(xp, x)                # FSETP.GEU: NaN -> true
        y = xp.where(p, x, fmul(xp, x, 0x3F000000))
        r = prim(xp, y, T)
        return xp.where(p, r, fmul(xp, r, r)).astype(xp.uint32)
    if op == "rcp":
        small = ~_abs_ge(xp, x, F32_MIN_NORMAL)
        large = (x & 0x7FFFFFFF) > 0x7E800000
        large = large & ~_is_nan(xp, x)
        sc = xp.where(small, xp.uint32(0x4B800000), xp.uint32(0x3F800000))
        sc = xp.where(large, xp.uint32(0x3E800000), sc)
        return fmul(xp, sc, prim(xp, fmul(xp, x, sc), T))
    p = _abs_ge(xp, x, F32_MIN_NORMAL)
    y = xp.where(p, x, fmul(xp, x, 0x4B800000))
    r = prim(xp, y, T)
    if op == "lg2":
        fix = fadd(xp, r, 0xC1C00000)                       # -24
    elif op == "rsqrt":
        fix = fmul(xp, r, 0x45800000)                       # 4096
    else:
        fix = fmul(xp, r, 0x39800000)                       # 2^-12
    return xp.where(p, r, fix).astype(xp.uint32)


def ptx_f32_div(xp, form, a, b, T=None):
    """div.approx(.ftz).f32 and div.full(.ftz).f32 on f32 bits: the final FMUL of ptxas's sequence."""
    r, a2 = div_factors(xp, form, a, b, T)
    return fmul(xp, r, a2, ftz=".ftz." in form)


def div_factors(xp, form, a, b, T=None):
    """The two factors of the final FMUL of ptxas's division sequence (rcp(b'), a'), for the forms in
    F32_DIV: ptxas fuses that FMUL with an unrounded add/sub reading the quotient (frontend/contract.py)."""
    T = tables(xp) if T is None else T
    a, b = _u32(xp, a), _u32(xp, b)
    ftz = ".ftz." in form
    if form.startswith("div.approx"):
        if ftz:
            return mufu_rcp(xp, b, T), flush(xp, a)
        p = _abs_ge(xp, b, F32_MIN_NORMAL)
        b2 = xp.where(p, b, fmul(xp, b, 0x4B800000))
        a2 = xp.where(p, a, fmul(xp, a, 0x4B800000))
        return mufu_rcp(xp, b2, T), a2
    large = ((b & 0x7FFFFFFF) > 0x7E800000) & ~_is_nan(xp, b)
    if ftz:
        b2 = xp.where(large, fmul(xp, b, 0x3E800000, ftz=True), b)
        a2 = xp.where(large, fmul(xp, a, 0x3E800000, ftz=True), flush(xp, a))
        return mufu_rcp(xp, b2, T), a2
    b2 = xp.where(large, fmul(xp, b, 0x3E800000), b)
    a2 = xp.where(large, fmul(xp, a, 0x3E800000), a)
    small = ~_abs_ge(xp, b2, F32_MIN_NORMAL)
    b3 = xp.where(small, fmul(xp, b2, 0x4B800000), b2)
    a3 = xp.where(small, fmul(xp, a2, 0x4B800000), a2)
    return mufu_rcp(xp, b3, T), a3


# ------------------------------------------------------------------------------------ f64 and half forms
def _fields64(xp, hi):
    hi = xp.asarray(hi).astype(xp.uint32)
    return hi >> 31, (hi >> 20) & 0x7FF, hi & 0xFFFFF


def mufu_rcp64h(xp, x, T=None):
    """rcp.approx.ftz.f64: MUFU.RCP64H reads the high word only; the low word of the result is 0."""
    T = tables(xp) if T is None else T
    x = xp.asarray(x).astype(xp.uint64)
    s, e, m = _fields64(xp, (x >> 32).astype(xp.uint32))
    t = T["rcp64h"][m.astype(xp.int64)].astype(xp.int64)
    te = (t >> 20) & 0x7FF
    re = te - (e.astype(xp.int64) - 1023)
    mag = xp.where(re >= 1, (re << 20) | (t & 0xFFFFF), 0)
    hi = (s.astype(xp.int64) << 31) | mag
    hi = xp.where(e == 0, (s.astype(xp.int64) << 31) | 0x7FF00000, hi)
    hi = xp.where(e == 2047, xp.where(m == 0, s.astype(xp.int64) << 31, T["nan64h"][0].astype(xp.int64)), hi)
    return (hi.astype(xp.uint64) << 32).astype(xp.uint64)


def mufu_rsq64h(xp, x, T=None):
    T = tables(xp) if T is None else T
    x = xp.asarray(x).astype(xp.uint64)
    s, e, m = _fields64(xp, (x >> 32).astype(xp.uint32))
    E = e.astype(xp.int64) - 1023
    odd = (E & 1) == 1
    mi = m.astype(xp.int64)
    t = xp.where(odd, T["rsq64h_odd"][mi], T["rsq64h_even"][mi]).astype(xp.int64)
    half = (E - (E & 1)) >> 1
    mag = ((((t >> 20) & 0x7FF) - half) << 20) | (t & 0xFFFFF)
    nan = T["nan64h"][0].astype(xp.int64)
    hi = xp.where(s == 1, nan, mag)
    hi = xp.where(e == 0, (s.astype(xp.int64) << 31) | 0x7FF00000, hi)
    hi = xp.where(e == 2047, xp.where((m == 0) & (s == 0), 0, nan), hi)
    return (hi.astype(xp.uint64) << 32).astype(xp.uint64)


HALF_FORMS = {"ex2.approx.f16": "ex2_f16", "ex2.approx.ftz.bf16": "ex2_bf16",
              "tanh.approx.f16": "tanh_f16", "tanh.approx.bf16": "tanh_bf16"}


def ptx_half(xp, form, x, T=None):
    """The f16/bf16 (x2) forms: every one of the 65,536 inputs is a measured table entry."""
    T = tables(xp) if T is None else T
    pair = form.endswith("x2")
    tab = T[HALF_FORMS[form[:-2] if pair else form]]
    x = xp.asarray(x)
    if not pair:
        return tab[x.astype(xp.int64) & 0xFFFF].astype(xp.uint16)
    x = x.astype(xp.uint32)
    lo = tab[(x & 0xFFFF).astype(xp.int64)].astype(xp.uint32)
    hi = tab[(x >> 16).astype(xp.int64)].astype(xp.uint32)
    return (lo | (hi << 16)).astype(xp.uint32)


F32_UNARY = [f for f in PTX_SEQUENCES if f.endswith("f32") and not f.startswith("div")]
F32_DIV = [f for f in PTX_SEQUENCES if f.startswith("div")]
HALF = [f for f in PTX_SEQUENCES if f.endswith(("f16", "f16x2", "bf16", "bf16x2"))]
F64 = ["rcp.approx.ftz.f64", "rsqrt.approx.ftz.f64"]


def ptx_f64(xp, form, x, T=None):
    return (mufu_rcp64h if form.startswith("rcp") else mufu_rsq64h)(xp, x, T)
