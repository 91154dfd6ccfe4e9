"""The MUFU approximate math (ex2, lg2, rcp, rsqrt, sqrt, sin, cos, tanh .approx; div.approx/div.full; the
f64, f16 and bf16 forms) against the H100, bit for bit.

The proof over every input ran on the H100 itself (tools/hwcapture/mufu/build.py runs this very model with
cupy beside the instruction, over all 2^32 inputs of each f32 and f16x2/bf16x2 form); its record is
tests/data/mufu/h100_report.json. Here the committed sample (3,044 inputs per f32 form, every input of the
16-bit forms) replays through the model and through ``Warp.run``.
"""
import json
import os

import numpy as np
import pytest

from emulator import EmulatorError, Warp, load_ptx
from emulator.errors import UnsupportedError
from emulator.numerics import mufu as M

DATA = os.path.join(os.path.dirname(__file__), "data", "mufu")
SAMPLE = dict(np.load(os.path.join(DATA, "h100_sample.npz"), allow_pickle=False))
REPORT = json.load(open(os.path.join(DATA, "h100_report.json")))
FORMS = sorted({k.split("__")[0] for k in SAMPLE})


def model(form, ins):
    if form in M.F32_UNARY:
        return M.ptx_f32_unary(np, form, ins[0])
    if form in M.F32_DIV:
        return M.ptx_f32_div(np, form, ins[0], ins[1])
    if form in M.HALF:
        return M.ptx_half(np, form, ins[0])
    return M.ptx_f64(np, form, ins[0])


def test_every_form_is_in_the_sample_and_the_report():
    assert set(FORMS) == set(M.F32_UNARY + M.F32_DIV + M.HALF + M.F64)
    assert set(REPORT["forms"]) == set(FORMS)


@pytest.mark.parametrize("form", FORMS)
def test_report_every_input_matched_on_the_h100(form):
    rec = REPORT["forms"][form]
    assert rec["mismatches"] == 0, rec["examples"]
    whole = form in M.F32_UNARY or form in M.F64 or form.endswith("x2")
    assert rec["compared"] == (1 << 32 if whole else (1 << 16 if form in M.HALF else rec["compared"]))
    assert rec["compared"] >= 1 << 16


@pytest.mark.parametrize("form", FORMS)
def test_sample_replays_bit_for_bit(form):
    ins = [SAMPLE[f"{form}__in{i}"] for i in range(2) if f"{form}__in{i}" in SAMPLE]
    want = SAMPLE[f"{form}__out"]
    got = np.asarray(model(form, ins)).astype(want.dtype)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(hex(int(ins[0][i])), hex(int(want[i])), hex(int(got[i]))) for i in bad[:5]]


def test_sample_is_sharp_enough_to_fail():
    """A correctly rounded exp2 differs from the H100 on many sampled inputs: the comparison can fail."""
    x = SAMPLE["ex2.approx.ftz.f32__in0"]
    want = SAMPLE["ex2.approx.ftz.f32__out"]
    with np.errstate(all="ignore"):
        ieee = np.exp2(x.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)
    assert (ieee != want).sum() > 100


_REG = {"f32": "%r", "f64": "%fd", "f16": "%h", "bf16": "%h", "f16x2": "%r", "bf16x2": "%r"}


@pytest.mark.parametrize("form", FORMS)
def test_warp_run_executes_the_form(form):
    """The executor path: 64 sampled inputs through Warp.run, as a kernel's instruction would run."""
    t = form.rsplit(".", 1)[1]
    reg = _REG[t]
    w = Warp()
    n_in = 2 if form.startswith("div") else 1
    want = SAMPLE[f"{form}__out"]
    start = 20000 if want.size > 40000 else 0
    for c in range(2):
        sl = slice(start + 32 * c, start + 32 * (c + 1))
        for i in range(n_in):
            w.write(f"{reg}{10 + i}", SAMPLE[f"{form}__in{i}"][sl])
        srcs = ", ".join(f"{reg}{10 + i}" for i in range(n_in))
        w.run(f"{form} {reg}20, {srcs};")
        assert (w.read(f"{reg}20") == want[sl]).all(), form


def test_rsqrt_approx_f64_refinement_matches_h100():
    """rsqrt.approx.f64 (not .ftz) is MUFU.RSQ64H plus one DFMA refinement step; 4,096 H100 results."""
    z = np.load(os.path.join(DATA, "rsqrt_f64_h100.npz"), allow_pickle=False)
    w = Warp()
    for c in range(0, 256, 32):
        w.write("%fd1", z["x"][c:c + 32])
        w.run("rsqrt.approx.f64 %fd2, %fd1;")
        assert (w.read("%fd2") == z["out"][c:c + 32]).all()


def test_rsqrt_approx_f64_special_values():
    w = Warp()
    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -4.0, 5e-324, 4.0] * 4, np.float64)
    w.write("%fd1", vals.view(np.uint64))
    w.run("rsqrt.approx.f64 %fd2, %fd1;")
    r = w.read("%fd2").view(np.float64)
    assert np.isposinf(r[0]) and np.isneginf(r[1]) and r[2] == 0 and np.isnan(r[3]) and np.isnan(r[4])
    assert np.isnan(r[5]) and abs(r[6] * np.sqrt(5e-324) - 1) < 1e-9 and abs(r[7] - 0.5) < 1e-12


def test_tables_pack_round_trip():
    rng = np.random.default_rng(0)
    for dt in (np.uint16, np.uint32):
        a = np.cumsum(rng.integers(0, 3, 5000)).astype(dt)
        a[100] = np.iinfo(dt).max          # a jump: needs a wide difference
        b = M.unpack_table(M.pack_tables({"t": a})[f"t__{np.dtype(dt).name}"], dt)
        assert (a == b).all()


def test_narrow_decode_equals_the_int64_sums():
    """unpack_table decodes in the table's own width (sums modulo 2^width): the same bits as the int64 sums of
    ``decode_table`` cast, on wrapping differences of every body width, signed and 64-bit tables, short tables, and
    a real 8-million-entry table."""
    rng = np.random.default_rng(7)
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64, np.int16, np.int32, np.int64):
        for body_dt in (np.int8, np.int16, np.int32, np.int64):
            for n in (0, 1, 3, 4, 1000):
                info = np.iinfo(body_dt)
                first = rng.integers(-(1 << 62), 1 << 62, min(n + 2, 2), dtype=np.int64)
                body = rng.integers(info.min, info.max, n, dtype=body_dt, endpoint=True)
                ref = M.decode_table(np.concatenate([first, body.astype(np.int64)]), dt)
                got = M._decode_narrow(first, body, dt)
                assert got.dtype == ref.dtype and got.tobytes() == ref.tobytes(), (dt, body_dt, n)
    blob, dt = M._LazyTables(M._DATA)._blobs["ex2"]
    raw = __import__("lzma").decompress(np.asarray(blob, np.uint8).tobytes())
    first = np.frombuffer(raw[16:32], np.int64)
    ref = M.decode_table(np.concatenate([first, np.frombuffer(raw[32:], np.int8).astype(np.int64)]), dt)
    got = M.unpack_table(blob, dt)
    assert np.frombuffer(raw[8:16], np.int64)[0] == 1 and got.dtype == ref.dtype and np.array_equal(got, ref)


def test_round_to_f32_and_fmul_equal_numpy():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    b[::2] = (b[::2] & 0x807FFFFF) | 0x1F000000          # products near and below the subnormal range
    with np.errstate(all="ignore"):
        ref = (a.view(np.float32) * b.view(np.float32)).view(np.uint32)
    ref = np.where(np.isnan(ref.view(np.float32)), np.uint32(0x7FFFFFFF), ref)
    assert (M.fmul(np, a, b) == ref).all()


def test_unknown_form_lists_the_supported_spellings():
    w = Warp()
    with pytest.raises(UnsupportedError) as e:
        w.run("ex2.approx.f64 %fd2, %fd1;")
    assert "ex2.approx.ftz.f32" in str(e.value) and "line 1" in str(e.value)
    with pytest.raises(EmulatorError):
        w.run("sin.approx.f16 %h2, %h1;")
    with pytest.raises(EmulatorError):
        w.run("tanh.approx.f32 %r2, %r1, %r3;")


def test_bf16_forms_need_sm_90():
    w = Warp(arch="sm_80")
    with pytest.raises(UnsupportedError) as e:
        w.run("ex2.approx.ftz.bf16 %h2, %h1;")
    assert "sm_90" in str(e.value)
    w.run("ex2.approx.f16 %h2, %h1;")


KERNEL = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<9>; .reg .f32 %f<20>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f1, [%rd3];
  mul.f32 %f2, %f1, 0f3FB8AA3B;
  ex2.approx.ftz.f32 %f3, %f2;
  add.f32 %f4, %f3, 0f3F800000;
  div.full.f32 %f5, %f1, %f4;
  sub.f32 %f6, %f1, %f5;
  st.global.f32 [%rd3], %f6;
  ret;
}
"""


def test_kernel_with_mufu_runs_on_both_engines():
    from engines import differences, launch_outcome
    x = np.linspace(-20, 20, 64, dtype=np.float32)
    m = load_ptx(KERNEL)
    ref = launch_outcome(m, "k", 1, 64, [x], engine="reference")
    fast = launch_outcome(m, "k", 1, 64, [x], engine="fast")
    assert not differences(ref, fast)
    out = ref["memory"][0][1][:256].view(np.float32)
    assert np.allclose(out, x - x / (np.exp(x.astype(np.float64)) + 1), rtol=1e-5, atol=1e-6)   # sanity only


SPELLINGS = sorted(__import__("isa.mufu", fromlist=["MUFU_SPELLINGS"]).MUFU_SPELLINGS)


def test_fuzzed_spellings_and_operands_raise_only_emulator_errors():
    """Mutated approximate-math statements: every one either runs or raises an EmulatorError."""
    rng = np.random.default_rng(7)
    quals = ["approx", "full", "ftz", "rn", "sat", "f32", "f64", "f16", "bf16", "f16x2", "bf16x2", "s32", "b32"]
    regs = ["%r1", "%r2", "%fd1", "%h1", "%p1", "0f3F800000", "1", "%rd1", "[%r1]"]
    w = Warp()
    for i in range(400):
        base = SPELLINGS[rng.integers(len(SPELLINGS))].split(".")
        op = rng.integers(4)
        if op == 0:
            base.insert(int(rng.integers(1, len(base) + 1)), quals[rng.integers(len(quals))])
        elif op == 1 and len(base) > 1:
            del base[int(rng.integers(1, len(base)))]
        elif op == 2:
            base[-1] = quals[rng.integers(len(quals))]
        nops = int(rng.integers(0, 5))
        text = ".".join(base) + " " + ", ".join(regs[rng.integers(len(regs))] for _ in range(nops)) + ";"
        try:
            w.run(text)
        except EmulatorError:
            pass


def test_rsqrt_approx_f64_slow_path_matches_h100():
    """Zeros, infinities, NaNs (payloads and signs), negatives, 2,000 subnormals (scaled by 2^54 on the slow
    path) and 4,000 random doubles: 6,015 H100 results (tools/hwcapture/mufu/rsqrt_f64.py)."""
    z = np.load(os.path.join(DATA, "rsqrt_f64_special_h100.npz"), allow_pickle=False)
    x, want = z["x"], z["out"]
    w = Warp()
    n = (x.size // 32) * 32
    for c in range(0, n, 32):
        w.write("%fd1", x[c:c + 32])
        w.run("rsqrt.approx.f64 %fd2, %fd1;")
        assert (w.read("%fd2") == want[c:c + 32]).all(), c


def test_tables_are_stored_decompressed_for_the_next_process(tmp_path, monkeypatch):
    """A decompressed table goes into numba's cache directory; the next process maps it instead of decompressing
    (the same values); a damaged file is decompressed again, never used."""
    from emulator.numerics import jitcache
    monkeypatch.setattr(jitcache, "_cache_dir", lambda f: str(tmp_path))
    blob, dt = M._LazyTables(M._DATA)._blobs["ex2_f16"]
    a = M._stored_table("ex2_f16", blob, dt)
    assert not isinstance(a, np.memmap) and (a == M.unpack_table(blob, dt)).all()
    files = list(tmp_path.glob("warpemu.table.ex2_f16.*.npy"))
    assert len(files) == 1
    b = M._stored_table("ex2_f16", blob, dt)
    assert isinstance(b, np.memmap) and b.dtype == dt and (a == b).all()
    files[0].write_bytes(files[0].read_bytes()[:100])           # truncated
    c = M._stored_table("ex2_f16", blob, dt)
    assert not isinstance(c, np.memmap) and (c == a).all()
