"""Control flow as ptxas compiles it, replayed bit for bit against the H100 (tests/data/ctrlflow.npz): brx.idx
jump tables (a Gluon warp_specialize dispatch, hand-written tables in loops and { } scopes), indirect calls
(nvcc's function pointers and virtual calls, every .callprototype / .calltargets form ptxas accepts), brkpt on
a never-taken branch, and the wgmma hazards ptxas repairs itself (Triton's f16-accumulator tl.dot on sm_90a).
The capture is made by tools/hwcapture/ctrlflow (build.py, pack.py)."""
import os

import numpy as np
import pytest

import corpus_lib
from emulator import AsyncHazardError, EmulatorError, GlobalMemory, PTXValidationError, WarpOptions, load_ptx

DATA = os.path.join(corpus_lib.ROOT, "tests", "data", "ctrlflow.npz")


CASES = corpus_lib.load_npz(DATA)
# ptxas merges wgmma.mma_async instructions that repeat exactly (same registers and descriptors) within one
# commit group into one HGMMA: the H100 accumulates once where the PTX says twice (see KNOWN_DIFFERENCES)
KNOWN_DIFFERENCES = {"ptx_wgmma_read_chain": "out"}
SLOW = {"nvcc_brkpt_guarded_G", "nvcc_fptr_table_G", "nvcc_fptr_loop_G", "nvcc_virtual_calls_G",
        "nvcc_dense_switch_G", "triton_matmul_f16acc_128_sm90a", "nvcc_fptr_loop_sm90a"}
DEFAULT = sorted(n for n in CASES if n not in SLOW and n not in KNOWN_DIFFERENCES)


def _check(name, **launch):
    case = CASES[name]
    got, res, _ = corpus_lib.replay(case, **launch)
    bad = corpus_lib.mismatches(case, got)
    assert not bad, f"{name}: differs from the H100: {bad}"
    return res


def test_capture_is_whole():
    assert len(CASES) >= 40
    for name, c in CASES.items():
        assert "H100" in c["config"]["gpu"], name
        assert set(c["out"]) == set(c["config"]["outputs"]), name
    kinds = {n.split("_")[0] + "_" + n.split("_")[1] for n in CASES}
    assert {"ptx_brx", "ptx_call", "ptx_wgmma", "nvcc_fptr", "nvcc_virtual", "nvcc_brkpt", "triton_gluon",
            "triton_matmul"} <= kinds


@pytest.mark.parametrize("name", DEFAULT)
def test_matches_h100(name):
    _check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW))
def test_matches_h100_slow(name):
    _check(name)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith(("ptx_brx", "ptx_call"))) +
                         ["nvcc_virtual_calls_sm90a", "triton_gluon_ws_loops_sm90a"])
def test_reference_engine_matches_h100(name):
    """The reference engine alone agrees too (the fast engine runs brx.idx in its loops and hands calls to the
    Python scheduler)."""
    _check(name, engine="reference")


def test_known_difference_is_still_different():
    """ptxas keeps one of two identical wgmma.mma_async of a commit group (one HGMMA in the SASS); the emulator
    runs both, as the PTX says. When this passes the model has changed: take the case off the list."""
    for name, out in KNOWN_DIFFERENCES.items():
        case = CASES[name]
        got, _, _ = corpus_lib.replay(case)
        assert [k for k, _, _ in corpus_lib.mismatches(case, got)] == [out]


# ------------------------------------------------------------------------------------------------
# wgmma: what ptxas serialises itself

def test_f16_accumulator_dot_notes_the_injected_wait():
    res = _check("triton_matmul_f16acc_64x64_sm90a")
    assert len(res.notes) == 1, res.notes
    note = res.notes[0]
    assert note.startswith("line 354: mov.b32 {%rs1, %rs2}, %r86: reads %r86") and "C7517" in note
    assert "(line 346)" in note                            # the wgmma.mma_async that holds %r86


def test_f16_accumulator_dot_strict_option_raises():
    with pytest.raises(AsyncHazardError, match=r"line 354, column \d+: .*reads register %r86 while a "
                                               r"wgmma.mma_async"):
        corpus_lib.replay(CASES["triton_matmul_f16acc_64x64_sm90a"], options=WarpOptions(wgmma_hazards="error"))


def test_wgmma_hazards_option_is_checked():
    with pytest.raises(EmulatorError, match="wgmma_hazards must be 'wait' or 'error'"):
        WarpOptions(wgmma_hazards="ignore")


@pytest.mark.parametrize("name, what", [("ptx_wgmma_no_fence", "C7519"), ("ptx_wgmma_write_before_wait", "C7517"),
                                        ("ptx_wgmma_read_uncommitted", "C7517")])
def test_hand_written_hazards_are_noted(name, what):
    res = _check(name)
    assert len(res.notes) == 1 and what in res.notes[0], res.notes
    with pytest.raises(AsyncHazardError):
        corpus_lib.replay(CASES[name], options=WarpOptions(wgmma_hazards="error"))


def test_notes_come_back_from_workers():
    case = CASES["triton_matmul_f16acc_64x64_sm90a"]
    _, serial, _ = corpus_lib.replay(case)
    # one CTA: run it twice over a 2-CTA grid through workers to see notes merged from the worker processes
    cfg = dict(case["config"], grid=[2, 1, 1])
    wide = dict(case, config=cfg)
    _, res, _ = corpus_lib.replay(wide, workers=2)
    assert res.notes == serial.notes


# ------------------------------------------------------------------------------------------------
# brkpt

BRKPT = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 hit)
{
.reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<4>;
mov.u32 %r1, %tid.x;
ld.param.u32 %r2, [hit];
setp.ge.u32 %p1, %r1, %r2;
@%p1 brkpt;
ld.param.u64 %rd1, [out];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd1, %rd1, %rd2;
st.global.u32 [%rd1], %r1;
ret;
}
"""


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_brkpt_executed_stops_the_launch(engine):
    m = load_ptx(BRKPT)
    g = GlobalMemory()
    o = g.alloc(256)
    m.launch("k", (1, 1, 1), (64, 1, 1), [o, 64], gmem=g, engine=engine)          # never taken: runs
    assert (g.download(o, 256).view(np.uint32) == np.arange(64)).all()
    with pytest.raises(EmulatorError, match=r"line 10, column 1: @%p1 brkpt: lanes 29-31 of warp 1: brkpt "
                                            r"executed"):
        m.launch("k", (1, 1, 1), (64, 1, 1), [o, 61], gmem=g, engine=engine)


# ------------------------------------------------------------------------------------------------
# brx.idx and indirect calls: errors and the control-flow successors

def _brx_kernel(index="%r2", table="ts: .branchtargets A, B;", use="brx.idx {index}, ts;"):
    return f""".version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{{
.reg .b32 %r<4>; .reg .b64 %rd<4>;
mov.u32 %r1, %tid.x;
and.b32 %r2, %r1, 3;
mov.u32 %r3, 0;
{table}
{use.format(index=index)}
A:
add.u32 %r3, %r3, 1;
B:
ld.param.u64 %rd1, [out];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd1, %rd1, %rd2;
st.global.u32 [%rd1], %r3;
ret;
}}
"""


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_brx_index_past_the_list(engine):
    m = load_ptx(_brx_kernel())
    g = GlobalMemory()
    o = g.alloc(128)
    with pytest.raises(EmulatorError, match=r"line 11, column 1: brx.idx %r2, ts: lane 2: index 2 is past the end "
                                            r"of the .branchtargets list \(2 labels"):
        m.launch("k", (1, 1, 1), (32, 1, 1), [o], gmem=g, engine=engine)


@pytest.mark.parametrize("text, match", [
    (_brx_kernel(table="", use="brx.idx {index}, ts;\nts: .branchtargets A, B;"), "not a .branchtargets list"),
    (_brx_kernel(index="%rd1"), "must be a 32-bit integer register"),
    (_brx_kernel(use="brx {index}, ts;"), "brx needs .idx"),
    (_brx_kernel(use="brx.idx.u32 {index}, ts;"), "brx needs .idx"),
    (_brx_kernel(use="brx.idx {index}, A;"), "not a .branchtargets list"),
])
def test_brx_forms_ptxas_refuses(text, match):
    with pytest.raises(PTXValidationError, match=match):
        load_ptx(text)


def test_successors_of_control_ops():
    prog = load_ptx(_brx_kernel(use="@%p1 brx.idx {index}, ts;").replace(".reg .b32", ".reg .pred %p1;\n.reg .b32")
                    ).program("k")
    brx = next(pc for pc, op in enumerate(prog.code) if op.kind == "brx")
    a = next(pc for pc, op in enumerate(prog.code) if op.instr.text.startswith("add.u32 %r3"))
    assert prog.code[brx].targets == [a, a + 1]
    assert prog.code[brx].successors(brx) == [a, a + 1]                 # guarded: the fall-through is A too
    ret = next(pc for pc, op in enumerate(prog.code) if op.kind == "ret")
    assert prog.code[ret].successors(ret) == [] and prog.code[a].successors(a) == [a + 1]


CALLS = """.version 8.5
.target sm_90a
.address_size 64
.func (.param .b32 r) f1(.param .b32 a)
{
.reg .b32 %x;
ld.param.b32 %x, [a];
st.param.b32 [r], %x;
ret;
}
.func (.param .b32 r) f2(.param .b32 a, .param .b32 b)
{
ret;
}
.visible .entry k(.param .u64 out, .param .u64 f)
{
.reg .b32 %r<4>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [f];
{
.param .b32 a0;
.param .b32 r0;
st.param.b32 [a0], 5;
LIST
call (r0), %rd1, (a0), pt;
ld.param.b32 %r1, [r0];
}
ret;
}
"""


@pytest.mark.parametrize("address, lst, match", [
    (12345, "pt: .callprototype (.param .b32 _) _ (.param .b32 _);", "calls through address 0x3039: not the "
                                                                     "address of a function of this module"),
    ("f2", "pt: .callprototype (.param .b32 _) _ (.param .b32 _);", "calls f2, which takes 2 argument"),
    ("f1", "pt: .calltargets f2;", "calls f1, which its .calltargets list \\(f2\\) does not name"),
    ("k", "pt: .callprototype (.param .b32 _) _ (.param .b32 _);", "calls through address 0x[0-9a-f]+: a kernel"),
])
def test_indirect_call_errors(address, lst, match):
    from emulator.machine.program import function_address
    m = load_ptx(CALLS.replace("LIST", lst))
    a = function_address(m.info, address) if isinstance(address, str) else address
    with pytest.raises(EmulatorError, match=r"line 24, column 1: call \(r0\), %rd1, \(a0\), pt: lane 0: " + match):
        m.launch("k", (1, 1, 1), (32, 1, 1), [0, a])


def test_indirect_call_forms_ptxas_refuses():
    with pytest.raises(PTXValidationError, match="ends with a .callprototype or .calltargets list"):
        load_ptx(CALLS.replace("LIST", "").replace("(a0), pt;", "(a0);"))
    with pytest.raises(PTXValidationError, match="ends with a .callprototype or .calltargets list"):
        load_ptx(CALLS.replace("LIST", "").replace("call (r0), %rd1, (a0), pt;",
                                                   "call (r0), %rd1, (a0), pt;\npt: .callprototype _ ();"))


def test_function_addresses_in_initializers():
    """A table of function addresses in .global memory (nvcc's function-pointer tables and vtables)."""
    text = CALLS.replace("LIST", "pt: .callprototype (.param .b32 _) _ (.param .b32 _);").replace(
        ".visible .entry", ".global .align 8 .u64 tab[2] = {f2, f1};\n.visible .entry")
    m = load_ptx(text)
    g = GlobalMemory()
    from emulator.machine.program import function_address
    tab = m.global_address("tab", g)
    assert g.download(tab, 16).view(np.uint64).tolist() == [function_address(m.info, "f2"),
                                                            function_address(m.info, "f1")]
    with pytest.raises(PTXValidationError, match=r"line 15, column \d+: initializer of tab: nope is not a function"):
        load_ptx(text.replace("{f2, f1}", "{f2, nope}"))
