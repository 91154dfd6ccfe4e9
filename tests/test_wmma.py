"""WMMA (wmma.load / wmma.store / wmma.mma) against the sm_90 capture (tools/hwcapture/wmma/capture.py), and
its error rules.

The capture holds, for every load and store form (every space, with and without a stride operand), the
registers or memory the GPU produced from iota matrices, and for every wmma.mma form the D registers of
random fragments (4 data sets each).  Loads and stores replay through ``Warp.run`` (the executor), the mma
forms through ``get_wmma`` and, for a sample, through ``Warp.run`` too.
"""
import json
import os

import numpy as np
import pytest

from emulator import GlobalMemory, Warp
from emulator.errors import AlignmentError, EmulatorError, MemoryAccessError, OperandError, UnsupportedError, \
    WarpSyncError
from emulator.ops.mma import get_mma
from emulator.ops.wmma import get_wmma
from isa.wmma import MEM_FORMS, MMA_FORMS, load_map

DATA = os.path.join(os.path.dirname(__file__), "data", "wmma", "sm90_wmma.npz")
Z = np.load(DATA, allow_pickle=False)
META = json.loads(str(Z["meta"]))
INFO = json.loads(str(Z["info"]))
LOADS = [m for m in META if m["name"].startswith("m") and MEM_FORMS[m["spelling"]].op == "load"]
STORES = [m for m in META if m["name"].startswith("m") and MEM_FORMS[m["spelling"]].op == "store"]
MMAS = [m for m in META if m["name"].startswith("x")]
EXTRA = [m for m in META if m["name"].startswith("e")]


def _sample(cases):
    """The default run: the .global forms with a stride operand; -m slow: every space and variant."""
    return [pytest.param(m, id=f"{m['spelling']}:{m['variant']}",
                         marks=() if (".global." in m["spelling"] and m["variant"] == "stride")
                         else pytest.mark.slow) for m in cases]


def test_capture_provenance():
    assert INFO["cc"] == "9.0" and "H" in INFO["gpu"]
    assert len(LOADS) == 352 and len(STORES) == 104 and len(MMAS) == len(MMA_FORMS) == 138


def _regs(prefix, n):
    return "{" + ", ".join(f"{prefix}{20 + i}" for i in range(n)) + "}"


def _prefix(form):
    return "%rd" if form.reg_bits == 64 else "%r"


def _digits_memory(m, p):
    """The capture's input for run ``p``: memory element j holds digit p of j (base 2**min(w, 16))."""
    f = MEM_FORMS[m["spelling"]]
    w = f.elem_bits
    wd = min(w, 16)
    j = np.arange(m["nelem"], dtype=np.uint64)
    vals = j if w > 16 else (j >> np.uint64(p * wd)) & np.uint64((1 << wd) - 1)
    mem = np.zeros(m["nbytes"], np.uint8)
    if w >= 8:
        b = vals.astype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[w]).view(np.uint8)
    else:
        per = 8 // w
        v = np.concatenate([vals, np.zeros((-len(vals)) % per, np.uint64)]).reshape(-1, per)
        b = np.bitwise_or.reduce(v << (np.arange(per, dtype=np.uint64) * np.uint64(w)), axis=1).astype(np.uint8)
    mem[:len(b)] = b
    return mem


def _warp_at(form, mem):
    """A warp whose %rd1 / %r1 addresses ``mem`` in the form's space."""
    g = GlobalMemory()
    w = Warp(gmem=g)
    if form.space in ("shared", "shared::cta"):
        w.smem[:len(mem)] = mem
        w.write("%r1", 0)
        return w, "%r1"
    w.write("%rd1", g.upload(mem))
    return w, "%rd1"


def _stride_arg(m):
    return "" if m["variant"] == "nostride" else f", {m['stride']}"


def run_load(m, p, form=None):
    f = form or MEM_FORMS[m["spelling"]]
    w, a = _warp_at(f, _digits_memory(m, p))
    w.run(f"{m['spelling']} {_regs(_prefix(f), f.n_regs)}, [{a}]{_stride_arg(m)};")
    dt = np.uint64 if f.reg_bits == 64 else np.uint32
    return np.stack([w.read(f"{_prefix(f)}{20 + i}").astype(dt) for i in range(f.n_regs)], axis=1)   # (32, n)


@pytest.mark.parametrize("m", _sample(LOADS))
def test_load_matches_capture(m):
    f = MEM_FORMS[m["spelling"]]
    dt = np.uint64 if f.reg_bits == 64 else np.uint32
    for p in range(m["runs"]):
        hw = Z[f"{m['name']}_out{p}"].view(dt).reshape(32, f.n_regs)
        got = run_load(m, p)
        assert np.array_equal(got, hw), f"{m['spelling']} run {p}: {(got != hw).sum()} registers differ"


@pytest.mark.parametrize("m", _sample(STORES))
def test_store_matches_capture(m):
    f = MEM_FORMS[m["spelling"]]
    epr = f.reg_bits // f.elem_bits
    vals = np.arange(32 * f.n_regs * epr, dtype=np.uint64)
    edt = {16: np.uint16, 32: np.uint32, 64: np.uint64}[f.elem_bits]
    regs = vals.astype(edt).view(np.uint64 if f.reg_bits == 64 else np.uint32).reshape(32, f.n_regs)
    mem = np.full(m["nbytes"], 0xFF, np.uint8)
    w, a = _warp_at(f, mem)
    for i in range(f.n_regs):
        w.write(f"{_prefix(f)}{20 + i}", regs[:, i])
    w.run(f"{m['spelling']} [{a}], {_regs(_prefix(f), f.n_regs)}{_stride_arg(m)};")
    if f.space in ("shared", "shared::cta"):
        got = w.smem[:m["nbytes"]]
    else:
        got = w.gmem.download(int(w.read("%rd1")[0]), m["nbytes"])
    hw = Z[f"{m['name']}_out"]
    assert np.array_equal(got, hw), f"{m['spelling']}: {(got != hw).sum()} bytes differ"


def test_fragment_layout_ignores_memory_layout_and_space():
    """What the capture showed: a fragment's registers are the same for .row and .col and every space; only
    the addresses differ.  And the 16-bit A/B fragments of the m16n16k16-class shapes hold every element twice."""
    f = load_map("a", "row", "m16n16k16", "f16")
    assert f.shape == (8, 32, 2, 2) and np.array_equal(f[4:], f[:4])
    assert load_map("b", "row", "m32n8k16", "f16").shape[0] == 8
    assert np.array_equal(load_map("b", "row", "m32n8k16", "f16")[2:4], load_map("b", "row", "m32n8k16", "f16")[:2])


def test_load_replay_detects_a_wrong_layout():
    """The comparison has teeth: the f16 A fragment without its duplicate registers, or the .col layout's
    addresses for a .row load, mismatch."""
    m = next(x for x in LOADS if x["spelling"] == "wmma.load.a.sync.aligned.row.m16n16k16.global.f16"
             and x["variant"] == "stride")
    hw = Z[f"{m['name']}_out0"].view(np.uint32).reshape(32, 8)
    good = run_load(m, 0)
    assert np.array_equal(good, hw)
    wrong = MEM_FORMS["wmma.load.a.sync.aligned.col.m16n16k16.global.f16"]
    got = run_load(dict(m, spelling=wrong.spelling), 0, wrong)
    assert (got != hw).sum() > 200


def _mma_inputs(m, w):
    return [np.ascontiguousarray(Z[f"{m['name']}_{op}"][w].T) for op in "abc"]


@pytest.mark.parametrize("m", MMAS, ids=[m["spelling"] for m in MMAS])
def test_mma_matches_capture(m):
    op = get_wmma(m["spelling"])
    hw = Z[f"{m['name']}_d"]
    for w in range(hw.shape[0]):
        d = op.execute(*_mma_inputs(m, w))
        assert np.array_equal(d.T, hw[w]), f"{m['spelling']} data set {w}: {(d.T != hw[w]).sum()} registers differ"


def test_mma_replay_detects_a_wrong_model():
    """With the A and B roles of the m8n32k16 steps not swapped, or the tf32 k-steps fused into one
    m16n8k8 instruction (ptxas emits two chained m16n8k4), the results differ from the capture."""
    import dataclasses
    from emulator.ops.wmma import WmmaMmaOp
    m = next(x for x in MMAS if x["spelling"] == "wmma.mma.sync.aligned.row.col.m8n32k16.f32.f32")
    op = get_wmma(m["spelling"])
    wrong = WmmaMmaOp(op.form, "sm_90")
    wrong.steps = [(dataclasses.replace(st, swap=False, a=st.a + st.a, b=st.b[:2]), o) for st, o in op.steps]
    a, b, c = _mma_inputs(m, 0)
    assert not np.array_equal(wrong.execute(a, b, c).T, Z[f"{m['name']}_d"][0])
    m = next(x for x in MMAS if x["spelling"] == "wmma.mma.sync.aligned.row.col.m16n16k8.f32.tf32.tf32.f32")
    a, b, c = _mma_inputs(m, 0)
    fused = get_mma("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
    d = np.concatenate([fused.execute(a, b[[2 * h, 2 * h + 1]], c[4 * h:4 * h + 4]) for h in range(2)])
    hw = Z[f"{m['name']}_d"][0].T
    assert np.array_equal(get_wmma(m["spelling"]).execute(a, b, c), hw)
    assert not np.array_equal(d, hw)


@pytest.mark.parametrize("spelling", ["wmma.mma.sync.aligned.row.col.m16n16k16.f16.f32",
                                      "wmma.mma.sync.aligned.col.row.m8n32k16.s32.u8.u8.s32.satfinite",
                                      "wmma.mma.sync.aligned.row.col.m8n8k4.rz.f64.f64.f64.f64",
                                      "wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32"])
def test_mma_through_the_executor(spelling):
    m = next(x for x in MMAS if x["spelling"] == spelling)
    f = MMA_FORMS[spelling]
    w = Warp()
    names = {}
    for op, base in zip("dabc", (0, 10, 20, 30)):
        pfx = "%rd" if f.reg_bits(op) == 64 else "%r"
        names[op] = [f"{pfx}{base + i}" for i in range(f.n_regs(op))]
    for op in "abc":
        data = Z[f"{m['name']}_{op}"][1]
        for i, n in enumerate(names[op]):
            w.write(n, data[:, i])
    w.run(f"{spelling} " + ", ".join("{" + ", ".join(names[op]) + "}" for op in "dabc") + ";")
    got = np.stack([w.read(n) for n in names["d"]], axis=1)
    assert np.array_equal(got, Z[f"{m['name']}_d"][1])


@pytest.mark.parametrize("m", EXTRA, ids=[m["spelling"] for m in EXTRA])
def test_register_level_forms_match_capture(m):
    """mma.sync m8n8k16 s8/u8, m8n8k32 s4/u4, the .b1 forms, and movmatrix."""
    hw = Z[f"{m['name']}_d"]
    if m["spelling"].startswith("movmatrix"):
        for wi in range(hw.shape[0]):
            w = Warp()
            w.write("%r10", Z[f"{m['name']}_a"][wi][:, 0])
            w.run(f"{m['spelling']} %r1, %r10;")
            assert np.array_equal(w.read("%r1"), hw[wi][:, 0])
        return
    op = get_mma(m["spelling"])
    a, b, c = (np.ascontiguousarray(Z[f"{m['name']}_{x}"].transpose(0, 2, 1)) for x in "abc")
    assert np.array_equal(op.execute_batch(a, b, c), hw.transpose(0, 2, 1))
    # the readable reference (numerics.reference, on whole tiles) agrees, data set 0
    from emulator.numerics.reference import mma_tiles
    from isa.fragments import pack, unpack
    v = op.variant
    tiles = [unpack(v, x, r[0]).astype(np.int64).tolist() for x, r in zip("ABC", (a, b, c))]
    d = pack(v, "D", np.array(mma_tiles(v, *tiles), np.uint64))
    assert np.array_equal(d, hw[0].T)


def test_b128_moves_match_capture():
    a, hw = Z["q0_a"], Z["q0_d"]
    g = GlobalMemory()
    w = Warp(gmem=g)
    w.write("%rd1", g.upload(a))
    out = g.alloc(32 * 32)
    w.write("%rd2", out)
    w.run("""
    .reg .b128 %q<4>;
    mov.u32 %r1, %laneid;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.b128 %q1, [%rd4];
    mov.b128 {%rd5, %rd6}, %q1;
    mul.wide.u32 %rd7, %r1, 32;
    add.s64 %rd8, %rd2, %rd7;
    st.global.b64 [%rd8], %rd5;
    st.global.b64 [%rd8+8], %rd6;
    mov.b128 %q2, {%rd6, %rd5};
    st.global.b128 [%rd8+16], %q2;
    """)
    assert np.array_equal(g.download(out, 32 * 32), hw)


# ------------------------------------------------------------------------------------------------
# errors

A16 = "wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7}"


def _gwarp(nbytes=4096):
    g = GlobalMemory()
    w = Warp(gmem=g)
    w.write("%rd1", g.alloc(nbytes))
    return w


def test_misaligned_address():
    w = _gwarp()
    w.write("%rd2", w.read("%rd1") + 8)
    with pytest.raises(AlignmentError, match="not 16-byte aligned"):
        w.run(f"{A16}, [%rd2], 16;")


def test_stride_not_a_multiple_of_8_bytes():
    w = _gwarp()
    with pytest.raises(AlignmentError, match="stride 18 is not a multiple of 4 f16 elements"):
        w.run(f"{A16}, [%rd1], 18;")


def test_lanes_must_agree_on_address_and_stride():
    w = _gwarp()
    w.write("%rd2", w.read("%rd1") + 32 * (np.arange(32) == 5))
    with pytest.raises(OperandError, match="lane 5.*same address"):
        w.run(f"{A16}, [%rd2], 16;")
    w.write("%r9", 16 + 8 * (np.arange(32) == 3))
    with pytest.raises(OperandError, match="lane 3.*same stride"):
        w.run(f"{A16}, [%rd1], %r9;")


def test_out_of_range_addresses():
    w = _gwarp(256)                                 # 16 rows x stride 16 halves = 512 bytes: past the end
    with pytest.raises(MemoryAccessError, match="outside every global allocation"):
        w.run(f"{A16}, [%rd1], 16;")
    w = Warp(smem_bytes=256)
    w.write("%r9", 0)
    with pytest.raises(MemoryAccessError, match="outside shared memory"):
        w.run("wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [%r9], "
              "{%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, 16;")


def test_wrong_register_count_and_width():
    w = _gwarp()
    with pytest.raises(OperandError, match="must have 8 registers, it has 4"):
        w.run("wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r0, %r1, %r2, %r3}, [%rd1], 16;")
    with pytest.raises(OperandError, match="64-bit; f16 fragments are 32-bit"):
        w.run("wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%rd2, %r1, %r2, %r3, %r4, %r5, %r6, %r7}, "
              "[%rd1], 16;")
    with pytest.raises(OperandError, match="c fragment must have 8 registers"):
        w.run("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, "
              "{%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7}, {%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7}, {%f0, %f1};")
    with pytest.raises(OperandError, match="takes 4 operands"):
        w.run("wmma.mma.sync.aligned.row.col.m8n8k4.f64.f64.f64.f64 {%fd0, %fd1}, {%fd2}, {%fd3};")


def test_unsupported_forms_name_the_nearest_spellings():
    w = _gwarp()
    with pytest.raises(UnsupportedError, match=r"A is \.row.*did you mean .*wmma\.load\.a\.sync\.aligned\.row\.m8n8k32\.global\.s4"):
        w.run("wmma.load.a.sync.aligned.col.m8n8k32.global.s4 {%r0}, [%rd1], 32;")      # sub-byte A is .row only
    with pytest.raises(UnsupportedError, match="removed in PTX ISA 6.5"):
        w.run("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32.satfinite {%f0, %f1, %f2, %f3, %f4, %f5, %f6, "
              "%f7}, {%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7}, {%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7}, "
              "{%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7};")
    with pytest.raises(UnsupportedError, match="unsupported wmma.mma form") as e:
        get_wmma("wmma.mma.sync.aligned.row.col.m16n16k16.s32.s8.u8.s32")     # A and B types must agree
    assert len(str(e.value)) < 400
    with pytest.raises(UnsupportedError, match="unknown wmma instruction"):
        w.run("wmma.fill.sync.aligned.m16n16k16.f32 {%f0}, 0;")


def test_partial_warp_is_refused():
    from emulator import load_ptx
    ptx = """
.version 8.3
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
 .reg .b32 %r<12>; .reg .b64 %rd<4>; .reg .pred %p1;
 ld.param.u64 %rd1, [p];
 mov.u32 %r10, %laneid;
 setp.lt.u32 %p1, %r10, 16;
 @%p1 bra $Ldone;
 wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7}, [%rd1], 16;
$Ldone:
 ret;
}
"""
    g = GlobalMemory()
    a = g.alloc(4096)
    with pytest.raises(WarpSyncError, match="needs all 32 lanes"):
        load_ptx(ptx).launch("k", grid=(1, 1, 1), block=(32, 1, 1), args=[a], gmem=g)


def test_every_error_is_an_emulator_error():
    """Fuzz the spellings a little: a qualifier dropped or repeated (with operands that fit no form) gives an
    EmulatorError, never a crash."""
    rng = np.random.default_rng(5)
    spellings = list(MEM_FORMS)[::23] + list(MMA_FORMS)[::7]
    w = _gwarp()
    for sp in spellings:
        parts = sp.split(".")
        for _ in range(2):
            q = list(parts)
            i = int(rng.integers(1, len(q)))
            if rng.random() < 0.5:
                del q[i]
            else:
                q.insert(i, q[int(rng.integers(1, len(q)))])
            text = ".".join(q)
            operand = "{%r0}, [%rd1], 16" if ".load." in text else "[%rd1], {%r0}" if ".store." in text \
                else "{%r0}, {%r1}, {%r2}, {%r3}"
            with pytest.raises(EmulatorError):
                w.run(f"{text} {operand};")


# ------------------------------------------------------------------------------------------------
# .b128 and movmatrix: the rules around them

@pytest.mark.parametrize("body, match", [
    ("mov.b32 %x, 1;", "128-bit register and cannot be a .b32 operand"),
    ("add.u32 %r1, %x, 1;", "only ld, st and mov .b128 take a 128-bit register"),
    ("mov.b128 %x, 5;", "must be a 128-bit register, found 5"),
    ("st.global.b128 [%rd1], %r1;", "%r1 is a 32-bit register; a .b128 operand needs a 128-bit one"),
    ("ld.global.v2.b128 {%x, %y}, [%rd1];", "exceed the 128 bits one lane may access"),
    ("mov.b128 {%r1, %r2}, %x;", "two 64-bit registers"),
    ("mov.b128 {%rd1, %rd2, %rd3}, %x;", "two .b64 registers"),
])
def test_b128_misuse_is_refused(body, match):
    w = Warp()
    with pytest.raises(OperandError if "exceed" not in match else UnsupportedError, match=match):
        w.run(".reg .b128 %x, %y;\n" + body)


def test_b128_register_values():
    w = Warp()
    w.run(".reg .b128 %x;")
    w.write("%x", 3 << 64 | 5)
    assert w.read("%x").shape == (32, 2) and (w.read("%x") == [5, 3]).all()
    w.run(".reg .b128 %y;\nmov.b128 %y, %x;\nmov.b128 {%rd1, %rd2}, %y;")
    assert (w.read("%rd1") == 5).all() and (w.read("%rd2") == 3).all()
    with pytest.raises(OperandError, match="128-bit register takes"):
        w.write("%x", -1)


def test_movmatrix_reference_equals_fast_path_and_errors():
    from emulator.ops.datamove.matrix import movmatrix_fast, movmatrix_reference
    rng = np.random.default_rng(1)
    for _ in range(20):
        a = rng.integers(0, 2 ** 32, 32, dtype=np.uint64).astype(np.uint32)
        assert movmatrix_reference(a) == movmatrix_fast(a).tolist()
        assert np.array_equal(movmatrix_fast(movmatrix_fast(a)), a)          # a transpose twice
    w = Warp()
    with pytest.raises(UnsupportedError, match="supported: movmatrix.sync.aligned.m8n8.trans.b16"):
        w.run("movmatrix.sync.aligned.m8n8.b16 %r1, %r2;")
    with pytest.raises(OperandError, match="must be a 32-bit register"):
        w.run("movmatrix.sync.aligned.m8n8.trans.b16 %rd1, %r2;")


def test_fuzzed_addresses_and_strides_never_crash():
    """Random forms, spaces, base offsets and strides: the load/store either runs or raises an EmulatorError,
    and a load that runs puts the element the address rule names in each register slot."""
    rng = np.random.default_rng(11)
    forms = list(MEM_FORMS.values())
    for _ in range(60):
        f = forms[int(rng.integers(len(forms)))]
        g = GlobalMemory()
        w = Warp(gmem=g, smem_bytes=8192)
        mem = rng.integers(0, 256, 8192, dtype=np.uint64).astype(np.uint8)
        shared = f.space in ("shared", "shared::cta")
        base = int(rng.choice([0, 8, 16, 48, 256, 4000, 8192 - 64]))
        if shared:
            w.smem[:] = mem
            w.write("%r1", base)
            a = "%r1"
        else:
            w.write("%rd1", g.upload(mem) + base)
            a = "%rd1"
        stride = int(rng.choice([f.min_stride, f.capture_stride, f.min_stride + 1, 0, 2 ** 20]))
        regs = _regs(_prefix(f), f.n_regs)
        text = (f"{f.spelling} {regs}, [{a}], {stride};" if f.op == "load" else
                f"{f.spelling} [{a}], {regs}, {stride};")
        try:
            w.run(text)
        except EmulatorError:
            continue
        if f.op == "load" and f.elem_bits >= 8:
            fr, eb = f.fragment(), f.elem_bits // 8
            r, lane, e = int(rng.integers(f.n_regs)), int(rng.integers(32)), int(rng.integers(fr.shape[2]))
            row, col = fr[r, lane, e]
            off = base + eb * (row * stride + col if f.layout == "row" else col * stride + row)
            want = int.from_bytes(mem[off:off + eb].tobytes(), "little")
            got = (int(w.read(f"{_prefix(f)}{20 + r}")[lane]) >> (e * f.elem_bits)) & ((1 << f.elem_bits) - 1)
            assert got == want, (text, r, lane, e)


def test_show_draws_wmma_fragments():
    from emulator.layouts.show import mma_cells, mma_view
    sp = "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32"
    lane, reg, elem, epr = mma_cells(sp, "A")
    assert lane.shape == (16, 16) and reg.max() == 3 and epr == 2           # the copies (a4..a7) are not drawn
    assert (lane[0, 0], reg[0, 0], lane[9, 10], reg[9, 10]) == (0, 0, 5, 3)
    assert "T0:c4" in str(mma_view(sp, "C"))
    with pytest.raises(UnsupportedError, match="not a supported wmma.mma form"):
        mma_view("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f64", "A")


def test_what_ptxas_accepts_beyond_the_ptx_isa():
    """.f32 C/D of m8n8k32/m8n8k128 is the .s32 move (ptxas emits the same SASS); .f64 with a shape other
    than m8n8k4 is refused (ptxas emits no arithmetic for it)."""
    assert np.array_equal(load_map("c", "row", "m8n8k32", "f32"), load_map("c", "row", "m8n8k32", "s32"))
    g = GlobalMemory()
    w = Warp(gmem=g)
    w.write("%rd1", g.upload(np.arange(64, dtype=np.uint32)))
    w.run("wmma.load.c.sync.aligned.row.m8n8k128.global.f32 {%f0, %f1}, [%rd1];")
    lane = np.arange(32)
    assert np.array_equal(w.read("%f0"), 8 * (lane // 4) + 2 * (lane % 4))
    with pytest.raises(UnsupportedError, match="m8n8k4 only in the PTX ISA.*no arithmetic"):
        get_wmma("wmma.mma.sync.aligned.row.col.m16n16k16.f64.f64.f64.f64")


def test_whole_tiles_through_wmma():
    """emulator.mma takes wmma.mma forms: m16n16k16 is two m16n8k16 halves, m8n32k16 the transposed product
    (equal here: every element is its own dot product), integers are exact."""
    from emulator import mma
    rng = np.random.default_rng(3)
    A = rng.standard_normal((16, 16)).astype(np.float16)
    B = rng.standard_normal((16, 16)).astype(np.float16)
    C = rng.standard_normal((16, 16)).astype(np.float32)
    D = mma("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32", A, B, C)
    half = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    want = np.concatenate([mma(half, A, B[:, :8], C[:, :8]), mma(half, A, B[:, 8:], C[:, 8:])], axis=1)
    assert np.array_equal(D.view(np.uint32), want.view(np.uint32))
    A8, B8 = rng.standard_normal((8, 16)).astype(np.float16), rng.standard_normal((16, 32)).astype(np.float16)
    C8 = rng.standard_normal((8, 32)).astype(np.float32)
    D8 = mma("wmma.mma.sync.aligned.col.row.m8n32k16.f32.f32", A8, B8, C8)
    want8 = np.concatenate([mma(half, np.vstack([A8, A8]), B8[:, 8 * j:8 * j + 8], np.vstack([C8, C8])[:, 8 * j:8 * j + 8])[:8]
                            for j in range(4)], axis=1)
    assert np.array_equal(D8.view(np.uint32), want8.view(np.uint32))
    Ai = rng.integers(-8, 8, (8, 32)).astype(np.int8)
    Bi = rng.integers(-8, 8, (32, 8)).astype(np.int8)
    Ci = rng.integers(-1000, 1000, (8, 8)).astype(np.int32)
    Di = mma("wmma.mma.sync.aligned.row.col.m8n8k32.s32.s4.s4.s32", Ai, Bi, Ci)
    assert np.array_equal(Di, Ci + Ai.astype(np.int32) @ Bi.astype(np.int32))
    Ab, Bb = rng.integers(0, 2, (8, 128)).astype(np.uint8), rng.integers(0, 2, (128, 8)).astype(np.uint8)
    Db = mma("wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32", Ab, Bb, np.zeros((8, 8), np.int32))
    assert np.array_equal(Db, (Ab[:, :, None] ^ Bb[None]).sum(1))
    with pytest.raises(EmulatorError, match="other than 0 and 1"):
        mma("wmma.mma.and.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32", Ab * 2, Bb, np.zeros((8, 8), np.int32))
