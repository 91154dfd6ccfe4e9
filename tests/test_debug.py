"""The debugger (machine.debugger, `python -m emulator debug`) and the filtered trace (machine.tracing)."""
import io
import json
import os

import numpy as np
import pytest

from emulator import Debugger, GlobalMemory, OperandError, Trace, load_ptx
from emulator.cli import main
from emulator.cli.run import DEMO_DIR

DEMO = os.path.join(DEMO_DIR, "mma_demo.ptx")
TEXT = open(DEMO).read()
KERNEL = "ptx_mma_shared"

# two warps; lanes take different paths; a shared store and a barrier
BRANCHY = r"""
.version 8.0
.target sm_90
.address_size 64
.file 1 "b.cu"
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<2>;
  .shared .align 4 .b8 sm[256];
  .loc 1 3 1
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, %tid.x;
  .loc 1 4 1
  setp.lt.u32 %p1, %r1, 40;
  @%p1 bra ODD;
  .loc 1 5 1
  add.u32 %r2, %r1, 1000;
  bra.uni JOIN;
ODD:
  .loc 1 7 1
  add.u32 %r2, %r1, 2000;
JOIN:
  .loc 1 9 1
  shl.b32 %r3, %r1, 2;
  st.shared.u32 [%r3], %r2;
  bar.sync 0;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;
}
"""


def _demo():
    g = GlobalMemory()
    a = g.upload((np.arange(256) * 0.01).astype(np.float16))
    b = g.upload((np.arange(128) * 0.01).astype(np.float16))
    c = g.upload(np.zeros(128, np.float16))
    return g, [a, b, c, 16, 8, 16], c


def test_trace_shows_mma_fragments_as_jsonl_with_filters():
    g, args, c = _demo()
    s = io.StringIO()
    load_ptx(TEXT).launch(KERNEL, 1, 32, args, gmem=g, trace=Trace(s, "jsonl", opcode="mma", lane=[0, 5]))
    recs = [json.loads(l) for l in s.getvalue().splitlines()]
    assert len(recs) == 1 and recs[0]["lanes"] == [0, 5] and recs[0]["instr"].startswith("mma.sync")
    d = g.download(c, 256).view(np.uint32).reshape(16, 4)        # D (16x8 f16) as the fragment's u32 pairs
    assert recs[0]["regs"]["%r23"] == [int(d[0, 0]), int(d[1, 1])]      # lane 5: row 1, columns 2-3
    assert recs[0]["regs"]["%r24"] == [int(d[8, 0]), int(d[9, 1])]


def test_trace_filters_by_warp_lines_and_cta():
    m = load_ptx(BRANCHY)
    g = GlobalMemory()
    out = g.upload(np.zeros(64, np.uint32))
    s = io.StringIO()
    m.launch("k", 1, 64, [out], gmem=g, trace=Trace(s, warp=1, lines=(19, 21)))
    lines = s.getvalue().splitlines()
    assert lines and all(l.startswith("cta(0,0,0) w1 ") for l in lines)
    assert any("lanes 0-7: add.u32 %r2, %r1, 2000  -> %r2=[0x7f0, 0x7f1" in l for l in lines), lines
    s = io.StringIO()
    m.launch("k", 1, 64, [out], gmem=g, trace=Trace(s, cta=(1, 0, 0)))
    assert s.getvalue() == ""
    with pytest.raises(OperandError):
        Trace(io.StringIO(), format="xml")
    with pytest.raises(OperandError):
        Trace(io.StringIO(), lane=32)


def test_debugger_breakpoints_conditions_and_state():
    m = load_ptx(BRANCHY)
    g = GlobalMemory()
    out = g.upload(np.zeros(64, np.uint32))
    d = Debugger(m)
    d.break_at(source="b.cu:7", warp=1)
    bp = d.break_at(opcode="st.shared", lane=33 - 32)
    s = d.launch("k", 1, 64, [out], gmem=g)      # warp 0 runs until the barrier: its store comes first
    assert (s.reason, s.warp, s.line) == ("breakpoint 2", 0, 25) and "st.shared" in s.instruction
    assert d.shared(4, 1).tolist() == [0]           # a stop comes before the instruction
    s = d.cont()
    assert (s.reason, s.warp, s.lanes, s.source[1]) == ("breakpoint 1", 1, tuple(range(8)), 7)
    assert d.read("%r1", lane=3) == 35 and d.read("%r1").tolist() == list(range(32, 64))
    s = d.step()
    assert s.reason == "step" and s.warp == 1 and s.line == 24 and len(s.lanes) == 32
    assert d.read("%r2", lane=3) == 2035 and d.read("%r2", lane=8) == 1040
    assert d.read("%r2", lane=3, warp=0) == 2003
    s = d.cont()
    assert (s.reason, s.warp) == ("breakpoint 2", 1)
    info = d.warps()
    assert [w["warp"] for w in info] == [0, 1] and info[1]["focus"] and info[0]["waiting"] == 32
    assert d.shared(4, 1).tolist() == [2001]
    assert d.cont() is None and d.result is not None and bp.hits == 2
    assert g.download(out, 256).view(np.uint32)[[0, 39, 40, 63]].tolist() == [2000, 2039, 1040, 1063]


def test_debugger_is_deterministic_and_reports_errors():
    def stops():
        g, args, _ = _demo()
        d = Debugger(load_ptx(TEXT))
        d.break_at(opcode="ldmatrix")
        got = [str(d.launch(KERNEL, 1, 32, args, gmem=g, stop_at_start=True))]
        while (s := d.step(7)) is not None:
            got.append(str(s))
        return got
    a, b = stops(), stops()
    assert a == b and len(a) > 5
    d = Debugger(load_ptx(TEXT))
    for bad in (dict(line=1), dict(source="nope.cu:3"), dict(opcode=""), dict(line=86, lane=40), dict()):
        with pytest.raises(OperandError):
            d.break_at(**bad)
    with pytest.raises(OperandError):
        d.read("%r1")
    with pytest.raises(OperandError):
        d.cont()
    g, args, _ = _demo()
    d.break_at(line=86)
    d.launch(KERNEL, 1, 32, args, gmem=g)
    with pytest.raises(OperandError):
        d.read("%nope", 0)
    with pytest.raises(OperandError):
        d.shared(1 << 20, 4)
    d.close()
    assert d.done


def test_cli_debug_session(tmp_path, capsys):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, (np.arange(256) * 0.01).astype(np.float16))
    np.save(b, (np.arange(128) * 0.01).astype(np.float16))
    rc = main(["debug", DEMO, "--kernel", KERNEL, "--arg", str(a), "--arg", str(b), "--arg", "zeros:f16:128",
               "--arg", "16", "--arg", "8", "--arg", "16", "--batch", "-ex", "break mma", "-ex", "run",
               "-ex", "step", "-ex", "print %r23 lane 0", "-ex", "x shared 0 2 f16", "-ex", "info warps",
               "-ex", "bogus", "-ex", "continue"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "breakpoint 1: PTX line 99, CTA (0, 0, 0) warp 0 lanes 0-31: mma.sync" in out
    assert "%r23 lane 0 = 0x3c043bf0" in out and "shared 0x0: 0.0 0.01" in out
    assert "* warp 0: 32 live lane(s)" in out and "error: unknown command 'bogus'" in out
    assert "the launch finished: 1 CTA(s), 62 warp instructions" in out


def test_cli_trace_jsonl_and_profile(tmp_path, capsys):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, (np.arange(256) * 0.01).astype(np.float16))
    np.save(b, (np.arange(128) * 0.01).astype(np.float16))
    base = ["run", DEMO, "--kernel", KERNEL, "--arg", str(a), "--arg", str(b), "--arg", "zeros:f16:128",
            "--arg", "16", "--arg", "8", "--arg", "16"]
    tf = tmp_path / "t.jsonl"
    assert main(base + ["--trace-file", str(tf), "--trace-format", "jsonl", "--trace-opcode", "ldmatrix",
                        "--trace-lane", "0"]) == 0
    recs = [json.loads(l) for l in tf.read_text().splitlines()]
    assert [r["line"] for r in recs] == [86, 94] and all(r["lanes"] == [0] for r in recs)
    assert main(base + ["--profile", "--profile-by", "ptx"]) == 0
    out = capsys.readouterr().out
    assert "profile of _Z14ptx_mma_shared" in out and "ldmatrix" in out
    html = tmp_path / "p.html"
    assert main(base + ["--profile", str(html)]) == 0
    assert html.read_text().startswith("<!DOCTYPE html>")
