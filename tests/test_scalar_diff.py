"""The scalar ISA against the H100, bit for bit.

tests/data/scalar/scalar_sm90.npz holds every scalar PTX form that ptxas accepts for sm_90a among the
candidates of tools/hwcapture/scalar/forms.py (integer and bit operations at every width, f16/bf16/f32/f64
arithmetic in every rounding mode with .ftz/.sat/.relu, min/max, fma/mad, div/rcp/sqrt, set/setp/selp/slct,
testp, copysign, cvt between every float and integer type, the packed and narrow conversions), each run on an
H100 over the same 2048 edge-heavy inputs (tools/hwcapture/scalar/inputs.py). Here ``Warp.run`` executes the
same instruction text over the same inputs and every destination register must equal the H100's bits.

The default run compares a sample of the lanes of every form; ``-m slow`` compares all of them.
"""
import os

import numpy as np
import pytest

import scalar_replay as R

FORMS, INPUTS, RESULTS, META = R.capture()
N = META["n"]

# Forms the emulator does not reproduce yet (data/scalar/pending.txt, one instruction text a line). The list
# must stay true: a form on it that matches on every input fails the full run, so it is removed once fixed.
_PENDING_FILE = os.path.join(os.path.dirname(R.DATA), "pending.txt")
PENDING = set(open(_PENDING_FILE).read().splitlines()) if os.path.exists(_PENDING_FILE) else set()


def _families():
    fam = {}
    for i, f in enumerate(FORMS):
        fam.setdefault(R.family(f), []).append(i)
    return fam


FAMILIES = _families()


def _check(indices, lanes, full):
    problems, fixed = [], []
    for i in indices:
        text = FORMS[i]["text"]
        err, bad, _, _ = R.compare(i, lanes)
        if text in PENDING:
            if full and err is None and len(bad) == 0:
                fixed.append(text)
            continue
        if err:
            problems.append(f"{text}: refused: {err}")
        elif len(bad):
            problems.append(f"{len(bad)} lanes differ; {R.describe(i, int(bad[0]))}")
    assert not fixed, f"forms on PENDING now match the H100; remove them from the list: {fixed}"
    assert not problems, f"{len(problems)} forms differ from the H100:\n" + "\n".join(problems[:20])


def test_capture_is_what_it_claims():
    assert META["gpu"].startswith("NVIDIA H100") and META["cc"] == "9.0"
    assert len(FORMS) > 2000 and N == 2048
    for i, f in enumerate(FORMS):
        assert RESULTS[i].shape == (len(f["dsts"]), N)
    assert all(v.shape == (4, N) for v in INPUTS.values())


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_sample(family):
    _check(FAMILIES[family], R.sample_lanes(N, 128), full=False)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_all_inputs(family):
    _check(FAMILIES[family], np.arange(N), full=True)


def test_comparison_can_fail():
    """A form compared with another form's results must fail: the replay really compares bits."""
    i = next(k for k, f in enumerate(FORMS) if f["text"].startswith("add.s32 "))
    j = next(k for k, f in enumerate(FORMS) if f["text"].startswith("sub.s32 "))
    lanes = np.arange(64)
    got = R.run_form(FORMS[i], INPUTS, lanes)
    assert (got == RESULTS[i][:, lanes]).all()
    assert (got != RESULTS[j][:, lanes]).any()
