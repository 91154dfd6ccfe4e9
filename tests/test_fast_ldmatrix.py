"""The fast engine's ldmatrix rows (``fastcore/ldm.py``) against the reference executors, bit for bit: the row
address in a 32-bit register, a 64-bit register or none (``[buf+off]``), every shape with and without ``.trans``,
and stmatrix beside them; none of them handed back."""
import numpy as np
import pytest

from emulator import GlobalMemory, load_ptx
from emulator.machine.fastcore import engine
from engines import compare_engines

FORMS = ("x1", "x2", "x4", "x1.trans", "x2.trans", "x4.trans")
REGS = {"x1": "{%r10}", "x2": "{%r10, %r11}", "x4": "{%r10, %r11, %r12, %r13}"}


def _kernel(address):
    body = []
    for k, form in enumerate(FORMS):
        regs = REGS[form.split(".")[0]]
        body.append(f"ldmatrix.sync.aligned.m8n8.{form}.shared.b16 {regs}, {address.format(off=16 * k)};")
        body.append(f"st.global.v4.u32 [%rd3+{16 * k}], {{%r10, %r11, %r12, %r13}};")
    body.append("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r7+512], {%r10, %r11, %r12, %r13};")
    body.append("bar.sync 0;")
    body.append(f"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%r10, %r11, %r12, %r13}}, {address.format(off=512)};")
    body.append(f"st.global.v4.u32 [%rd3+{16 * len(FORMS)}], {{%r10, %r11, %r12, %r13}};")
    return f"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{{
    .reg .b32 %r<14>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b8 buf[2048];
    ld.param.u64 %rd1, [pin];
    ld.param.u64 %rd2, [pout];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd4, %r1, 16;
    add.s64 %rd5, %rd1, %rd4;
    ld.global.v4.u32 {{%r10, %r11, %r12, %r13}}, [%rd5];
    mov.u32 %r5, buf;
    shl.b32 %r6, %r1, 4;
    add.u32 %r7, %r5, %r6;
    st.shared.v4.u32 [%r7], {{%r10, %r11, %r12, %r13}};
    add.s64 %rd5, %rd5, 512;
    ld.global.v4.u32 {{%r10, %r11, %r12, %r13}}, [%rd5];
    st.shared.v4.u32 [%r7+512], {{%r10, %r11, %r12, %r13}};
    bar.sync 0;
    xor.b32 %r8, %r1, 5;
    shl.b32 %r8, %r8, 4;
    add.u32 %r2, %r5, %r8;
    cvt.u64.u32 %rd6, %r2;
    mov.u32 %r10, 0; mov.u32 %r11, 0; mov.u32 %r12, 0; mov.u32 %r13, 0;
    mul.wide.u32 %rd4, %r1, {16 * (len(FORMS) + 1)};
    add.s64 %rd3, %rd2, %rd4;
    {chr(10).join("    " + b for b in body)}
    ret;
}}
"""


@pytest.mark.parametrize("address", ["[%r2+{off}]", "[%rd6+{off}]", "[buf+{off}]"])
def test_ldmatrix_rows_are_identical_on_both_engines(address):
    text = _kernel(address)
    rng = np.random.default_rng(7)
    ins = [rng.integers(0, 1 << 32, size=(64, 4), dtype=np.uint64).astype(np.uint32),
           np.zeros((32, 4 * (len(FORMS) + 1)), np.uint32)]
    ref, fast, diffs = compare_engines(load_ptx(text), "k", 1, 32, ins)
    assert not diffs, diffs
    assert "error" not in ref, ref["error"]
    m = load_ptx(text)
    g = GlobalMemory()
    a, o = g.upload(ins[0]), g.upload(ins[1])
    m.launch("k", 1, 32, [a, o], gmem=g, engine="fast")
    assert engine.handback_counts(m.program("k")) == {}
    assert "ldmatrix" in engine.translation(m.program("k")).families
