"""Debug information checked as ptxas 13 checks it before it is set aside: ``.loc``/``.file`` syntax, the lines
of ``.section .debug_*`` blocks, labels defined twice there; and a stray ',' after a function header. Each
refused module below is one that ptxas refuses (its message in the comment); each accepted one, ptxas accepts."""
import pytest

from emulator import load_ptx
from emulator.errors import EmulatorError

HEAD = '.version 8.0\n.target sm_90a\n.address_size 64\n.file 1 "a.cu"\n.file 2 "b.h"\n'
BODY = ".visible .entry k()\n{\n{LOC}\nret;\n}\n"
SECTION = ".section .debug_str\n{\n$L__info_string0:\n.b8 97,0\n{SEC}\n}\n"


def _module(loc=".loc 1 3 5", sec=""):
    return HEAD + BODY.replace("{LOC}", loc) + SECTION.replace("{SEC}", sec)


@pytest.mark.parametrize("loc", [".loc 1 3 5", ".loc 1 74 41\n.loc\t2 112 3, function_name $L__info_string0, inlined_at 1 74 41",
                                 ".loc 1 3 5   // a comment"])
@pytest.mark.parametrize("sec", ["", ".b32 $L__info_string0", ".b64 .debug_str+8", "$L__other:\n.b8 1,2, 3"])
def test_accepted(loc, sec):
    load_ptx(_module(loc, sec))


@pytest.mark.parametrize("loc,sec,msg", [
    (".loc 99\t1 54 5", "", "malformed .loc"),                      # Parsing error near '5'
    (".loc 1 67 5 junk", "", "malformed .loc"),                     # Unknown field
    (".loc 2 112 3, function_name $L__info_string0, inlined_at 1 7", "", "malformed .loc"),  # near 'ret'
    (".loc 1 3 5", ".b8 9 junk", "not a label or a .b8"),           # Parsing error near '.b8'
    (".loc 1 3 5", "$L__info_string0:", "duplicate definition of label"),   # Duplicate definition of label
])
def test_refused(loc, sec, msg):
    with pytest.raises(EmulatorError, match=msg):
        load_ptx(_module(loc, sec))


def test_file_syntax():
    with pytest.raises(EmulatorError, match="malformed .file"):
        load_ptx(_module().replace('.file 2 "b.h"', '.file x 2 "b.h"'))      # Parsing error near 'x'


def test_comma_after_a_function_header():
    text = HEAD + ".extern .func (.param .b32 r) vprintf,\n.extern .func (.param .b32 r) vprintf\n" \
                  "(\n.param .b64 a, .param .b64 b\n);\n" + BODY.replace("{LOC}", "")
    with pytest.raises(EmulatorError, match="unexpected ','"):                # Parsing error near ','
        load_ptx(text)


@pytest.mark.parametrize("sreg,target,ok", [("%cluster_ctarank", "sm_80", False), ("%cluster_ctarank", "sm_90", True),
                                            ("%clusterid.x", "sm_89", False), ("%reserved_smem_offset_1", "sm_75", False),
                                            ("%reserved_smem_offset_1", "sm_80", True), ("%tid.x", "sm_75", True)])
def test_special_registers_above_the_target(sreg, target, ok):
    """ptxas 13: "Feature '%cluster_ctarank' requires .target sm_90 or higher" (measured per target)."""
    text = (f".version 8.0\n.target {target}\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<2>;\n"
            f"mov.u32 %r1, {sreg};\nret;\n}}\n")
    if ok:
        load_ptx(text)
    else:
        with pytest.raises(EmulatorError, match=f"needs .target sm_"):
            load_ptx(text)
