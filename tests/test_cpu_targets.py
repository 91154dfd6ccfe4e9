"""The jitted tensor-core numerics compiled for other x86 CPUs than this one: numba compiles for the CPU that
``NUMBA_CPU_NAME`` and ``NUMBA_CPU_FEATURES`` name (the host's when unset), and code built for an older CPU runs
on a newer one, so each target below is compiled and checked here, in a fresh process with its own numba cache:

* ``x86-64``: SSE2 only (no AVX, FMA, F16C, nor SSE4.1's vector rounding: ``llvm.trunc``/``rint``/``fma`` become
  calls of the C library's, f16 operands are decoded without F16C, ``tc_simd._half_bits``);
* ``nehalem``: SSE4.2; ``sandybridge``: AVX without F16C or FMA; ``haswell``: AVX2, FMA and F16C (what
  ``NUMBA_CPU_NAME=haswell`` alone does not give: numba then keeps the host's features, AVX-512 included).

The child process (this file run as a script) runs the mma.sync rows of every float form
(``numerics.tc_row``), the integer and f64 tiles (``fastcore.mmatile``) and the wgmma f32 tile
(``numerics.gemm_fast``) on seeded fragments with NaN payloads, infinities, signed zeros and subnormals, and
writes the raw bits, and ``cvt.{rni,rzi,rmi,rpi}.f64.f64`` of signalling NaNs (``fastcore.scalarx``: without
SSE4.1 ``floor``/``ceil``/``trunc`` leave them unquieted); this process compares them with the reference executor
and the readable rule compiled for the host. The slow tests add the H100 captures (corpus kernels of mma.sync and wgmma, the scalar capture's
conversions and the mma captures) replayed under each target, and the cache: entries built for one CPU are
never loaded for another."""
import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
X86 = platform.machine() in ("x86_64", "AMD64")
pytestmark = pytest.mark.skipif(not X86, reason="the targets are x86 CPUs")

HASWELL = ("+64bit,+avx,+avx2,+bmi,+bmi2,+cmov,+cx16,+f16c,+fma,+fxsr,+lzcnt,+mmx,+movbe,+popcnt,+sse,+sse2,+sse3,"
           "+sse4.1,+sse4.2,+ssse3,+xsave")
TARGETS = {"x86-64": ("x86-64", ""), "nehalem": ("nehalem", ""), "sandybridge": ("sandybridge", ""),
           "haswell": ("haswell", HASWELL)}


def target_env(target, cache):
    """The environment of a process that compiles for ``target`` (a key of TARGETS) into the cache ``cache``."""
    name, feats = TARGETS[target]
    env = dict(os.environ, NUMBA_CPU_NAME=name, NUMBA_CPU_FEATURES=feats, NUMBA_CACHE_DIR=str(cache),
               WARPEMU_BACKGROUND_COMPILE="0")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_child(target, cache, out, parts, timeout=900):
    """This file as a script under ``target``: the parts (``rows``, ``tiles``, ``wgmma``, ``cvt``, ``corpus``)
    written to ``out``."""
    r = subprocess.run([sys.executable, __file__, str(out), *parts], env=target_env(target, cache), cwd=ROOT,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, (target, r.returncode, r.stdout[-2000:], r.stderr[-3000:])
    with np.load(out, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


# ---------------------------------------------------------------------------------------------------------------
# the child: seeded fragments through the jitted code, the raw bits out

def _forms():
    from test_mma_row import FORMS, TILE_FORMS
    return FORMS, TILE_FORMS


def _child_rows(out):
    """Every float mma.sync form, three fragments each: tame (near 1), spread over the exponent range with
    subnormals and zeros, and with infinities and NaN payloads (the row hands those back: rc 1)."""
    import test_mma_row as R
    from emulator.ops.mma import get_mma
    forms, _ = _forms()
    for i, (spelling, arch) in enumerate(forms):
        op = get_mma(spelling, arch)
        v = op.variant
        for j, (spread, special) in enumerate(((False, 0.0), (True, 0.0), (True, 0.05))):
            rng = np.random.default_rng(1000 * i + j)
            a = R._regs(rng, v.atype, op.n_a, spread, special)
            b = R._regs(rng, v.btype, op.n_b, spread, special)
            c = R._regs(rng, v.ctype, op.n_c, spread, special)
            rc, got = R._row(op, a, b, c, alias=bool(j & 1))
            out.update({f"row_{i}_{j}_a": a, f"row_{i}_{j}_b": b, f"row_{i}_{j}_c": c, f"row_{i}_{j}_d": got,
                        f"row_{i}_{j}_rc": np.int64(rc)})


def _child_tiles(out):
    """The integer (.satfinite too) and f64 forms (fastcore.mmatile: tc_simd.vimac, vfma), with specials."""
    import test_mma_row as R
    from emulator.ops.mma import get_mma
    _, forms = _forms()
    for i, (spelling, arch) in enumerate(forms):
        op = get_mma(spelling, arch)
        rng = np.random.default_rng(7 + i)
        a, b, c = (R._tile_regs(rng, op, g, 0.2) for g in range(3))
        rc, got = R._tile_row(op, a, b, c, False)
        out.update({f"tile_{i}_a": a, f"tile_{i}_b": b, f"tile_{i}_c": c, f"tile_{i}_d": got,
                    f"tile_{i}_rc": np.int64(rc)})


WG_FORMS = [("f16", "f16"), ("bf16", "bf16"), ("tf32", "tf32"), ("e4m3", "e5m2"), ("e5m2", "e4m3")]
WG_EDGES = {16: [0x0000, 0x8000, 0x0001, 0x83FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0x0080, 0x807F, 0x7F7F],
            32: [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0x3F800000, 0x7FC0BEEF,
                 0x33800000, 0xFF800000],
            8: [0x00, 0x80, 0x01, 0x87, 0x08, 0x7E, 0x7B, 0xFB, 0x38, 0x7F]}
WIDTH = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8}


def _wg_case(i):
    """wgmma f32 tile i: one instruction's K, M = 3 rows, N = 24 columns (three vectors of eight), uniform bits
    with edge values mixed in (C with a NaN payload and an infinity: those rows take the scalar chain)."""
    at, bt = WG_FORMS[i % len(WG_FORMS)]
    rng = np.random.default_rng(50 + i)
    K = {"f16": 16, "bf16": 16, "tf32": 8}.get(at, 32)

    def draw(w, shape, edges):
        x = rng.integers(0, 1 << w, shape, dtype=np.uint64)
        pick = rng.random(shape) < 0.15
        return np.where(pick, np.array(edges, np.uint64)[rng.integers(0, len(edges), shape)], x)
    A, B = draw(WIDTH[at], (3, K), WG_EDGES[WIDTH[at]]), draw(WIDTH[bt], (K, 24), WG_EDGES[WIDTH[bt]])
    if at == "tf32":
        A &= np.uint64(0xFFFFE000)
        B &= np.uint64(0xFFFFE000)
    C = draw(32, (3, 24), WG_EDGES[32])
    return at, bt, A, B, C


def _child_wgmma(out):
    from emulator.numerics import gemm_fast as G
    from emulator.numerics import wgmma as num
    G.NUMPY_MAX = -1                                   # the jitted kernels, never the numpy path
    for i in range(2 * len(WG_FORMS)):
        at, bt, A, B, C = _wg_case(i)
        out[f"wg_{i}"] = num.wgmma_tile(at, bt, "f32", A, B, C)


# corpus kernels (Triton's PTX) replayed on the fast engine against the H100's bits: mma.sync of every operand
# kind, an f16 accumulator, f64 and int8; wgmma of f16, tf32, fp8 and int8
CORPUS = ["triton_matmul_f16_sm80", "triton_matmul_bf16_sm80", "triton_matmul_tf32_sm80",
          "triton_matmul_f16_acc16_sm80", "triton_matmul_fp8e4_sm90a", "triton_matmul_fp8e5_sm90a",
          "triton_matmul_f64_sm80", "triton_matmul_int8_sm80", "triton_flash_attention_sm80",
          "triton_matmul_f16_64x64_sm90a", "triton_matmul_tf32_64x64_sm90a", "triton_matmul_fp8e4_64x64_sm90a",
          "triton_matmul_int8_64x64_sm90a"]


def _child_corpus(out):
    import corpus_lib
    cases = corpus_lib.load_all(["triton.npz"])
    bad = {}
    for n in CORPUS:
        for engine in ("fast", "reference"):
            got, res, _ = corpus_lib.replay(cases[n], engine=engine)
            bad[f"{n} {engine}"] = [res.instructions, corpus_lib.mismatches(cases[n], got)]
    out["corpus"] = np.array(json.dumps(bad))


# cvt.{rni,rzi,rmi,rpi}.f64.f64 (fastcore.scalarx._cvtf2): without SSE4.1, floor/ceil/trunc leave a signalling NaN
# unquieted; the H100 quiets it and keeps its payload
F64_EDGES = np.array([0x7FF0000000000001, 0x7FF4000000000000, 0xFFF0000000000123, 0x7FF8000000000001, 0xFFFFFFFFFFFFFFFF,
                      0x7FF0000000000000, 0xFFF0000000000000, 0x8000000000000000, 0, 1, 0x8000000000000001,
                      0xBFE0000000000000, 0x3FE8000000000000, 0x4330000000000001, 0xC32FFFFFFFFFFFFF,
                      0x7FEFFFFFFFFFFFFF, 0xC00C000000000000], np.uint64)


def _cvt_words():
    from emulator.machine.fastcore import scalarx as X
    return [X.CVT_IRND | (mode << 4) | (X.F_F64 << 2) | X.F_F64 for mode in range(4)]


def _child_cvt(out):
    from emulator.machine.fastcore import scalarx as X
    out["cvt"] = np.array([[X._cvtf2(np.int64(y), a) for a in F64_EDGES] for y in _cvt_words()], np.uint64)


def _child(path, parts):
    from numba.core.registry import cpu_target
    out = {"magic": np.array(json.dumps(list(cpu_target.target_context.codegen().magic_tuple())))}
    for p in parts:
        {"rows": _child_rows, "tiles": _child_tiles, "wgmma": _child_wgmma, "corpus": _child_corpus,
         "cvt": _child_cvt}[p](out)
    from emulator.numerics import tc_row
    hits = {f"{f.__module__}.{f.__name__}": (sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values()))
            for f in (tc_row.run_regs, tc_row.decode, tc_row.tile) if f.signatures}
    out["stats"] = np.array(json.dumps(hits))
    np.savez_compressed(path, **out)


# ---------------------------------------------------------------------------------------------------------------
# the checks, against the host's reference

def check_rows(z):
    from emulator.ops.mma import get_mma
    forms, _ = _forms()
    ran = 0
    for i, (spelling, arch) in enumerate(forms):
        op = get_mma(spelling, arch)
        for j in range(3):
            k = f"row_{i}_{j}_"
            rc = int(z[k + "rc"])
            if j == 0:
                assert rc == 0, (spelling, arch, "a tame fragment handed back")
            if rc == 0:
                want = op.execute(z[k + "a"], z[k + "b"], z[k + "c"]).astype(np.uint32)
                assert np.array_equal(z[k + "d"], want), (spelling, arch, j, np.argwhere(z[k + "d"] != want)[:4])
                ran += 1
    assert ran > len(forms) + len(forms) // 4, ran           # every tame fragment and some others
    return ran


def check_tiles(z):
    from emulator.ops.mma import get_mma
    _, forms = _forms()
    for i, (spelling, arch) in enumerate(forms):
        op = get_mma(spelling, arch)
        k = f"tile_{i}_"
        want = op.execute(z[k + "a"], z[k + "b"], z[k + "c"])
        assert int(z[k + "rc"]) == 0 and np.array_equal(z[k + "d"], want.astype(z[k + "d"].dtype)), (spelling, arch)
    return len(forms)


def check_wgmma(z):
    from emulator.numerics import wgmma as num
    for i in range(2 * len(WG_FORMS)):
        at, bt, A, B, C = _wg_case(i)
        want = np.array([[num.reference_element(at, bt, "f32", [int(x) for x in A[m]],
                                                [int(B[k, n]) for k in range(A.shape[1])], int(C[m, n]))
                          for n in range(C.shape[1])] for m in range(C.shape[0])], np.uint64)
        got = z[f"wg_{i}"]
        assert np.array_equal(got, want), (at, bt, np.argwhere(got != want)[:4])
    return 2 * len(WG_FORMS)


def _magic(z):
    return json.loads(str(z["magic"]))


def check_cvt(z):
    """The host's bits, and every NaN quiet with its payload (the H100's rule)."""
    from emulator.machine.fastcore import scalarx as X
    want = np.array([[X._cvtf2(np.int64(y), a) for a in F64_EDGES] for y in _cvt_words()], np.uint64)
    nan = (F64_EDGES & np.uint64(0x7FFFFFFFFFFFFFFF)) > np.uint64(0x7FF0000000000000)
    assert (want[:, nan] == (F64_EDGES[nan] | np.uint64(1 << 51))).all()
    assert np.array_equal(z["cvt"], want), [(i, hex(int(F64_EDGES[j])), hex(int(z["cvt"][i, j])))
                                            for i, j in np.argwhere(z["cvt"] != want)[:4]]


def test_mma_rows_and_roundings_compiled_for_sse2_only(tmp_path):
    """x86-64 (SSE2: no F16C, FMA, AVX, SSE4.1): every float mma.sync form's row gives the reference's bits, and
    cvt.rmi/rzi/rpi/rni.f64.f64 quiet a signalling NaN."""
    z = run_child("x86-64", tmp_path / "cache", tmp_path / "out.npz", ["rows", "cvt"])
    assert _magic(z)[1:] == ["x86-64", ""]
    assert check_rows(z) > 0
    check_cvt(z)


@pytest.mark.slow
@pytest.mark.parametrize("target", list(TARGETS))
def test_tensor_core_numerics_compiled_for(target, tmp_path):
    """Every target: the mma.sync rows, the integer and f64 tiles and the wgmma f32 tile give the host's bits."""
    z = run_child(target, tmp_path / "cache", tmp_path / "out.npz", ["rows", "tiles", "wgmma"])
    assert _magic(z)[1:] == list(TARGETS[target])
    check_rows(z)
    check_tiles(z)
    check_wgmma(z)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["x86-64", "sandybridge", "haswell"])
def test_h100_captures_replay_compiled_for(target, tmp_path):
    """Every target against the H100: the corpus kernels above on both engines (each output byte), then, in a
    pytest run under the target with the same cache, the committed mma.sync captures (every variant) and the
    scalar capture's rows on the fast engine (every fifth form: f16, bf16, fp8 conversions among them)."""
    cache = tmp_path / "cache"
    z = run_child(target, cache, tmp_path / "out.npz", ["corpus", "cvt"], timeout=1800)
    check_cvt(z)
    bad = json.loads(str(z["corpus"]))
    assert len(bad) == 2 * len(CORPUS)
    assert all(v[0] > 0 and v[1] == [] for v in bad.values()), {k: v for k, v in bad.items() if v[1]}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_mma_captures.py",
                        "tests/test_fastcore_scalarx.py::test_xrows_replay_the_h100_scalar_capture"],
                       env=target_env(target, cache), cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]


def test_a_wrong_bit_is_caught(monkeypatch):
    """The comparison can fail: one flipped bit of a row's D is found."""
    import test_mma_row as R
    from emulator.ops.mma import get_mma
    forms, tforms = _forms()
    op = get_mma(*forms[0])
    v = op.variant
    z = {}
    for j in range(3):
        rng = np.random.default_rng(j)
        a, b, c = (R._regs(rng, t, n, False, 0.0) for t, n in ((v.atype, op.n_a), (v.btype, op.n_b), (v.ctype, op.n_c)))
        z.update({f"row_0_{j}_a": a, f"row_0_{j}_b": b, f"row_0_{j}_c": c, f"row_0_{j}_rc": np.int64(0),
                  f"row_0_{j}_d": op.execute(a, b, c).astype(np.uint32)})
    monkeypatch.setattr(sys.modules[__name__], "_forms", lambda: (forms[:1], tforms))
    assert check_rows(z) == 3
    z["row_0_1_d"] = z["row_0_1_d"].copy()
    z["row_0_1_d"][0, 5] ^= 1
    with pytest.raises(AssertionError):
        check_rows(z)


# ---------------------------------------------------------------------------------------------------------------
# the cache: an entry is keyed by the CPU it was built for

@pytest.mark.slow
def test_a_cache_built_for_one_cpu_is_not_loaded_for_another(tmp_path):
    """One cache directory: built under haswell (AVX2), then used under x86-64: numba's index keys every entry by
    the target triple, CPU name and features, the package's link-only bitcode (``jitcache.link_only``) included,
    so the x86-64 process loads nothing built for haswell (it compiles: misses, no hits) and a third process
    under x86-64 loads its own entries (hits, no misses); every one gives the reference's bits."""
    cache = tmp_path / "cache"
    z1 = run_child("haswell", cache, tmp_path / "a.npz", ["rows"])
    z2 = run_child("x86-64", cache, tmp_path / "b.npz", ["rows"])
    z3 = run_child("x86-64", cache, tmp_path / "c.npz", ["rows"])
    for z in (z1, z2, z3):
        check_rows(z)
    s1, s2, s3 = (json.loads(str(z["stats"])) for z in (z1, z2, z3))
    for name in ("emulator.numerics.tc_row.run_regs", "emulator.numerics.tc_row.decode"):
        assert s1[name][0] == 0 and s1[name][1] > 0, (name, s1)     # built afresh
        assert s2[name][0] == 0 and s2[name][1] > 0, (name, s2)     # nothing of haswell's loaded
    run = "emulator.numerics.tc_row.run_regs"
    assert s3[run][0] > 0 and s3[run][1] == 0, s3                   # its own entry loaded (its callees not needed)
    # both CPUs' entries side by side in the index of the link-only helper
    from numba.core.caching import FunctionCache
    from emulator.numerics import tc_row
    env = os.environ.get("NUMBA_CACHE_DIR")
    try:
        from numba.core import config
        keep = config.CACHE_DIR
        config.CACHE_DIR = str(cache)
        index = FunctionCache(tc_row.decode.py_func)._cache_file._load_index()
    finally:
        config.CACHE_DIR = keep
        if env is not None:
            os.environ["NUMBA_CACHE_DIR"] = env
    cpus = {key[1][1:] for key in index}
    assert {("haswell", HASWELL), ("x86-64", "")} <= cpus, cpus


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    _child(sys.argv[1], sys.argv[2:])
