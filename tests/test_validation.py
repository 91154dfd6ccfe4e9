"""The PTX validator agrees with ptxas (docs/kernels.md, "Validation").

tests/data/ptxas_verdicts.jsonl.gz holds mutants of real compiler output (tests/ptxas_sources.py: Triton,
nvcc, CuTe), one edited line each, with the verdict of ``ptxas -arch=sm_90a`` (tools/ptxas_verdicts/mutate.py).
Replaying them through ``load_ptx``: a mutant ptxas rejects must be refused at load (PTXValidationError, or
UnsupportedError naming the feature), one ptxas accepts must load (or be refused as unsupported).
"""
import gzip
import json
import os

import pytest

from emulator import OperandError, PTXSyntaxError, PTXValidationError, UnsupportedError, Warp, load_ptx
from ptxas_sources import sources

SAMPLE = os.path.join(os.path.dirname(__file__), "data", "ptxas_verdicts.jsonl.gz")
REJECT_TARGET = 0.95
ACCEPT_TARGET = 0.99


def _sample():
    with gzip.open(SAMPLE, "rt") as f:
        return [json.loads(line) for line in f]


def _mutant(src, row):
    lines = src.split("\n")
    assert lines[row["line"] - 1] == row["old"], row
    if row["new"] is None:
        del lines[row["line"] - 1]
    else:
        lines[row["line"] - 1] = row["new"]
    return "\n".join(lines)


def _verdict(text):
    try:
        load_ptx(text)
    except PTXValidationError as e:
        return "rejected", str(e)
    except UnsupportedError as e:
        return "unsupported", str(e)
    return "accepted", ""


def _replay(rows):
    srcs = sources()
    rej = [0, 0]
    acc = [0, 0]
    wrong = []
    for row in rows:
        got, msg = _verdict(_mutant(srcs[row["src"]], row))
        if row["ok"]:
            acc[1] += 1
            acc[0] += got != "rejected"
        else:
            rej[1] += 1
            rej[0] += got != "accepted"
        if (got == "rejected" and row["ok"]) or (got == "accepted" and not row["ok"]):
            wrong.append((row["src"], row["line"], row["new"], row["msg"], msg))
    return rej, acc, wrong


def _check(rows):
    rej, acc, wrong = _replay(rows)
    detail = "\n".join(map(str, wrong[:20]))
    assert rej[1] >= 50 and acc[1] >= 20, (rej, acc)
    assert rej[0] / rej[1] >= REJECT_TARGET, f"ptxas rejections refused: {rej[0]}/{rej[1]}\n{detail}"
    assert acc[0] / acc[1] >= ACCEPT_TARGET, f"ptxas acceptances loaded: {acc[0]}/{acc[1]}\n{detail}"


def test_sample_matches_ptxas_fast():
    """A fixed eighth of the sample, small sources only (the whole sample runs under -m slow)."""
    srcs = sources()
    rows = [r for k, r in enumerate(_sample()) if k % 8 == 0 and srcs[r["src"]].count("\n") < 400]
    _check(rows)


@pytest.mark.slow
def test_whole_sample_matches_ptxas():
    _check(_sample())


def test_sample_is_real():
    rows = _sample()
    assert len(rows) >= 4000
    assert len({r["src"] for r in rows}) >= 50
    assert {r["kind"] for r in rows} >= {"reg_class", "type", "drop", "dup", "undeclared", "space", "opcode", "imm",
                                          "directive"}
    srcs = sources()
    for r in rows[:200]:
        assert srcs[r["src"]].split("\n")[r["line"] - 1] == r["old"]


# ------------------------------------------------------------------------------------------------------------
# the rules, one by one

HEAD = """.version 8.7
.target sm_90a
.address_size 64
.const .align 4 .b8 table[16];
.visible .entry k(.param .u64 k_p)
{
    .reg .pred %p<4>;
    .reg .b16 %rs<12>;
    .reg .b32 %r<20>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<26>;
    ld.param.u64 %rd1, [k_p];
"""


def module(line):
    return HEAD + "    " + line + "\n    ret;\n}\n"


VALID = [
    "add.u32 %r5, %r2, %r3;",
    "ld.global.u8 %rd2, [%rd1];",                   # ld: a wider integer register than the type
    "st.global.u16 [%rd1], %r2;",                   # st: likewise
    "ld.global.f32 %r1, [%rd1];",                   # a bit register for a float type
    "cvt.u32.u64 %r1, %rd2;",
    "cvt.rn.f32.s32 %f1, %r1;",
    "mov.b32 %f1, 0f3F800000;",
    "mov.b64 %rd2, 0d3FF0000000000000;",
    "add.f32 %f1, %f2, 0d3FF0000000000000;",
    "and.b32 %r1, %r2, 0f3F800000;",
    "shl.b64 %rd2, %rd3, %r1;",
    "mul.wide.u32 %rd2, %r1, %r2;",
    "setp.lt.s32 %p1, %r1, 7;",
    "selp.b32 %r1, %r2, 0, %p1;",
    "cp.async.cg.shared.global [%r10], [%rd10], 16;",
    "cp.async.cg.shared.global [%r10], [%rs10], 16;",   # ptxas takes a 16-bit register as the source address
    "ld.const.u32 %r1, [table+4];",
    "bar.sync 0, 0;",
    "ld.shared.v4.u16 {%r1, %r2, %r3, %r4}, [%r9];",
]

INVALID = [
    ("add.u64 %r5, %r2, %r3;", "does not fit a .u64"),
    ("add.s32 %r19, %r17, %r18, %r17;", "takes 3 operands"),
    ("st.const.u32 [%rd24], %r1;", "read-only"),
    ("add.s32 %r1, %r2, %r99;", "not declared"),
    ("add.f32 %f1, %f2, 1;", "integer constant"),
    ("add.s32 %r1, %r2, 0f3F800000;", "floating-point constant"),
    ("mov.u32 %r1, 99999999999999999999;", "overflows 64 bits"),
    ("mov.u32 %r1, %f1;", "does not fit"),
    ("ld.global.u32 %r1, [%r2];", "32-bit address"),
    ("ld.global.v2.u32 {%r1, %rd1}, [%rd1];", "one width"),
    ("ld.shared.u32 %r1, [table];", ".const variable"),
    ("ld.shared.u32 %r1, [16];", "immediate address"),
    ("bra NOWHERE;", "unknown label NOWHERE"),
    ("@%r1 bra $L;", "guard %r1 must be a predicate"),
    ("mov.u32 5, %r1;", "expected a register"),
    ("setp.lt.u32 %r1, %r2, %r3;", "does not fit a .pred"),
    ("mul.s32 %r1, %r2, %r3;", "needs .lo, .hi or .wide"),
    ("fma.f32 %f1, %f2, %f3, %f1;", "rounding qualifier"),
    ("cvt.f32.s32 %f1, %r1;", "needs .rn"),
    ("bar.sync 16;", "out of range"),
    ("ld.global.wt.u32 %r1, [%rd1];", "store cache operator"),
    ("shl.u32 %r1, %r2, 3;", "unexpected instruction type .u32"),
    ("add.sat.u32 %r1, %r2, %r3;", ".sat does not apply"),
    ("cp.async.cg.shared.global [%r10], [%rd10], 8;", "cp-size 8"),
]


@pytest.mark.parametrize("line", VALID)
def test_ptxas_accepts(line):
    load_ptx(module(line))


@pytest.mark.parametrize("line, rule", INVALID)
def test_ptxas_rejects(line, rule):
    text = module(line.replace("$L;", "$L;\n$L:") if "$L" in line else line)
    with pytest.raises(PTXValidationError, match=rf"line 13, column 5: .*{__import__('re').escape(rule)}"):
        load_ptx(text)


def test_error_classes():
    assert issubclass(PTXValidationError, PTXSyntaxError) and issubclass(PTXValidationError, OperandError)
    # text that does not parse is a PTXValidationError at load, too
    with pytest.raises(PTXValidationError, match="line 13"):
        load_ptx(module("add.s32 %r1, %r2,, %r3;"))


def test_directives():
    with pytest.raises(PTXValidationError, match="version"):
        load_ptx(module("ret;").replace(".version 8.7", ".version 8.x"))
    # a newer ISA than ptxas 13.0 knows (Triton 3.7+ writes 9.1 and later) loads, as a newer toolkit takes it
    load_ptx(module("ret;").replace(".version 8.7", ".version 9.4"))
    with pytest.raises(PTXValidationError, match="power of two"):
        load_ptx(module("ret;").replace(".align 4", ".align 3"))
    with pytest.raises(PTXValidationError, match="not a register type"):
        load_ptx(module("ret;").replace(".reg .f32 %f<4>", ".reg .bf16 %f<4>"))
    with pytest.raises(PTXValidationError, match="positive"):
        load_ptx(module("ret;").replace("(.param .u64 k_p)", "(.param .u64 k_p) .reqntid 0"))
    with pytest.raises(UnsupportedError, match="sm_100a"):
        load_ptx(module("ret;").replace("sm_90a", "sm_100a"))
    with pytest.raises(PTXValidationError, match="needs .target sm_90"):
        load_ptx(module("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r1], {%r2};").replace("sm_90a", "sm_80"))


def test_warp_run_applies_the_rules():
    w = Warp()
    w.run("add.u32 %r5, %r2, %r3")                      # undeclared: widths from nvcc's naming
    w.run("mul.wide.u32 %rd1, %r2, %r3")
    w.run(".reg .b64 %x<2>;\nadd.u64 %x1, %x0, %x0")
    with pytest.raises(PTXValidationError, match="does not fit a .u64"):
        w.run("add.u64 %r5, %r2, %r3")
    with pytest.raises(OperandError, match="takes 3 operands"):        # the executor's own check comes first
        w.run("and.b32 %r1, %r2, %r3, %r4")
    with pytest.raises(PTXValidationError, match="read-only"):
        w.run("st.const.u32 [%rd24], %r1")


def test_validation_is_fast():
    import time
    srcs = sources()
    text = max(srcs.values(), key=len)
    from emulator.frontend.module import parse_module
    from emulator.frontend.validate import validate_module
    info = parse_module(text)
    t0 = time.perf_counter()
    validate_module(info)
    dt = time.perf_counter() - t0
    lines = text.count("\n")
    assert dt / lines * 5000 < 0.5, f"{dt:.3f} s for {lines} lines"
