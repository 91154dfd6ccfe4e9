"""Integer literals past 64 bits, as ptxas 13 takes them (measured: ``ptxas -arch=sm_90a``, and the constant
in the cubin it wrote): refused ("Constant overflow") only when all the digits but the last are worth 2^63
or more; otherwise kept modulo 2^64."""
import numpy as np
import pytest

from emulator import GlobalMemory, load_ptx
from emulator.errors import PTXValidationError
from emulator.frontend.ptx import int_overflows

# literal -> ptxas 13 accepts it (mov.u32 and mov.u64 alike)
PTXAS = {
    "18446744073709551615": True, "18446744073709551616": True, "18446744073709551617": True,
    "28446744073709551616": True, "36893488147419103232": True, "92233720368547758079": True,
    "92233720368547758079U": True, "-92233720368547758079": True, "-18446744073709551616": True,
    "0x10000000000000000": True, "0x1ffffffffffffffff": True, "0x7fffffffffffffff0": True,
    "0x7ffffffffffffffff": True,
    "92233720368547758080": False, "92233720368547758081": False, "99999999999999999999": False,
    "100000000000000000000": False, "-99999999999999999999": False, "0x80000000000000000": False,
    "0x8000000000000000f": False, "0x7fffffffffffffffff": False, "0xfffffffffffffffffff": False,
}


def _module(lit, ty="u32", reg="%r1"):
    return (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 p) {\n"
            ".reg .b32 %r<3>; .reg .b64 %rd<3>;\n"
            f"ld.param.u64 %rd1, [p];\nmov.{ty} {reg}, {lit};\nst.global.{ty} [%rd1], {reg};\nret;\n}}\n")


@pytest.mark.parametrize("lit", sorted(PTXAS))
def test_literal_verdicts_are_ptxas(lit):
    assert int_overflows(lit) == (not PTXAS[lit])
    for ty, reg in (("u32", "%r1"), ("u64", "%rd2")):
        if PTXAS[lit]:
            load_ptx(_module(lit, ty, reg))
        else:
            with pytest.raises(PTXValidationError, match="overflows 64 bits"):
                load_ptx(_module(lit, ty, reg))


@pytest.mark.parametrize("lit,want", [("18446744073993761400", 0x10F0B278),          # the cubin held 0x10f0b278
                                      ("36893488147724189218", 0x122F3E22),          # and 0x122f3e22
                                      ("18446744073709551616", 0), ("0x1ffffffffffffffff", 2**64 - 1)])
def test_values_modulo_2_64(lit, want):
    for ty, reg, dt in (("u32", "%r1", np.uint32), ("u64", "%rd2", np.uint64)):
        g = GlobalMemory()
        out = g.alloc(8)
        load_ptx(_module(lit, ty, reg)).launch("k", args=[out], gmem=g, engine="reference")
        got = int(g.download(out, np.dtype(dt).itemsize).view(dt)[0])
        assert got == want & (2**(8 * np.dtype(dt).itemsize) - 1), (lit, ty, hex(got))
