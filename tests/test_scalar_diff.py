"""The scalar ISA against the H100, bit for bit.

tests/data/scalar/ holds two captures, taken with tools/hwcapture/scalar/ on an H100:

* ``scalar_sm90.npz``: every scalar PTX form over registers that ptxas accepts for sm_90a among the
  candidates of ``forms.candidates()`` (integer and bit operations at every width, f16/bf16/f32/f64 arithmetic
  in every rounding mode with .ftz/.sat/.relu, min/max with .NaN/.xorsign.abs, fma/mad, div/rcp/sqrt,
  set/setp/selp/slct, testp, copysign, carry chains, cvt between every float and integer type, the packed f16x2,
  bf16x2, tf32 and fp8 conversions);
* ``scalar_sm90_extra.npz``: forms with immediate operands that ptxas folds or specialises (division by a
  constant zero, constant shift amounts and bit fields, constant NaNs), cvt.pack.sat and the SIMD video
  instructions.

Each form ran over the same 2048 edge-heavy inputs (tools/hwcapture/scalar/inputs.py). Here ``Warp.run``
executes the same instruction text over the same inputs and every destination register must equal the
H100's bits. The default run compares a sample of the lanes of every form; ``-m slow`` compares all of them.
"""
import os

import numpy as np
import pytest

import scalar_replay as R

CAPTURES = list(R.CAPTURES)        # both are committed: a missing file is an error, not a skip

# Forms the emulator does not reproduce yet (data/scalar/pending.txt, one instruction text a line). The list
# must stay true: a form on it that matches on every input fails the full run, so it is removed once fixed.
_PENDING_FILE = os.path.join(R.DATA_DIR, "pending.txt")
PENDING = set(open(_PENDING_FILE).read().splitlines()) if os.path.exists(_PENDING_FILE) else set()


def _groups():
    out = []
    for c in CAPTURES:
        fam = {}
        for i, f in enumerate(R.capture(c)[0]):
            fam.setdefault(R.family(f), []).append(i)
        out += [(c, name, idx) for name, idx in sorted(fam.items())]
    return out


GROUPS = _groups()
IDS = [f"{c.replace('scalar_sm90', 'main').replace('main_', '')}-{name}" for c, name, _ in GROUPS]


def _check(capture, indices, lanes, full):
    forms = R.capture(capture)[0]
    problems, fixed = [], []
    for i in indices:
        text = forms[i]["text"]
        err, bad, _, _ = R.compare(i, lanes, capture)
        if text in PENDING:
            if full and err is None and len(bad) == 0:
                fixed.append(text)
            continue
        if err:
            problems.append(f"{text}: refused: {err}")
        elif len(bad):
            problems.append(f"{len(bad)} lanes differ; {R.describe(i, int(bad[0]), capture)}")
    assert not fixed, f"forms on PENDING now match the H100; remove them from the list: {fixed}"
    assert not problems, f"{len(problems)} forms differ from the H100:\n" + "\n".join(problems[:20])


def test_captures_are_what_they_claim():
    assert CAPTURES[0] == "scalar_sm90"
    for c in CAPTURES:
        forms, inputs, results, meta = R.capture(c)
        assert meta["gpu"].startswith("NVIDIA H100") and meta["cc"] == "9.0" and meta["n"] == 2048
        for i, f in enumerate(forms):
            assert results[i].shape == (len(f["dsts"]), meta["n"])
        assert all(v.shape == (4, meta["n"]) for v in inputs.values())
    assert len(R.capture()[0]) > 2000


@pytest.mark.parametrize("capture,family,indices", GROUPS, ids=IDS)
def test_family_sample(capture, family, indices):
    _check(capture, indices, R.sample_lanes(R.capture(capture)[3]["n"], 128), full=False)


@pytest.mark.slow
@pytest.mark.parametrize("capture,family,indices", GROUPS, ids=IDS)
def test_family_all_inputs(capture, family, indices):
    _check(capture, indices, np.arange(R.capture(capture)[3]["n"]), full=True)


def test_comparison_can_fail():
    """A form compared with another form's results must fail: the replay really compares bits."""
    forms, inputs, results, _ = R.capture()
    i = next(k for k, f in enumerate(forms) if f["text"].startswith("add.s32 "))
    j = next(k for k, f in enumerate(forms) if f["text"].startswith("sub.s32 "))
    lanes = np.arange(64)
    got = R.run_form(forms[i], inputs, lanes)
    assert (got == results[i][:, lanes]).all()
    assert (got != results[j][:, lanes]).any()
