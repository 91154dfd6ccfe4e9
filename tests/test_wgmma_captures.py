"""wgmma.mma_async equals the H100 bit for bit: captures of tools/hwcapture/wgmma replayed.

Inputs are rebuilt from the form list (deterministic), the H100's accumulator registers are in
tests/data/wgmma.  The default run replays the first CTA of every form; ``-m slow`` replays every CTA.
"""
import numpy as np
import pytest

import wgmma_captures as wc
from emulator import GlobalMemory, load_ptx
from emulator.numerics import wgmma as num
from emulator.ops.wgmma import desc as D

FORMS = wc.gen.forms()
SAFE, META = wc.load("h100_safe.npz")
OFFS, _ = wc.load("h100_offsets.npz")


def _cases(data):
    return [i for i in range(len(FORMS)) if f"d{i}" in data]


def _check(data, i, ctas):
    f = FORMS[i]
    inp = wc.gen.form_inputs(i, f)
    d = data[f"d{i}"]
    base = data[f"base{i}"]
    bad = 0
    for j in ctas:
        if j >= d.shape[0]:
            continue
        got = wc.replay_cta(f, inp, j, base=int(base[j]))
        bad += int((got != d[j]).sum())
    return bad


def test_capture_meta():
    assert "H100" in META["device"]
    assert len(_cases(SAFE)) + len(_cases(OFFS)) == len(FORMS)


@pytest.mark.parametrize("i", _cases(SAFE))
def test_form_first_cta(i):
    assert _check(SAFE, i, [0]) == 0, FORMS[i]


@pytest.mark.parametrize("i", _cases(OFFS))
def test_unaligned_start_and_base_offset(i):
    assert _check(OFFS, i, range(4)) == 0, FORMS[i]


@pytest.mark.slow
@pytest.mark.parametrize("i", _cases(SAFE) + [-1 - i for i in _cases(OFFS)])
def test_form_every_cta(i):
    data = SAFE if i >= 0 else OFFS
    i = i if i >= 0 else -1 - i
    assert _check(data, i, range(data[f"d{i}"].shape[0])) == 0, FORMS[i]


def _by(pred):
    return [i for i in _cases(SAFE) if pred(FORMS[i])]


@pytest.mark.parametrize("i", [_by(lambda f: f["op_form"] == "ss" and "k16.f32.f16" in f["spelling"])[0],
                               _by(lambda f: f["op_form"] == "rs" and "e5m2.e4m3" in f["spelling"])[0],
                               _by(lambda f: f["trans_a"] and f["trans_b"] and f["desc"] == "random")[0],
                               _by(lambda f: "b1" in f["spelling"])[0],
                               _by(lambda f: "satfinite" in f["spelling"])[0]])
def test_capture_kernel_through_load_ptx(i):
    """The capture's own PTX kernel, run by the emulator on the captured inputs, gives the H100's registers."""
    f = FORMS[i]
    inp = wc.gen.form_inputs(i, f)
    n = min(2, f["n_cta"], SAFE[f"d{i}"].shape[0])
    g = GlobalMemory()
    args = [g.upload(inp["img"][:n]), g.upload(inp["desc"][:n]), g.upload(inp["a"][:n]), g.upload(inp["c"][:n])]
    d = g.upload(np.zeros_like(inp["c"][:n]))
    misc = g.upload(np.concatenate([inp["scale_d"][:n], np.zeros(n, np.uint32)]))
    load_ptx(wc.gen.ptx(f)).launch("wgmma_cap", grid=(n, 1, 1), block=(128, 1, 1), args=args + [d, misc], gmem=g,
                                   shared_bytes=wc.gen.DYN_SMEM)
    out = g.download(d, inp["c"][:n].nbytes).view(np.uint32).reshape(inp["c"][:n].shape)
    # the H100 starts the dynamic window at 0x400 (the emulator at 0): whole swizzle patterns apart
    assert (SAFE[f"base{i}"][:n] % 1024 == g.download(misc, 8 * n).view(np.uint32)[n:] % 1024).all()
    assert (out == SAFE[f"d{i}"][:n]).all()


# ------------------------------------------------------------------------------------------------
# the captures can fail: neighbouring models mismatch
def _mismatches_with(monkeypatch, data, forms, attr, value, module=num):
    from emulator.ops.wgmma import op as wop
    monkeypatch.setattr(module, attr, value)
    for o in wop._CACHE.values():          # the addresses descriptors select are cached per instruction
        monkeypatch.setattr(o, "_reads", {})
    return sum(_check(data, i, range(2)) for i in forms)


def test_fp8_without_the_13_bit_cut_fails(monkeypatch):
    forms = _by(lambda f: ".f32.e4m3.e4m3" in f["spelling"])[:2]
    assert _mismatches_with(monkeypatch, SAFE, forms, "fp8_f32_cut", lambda D: D) > 100


def test_fp8_with_wider_alignment_fails(monkeypatch):
    forms = _by(lambda f: ".f32.e5m2.e5m2" in f["spelling"])[:2]
    p = num.WGMMA_PARAMS[("fp8", "f32")]
    table = dict(num.WGMMA_PARAMS)
    table[("fp8", "f32")] = type(p)(p.L, 14, p.e_zero, p.rounding)
    assert _mismatches_with(monkeypatch, SAFE, forms, "WGMMA_PARAMS", table) > 100


def test_ignoring_the_base_offset_fails(monkeypatch):
    orig = D.swizzle
    forms = _cases(OFFS)[:2]
    assert _mismatches_with(monkeypatch, OFFS, forms, "swizzle", lambda a, w, b=0: orig(a, w, 0), module=D) > 100


def test_lbo_sbo_swapped_fails(monkeypatch):
    orig = D.k_major_addresses
    forms = _by(lambda f: f["desc"] == "random" and "k16.f32.f16" in f["spelling"] and not f["trans_a"])[:1]

    def swapped(d, rows, k_bytes=32):
        return orig(D.Descriptor(d.start, d.sbo, d.lbo, d.base_offset, d.swizzle), rows, k_bytes)
    assert _mismatches_with(monkeypatch, SAFE, forms, "k_major_addresses", swapped, module=D) > 100
