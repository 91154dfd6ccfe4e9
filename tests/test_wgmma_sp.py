"""wgmma.mma_async.sp equals the H100 bit for bit: the capture of tools/hwcapture/sparse replayed.

Inputs are rebuilt from the form list (``sp_gen.WG_FORMS``, deterministic); the H100's accumulator registers
are in tests/data/sparse/wgmma_sp_h100.npz: ``w<i>`` per form, ``y<i>_<mode>`` for the metadata PTX leaves
undefined (decreasing and equal index pairs, bad tf32 nibbles).  The default run replays two CTAs of every
form, ``-m slow`` every CTA.
"""
import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "hwcapture", "sparse"))
import sp_gen as G  # noqa: E402

from emulator import GlobalMemory, load_ptx  # noqa: E402
from emulator.errors import EmulatorError, OperandError, PTXValidationError, UnsupportedError  # noqa: E402
from emulator.ops.wgmma import desc as D, get_wgmma  # noqa: E402
from emulator.ops.wgmma import op as wop  # noqa: E402
from isa import wgmma_sp as SP  # noqa: E402

_Z = np.load(os.path.join(os.path.dirname(__file__), "data", "sparse", "wgmma_sp_h100.npz"), allow_pickle=False)
DATA = {k: _Z[k] for k in _Z.files}
META = json.loads(str(DATA["meta"]))
FORMS = G.WG_FORMS


def replay_cta(key, i, inp, j):
    """D registers (128, n_d) of CTA j by the emulator's descriptor reads, metadata and arithmetic."""
    f = FORMS[i]
    op = get_wgmma(G.wg_spelling(f))
    base = int(DATA[key + "_base"][j])
    smem = np.zeros(base + G.W.IMG, np.uint8)
    smem[base:] = inp["img"][j]
    da, db = (int(x) + (base >> 4) for x in inp["desc"][j])
    B, _ = op.read(smem, db, "B", f["trans_b"], "replay", f["n"])                # (N, K)
    Bk = np.ascontiguousarray(B.T)
    if f["op_form"] == "ss":
        A64, _ = op.read(smem, da, "A", f["trans_a"], "replay", 64)
    out = np.zeros((128, op.n_d), np.uint32)
    for w in range(4):
        th = slice(32 * w, 32 * w + 32)
        A = A64[16 * w:16 * w + 16] if f["op_form"] == "ss" else op.a_tile(inp["a"][j][th].T.copy())
        C = op.c_tile(inp["c"][j][th].T.copy())
        pos = op.positions(inp["e"][j][th], f["sel"], "replay", w)
        Dt = op.compute_sparse(A, Bk, C, pos, bool(inp["scale_d"][j]), f["scale_a"], f["scale_b"])
        out[th] = op.d_regs(Dt).T
    return out


def mismatches(key, i, mode=None, ctas=None):
    f = FORMS[i]
    inp = G.wg_inputs(i, f, mode)
    hw = DATA[key]
    return sum(int((replay_cta(key, i, inp, j) != hw[j]).sum()) for j in (ctas or range(hw.shape[0]))
               if j < hw.shape[0])


def test_capture_meta():
    assert "H100" in META["device"] and not META["traps"]
    assert all(f"w{i}" in DATA for i in range(len(FORMS)))
    assert {G.wg_spelling(f) for f in FORMS} <= set(SP.VARIANTS)


@pytest.mark.parametrize("i", range(len(FORMS)))
def test_form(i):
    """Two CTAs of every form (the distributions rotate with the form); ``-m slow`` replays every CTA."""
    assert mismatches(f"w{i}", i, ctas=[0, 1]) == 0, FORMS[i]


@pytest.mark.slow
@pytest.mark.parametrize("i", range(len(FORMS)))
def test_form_every_cta(i):
    assert mismatches(f"w{i}", i) == 0, FORMS[i]


@pytest.mark.parametrize("i,mode", [x for x in G.WG_EXPERIMENTS if x[1] != "tf32bad"])
def test_decreasing_and_equal_indices_as_captured(i, mode):
    """PTX leaves them undefined; the H100 multiplies the rows the indices name, whatever their order."""
    assert mismatches(f"y{i}_{mode}", i, mode) == 0


def test_bad_tf32_nibble_refused():
    i, mode = next(x for x in G.WG_EXPERIMENTS if x[1] == "tf32bad")
    with pytest.raises(OperandError, match=r"lane \d+: sp-meta nibble \d \(row \d+, chunk \d, selector 0\) is "
                                           r"0b\d{4}: a .tf32 metadata index must be 0b0100 or 0b1110"):
        mismatches(f"y{i}_{mode}", i, mode, ctas=[0])


def _run_kernel(i, n=2, text=None, options=None):
    f = FORMS[i]
    inp = G.wg_inputs(i, f)
    g = GlobalMemory()
    args = [g.upload(inp["img"][:n]), g.upload(inp["desc"][:n]), g.upload(inp["a"][:n]), g.upload(inp["c"][:n])]
    d = g.upload(np.zeros_like(inp["c"][:n]))
    misc = g.upload(np.concatenate([inp["scale_d"][:n], np.zeros(n, np.uint32)]))
    e = g.upload(inp["e"][:n])
    load_ptx(text or G.wg_ptx(f)).launch("wgmma_sp_cap", grid=(n, 1, 1), block=(128, 1, 1),
                                         args=args + [d, misc, e], gmem=g, shared_bytes=G.W.DYN_SMEM,
                                         **({"options": options} if options else {}))
    got = g.download(d, inp["c"][:n].nbytes).view(np.uint32).reshape(inp["c"][:n].shape)
    base = g.download(misc, 8 * n).view(np.uint32)[n:]
    return got, base


def _pick(pred):
    return next(i for i, f in enumerate(FORMS) if pred(f))


@pytest.mark.parametrize("i", [_pick(lambda f: f["op_form"] == "ss" and f["atype"] == "f16" and f["sel"] == 1),
                               _pick(lambda f: f["op_form"] == "rs" and f["atype"] == "bf16"),
                               _pick(lambda f: f["atype"] == "tf32" and f["sel"] == 1),
                               _pick(lambda f: f["atype"] == "e5m2" and f["dtype"] == "f16"),
                               _pick(lambda f: f["sat"] and f["atype"] == "s8"),
                               _pick(lambda f: f["trans_a"] and f["trans_b"]),
                               _pick(lambda f: f["scale_a"] == -1 and f["atype"] == "e5m2")])
def test_capture_kernel_through_load_ptx(i):
    """The capture's own PTX kernel, run by the emulator (fence, mma_async.sp, commit, wait), gives the H100's."""
    got, base = _run_kernel(i)
    assert (DATA[f"w{i}_base"][:2] % 1024 == base % 1024).all()
    assert (got == DATA[f"w{i}"][:2]).all()


# ------------------------------------------------------------------------------------------------
# the capture can fail: neighbouring models mismatch
def _fresh(monkeypatch):
    wop._CACHE.clear()
    monkeypatch.setattr(wop, "_CACHE", {})


def test_selector_ignored_fails(monkeypatch):
    _fresh(monkeypatch)
    orig = SP.WgmmaSpVariant.meta_owner
    monkeypatch.setattr(SP.WgmmaSpVariant, "meta_owner", lambda self, sel: orig(self, 0))
    i = _pick(lambda f: f["sel"] == 1 and f["atype"] == "f16")
    assert mismatches(f"w{i}", i, ctas=[0, 1]) > 100


def test_row_halves_swapped_fails(monkeypatch):
    _fresh(monkeypatch)
    orig = SP.WgmmaSpVariant.meta_owner
    monkeypatch.setattr(SP.WgmmaSpVariant, "meta_owner", lambda self, sel: np.roll(orig(self, sel), 8, axis=0))
    i = _pick(lambda f: f["atype"] == "s8")
    assert mismatches(f"w{i}", i, ctas=[0, 1]) > 100


def test_b_rows_past_a_32_byte_swizzle_row_read_linearly_fails(monkeypatch):
    """The 64 bytes of K of a K-major B under the 32-byte swizzle: the second half is LBO further on."""
    _fresh(monkeypatch)

    def linear(d, rows, k_bytes=32):
        r = np.arange(rows, dtype=np.int64)[:, None]
        b = np.arange(k_bytes, dtype=np.int64)[None, :]
        return D.swizzle(d.start + (r // 8) * d.sbo + (r % 8) * d.swizzle + b, d.swizzle, d.base_offset) \
            if d.swizzle else orig(d, rows, k_bytes)
    orig = D.k_major_addresses
    monkeypatch.setattr(D, "k_major_addresses", linear)
    bad = 0
    for i, f in enumerate(FORMS[:40]):
        inp = G.wg_inputs(i, f)
        for j in range(f["n_cta"]):
            if D.Descriptor.decode(int(inp["desc"][j][1])).swizzle == 32 and not f["trans_b"]:
                bad += int((replay_cta(f"w{i}", i, inp, j) != DATA[f"w{i}"][j]).sum())
    assert bad > 1000


# ------------------------------------------------------------------------------------------------
# errors
def _kernel(instr, decl=""):
    return f""".version 8.5
.target sm_90a
.address_size 64
.visible .entry k()
{{
  .reg .f32 %f<8>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .pred %p<2>;
  {decl}
  mov.b64 %rd1, 0;
  mov.b64 %rd2, 0;
  mov.b32 %r1, 0x44444444;
  setp.eq.u32 %p1, %r1, 0;
  wgmma.fence.sync.aligned;
  {instr}
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  ret;
}}
"""


SS = "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd1, %rd2, "


@pytest.mark.parametrize("tail,err,msg", [
    ("%r1, 0, %p1, 1, 1, 0;", PTXValidationError, r"takes 10 operands \(d, a-desc, b-desc, sp-meta, sp-sel, "
                                                   r"scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b\), "
                                                   r"found 9"),
    ("%r1, 2, %p1, 1, 1, 0, 0;", PTXValidationError, r"sp-sel must be 0 or 1, not 2"),
    ("%r1, %r2, %p1, 1, 1, 0, 0;", PTXValidationError, r"sp-sel must be an immediate"),
    ("0x44444444, 0, %p1, 1, 1, 0, 0;", PTXValidationError, r"sp-meta must be a 32-bit register \(ptxas takes no "
                                                            r"immediate\)"),
])
def test_validator_errors(tail, err, msg):
    with pytest.raises(err, match=msg):
        load_ptx(_kernel(SS + tail))


def test_validator_rejects_unknown_sparse_form_and_8bit_selector():
    with pytest.raises(UnsupportedError, match="not a wgmma.mma_async.sp form"):
        load_ptx(_kernel("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16.f16 {%f0, %f1, %f2, %f3}, "
                         "%rd1, %rd2, %r1, 0, %p1, 1, 1, 0, 0;"))
    with pytest.raises(PTXValidationError, match="sp-sel must be 0, not 1"):
        load_ptx(_kernel("wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.s8.s8 {%r0, %r1, %r2, %r3}, %rd1, %rd2, "
                         "%r1, 1, %p1;"))


def test_executor_errors():
    with pytest.raises(UnsupportedError, match="wgmma.mma_async.sp variant"):
        get_wgmma("wgmma.mma_async.sp.sync.aligned.m64n8k512.s32.b1.b1.and.popc")
    op = get_wgmma("wgmma.mma_async.sp.sync.aligned.m64n8k16.f32.tf32.tf32")
    e = np.full(32, 0x44444444, np.uint32)
    e[5] = 0x44444474
    with pytest.raises(OperandError, match=r"lane 5: sp-meta nibble 1 \(row 1, chunk 5, selector 0\) is 0b0111"):
        op.positions(e, 0, "wgmma.mma_async.sp...", 0)
    e[5] = 0x44444444
    assert (op.positions(e, 1, "x", 0) == op.positions(e, 0, "x", 0)).all()


def test_rs_operand_rules_as_ptxas():
    """ptxas 13 (sm_90a): A from registers is four registers and takes no imm-trans-a."""
    rs = "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%f0, %f1, %f2, %f3}, "
    with pytest.raises(PTXValidationError, match="vector of 4 registers, found 3"):
        load_ptx(_kernel(rs + "{%r1, %r2, %r3}, %rd2, %r1, 1, %p1, 1, 1, 0;"))
    with pytest.raises(PTXValidationError, match=r"takes 9 operands \(d, a, b-desc, sp-meta, sp-sel, scale-d, "
                                                 r"imm-scale-a, imm-scale-b, imm-trans-b\), found 10"):
        load_ptx(_kernel(rs + "{%r1, %r2, %r3, %r4}, %rd2, %r1, 1, %p1, 1, 1, 0, 0;"))


def test_bad_tf32_metadata_in_a_kernel_refused():
    k = _kernel("wgmma.mma_async.sp.sync.aligned.m64n8k16.f32.tf32.tf32 {%f0, %f1, %f2, %f3}, %rd1, %rd2, "
                "%r2, 0, %p1, 1, 1;").replace("mov.b32 %r1, 0x44444444;", "mov.b32 %r2, 0x44444444;\n"
                                              "  mov.u32 %r3, %laneid;\n  setp.eq.u32 %p0, %r3, 9;\n"
                                              "  @%p0 mov.b32 %r2, 0x44444044;\n  mov.b32 %r1, 0;")
    with pytest.raises(EmulatorError, match=r"lane 9: sp-meta nibble 2 \(row 2, chunk 6, selector 0\) is 0b0000: "
                                            r"a .tf32 metadata index must be 0b0100 or 0b1110"):
        load_ptx(k).launch("k", grid=(1, 1, 1), block=(128, 1, 1), args=[], shared_bytes=4096)


def test_async_rules_as_for_dense():
    """No wait before the accumulators are stored: as ptxas compiles it the store waits (the H100's registers);
    under the PTX manual's rules (wgmma_hazards="error") it is refused."""
    from emulator import WarpOptions
    i = _pick(lambda f: f["op_form"] == "rs")
    text = G.wg_ptx(FORMS[i]).replace("  wgmma.wait_group.sync.aligned 0;\n", "")
    assert text != G.wg_ptx(FORMS[i])
    got, _ = _run_kernel(i, n=1, text=text)
    assert (got == DATA[f"w{i}"][:1]).all()
    with pytest.raises(EmulatorError, match=r"reads register %d0"):
        _run_kernel(i, n=1, text=text, options=WarpOptions(wgmma_hazards="error"))


def test_show_metadata_and_compressed_a():
    from emulator.layouts.show import metadata_view, mma_view
    g = metadata_view("wgmma.mma_async.sp.sync.aligned.m64n16k32.f32.f16.f16", 1)
    assert g.labels[8][0] == "T2:e[19:16]" and g.labels[0][7] == "T3:e[15:12]"
    g = metadata_view("wgmma.mma_async.sp.sync.aligned.m64n16k64.s32.u8.s8", 0)
    assert g.labels[9][15] == "T7:e[31:28]"
    a = mma_view("wgmma.mma_async.sp.sync.aligned.m64n16k32.f32.f16.f16", "A")
    assert "compressed" in a.title and len(a.labels) == 64 and len(a.labels[0]) == 16


def test_both_engines_agree():
    """The fast engine hands wgmma.mma_async.sp back to this executor: both engines leave the same state."""
    sys.path.insert(0, os.path.dirname(__file__))
    from engines import compare_engines
    i = _pick(lambda f: f["op_form"] == "rs" and f["atype"] == "tf32")
    f = FORMS[i]
    inp = G.wg_inputs(i, f)
    n = 1
    arrays = [inp["img"][:n], inp["desc"][:n], inp["a"][:n], inp["c"][:n], np.zeros_like(inp["c"][:n]),
              np.concatenate([inp["scale_d"][:n], np.zeros(n, np.uint32)]), inp["e"][:n]]
    ref, fast, diffs = compare_engines(load_ptx(G.wg_ptx(f)), "wgmma_sp_cap", n, 128, arrays,
                                       shared_bytes=G.W.DYN_SMEM)
    assert not diffs and "error" not in ref


def test_sparse_k_major_b_under_the_32_byte_swizzle_needs_the_measured_lbo():
    """The second 32 bytes of K of such a B were read LBO = 16 bytes on in every capture; any other LBO is
    refused rather than guessed."""
    for i, f in enumerate(FORMS):
        if f["trans_b"]:
            continue
        inp = G.wg_inputs(i, f)
        for j in range(f["n_cta"]):
            db = int(inp["desc"][j][1])
            if D.Descriptor.decode(db).swizzle != 32:
                continue
            op = get_wgmma(G.wg_spelling(f))
            smem = np.zeros(G.W.IMG, np.uint8)
            assert D.Descriptor.decode(db).lbo == 16
            op.read(smem, db, "B", False, "test", f["n"])
            other = (db & ~(0x3FFF << 16)) | (2 << 16)             # LBO 32
            with pytest.raises(UnsupportedError, match=r"only LBO = 16 bytes is measured for the second one, not 32"):
                op.read(smem, other, "B", False, "test", f["n"])
            return
    pytest.fail("no K-major B under the 32-byte swizzle in the capture")
