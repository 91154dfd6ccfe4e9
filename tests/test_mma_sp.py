"""mma.sp / mma.sp::ordered_metadata equal the H100 bit for bit: tools/hwcapture/sparse captures replayed.

Inputs are rebuilt from the form list (tools/hwcapture/sparse/sp_gen.py, deterministic); the H100's D registers
are in tests/data/sparse/mma_sp_h100.npz: 152 forms (every sm_90a form and selector, both spellings), 24 random
warps each (normal, wide, special values with NaN payloads / infinities / signed zeros / subnormals, raw bits,
small integers) plus probe warps that spell out the positions the metadata picks.  The default run replays one
form of each kind; ``-m slow`` replays all of them.
"""
import dataclasses
import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "hwcapture", "sparse"))
import sp_gen as G  # noqa: E402

from emulator import Warp, load_ptx, GlobalMemory  # noqa: E402
from emulator.errors import EmulatorError, OperandError, PTXValidationError, UnsupportedError, WarpSyncError  # noqa: E402,F401
from emulator.numerics import reference  # noqa: E402
from emulator.ops.mma_sp import get_mma_sp  # noqa: E402
from isa import mma_sp as S  # noqa: E402
from isa.fragments import unpack  # noqa: E402
from isa.mma import VARIANTS as DENSE  # noqa: E402

DATA = np.load(os.path.join(os.path.dirname(__file__), "data", "sparse", "mma_sp_h100.npz"), allow_pickle=False)
CAPTURED = [i for i, f in enumerate(G.MMA_FORMS) if f"m{i}" in DATA]


def _sample():
    """One captured form per (K, D type, A type), ``::ordered_metadata`` with its last selector: every arithmetic
    family and metadata table once (both spellings lower to the same SASS; ``-m slow`` replays both)."""
    seen, out = set(), []
    for i in reversed(CAPTURED):
        f = G.MMA_FORMS[i]
        key = (f[1], f[2], f[3])
        if key not in seen:
            seen.add(key)
            out.append(i)
    return sorted(out)


SAMPLE = _sample()


def _replay(i, warps=None):
    f = G.MMA_FORMS[i]
    op = get_mma_sp(G.mma_spelling(f), f[7])
    inp = G.mma_inputs(i, f)
    D = DATA[f"m{i}"]
    bad = 0
    for j in (range(D.shape[0]) if warps is None else warps):
        d = op.execute(inp["a"][j].T, inp["b"][j].T, inp["c"][j].T, inp["e"][j])
        bad += int((d.T != D[j]).sum())
    return bad


def test_capture_covers_every_form():
    assert len(CAPTURED) == 152 and len(G.MMA_FORMS) == 156
    assert {G.mma_spelling(f) for f in G.MMA_FORMS} == set(S.VARIANTS)
    for f in G.MMA_FORMS:                               # the isa table's selectors are ptxas's
        assert f[7] in S.VARIANTS[G.mma_spelling(f)].selectors
    assert all(G.risky(G.MMA_FORMS[i]) for i in range(len(G.MMA_FORMS)) if i not in CAPTURED)


@pytest.mark.parametrize("i", SAMPLE, ids=lambda i: f"{G.mma_spelling(G.MMA_FORMS[i])}:{G.MMA_FORMS[i][7]}")
def test_replay_sample(i):
    assert _replay(i) == 0


@pytest.mark.slow
@pytest.mark.parametrize("i", CAPTURED)
def test_replay_all(i):
    assert _replay(i) == 0


def test_probes_show_gathered_positions():
    """A probe warp's D spells out the positions: the metadata table and the positions rule, checked directly."""
    i = next(i for i in CAPTURED if G.MMA_FORMS[i][:4] == ("sp::ordered_metadata", 32, "f32", "f16")
             and G.MMA_FORMS[i][7] == 1)
    f = G.MMA_FORMS[i]
    v = S.VARIANTS[G.mma_spelling(f)]
    inp = G.mma_inputs(i, f)
    j = G.N_RANDOM                                      # first probe warp: chunks 0..7 (all of k32)
    D = unpack(v, "D", DATA[f"m{i}"][j].T).astype(np.uint32).view(np.float32)
    nib, _ = S.metadata_nibbles(v, 1, inp["e"][j])
    pos = S.positions(v, nib)                            # (16, 16): logical k of each compressed column
    want = [[float(2 ** (pos[m, 2 * n] % 4) + 16 * 2 ** (pos[m, 2 * n + 1] % 4)) for n in range(8)]
            for m in range(16)]
    assert np.array_equal(D, np.array(want, np.float32))


def _zero_filled(i, j):
    """A plausible wrong model: the dense m16n8kK product with A's zeros put back (0 * B[k] for the dropped k)."""
    f = G.MMA_FORMS[i]
    v = S.VARIANTS[G.mma_spelling(f)]
    half = DENSE[v.dense_spelling]
    dense_k = dataclasses.replace(half, shape=(16, 8, f[1]), _frags={})   # the same types over all K columns
    inp = G.mma_inputs(i, f)
    A = unpack(v, "A", inp["a"][j].T)
    B = unpack(v, "B", inp["b"][j].T)
    C = unpack(v, "C", inp["c"][j].T)
    pos = S.positions(v, S.metadata_nibbles(v, f[7], inp["e"][j])[0])
    Af = np.zeros((16, f[1]), np.uint64)
    for m in range(16):
        Af[m, pos[m]] = A[m]
    Dw = np.array(reference.mma_tiles(dense_k, Af.tolist(), B.tolist(), C.tolist()), np.uint64)
    return Dw, unpack(v, "D", DATA[f"m{i}"][j].T)


def test_a_wrong_model_mismatches():
    """Putting A's zeros back (one dense m16n8k32 arithmetic) differs from the H100 in both ways: on plain normal
    numbers (two steps of 16 products instead of one of 16 kept products) and through the dropped B rows'
    NaNs and infinities (0 * NaN), which the H100 never sees."""
    i = next(i for i in CAPTURED if G.MMA_FORMS[i][:4] == ("sp::ordered_metadata", 32, "f32", "f16"))
    Dw, Dh = _zero_filled(i, 0)                          # the "normal" warp: no special values
    assert (Dw != Dh).sum() > 0
    Dw, Dh = _zero_filled(i, 2)                          # the "special" warp
    nan = lambda D: ((D & 0x7F800000) == 0x7F800000) & ((D & 0x7FFFFF) != 0)  # noqa: E731
    assert (nan(Dw) & ~nan(Dh)).sum() > 0


def test_reference_equals_fast_path():
    """reference.mma_sp_tiles (plain integers) equals the executor on captured warps of three families."""
    for spelling, sel in (("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32", 1),
                          ("mma.sp.sync.aligned.m16n8k64.row.col.f32.e5m2.e4m3.f32", 0),
                          ("mma.sp.sync.aligned.m16n8k64.row.col.satfinite.s32.s4.u4.s32", 1)):
        i = next(i for i in CAPTURED if (G.mma_spelling(G.MMA_FORMS[i]), G.MMA_FORMS[i][7]) == (spelling, sel))
        f = G.MMA_FORMS[i]
        v = S.VARIANTS[spelling]
        inp = G.mma_inputs(i, f)
        for j in (2, 4):
            A, B, C = (unpack(v, op, inp[op.lower()][j].T) for op in "ABC")
            pos = S.positions(v, S.metadata_nibbles(v, sel, inp["e"][j])[0])
            ref = np.array(reference.mma_sp_tiles(DENSE[v.dense_spelling], A.tolist(), B.tolist(), C.tolist(),
                                                  pos.tolist()), np.uint64)
            assert np.array_equal(ref, unpack(v, "D", DATA[f"m{i}"][j].T))


# ---- the instruction in a warp and in a kernel -----------------------------------------------------------
F16K32 = "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"


def _warp_case(spelling=F16K32, sel=1):
    i = next(i for i in CAPTURED if (G.mma_spelling(G.MMA_FORMS[i]), G.MMA_FORMS[i][7]) == (spelling, sel))
    return i, G.MMA_FORMS[i], G.mma_inputs(i, G.MMA_FORMS[i])


def _text(spelling, sel, na=4, nb=4, nc=4, nd=4, e="%e"):
    r = lambda p, n: "{" + ", ".join(f"%{p}{k}" for k in range(n)) + "}"  # noqa: E731
    return f"{spelling} {r('d', nd)}, {r('a', na)}, {r('b', nb)}, {r('c', nc)}, {e}, {sel};"


def _load_warp(w, inp, j):
    names = [f"%{p}{k}" for p in "abcd" for k in range(4)] + ["%e"]
    if "%e" not in w.regs:
        w.declare("b32", names)
    for p, n in (("a", 4), ("b", 4), ("c", 4)):
        for k in range(n):
            w.write(f"%{p}{k}", inp[p][j][:, k])
    w.write("%e", inp["e"][j])


def test_warp_run_equals_capture():
    i, f, inp = _warp_case()
    w = Warp()
    for j in (2, 24):
        _load_warp(w, inp, j)
        w.run(_text(F16K32, 1))
        got = np.stack([w.read(f"%d{k}") for k in range(4)], 1)
        assert np.array_equal(got, DATA[f"m{i}"][j])


def test_kernel_equals_capture():
    """The capture's own kernel (sp_gen.mma_ptx), validated and run by load_ptx, gives the H100's D."""
    i, f, inp = _warp_case()
    text = G.mma_ptx([f], ["k"])
    na, nb, nc, nd = G.mma_regs(f)
    packed = np.ascontiguousarray(np.concatenate([inp["a"], inp["b"], inp["c"], inp["e"][..., None]], axis=2))
    g = GlobalMemory()
    pin = g.map(packed.reshape(-1))
    pout = g.alloc(packed.shape[0] * 32 * nd * 4)
    load_ptx(text).launch("k", grid=(packed.shape[0], 1, 1), block=(32, 1, 1), args=[pin, pout], gmem=g)
    got = g.view(pout, packed.shape[0] * 32 * nd * 4).view(np.uint32).reshape(-1, 32, nd)
    assert np.array_equal(got, DATA[f"m{i}"])


# ---- refusals -----------------------------------------------------------------------------------------------
def _run_with_meta(meta, spelling=F16K32, sel=1):
    i, f, inp = _warp_case()
    w = Warp()
    _load_warp(w, inp, 0)
    w.write("%e", np.full(32, meta, np.uint32))
    w.run(_text(spelling, sel))


def test_metadata_rules_named():
    with pytest.raises(OperandError, match=r"0b0011: a .tf32 metadata index must be 0b0100 or 0b1110"):
        i, f, inp = _warp_case("mma.sp.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32", 0)
        w = Warp()
        _load_warp(w, inp, 0)
        w.write("%e", np.full(32, 0x44444443, np.uint32))
        w.run(_text("mma.sp.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32", 0))


def test_unselected_lanes_metadata_is_ignored():
    """Only the selected thread pair's metadata counts: garbage elsewhere changes nothing."""
    i, f, inp = _warp_case()
    w = Warp()
    _load_warp(w, inp, 2)
    e = inp["e"][2].copy()
    e[(np.arange(32) % 4) < 2] = 0x55555555            # lanes T0, T1 of each group: selector 1 reads T2, T3
    w.write("%e", e)
    w.run(_text(F16K32, 1))
    got = np.stack([w.read(f"%d{k}") for k in range(4)], 1)
    assert np.array_equal(got, DATA[f"m{i}"][2])


def test_selector_rules():
    with pytest.raises(UnsupportedError, match="sparsity selector 2: ptxas accepts it, but PTX leaves it undefined"):
        get_mma_sp(F16K32, 2)
    with pytest.raises(OperandError, match=r"sparsity selector 1: this form takes 0$"):
        get_mma_sp("mma.sp.sync.aligned.m16n8k64.row.col.s32.s8.s8.s32", 1)
    with pytest.raises(EmulatorError, match="sparsity selector must be an integer constant"):
        Warp().run(_text(F16K32, "%r9"))


def test_unknown_forms_and_operands():
    with pytest.raises(UnsupportedError, match="unsupported mma.sp variant"):
        get_mma_sp("mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16")
    with pytest.raises(UnsupportedError, match="modelled on sm_90"):
        get_mma_sp(F16K32, 0, arch="sm_80")
    with pytest.raises(OperandError, match="takes 6 operands"):
        Warp().run(F16K32 + " {%d0,%d1,%d2,%d3}, {%a0,%a1,%a2,%a3}, {%b0,%b1,%b2,%b3}, {%c0,%c1,%c2,%c3};")


def test_needs_the_whole_warp():
    i, f, inp = _warp_case()
    w = Warp()
    _load_warp(w, inp, 0)
    with pytest.raises(WarpSyncError, match="needs all 32 lanes"):
        w.run("setp.lt.u32 %p1, %laneid, 16;\n@%p1 " + _text(F16K32, 1))


def test_validator_checks_kernels():
    body = (".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry k() {\n"
            ".reg .b32 %a<4>, %b<4>, %e; .reg .f32 %c<4>, %d<4>;\n@@\nret;\n}\n")
    with pytest.raises(PTXValidationError, match="sparsity selector .operand 6. must be one of the constants 0, 1, 2, 3"):
        load_ptx(body.replace("@@", _text(F16K32, 7)))
    with pytest.raises(UnsupportedError, match="not an mma.sp form the emulator knows"):
        load_ptx(body.replace("@@", _text(F16K32.replace("k32", "k24"), 0)))


# ---- pictures -----------------------------------------------------------------------------------------------
def test_show_metadata_and_compressed_a(capsys):
    from emulator.cli import main
    from emulator.layouts.show import metadata_view, mma_view
    g = metadata_view(F16K32, 1)
    text = g.text()
    assert "T2:e[3:0]" in text and "T3:e[15:12]" in text and "T1:" not in text.split("\n", 2)[2]
    a = mma_view("mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "A").text()
    assert "compressed" in a and "16 x 8 f16" in a
    assert main(["show", "mma.sp.sync.aligned.m16n8k64.row.col.s32.s8.s8.s32", "--operand", "E"]) == 0
    out = capsys.readouterr().out
    assert "T1:e[3:0]" in out and "16 rows x 16 chunks" in out
    with pytest.raises(UnsupportedError, match="selector 1: this form takes 0"):
        metadata_view("mma.sp.sync.aligned.m16n8k64.row.col.s32.s8.s8.s32", 1)
    with pytest.raises(UnsupportedError, match="belongs to the sparse mma.sp forms"):
        metadata_view("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 0)


# ---- metadata PTX leaves undefined, as the H100 gives it ---------------------------------------------------------
EXP = np.load(os.path.join(os.path.dirname(__file__), "data", "sparse", "mma_sp_experiments_h100.npz"),
              allow_pickle=False)


@pytest.mark.parametrize("i,mode", [x for x in G.EXPERIMENTS if x[1] in ("unsorted", "equal")])
def test_decreasing_and_equal_indices_as_captured(i, mode):
    """Equal and decreasing index pairs: the H100 multiplies the rows of B the indices name."""
    f = G.MMA_FORMS[i]
    inp = G.mma_inputs(i, f, mode)
    op = get_mma_sp(G.mma_spelling(f), f[7])
    hw = EXP[f"x{i}_{mode}"]
    for w in range(hw.shape[0]):
        assert np.array_equal(op.execute(inp["a"][w].T, inp["b"][w].T, inp["c"][w].T, inp["e"][w]), hw[w].T)


def test_undefined_selectors_trap_on_the_h100():
    traps = {t[0] for t in json.loads(str(EXP["meta"]))["traps"]}
    risky = {f"x{i}_sorted" for i, f in enumerate(G.MMA_FORMS) if G.risky(f)}
    assert risky and risky <= traps
    with pytest.raises(UnsupportedError, match="sparsity selector 2"):
        get_mma_sp(G.mma_spelling(G.MMA_FORMS[min(i for i, f in enumerate(G.MMA_FORMS) if G.risky(f))]), 2)
