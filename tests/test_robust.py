"""Bad input on purpose: clear errors instead of Python exceptions, values converted by the register's type,
limits checked before allocation, spin loops that finish as on the H100, readable objects."""
import io
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pytest

from emulator import (EmulatorError, GlobalMemory, OperandError, UnsupportedError, Warp, WarpOptions, load_ptx,
                      mma)
from emulator.errors import WarpSyncError
from engines import compare_engines

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"


def kernel(body, params=""):
    return HEADER + f".visible .entry k({params})\n{{\n{body}\nret;\n}}\n"


# -- the crashes the issue lists: each an EmulatorError now ------------------------------------------------------
@pytest.mark.parametrize("text, pattern", [
    ("mul.lo.s32 %r1, %r2, 0d7FF0000000000000", "float literal .* does not fit a .s32"),
    ("mov.u32 %r1, 0d7FF8000000000000", "float literal .* does not fit a .u32"),
    (".reg .b128 %x; mov.b32 %x, 1", "128-bit register"),
    ("st.shared.u16 [%r2+99999999999999999999999], %rs1", "offset .* does not fit 64 bits"),
    ("cp.async.wait_group 0xFFFFFFFFFFFFFFFF", "32-bit unsigned"),
    ("mov.f16x2 %r1, 1.5", "cannot be written as a .f16x2 immediate"),
    ("mov.f32 %f1, 1e300", None),                            # a double beyond the f32 range: +inf
])
def test_former_crashes_are_emulator_errors(text, pattern):
    w = Warp()
    if pattern is None:
        w.run(text)
        assert w.read("%f1")[0] == 0x7F800000
        return
    with pytest.raises(EmulatorError, match=pattern):
        w.run(text)


def test_run_takes_text_only():
    with pytest.raises(OperandError, match="expected PTX text"):
        Warp().run(None)
    with pytest.raises(OperandError, match="register name must be a string"):
        Warp().read(5)


# -- Warp.write ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, value, bits", [
    ("%f1", 1.5, 0x3FC00000),                     # float into an f32 register: its f32 bits
    ("%fd1", 0.1, 0x3FB999999999999A),
    ("%fd1", np.float32(0.1), 0x3FB99999A0000000),   # the f32 value, widened exactly
    ("%h1", [1.5] * 32, 0x3E00),                  # a list of Python floats into f16
    ("%h1", np.float32(1.5), 0x3E00),             # np.float32 into %h: converted, not truncated bits
    ("%h1", 65520.0, 0x7C00),                     # rounds to +inf in f16
    ("%r1", np.float32(1.0), 0x3F800000),         # a numpy float into a bit register: its bits
    ("%rd1", np.float16(1.0), 0x3C00),            # narrower: zero-extended bits
    ("%r1", -1, 0xFFFFFFFF),                      # ints are raw bits, two's complement
    ("%r1", 2 ** 32 - 1, 0xFFFFFFFF),
    ("%rd1", 2 ** 64 - 1, 0xFFFFFFFFFFFFFFFF),    # beyond int64: still fits 64 bits
    ("%rs1", np.arange(32, dtype=np.int64), 0),
    ("%p1", True, 1),
])
def test_write_converts_by_register_type(name, value, bits):
    w = Warp()
    w.write(name, value)
    assert int(w.read(name)[0]) == bits


def test_write_uses_the_declared_type():
    w = Warp()
    w.run(".reg .f32 %acc; .reg .b32 %bits;")
    w.declare("bf16", ["%b"])                  # PTX has no .bf16 registers (.b16 holds them); the API may
    w.write("%acc", 2.5)
    w.write("%b", 1.0)
    assert w.read("%acc")[0] == 0x40200000 and w.read("%b")[0] == 0x3F80
    assert w.reg_type("%acc") == "f32" and w.reg_type("%r9") == "b32" and w.reg_type("%fd2") == "f64"
    with pytest.raises(OperandError, match="not a float register"):
        w.write("%bits", 1.5)


@pytest.mark.parametrize("name, value, pattern", [
    ("%r1", 2 ** 40, "does not fit 32 bits"),
    ("%rs1", 70000, "does not fit 16 bits"),
    ("%r1", -(2 ** 31) - 1, "does not fit 32 bits"),
    ("%rd1", 2 ** 64, "does not fit 64 bits"),
    ("%r1", 1.5, "not a float register"),              # a Python float has no width
    ("%r1", np.float64(1.5), "not a float register"),  # wider than the register
    ("%p1", 2, "predicate takes bools"),
    ("%r1", "x", "expected numbers"),
    ("%r1", None, "expected numbers"),
    ("%r1", np.zeros(31), "shape"),
    ("%r1", np.zeros(32, np.complex64), "cannot be written"),
    ("%r1", [1] * 31 + [1.5], "not a float register"),
    ("%r1", [None] * 32, "ints"),
])
def test_write_refuses_what_it_cannot_represent(name, value, pattern):
    with pytest.raises(OperandError, match=pattern):
        Warp().write(name, value)


# -- limits ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("count", ["100000000", "4294967295", "99999999999999999999"])
def test_huge_register_declarations_fail_fast_and_small(count):
    text = kernel(f".reg .b64 %rd<{count}>;")
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(EmulatorError, match="at most 65536 per statement|more than a function may declare"):
        load_ptx(text).program("k")
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert dt < 1.0 and peak < 100e6, (dt, peak)
    with pytest.raises(EmulatorError, match="at most 65536|more than a function may declare"):
        Warp().run(f".reg .b32 %q<{count}>;")


def test_register_total_per_program():
    body = "".join(f".reg .b32 %x{i}_<65536>;\n" for i in range(5))
    with pytest.raises(UnsupportedError, match="more registers than the program may declare"):
        load_ptx(kernel(body)).program("k")


@pytest.mark.parametrize("decl, pattern", [
    (".shared .align 4 .b8 s[99999999999];", "static .shared memory"),
    (".local .align 4 .b8 s[99999999999];", ".local memory per thread"),
])
def test_memory_sizes_are_checked_before_allocation(decl, pattern):
    with pytest.raises(UnsupportedError, match=pattern):
        load_ptx(kernel(decl)).launch("k", out=io.StringIO())


def test_shared_bytes_and_global_sizes():
    m = load_ptx(kernel(""))
    with pytest.raises(OperandError, match="shared_bytes must be 0..232448"):
        m.launch("k", shared_bytes=10 ** 12)
    with pytest.raises(OperandError, match="shared_bytes must be 0..232448"):
        m.launch("k", shared_bytes=-5)
    with pytest.raises(OperandError, match="smem_bytes must be an integer"):
        Warp(smem_bytes=10 ** 12)
    with pytest.raises(EmulatorError, match="more than one allocation may take"):
        load_ptx(HEADER + ".global .align 4 .b8 g[99999999999];\n.visible .entry k()\n{\nret;\n}\n").launch("k")


def test_budget_error_names_the_line_and_the_cli_sets_it(tmp_path):
    text = kernel(".reg .b32 %r1;\nL:\n    add.u32 %r1, %r1, 1;\n    bra L;", "")
    with pytest.raises(EmulatorError, match=r"line \d+, column \d+: .*instruction limit \(50 warp instructions"):
        load_ptx(text).launch("k", max_instructions=50, out=io.StringIO())
    p = tmp_path / "k.ptx"
    p.write_text(text)
    from emulator.cli import main
    assert main(["run", str(p), "--kernel", "k", "--max-instructions", "50"]) == 1


def test_cli_missing_and_garbage_files(tmp_path, capsys):
    from emulator.cli import main
    assert main(["run", str(tmp_path / "missing.ptx"), "--kernel", "k"]) == 1
    assert "cannot read the file" in capsys.readouterr().err
    bad = tmp_path / "bad.ptx"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    assert main(["run", str(bad), "--kernel", "k"]) == 1
    assert "not a PTX text file" in capsys.readouterr().err
    good = tmp_path / "k.ptx"
    good.write_text(kernel("", ".param .u64 p"))
    npy = tmp_path / "bad.npy"
    npy.write_bytes(b"\x93NUMPYgarbage")
    assert main(["run", str(good), "--kernel", "k", "--arg", str(npy)]) == 1
    assert "cannot load the array" in capsys.readouterr().err


def test_bank_log_is_bounded():
    w = Warp(options=WarpOptions(bank_log=2))
    for _ in range(3):
        w.run("ld.shared.u32 %r1, [%r0];")
    assert len(w.bank_report()) == 2 and w.smem_log_dropped == 1
    assert len(Warp()._smem_log) == 0 and WarpOptions().bank_log == 10_000
    with pytest.raises(EmulatorError, match="bank_log"):
        WarpOptions(bank_log=-1)
    # the fast engine keeps the same records as the reference
    body = """
    .reg .b32 %r<4>; .reg .pred %p<2>;
    .shared .align 4 .b8 s[128];
    mov.u32 %r1, 0;
L:
    ld.shared.u32 %r2, [s];
    add.u32 %r1, %r1, 1;
    setp.lt.u32 %p1, %r1, 40;
    @%p1 bra L;"""
    m = load_ptx(kernel(body))
    ref, fast, diffs = compare_engines(m, "k", (1, 1, 1), (32, 1, 1), [], options=WarpOptions(bank_log=25))
    assert not diffs, diffs
    banks = next(iter(ref["warps"].values()))[4]
    assert len(banks) == 25


# -- launch arguments --------------------------------------------------------------------------------------------
LAUNCH = HEADER + """.visible .entry k(.param .u64 p, .param .u32 n, .param .f32 x, .param .align 4 .b8 s[8])
{
ret;
}
"""


@pytest.mark.parametrize("kw, pattern", [
    (dict(args=[0, 1, 1.0]), "expected 4 argument"),
    (dict(args=["x", 1, 1.0, bytes(8)]), "takes a number, bytes or an array"),
    (dict(args=[0, None, 1.0, bytes(8)]), "takes a number"),
    (dict(args=[0, 1, 1.0, 2 ** 64]), "array of 8 bytes"),
    (dict(args=[0, float("nan"), 1.0, bytes(8)]), "got the float nan"),
    (dict(args=[0, 1, 1.0, np.zeros(2, object)]), "object array"),
    (dict(args=[0, 1, 1.0, bytes(8)], grid="x"), "grid must be an int"),
    (dict(args=[0, 1, 1.0, bytes(8)], grid=None), "grid must be an int"),
    (dict(args=[0, 1, 1.0, bytes(8)], block=(32, 0)), "block dimensions"),
    (dict(args=[0, 1, 1.0, bytes(8)], schedule=("random", "x")), "schedule must be"),
    (dict(args=[0, 1, 1.0, bytes(8)], max_instructions=2 ** 70), "max_instructions"),
    (dict(args=[0, 1, 1.0, bytes(8)], workers="x"), "workers must be an integer"),
    (dict(args=[0, 1, 1.0, bytes(8)], shared_bytes="x"), "shared_bytes must be an integer"),
])
def test_launch_arguments_of_the_wrong_kind(kw, pattern):
    with pytest.raises(OperandError, match=pattern):
        load_ptx(LAUNCH).launch("k", out=io.StringIO(), **kw)
    with pytest.raises(OperandError, match="kernel name must be a string"):
        load_ptx(LAUNCH).launch(None)


# -- short unsupported-form errors ---------------------------------------------------------------------------
def test_unsupported_spellings_suggest_the_nearest():
    with pytest.raises(UnsupportedError) as e:
        mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f33", np.zeros((16, 16), np.float16),
            np.zeros((16, 8), np.float16), np.zeros((16, 8), np.float32))
    msg = str(e.value)
    assert "did you mean mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in msg and "docs/supported.md" in msg
    assert len(msg) < 400
    with pytest.raises(UnsupportedError, match="did you mean add"):
        Warp().run("addd.u32 %r1, %r2, %r3;")


def test_supported_md_is_current():
    sys.path.insert(0, os.path.join(ROOT, "tools", "docs"))
    import supported
    assert open(os.path.join(ROOT, "docs", "supported.md")).read() == supported.text(), \
        "docs/supported.md is stale: run python tools/docs/supported.py"


# -- reprs -------------------------------------------------------------------------------------------------------
def test_readable_reprs():
    m = load_ptx(open(os.path.join(ROOT, "tests", "data", "kernels", "spin.ptx")).read())
    assert repr(m).startswith("<Module sm_90 (.target sm_90): kernel(s) spin_lanes")
    g = GlobalMemory()
    r = m.launch("spin_warps", block=64, args=[g.alloc(256), g.alloc(4)], gmem=g)
    assert repr(r).startswith("LaunchResult(kernel='spin_warps', grid=(1, 1, 1), block=(64, 1, 1): 1 CTA(s), "
                              "2 warp(s)")
    w = r.ctas[0][1][0]
    assert repr(w).startswith("<KernelWarp CTA (0, 0, 0) warp 0 (sm_90): 32 thread(s), exited")
    assert repr(Warp()).startswith("<Warp sm_90: 32 lanes") and repr(g).startswith("<GlobalMemory: 2 allocation")
    from emulator.machine.cta import CTA
    assert "0x" not in repr(r) + repr(w) and CTA.__repr__ is not object.__repr__


# -- spin loops --------------------------------------------------------------------------------------------------
SPIN = None


def _spin_module():
    global SPIN
    if SPIN is None:
        SPIN = load_ptx(open(os.path.join(ROOT, "tests", "data", "kernels", "spin.ptx")).read())
    return SPIN


@pytest.mark.parametrize("schedule", [None, ("random", 7)])
@pytest.mark.parametrize("name, block, want", [
    ("spin_lanes", 32, [7] + [42 + t for t in range(1, 32)]),          # lanes 1-31 wait for lane 0
    ("spin_warps", 64, [3 * (t + 32) + 1 for t in range(32)] + [3 * t for t in range(32, 64)]),
    ("spin_nanosleep", 64, [1] * 32 + [2] * 32),
    ("spin_acquire", 64, [t + 100 for t in range(32)] + [2 * (t + 100) for t in range(32)]),
])
def test_spin_waits_finish_on_both_engines(name, block, want, schedule):
    m = _spin_module()
    arrays = [np.zeros(block, np.int32)] + ([] if name == "spin_lanes" else [np.zeros(1, np.int32)])
    ref, fast, diffs = compare_engines(m, name, (1, 1, 1), (block, 1, 1), arrays, schedule=schedule,
                                       max_instructions=100_000)
    assert "error" not in ref, ref.get("error")
    assert not diffs, diffs
    out = ref["memory"][0][1][:4 * block].view(np.int32)
    assert out.tolist() == want


def test_spin_kernels_finish_on_the_h100_with_these_outputs():
    """The same PTX ran on an H100 (tools/hwcapture/kernels/spin_run.py, three runs each, all equal): every
    spin-wait kernel above finished there, with the outputs the emulator gives."""
    import json
    h100 = json.load(open(os.path.join(ROOT, "tests", "data", "kernels", "spin_h100.json")))
    assert "H100" in h100["gpu"]
    table = {n: w for n, _, w in [
        ("spin_lanes", 32, [7] + [42 + t for t in range(1, 32)]),
        ("spin_warps", 64, [3 * (t + 32) + 1 for t in range(32)] + [3 * t for t in range(32, 64)]),
        ("spin_nanosleep", 64, [1] * 32 + [2] * 32),
        ("spin_acquire", 64, [t + 100 for t in range(32)] + [2 * (t + 100) for t in range(32)])]}
    assert h100["kernels"] == table


def test_a_true_spin_deadlock_names_every_warp_and_lane_group():
    m = _spin_module()
    for engine in ("reference", "fast"):
        g = GlobalMemory()
        with pytest.raises(WarpSyncError) as e:
            m.launch("spin_forever", block=64, args=[g.alloc(256), g.alloc(4)], gmem=g, engine=engine,
                     max_instructions=1_000_000)
        msg = str(e.value)
        assert "deadlock" in msg
        for wid in (0, 1):
            assert f"warp {wid} lanes 0-4,6-31 spin: the loop from line" in msg


def test_intra_warp_spin_in_handwritten_ptx():
    # lanes 1-31 spin on a shared word that lane 0 writes after a long detour; no barrier in between
    body = """
    .reg .b32 %r<8>; .reg .pred %p<4>;
    .shared .align 4 .b8 flag[4];
    mov.u32 %r1, %laneid;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra WRITER;
SPIN:
    ld.volatile.shared.u32 %r2, [flag];
    setp.eq.u32 %p2, %r2, 0;
    @%p2 bra SPIN;
    bra DONE;
WRITER:
    mov.u32 %r3, 0;
W:
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p3, %r3, 300;
    @%p3 bra W;
    st.volatile.shared.u32 [flag], %r3;
DONE:
    ld.volatile.shared.u32 %r4, [flag];"""
    m = load_ptx(kernel(body))
    ref, fast, diffs = compare_engines(m, "k", (1, 1, 1), (32, 1, 1), [], max_instructions=100_000)
    assert "error" not in ref and not diffs, (ref.get("error"), diffs)
    regs = next(iter(ref["warps"].values()))[0]
    assert (regs["%r4"] == 300).all()


def test_cli_exit_status_for_a_spin_deadlock(tmp_path):
    p = tmp_path / "s.ptx"
    p.write_text(open(os.path.join(ROOT, "tests", "data", "kernels", "spin.ptx")).read())
    r = subprocess.run([sys.executable, "-m", "emulator", "run", str(p), "--kernel", "spin_forever", "--block", "64",
                        "--arg", "zeros:i32:64", "--arg", "zeros:i32:1"], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 1 and "deadlock" in r.stderr and "Traceback" not in r.stderr


def test_held_lanes_meet_the_others_at_a_barrier():
    # lanes 1-31 spin until lane 0 has written the flag; everyone then meets at bar.sync and reads it
    body = """
    .reg .b32 %r<8>; .reg .pred %p<4>;
    .shared .align 4 .b8 flag[4];
    mov.u32 %r1, %laneid;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra WRITER;
SPIN:
    ld.volatile.shared.u32 %r2, [flag];
    setp.eq.u32 %p2, %r2, 0;
    @%p2 bra SPIN;
    bra JOIN;
WRITER:
    mov.u32 %r3, 5;
    st.volatile.shared.u32 [flag], %r3;
JOIN:
    bar.sync 0;
    ld.shared.u32 %r4, [flag];
    shfl.sync.idx.b32 %r5, %r4, 0, 31, -1;"""
    m = load_ptx(kernel(body))
    ref, fast, diffs = compare_engines(m, "k", (1, 1, 1), (64, 1, 1), [], max_instructions=100_000)
    assert "error" not in ref and not diffs, (ref.get("error"), diffs)
    for regs, *_ in ref["warps"].values():
        assert (regs["%r5"] == 5).all()


@pytest.mark.parametrize("op", ["try_wait", "test_wait"])
def test_failed_mbarrier_waits_let_the_other_lanes_of_the_warp_run(op):
    # lanes 1-31 poll an mbarrier (the smaller PC) that lane 0 of the same warp arrives on
    body = f"""
    .reg .b32 %r<4>; .reg .pred %p<4>; .reg .b64 %rd<4>;
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %laneid;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra SKIP;
    mbarrier.init.shared.b64 [bar], 1;
SKIP:
    bar.warp.sync -1;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra ARRIVE;
WAIT:
    mbarrier.{op}.parity.shared.b64 %p2, [bar], 0;
    @!%p2 bra WAIT;
    bra DONE;
ARRIVE:
    mbarrier.arrive.shared.b64 %rd1, [bar];
DONE:"""
    m = load_ptx(kernel(body))
    ref, fast, diffs = compare_engines(m, "k", (1, 1, 1), (32, 1, 1), [], max_instructions=10_000)
    assert "error" not in ref and not diffs, (ref.get("error"), diffs)
