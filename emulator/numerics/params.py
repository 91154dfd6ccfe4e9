"""Number formats and the one per-architecture parameter table of the mma.sync arithmetic.

Tensor-core steps are "truncated fused dot-product-add" (T-FDPA, see ``reference.t_fdpa``): up to ``L``
exact products and the accumulator are aligned to the largest exponent (never below ``2**e_zero``), every
term is cut toward zero ``F`` fraction bits below it, the integer sum is exact and is rounded once to the
output format (``RZ`` for f32, ``RNE`` for f16).  K larger than ``L`` is split into steps in ascending k,
each rounded to the output format and fed as the next step's accumulator.
"""
from dataclasses import dataclass

from ..errors import UnsupportedError


@dataclass(frozen=True)
class Format:
    name: str
    code: int        # small integer used by the jitted code
    ebits: int
    mbits: int       # stored fraction bits
    width: int       # bits in the encoding (tf32: the 32-bit register; its low 13 bits are ignored)
    ieee_inf: bool   # False for e4m3 (no infinities; NaN is S.1111.111)

    @property
    def bias(self):
        return (1 << (self.ebits - 1)) - 1

    @property
    def emin(self):
        return 1 - self.bias

    @property
    def precision(self):
        return self.mbits + 1


FORMATS = {f.name: f for f in (
    Format("f16", 0, 5, 10, 16, True),
    Format("bf16", 1, 8, 7, 16, True),
    Format("tf32", 2, 8, 10, 32, True),
    Format("f32", 3, 8, 23, 32, True),
    Format("e4m3", 4, 4, 3, 8, False),
    Format("e5m2", 5, 5, 2, 8, True),
    Format("f64", 6, 11, 52, 64, True),
)}
FORMAT_BY_CODE = {f.code: f for f in FORMATS.values()}

RZ, RNE = 0, 1          # rounding codes (jitted code uses the integers)


@dataclass(frozen=True)
class TcParams:
    L: int          # products per fused step (K > L: chained steps, rounded in between)
    F: int          # fraction bits kept below the largest exponent
    e_zero: int     # the alignment exponent never goes below 2**e_zero
    rounding: int   # RZ or RNE, applied to each step's result


# (arch, input type, output type) -> parameters.  sm_90: H100 captures (tests/data/mma).  sm_80/sm_86:
# published A100 models (Ampere tensor cores: 16 bytes of products per step, one fewer fraction bit).
_SM90 = {("f16", "f32"): TcParams(16, 25, -133, RZ), ("bf16", "f32"): TcParams(16, 25, -133, RZ),
         ("tf32", "f32"): TcParams(8, 25, -133, RZ), ("f16", "f16"): TcParams(16, 25, -21, RNE)}
_SM80 = {("f16", "f32"): TcParams(8, 24, -132, RZ), ("bf16", "f32"): TcParams(8, 24, -132, RZ),
         ("tf32", "f32"): TcParams(4, 24, -132, RZ), ("f16", "f16"): TcParams(8, 24, -20, RNE)}
TC_PARAMS = {("sm_90", *k): v for k, v in _SM90.items()}
TC_PARAMS.update({(arch, *k): v for arch in ("sm_80", "sm_86") for k, v in _SM80.items()})

# Architecture spellings that share a parameter row.
ARCH_ALIASES = {"sm_90a": "sm_90"}


def tc_params(arch, atype, dtype):
    key = (ARCH_ALIASES.get(arch, arch), "f16" if atype in ("e4m3", "e5m2") else atype, dtype)
    if key not in TC_PARAMS:
        known = sorted({a for a, _, _ in TC_PARAMS})
        raise UnsupportedError(f"mma.sync: no tensor-core parameters for {atype} -> {dtype} on {arch}; "
                               f"architectures with parameters: {', '.join(known)}")
    return TC_PARAMS[key]
