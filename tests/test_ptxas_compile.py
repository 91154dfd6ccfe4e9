"""What ptxas does to a kernel besides translating each instruction, replayed against the H100
(tests/data/ptxas_compile, ``tools/hwcapture/ptxas_compile.py``):

* approximate math on compile-time constants is evaluated by ptxas, not by the MUFU (``frontend/constfold.py``);
* an unrounded mul (or div.full/div.approx) is fused into its add/sub readers only when every reader of the
  product is such an add/sub (``frontend/contract.py``);
* registers declared in a ``{ }`` block belong to that block (``machine/program.py``).
"""
import json
import os

import numpy as np
import pytest

from emulator import GlobalMemory, UnsupportedError, Warp, load_ptx
from emulator.frontend import constfold as C
from emulator.numerics import mufu as M
from ptxas_probes import CONTRACT_FUSED, CONTRACT_PATTERNS, contract_module, fold_module

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "ptxas_compile")
FOLD = np.load(os.path.join(DATA, "constfold_h100.npz"), allow_pickle=False)
FORMS = sorted({k.split("__")[0] for k in FOLD.files if "__" in k})
CONTRACT = np.load(os.path.join(DATA, "contract_h100.npz"), allow_pickle=False)


def _operands(form, i):
    return [int(x) for x in FOLD[f"{form}__in"][:, i]]


def _run_one_thread(text, n):
    g = GlobalMemory()
    out = g.alloc(4 * n)
    load_ptx(text).launch("k", grid=(1, 1, 1), block=(1, 1, 1), args=[out], gmem=g)
    return g.download(out, 4 * n).view(np.uint32)


def test_fold_forms_are_the_measured_ones():
    assert len(FORMS) == 18 and "tanh.approx.f32" not in FORMS
    assert set(FORMS) == {f for f in M.F32_UNARY + M.F32_DIV if not f.startswith("tanh")}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("form", FORMS)
def test_folded_values_equal_the_h100(form):
    """Every constant operand the H100 ran: ptxas's folded value (or a refusal), never the MUFU's."""
    hw = FOLD[f"{form}__out"]
    refused, mufu_differs = 0, 0
    mufu = (M.ptx_f32_div(np, form, *FOLD[f"{form}__in"]) if form.startswith("div")
            else M.ptx_f32_unary(np, form, FOLD[f"{form}__in"][0]))
    for i in range(hw.size):
        try:
            v = C.fold_value(form, _operands(form, i))
        except C._Refused:
            refused += 1
            continue
        assert v == int(hw[i]), (form, [hex(x) for x in _operands(form, i)], hex(int(hw[i])), hex(v))
        mufu_differs += int(mufu[i]) != v
    assert refused <= 0.16 * hw.size, refused
    assert mufu_differs > 0            # the comparison can fail: the MUFU's value is not what ptxas folds to


@pytest.mark.parametrize("form", ["rsqrt.approx.ftz.f32", "ex2.approx.f32", "sin.approx.f32", "div.full.f32",
                                  "div.approx.ftz.f32", "lg2.approx.f32"])
def test_folded_kernels_equal_the_h100(form):
    """The probe kernel itself (the PTX the H100 ran), on the first 48 constants the emulator folds."""
    keep = []
    for i in range(FOLD[f"{form}__out"].size):
        try:
            C.fold_value(form, _operands(form, i))
            keep.append(i)
        except C._Refused:
            pass
        if len(keep) == 48:
            break
    ins = FOLD[f"{form}__in"][:, keep]
    consts = list(zip(*ins)) if form.startswith("div") else list(ins[0])
    got = _run_one_thread(fold_module(form, consts), len(keep))
    np.testing.assert_array_equal(got, FOLD[f"{form}__out"][keep])


def test_rsqrt_of_two_is_folded_in_kernels_not_in_warp_run():
    text = fold_module("rsqrt.approx.ftz.f32", [0x40000000])
    assert _run_one_thread(text, 1)[0] == 0x3F3504F3          # ptxas: 1/sqrt(2) correctly rounded
    w = Warp()
    w.run("rsqrt.approx.ftz.f32 %f1, 0f40000000;")            # Warp.run: the instruction itself, on the MUFU
    assert int(w.read("%f1")[0]) == 0x3F3504F2


@pytest.mark.parametrize("body,why", [
    ("mov.b32 %r0, 0f7EE6EDAE; rcp.approx.f32 %r2, %r0;", "not measured for a subnormal result"),
    ("mov.b32 %r0, 0f00000001; lg2.approx.f32 %r2, %r0;", "not measured for a subnormal input"),
    ("mov.b32 %r0, 0f40000000; mul.f32 %r1, %r0, %r0; rsqrt.approx.f32 %r2, %r1;", "a constant that ptxas computes"),
    ("mov.b32 %r0, 0f3C003C00; ex2.approx.f16x2 %r2, %r0;", "not measured for this form"),
])
def test_unmeasured_folds_are_refused(body, why):
    text = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n"
            ".reg .b32 %r<4>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [out];\n" + body.replace("; ", ";\n") +
            "\nst.global.b32 [%rd1], %r2;\nret;\n}\n")
    with pytest.raises(UnsupportedError, match=why) as e:
        _run_one_thread(text, 1)
    last = body.rstrip(";").split("; ")[-1]
    assert f"line {9 + body.count(';') - 1}, column 1: {last}" in str(e.value)


def test_tanh_of_a_constant_runs_on_the_mufu():
    text = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n"
            ".reg .b32 %r<4>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [out];\nmov.b32 %r0, 0f3F000000;\n"
            "tanh.approx.f32 %r2, %r0;\nst.global.b32 [%rd1], %r2;\nret;\n}\n")
    assert _run_one_thread(text, 1)[0] == int(M.ptx_f32_unary(np, "tanh.approx.f32", np.uint32([0x3F000000]))[0])


# ------------------------------------------------------------------------------------------------ contraction
def _contract_inputs():
    return [CONTRACT[f"in__{k}"] for k in "abcd"]


def test_contract_probe_is_the_captured_module():
    assert contract_module() == CONTRACT["ptx"].tobytes().decode()
    assert json.loads(str(CONTRACT["meta"]))["kernels"] == list(CONTRACT_PATTERNS)


@pytest.mark.parametrize("name", list(CONTRACT_PATTERNS))
def test_contraction_equals_the_h100(name):
    ins = _contract_inputs()
    n = ins[0].size
    g = GlobalMemory()
    args = [g.upload(a) for a in ins]
    out = g.alloc(8 * n)
    module = load_ptx(contract_module())
    if name == "mul_add_branch_add":      # two adds of one product, one in a short branch-over block
        with pytest.raises(UnsupportedError, match="several basic blocks .* if-converts"):
            module.launch(name, grid=(1, 1, 1), block=(128, 1, 1), args=args + [out, n], gmem=g)
        return
    module.launch(name, grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), args=args + [out, n], gmem=g)
    got = g.download(out, 8 * n).view(np.uint32)
    want = CONTRACT[f"out__{name}"].view(np.uint32)
    np.testing.assert_array_equal(got, want)


def _f32_bits(v):
    return np.asarray(v, np.float64).astype(np.float32).view(np.uint32)


@pytest.mark.parametrize("name", list(CONTRACT_PATTERNS))
def test_contraction_rule_is_what_the_h100_shows(name):
    """The first output (the add/sub) is the fused value where ptxas fuses and the twice-rounded one where it
    does not, and the two differ on some lanes: the comparison can fail either way."""
    a, b, c, d = (x.astype(np.float64) for x in _contract_inputs())
    ua, ub = (x.view(np.uint32) for x in _contract_inputs()[:2])
    body = CONTRACT_PATTERNS[name]
    with np.errstate(all="ignore"):
        if body.startswith("mul"):
            prod_exact = a * b                                     # exact in float64
            prod = _f32_bits(prod_exact).view(np.float32).astype(np.float64)
        else:
            form = "div.full.f32" if body.startswith("div.full") else "div.approx.f32"
            r, a2 = M.div_factors(np, form, ua, ub)
            prod_exact = r.view(np.float32).astype(np.float64) * a2.view(np.float32).astype(np.float64)
            prod = M.ptx_f32_div(np, form, ua, ub).view(np.float32).astype(np.float64)
        sign = -1.0 if "sub.f32 %f6, %f3, %f5" in body else 1.0
        fused = _f32_bits(sign * prod_exact + c)
        twice = _f32_bits(sign * prod + c)
    hw = CONTRACT[f"out__{name}"].view(np.uint32)[0::2]
    ok = ~np.isnan(fused.view(np.float32))
    want, other = (fused, twice) if CONTRACT_FUSED[name] else (twice, fused)
    np.testing.assert_array_equal(hw[ok], want[ok])
    assert (hw[ok] != other[ok]).any()


# ------------------------------------------------------------------------------------------------ block scopes
def test_registers_declared_in_a_block_are_the_blocks_own():
    """Triton's inline asm declares ``a0`` as .b32 in one ``{ }`` block and as .f16 in the next (tl.dot_scaled
    of e2m1 with e4m3 on sm_90a): each block's a0 is its own register, of its own width."""
    text = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n"
            ".reg .b32 %r<4>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [out];\n"
            "{\n.reg .b32 a<2>;\nmov.b32 a0, 0x12345678;\nshr.u32 a1, a0, 4;\nmov.b32 %r1, a1;\n}\n"
            "{\n.reg .f16 a<2>;\nmov.b16 a0, 0x3C00;\nmov.b32 %r2, {a0, a0};\n}\n"
            "st.global.b32 [%rd1], %r1;\nst.global.b32 [%rd1+4], %r2;\nret;\n}\n")
    got = _run_one_thread(text, 2)
    assert [hex(int(v)) for v in got] == ["0x1234567", "0x3c003c00"]


def test_brx_targets_end_a_straight_line_run_like_bra_targets():
    """A label that brx.idx can jump to (through its .branchtargets list) starts a basic block as a bra target
    does: a product whose register is written several times is not fused into an add behind such a label
    (the reader may be reached from elsewhere), and it is when the list does not name that label."""
    from emulator.frontend.contract import contract
    from emulator.frontend.module import parse_module
    head = (".version 8.5\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n.reg .f32 %f<8>;\n"
            ".reg .b32 %r<4>;\n.reg .pred %p<2>;\n")

    def fused(jump):
        body = ("mov.u32 %r1, %tid.x;\nmov.f32 %f5, 0f00000000;\n" + jump +
                "L0:\nmul.f32 %f5, %f1, %f2;\nL1:\nadd.f32 %f6, %f5, %f3;\nmov.f32 %f5, %f6;\nret;\n}\n")
        fn = parse_module(head + body).functions["k"]
        contract(fn.body.statements)
        (add,) = [s for s in fn.body.statements if getattr(s, "opcode", "").startswith("add")]
        return getattr(add, "contract", None) is not None
    assert fused("setp.eq.u32 %p1, %r1, 0;\n@%p1 bra L0;\n")
    assert not fused("setp.eq.u32 %p1, %r1, 0;\n@%p1 bra L1;\n")
    assert fused("ts: .branchtargets L0;\nbrx.idx %r1, ts;\n")
    assert not fused("ts: .branchtargets L0, L1;\nbrx.idx %r1, ts;\n")


def test_contraction_of_thunderkittens_attention_is_ptxas_choice():
    """ThunderKittens' attention (production corpus) computes ``att * scale - max * scale`` with both products
    unrounded: ptxas's SASS is ``FFMA att, 0.18033688, -m`` with ``m = FMUL max, 0.18033688`` shared by the row
    (and ``FFMA max_old, 0.18033688, -m`` for the rescaling factor).
    The att product is written once but scales a wgmma accumulator register that every wgmma of the loop writes;
    each sub fuses with it, never with the shared product. The other choice put 1/3 of the log-sum-exp values
    1 or 2 ulp off the H100 (tests/test_corpus.py replays the kernel)."""
    import sys
    from emulator.frontend import ptx as P
    from emulator.frontend.constfold import fold_constants
    from emulator.frontend.contract import _flat, contract
    from emulator.frontend.module import parse_module
    sys.path.insert(0, os.path.dirname(__file__))
    import corpus_lib
    with np.load(os.path.join(corpus_lib.DATA, "production.npz"), allow_pickle=False) as z:
        owner = json.loads(str(z["nvcc_tk_attn_fwd_d64_n384__config"])).get("ptx_from", "nvcc_tk_attn_fwd_d64_n384")
        text = z[f"{owner}__ptx"].tobytes().decode()
    name = "_Z14fwd_attend_kerILi64ELb0EEv11fwd_globalsIXT_EE"
    start = text.index(f".visible .entry {name}")
    end = text.find(".visible .entry", start + 1)
    text = text[:text.rindex("\n", 0, start)] + "\n" + text[start:end if end > 0 else len(text)]   # that kernel
    fn = parse_module(text).functions[name]
    body = fn.body.statements
    fold_constants(body)
    contract(body)
    instrs = [s for s in _flat(body) if isinstance(s, P.Instruction)]
    readers = {}
    for s in instrs:
        for o in s.operands[1:]:
            if isinstance(o, P.Reg):
                readers.setdefault(o.name, []).append(s)
    scaled = {s.operands[0].name: s for s in instrs if s.opcode == "mul.ftz.f32" and
              getattr(s.operands[2], "text", None) == "0f3E38AA3B"}
    both = [s for s in instrs if s.opcode == "sub.ftz.f32" and
            all(isinstance(o, P.Reg) and o.name in scaled for o in s.operands[1:])]
    # per lane: 64 att * scale - max * scale of its rows, and 2 max_old * scale - max * scale (the rescaling)
    assert len(both) == 66
    for s in both:
        c = s.contract
        assert c is not None and c.index == 0 and c.negate_other, s.line
        assert len(readers[c.producer.operands[0].name]) == 1              # the att product, read once
        assert len(readers[s.operands[2].name]) > 1                        # the shared max product: an FMUL
