"""What the models rest on: the SASS ptxas 13.0 emits for each variant (tests/data/mma/sass_*.json,
written by ``tools/hwcapture/mma_capture.py sass``), and the H100's binary64 special-value rules."""
import json
import os

import numpy as np
import pytest

from emulator.tiles import mma
from isa.mma import VARIANTS

DATA = os.path.join(os.path.dirname(__file__), "data", "mma")


def sass(arch):
    with open(os.path.join(DATA, f"sass_{arch.replace('_', '')}.json")) as f:
        return json.load(f)


def test_sass_covers_every_variant_per_arch():
    for arch in ("sm_80", "sm_86", "sm_90"):
        assert set(sass(arch)) == {s for s, v in VARIANTS.items() if arch in v.archs}


def test_fp8_is_a_software_sequence_on_sm90():
    """Model: unpack to f16, one f16 HMMA per k%4 group (the second accumulating onto the first), then
    FADD / HADD2 of C."""
    for s, v in VARIANTS.items():
        if v.family != "fp8":
            continue
        ops = sass("sm_90")[s]
        hmma = {k: n for k, n in ops.items() if k.startswith("HMMA")}
        assert sum(hmma.values()) == 2, (s, ops)
        assert any(k.startswith("F2FP.F16.E") and "UNPACK_B" in k for k in ops), (s, ops)
        add = "FADD" if v.dtype == "f32" else "HADD2"
        assert ops.get(add, 0) >= 1, (s, ops)
        assert all(k.endswith(".F32" if v.dtype == "f32" else ".F16") for k in hmma)


def test_tensor_core_forms_are_one_instruction():
    for s, v in VARIANTS.items():
        if v.family == "tc":
            for arch in ("sm_80", "sm_90"):
                ops = sass(arch)[s]
                assert sum(n for k, n in ops.items() if k.startswith("HMMA")) == 1, (arch, s, ops)


@pytest.mark.parametrize("arch", ["sm_80", "sm_86"])
def test_m8n8k4_f16_same_cuda_core_sequence_on_ampere(arch):
    """Why the sm_90 m8n8k4 .f16 model (IEEE f32 FFMA/FMUL/FADD) is used for Ampere too."""
    keep = ("FFMA", "FMUL", "FADD", "HADD2.F32")
    for s, v in VARIANTS.items():
        if v.family == "m8n8k4_f16":
            a = {k: n for k, n in sass(arch)[s].items() if k in keep}
            b = {k: n for k, n in sass("sm_90")[s].items() if k in keep}
            assert a == b and not any(k.startswith("HMMA") for k in sass(arch)[s]), s


def test_f64_special_values():
    """H100: inf*0 and inf-inf give 0xFFF8000000000000; a NaN operand is passed on quieted, B's before the
    accumulator's before A's (captured hand-made tiles, replayed in test_mma_captures.py)."""
    instr = "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"
    A, B, C = np.zeros((8, 4)), np.zeros((4, 8)), np.zeros((8, 8))
    bits = lambda x: np.array(x, np.uint64).view(np.float64)  # noqa: E731
    A[0, 0], B[0, 0] = np.inf, 0.0
    A[1, 0], B[0, 1], C[1, 1] = np.inf, 1.0, -np.inf
    A[2, 0], B[0, 2], C[2, 2] = bits(0x7FF0000000000001), bits(0x7FF4000000000002), bits(0xFFF8000000000003)
    A[3, 1], B[1, 3], C[3, 3] = bits(0x7FF0000000000001), 1.0, bits(0xFFF8000000000003)
    A[4, 0], B[0, 4], C[4, 4] = -0.0, 0.0, -0.0
    D = mma(instr, A, B, C).view(np.uint64)
    assert [hex(int(D[i, i])) for i in range(5)] == [
        "0xfff8000000000000", "0xfff8000000000000", "0x7ffc000000000002", "0xfff8000000000003",
        "0x0"]
