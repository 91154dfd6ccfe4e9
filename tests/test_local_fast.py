""".local memory in the fast engine's loops, against the reference executors (``KernelWarp.space_load`` /
``space_store`` / ``cvta``), bit for bit: every width and vector, 32- and 64-bit local addresses, the depot's
``mov``, ``cvta{.to}.local``, generic accesses into a thread's window, errors, hand-backs in the middle of a
kernel, CTAs that reuse the depots, the sanitizer, random programs; and the addresses of module variables.

Every launch runs on both engines and everything it leaves behind is compared, the depots' bytes included (they
are global allocations: ``tests/engines.py`` compares every allocation).
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator import load_ptx
from emulator.machine.fastcore import table as T
from emulator.machine.fastcore import translation
from emulator.machine.fastcore.engine import handback_counts
from engines import compare_engines, differences, launch_outcome

EXAMPLES = int(os.environ.get("WARPEMU_FUZZ_EXAMPLES", "60"))

HEAD = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 inp)
{
    .local .align 16 .b8 buf[DEPOT];
    .reg .b16 %h<16>; .reg .b32 %r<40>; .reg .b64 %rd<40>; .reg .f32 %f<8>; .reg .f64 %fd<8>; .reg .pred %p<4>;
    mov.u32 %r0, %tid.x;
    ld.param.u64 %rd0, [out];
    ld.param.u64 %rd1, [inp];
    mul.wide.u32 %rd2, %r0, 64;
    add.u64 %rd3, %rd1, %rd2;
    add.u64 %rd4, %rd0, %rd2;
    ld.global.v2.u64 {%rd5, %rd6}, [%rd3];
    ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd3+16];
    and.b32 %r5, %r0, 3;
    mul.wide.u32 %rd7, %r5, 32;
    mov.u64 %rd8, buf;
    add.u64 %rd9, %rd8, %rd7;
    cvt.u32.u64 %r6, %rd9;
"""
TAIL = """
    ret;
}
"""


def kernel(body, depot=256):
    return HEAD.replace("DEPOT", str(depot)) + body + TAIL


def run_both(text, nthreads=64, grid=1, **kw):
    module = load_ptx(text)
    rng = np.random.default_rng(len(text))
    inp = rng.integers(0, 1 << 32, nthreads * grid * 16, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(nthreads * grid * 16, np.uint32)
    ref, fast, diffs = compare_engines(module, "k", grid, nthreads, [out, inp], **kw)
    return module, ref, fast, diffs


def fast_rows(module):
    """The translation's rows of the local-memory forms: [(opcode text, translated?)]."""
    prog = module.program("k")
    tr = translation(prog)
    return tr, [(op.instr.text, bool(tr.fast[pc])) for pc, op in enumerate(prog.code)
                if op.kind == "op" and ("local" in op.instr.opcode or "buf" in op.instr.text)]


# (store, load) pairs over a thread's slot (%rd9: 64-bit local address, %r6: the same as 32 bits); the load reads
# back what the store wrote (sign extension, narrowing and widening into wider registers included)
FORMS = {
    "u8": ("st.local.u8 [%rd9+3], %r1;", "ld.local.u8 %r10, [%rd9+3]; ld.local.s8 %r11, [%rd9+3];"),
    "s16": ("st.local.s16 [%rd9+6], %r1;", "ld.local.s16 %r10, [%rd9+6]; ld.local.u16 %h1, [%rd9+6];"),
    "b16": ("mov.b32 {%h2, %h3}, %r2; st.local.b16 [%rd9+2], %h3;", "ld.local.b16 %h4, [%rd9+2];"),
    "u32": ("st.local.u32 [%rd9+12], %r1;", "ld.local.u32 %r10, [%rd9+12]; ld.local.s32 %rd10, [%rd9+12];"),
    "f32": ("mov.b32 %f1, %r3; st.local.f32 [%rd9+4], %f1;", "ld.local.f32 %f2, [%rd9+4];"),
    "u64": ("st.local.u64 [%rd9+8], %rd5;", "ld.local.u64 %rd10, [%rd9+8]; ld.local.b32 %r12, [%rd9+12];"),
    "f64": ("mov.b64 %fd1, %rd6; st.local.f64 [%rd9+16], %fd1;", "ld.local.f64 %fd2, [%rd9+16];"),
    "v2.u8": ("st.local.v2.u8 [%rd9+6], {%r1, %r2};", "ld.local.v2.u8 {%r10, %r11}, [%rd9+6];"),
    "v4.u8": ("st.local.v4.u8 [%rd9+4], {%r1, %r2, %r3, %r4};", "ld.local.v4.s8 {%r10, %r11, %r12, %r13}, [%rd9+4];"),
    "v2.u16": ("st.local.v2.u16 [%rd9+20], {%r1, %r4};", "ld.local.v2.u16 {%h5, %h6}, [%rd9+20];"),
    "v4.u16": ("cvt.u16.u32 %h7, %r3; st.local.v4.u16 [%rd9+8], {%h7, %h7, %h7, %h7};",
               "ld.local.v4.s16 {%r10, %r11, %r12, %r13}, [%rd9+8];"),
    "v2.u32": ("st.local.v2.u32 [%rd9+24], {%r1, %r2};", "ld.local.v2.u32 {%r10, %r11}, [%rd9+24];"),
    "v4.u32": ("st.local.v4.u32 [%rd9], {%r1, %r2, %r3, %r4};",
               "ld.local.v4.b32 {%r10, %r11, %r12, %r13}, [%rd9]; ld.local.u8 %r14, [%rd9+13];"),
    "v2.u64": ("st.local.v2.u64 [%rd9+16], {%rd5, %rd6};", "ld.local.v2.b64 {%rd10, %rd11}, [%rd9+16];"),
    "v4.f32": ("mov.b32 %f3, %r4; st.local.v4.f32 [%rd9], {%f3, %f3, %f3, %f3};",
               "ld.local.v2.f32 {%f4, %f5}, [%rd9+8];"),
    "32-bit address": ("st.local.u32 [%r6+28], %r2;", "ld.local.u32 %r10, [%r6+28]; ld.local.u16 %h1, [%r6+30];"),
    "depot symbol": ("st.local.u64 [buf+128], %rd6;", "ld.local.v2.u32 {%r10, %r11}, [buf+128];"),
    "absolute": ("st.local.u32 [132], %r3;", "ld.local.u32 %r10, [132];"),
    "generic": ("cvta.local.u64 %rd12, %rd9; st.u32 [%rd12+4], %r4; st.local.u16 [%rd9+8], %r1;",
                "cvta.local.u64 %rd13, %rd9; ld.v2.u32 {%r10, %r11}, [%rd13+8]; cvta.to.local.u64 %rd14, %rd13; "
                "ld.local.u32 %r12, [%rd14+4]; sub.u64 %rd15, %rd14, %rd9;"),
    "generic round trip": ("cvta.local.u64 %rd12, %rd9; cvta.to.local.u64 %rd13, %rd12; cvt.u32.u64 %r21, %rd13; "
                           "st.local.u32 [%r21+8], %r2;", "ld.local.u32 %r10, [%r6+8]; sub.u32 %r11, %r21, %r6;"),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_local_forms_are_identical_on_both_engines_and_run_in_the_loop(form):
    st_, ld_ = FORMS[form]
    body = f"""
    st.local.v4.u32 [%rd9], {{%r4, %r3, %r2, %r1}};
    st.local.v4.u32 [%rd9+16], {{%r1, %r2, %r3, %r4}};
    {st_}
    {ld_}
    ld.local.v4.u32 {{%r30, %r31, %r32, %r33}}, [%rd9];
    ld.local.v4.u32 {{%r34, %r35, %r36, %r37}}, [%rd9+16];
    st.global.v4.u32 [%rd4], {{%r30, %r31, %r32, %r33}};
    st.global.v4.u32 [%rd4+16], {{%r34, %r35, %r36, %r37}};
    st.global.v2.u32 [%rd4+32], {{%r10, %r11}};
"""
    module, ref, fast, diffs = run_both(kernel(body), nthreads=48)
    assert "error" not in ref, ref.get("error")
    assert not diffs, diffs
    tr, rows = fast_rows(module)
    assert rows and all(ok for _, ok in rows), [t for t, ok in rows if not ok]
    assert sum(handback_counts(module.program("k")).values()) == 0
    assert fast["fast_executed"] == fast["instructions"]


ERRORS = {
    "misaligned": "add.u64 %rd20, %rd9, 2; ld.local.u32 %r10, [%rd20];",
    "misaligned vector": "st.local.v2.u32 [%rd9+4], {%r1, %r2};",
    "past the depot": "ld.local.u32 %r10, [%rd9+156];",
    "below the depot": "setp.eq.u32 %p1, %r0, 37; @%p1 sub.u64 %rd9, %rd9, 64; st.local.u8 [%rd9], %r1;",
    "one lane past the end": "setp.eq.u32 %p1, %r0, 45; @%p1 add.u64 %rd9, %rd9, 96; st.local.v4.u32 [%rd9+48], "
                             "{%r1, %r2, %r3, %r4};",
    "32-bit address": "add.u32 %r6, %r6, 200; ld.local.u64 %rd10, [%r6];",
    "generic past the window": "cvta.local.u64 %rd12, %rd9; ld.u32 %r10, [%rd12+160];",
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_local_errors_are_the_references(case):
    """A lane that breaks a rule: the loop hands the instruction back and the reference raises, naming the
    instruction, the lane and the rule; everything written before is the same on both engines."""
    body = "st.local.v4.u32 [%rd9], {%r1, %r2, %r3, %r4};\n" + ERRORS[case] + "\nst.global.u32 [%rd4], %r10;"
    module, ref, fast, diffs = run_both(kernel(body, depot=160), nthreads=64)
    assert "error" in ref
    assert ref["error"] == fast["error"]
    assert not diffs, diffs
    name, msg = ref["error"]
    assert "lane" in msg and ("local" in msg or "align" in msg or "address" in msg), msg


def test_the_depot_size_and_alignment_rules_name_the_lane():
    body = "setp.eq.u32 %p1, %r0, 37; @%p1 add.u64 %rd9, %rd9, 200; ld.local.u32 %r10, [%rd9];"
    _, ref, fast, diffs = run_both(kernel(body, depot=160), nthreads=64)
    assert not diffs and fast["error"][0] == "MemoryAccessError"       # thread 37: warp 1, lane 5
    assert "lane 5:" in fast["error"][1] and "outside the thread's .local memory (160 bytes)" in fast["error"][1]


def test_a_local_access_handed_back_mid_kernel_sees_the_loops_bytes():
    """The reference runs one ld.local and one st.local in the middle (their rows forced back to Python): it reads
    what the loop stored and the loop reads what it stored."""
    body = """
    st.local.v4.u32 [%rd9], {%r1, %r2, %r3, %r4};
    ld.local.v2.u32 {%r10, %r11}, [%rd9+8];
    st.local.u32 [%rd9+20], %r10;
    ld.local.v2.u32 {%r12, %r13}, [%rd9+16];
    st.global.v4.u32 [%rd4], {%r10, %r11, %r12, %r13};
"""
    text = kernel(body)
    module = load_ptx(text)
    prog = module.program("k")
    tr = translation(prog)
    pcs = [pc for pc, op in enumerate(prog.code) if op.kind == "op" and op.instr.opcode in
           ("ld.local.v2.u32", "st.local.u32")][:2]
    assert len(pcs) == 2 and all(tr.fast[pcs])
    tr.code[pcs, T.OP] = T.SLOW
    rng = np.random.default_rng(len(text))
    inp = rng.integers(0, 1 << 32, 64 * 16, dtype=np.uint64).astype(np.uint32)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64 * 16, np.uint32), inp])
    assert "error" not in ref and not diffs, diffs
    assert handback_counts(prog)                                 # (the reference ran them)
    got = next(m for b, m in fast["memory"] if m.size == 64 * 64).view(np.uint32).reshape(64, 16)
    x = inp.reshape(64, 16)
    assert (got[:, :4] == np.stack([x[:, 6], x[:, 7], 0 * x[:, 0], x[:, 6]], axis=1)).all()


def test_ctas_that_reuse_the_depots_and_keep():
    """Later CTAs get the depots of finished ones (their bytes as the last thread left them, on both engines)."""
    body = """
    ld.local.u32 %r10, [%rd9+8];
    st.local.u32 [%rd9+8], %r1;
    mov.u32 %r11, %ctaid.x;
    st.local.u32 [%rd9+12], %r11;
    ld.local.v2.u32 {%r12, %r13}, [%rd9+8];
    st.global.v4.u32 [%rd4], {%r10, %r11, %r12, %r13};
"""
    text = kernel(body).replace("mul.wide.u32 %rd2, %r0, 64;",
                                "mov.u32 %r39, %ctaid.x; mad.lo.u32 %r38, %r39, 64, %r0; mul.wide.u32 %rd2, %r38, 64;")
    for keep in ("all", "last"):
        module, ref, fast, diffs = run_both(text, nthreads=64, grid=3, keep=keep)
        assert "error" not in ref and not diffs, diffs


def test_sanitized_launches_with_local_memory_are_the_references():
    body = """
    st.local.v4.u32 [%rd9], {%r1, %r2, %r3, %r4};
    cvta.local.u64 %rd12, %rd9;
    ld.u32 %r10, [%rd12+4];
    ld.local.v2.u32 {%r11, %r12}, [%rd9+8];
    st.global.v4.u32 [%rd4], {%r10, %r11, %r12, %r1};
"""
    module = load_ptx(kernel(body))
    inp = np.arange(64 * 16, dtype=np.uint32)
    outs = [launch_outcome(module, "k", 1, 64, [np.zeros(64 * 16, np.uint32), inp], engine=e, sanitize="all")
            for e in ("reference", "fast")]
    assert "error" not in outs[0]
    assert not differences(*outs)


def test_a_wrong_local_row_is_caught():
    """The comparison can fail: a local store four bytes off shows up in the depots and the output."""
    body = """
    st.local.v4.u32 [%rd9], {%r1, %r2, %r3, %r4};
    st.local.u32 [%rd9+4], %r0;
    ld.local.v4.u32 {%r10, %r11, %r12, %r13}, [%rd9];
    st.global.v4.u32 [%rd4], {%r10, %r11, %r12, %r13};
"""
    module = load_ptx(kernel(body))
    prog = module.program("k")
    tr = translation(prog)
    pc = next(pc for pc, op in enumerate(prog.code) if op.kind == "op" and op.instr.opcode == "st.local.u32")
    assert tr.code[pc, T.OP] == T.ST and tr.code[pc, T.X] == T.LOCAL
    tr.imm[pc, T.IMM_OFFSET] += np.uint64(4)
    ref, fast, diffs = compare_engines(module, "k", 1, 32, [np.zeros(32 * 16, np.uint32), np.ones(32 * 16, np.uint32)])
    assert any("global allocation" in d for d in diffs)


def test_module_variable_addresses_run_in_the_loop():
    """mov of a .global/.const variable's address and [var+off] accesses: the launch's addresses."""
    text = """
.version 8.0
.target sm_90
.address_size 64
.global .align 4 .b8 table[64] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
.const .align 8 .u64 cst[2] = {0x1122334455667788, 7};
.global .align 4 .u32 counter;
.visible .entry k(.param .u64 out, .param .u64 inp)
{
    .reg .b32 %r<16>; .reg .b64 %rd<16>;
    mov.u32 %r0, %tid.x;
    ld.param.u64 %rd0, [out];
    mul.wide.u32 %rd1, %r0, 16;
    add.u64 %rd2, %rd0, %rd1;
    mov.u64 %rd3, table;
    and.b32 %r1, %r0, 15;
    mul.wide.u32 %rd4, %r1, 4;
    add.u64 %rd5, %rd3, %rd4;
    ld.global.u8 %r2, [%rd5];
    ld.global.u32 %r3, [table+4];
    cvt.u32.u64 %r4, %rd3;
    mov.b64 %rd6, cst;
    ld.global.u64 %rd7, [%rd6];
    st.global.u32 [counter], %r0;
    ld.u32 %r5, [table+8];
    cvt.u32.u64 %r6, %rd7;
    sub.u32 %r7, %r4, %r4;
    st.global.v4.u32 [%rd2], {%r2, %r3, %r6, %r5};
    st.global.u32 [%rd2+12], %r7;
    ret;
}
"""
    module = load_ptx(text)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64 * 4, np.uint32), np.zeros(4, np.uint32)])
    assert "error" not in ref and not diffs, diffs
    assert sum(handback_counts(module.program("k")).values()) == 0
    got = next(m for b, m in fast["memory"] if m.size == 64 * 16).view(np.uint32).reshape(64, 4)
    k = np.arange(64) % 16                                    # byte 4k of the table: 4k + 1 for k < 4, else 0
    assert (got[:, 0] == np.where(k < 4, 4 * k + 1, 0)).all() and (got[:, 1] == 0x08070605).all()
    assert (got[:, 2] == 0x55667788).all() and (got[:, 3] == 0)[:1].all()


# ---------------------------------------------------------------------------------------------------------
# Random programs: local stores and loads of random widths at random (aligned) run-time offsets, through 64- and
# 32-bit local addresses and generic ones, with guards

_TYPES = [("u8", 1), ("s8", 1), ("u16", 2), ("s16", 2), ("b32", 4), ("s32", 4), ("u64", 8), ("b64", 8)]


def random_local_kernel(rng, n=24, depot=128):
    lines = ["and.b32 %r20, %r0, 7;", "mul.wide.u32 %rd20, %r20, 8;", "mov.u64 %rd21, buf;",
             "add.u64 %rd22, %rd21, %rd20;", "cvt.u32.u64 %r21, %rd22;", "cvta.local.u64 %rd23, %rd22;",
             "setp.lt.u32 %p1, %r0, 20;"]
    for _ in range(n):
        ty, w = _TYPES[rng.integers(len(_TYPES))]
        vec = int(rng.choice([1, 2, 4])) if w <= 4 else int(rng.choice([1, 2]))
        size = w * vec
        off = int(rng.integers(0, (depot - 64 - size) // size + 1)) * size      # (+ up to 56: the slot)
        off -= off % size
        # the slot offset (0..56, multiples of 8) keeps alignment for accesses of up to 8 bytes; 16-byte vectors
        # use the depot's start
        base = rng.choice(["%rd22", "%r21", "%rd23"]) if size <= 8 else "%rd21"
        space = "" if base == "%rd23" else ".local"
        guard = "@%p1 " if rng.random() < 0.3 else ("@!%p1 " if rng.random() < 0.2 else "")
        reg = "%rd" if w == 8 else ("%h" if w == 2 and rng.random() < 0.5 else "%r")
        first = {"%rd": 24, "%r": 24, "%h": 0}[reg]
        regs = [f"{reg}{first + int(k)}" for k in rng.integers(0, 8, vec)]
        vtxt = f".v{vec}" if vec > 1 else ""
        ops = "{" + ", ".join(regs) + "}" if vec > 1 else regs[0]
        if rng.random() < 0.5:
            lines.append(f"{guard}st{space}{vtxt}.{ty} [{base}+{off}], {ops};")
        else:
            if vec > 1 and len(set(regs)) < vec:
                regs = [f"{reg}{first + k}" for k in range(vec)]
                ops = "{" + ", ".join(regs) + "}"
            lines.append(f"{guard}ld{space}{vtxt}.{ty} {ops}, [{base}+{off}];")
        if rng.random() < 0.2:
            lines.append(f"add.u32 %r{24 + int(rng.integers(8))}, %r{24 + int(rng.integers(8))}, %r0;")
    lines += ["ld.local.v4.u32 {%r10, %r11, %r12, %r13}, [%rd21];", "ld.local.v4.u32 {%r14, %r15, %r16, %r17}, "
              "[%rd21+16];", "st.global.v4.u32 [%rd4], {%r10, %r11, %r12, %r13};",
              "st.global.v4.u32 [%rd4+16], {%r14, %r15, %r16, %r17};",
              "xor.b32 %r24, %r24, %r25; xor.b32 %r26, %r26, %r27; xor.b32 %r28, %r28, %r31;",
              "cvt.u32.u64 %r29, %rd24; cvt.u32.u64 %r30, %rd25; cvt.u32.u16 %r18, %h3;",
              "st.global.v4.u32 [%rd4+32], {%r24, %r26, %r28, %r29};", "st.global.v2.u32 [%rd4+48], {%r30, %r18};"]
    init = ["mov.u32 %r{0}, %r{1};".format(24 + k, 1 + k % 4) for k in range(8)] + \
           ["cvt.u64.u32 %rd{0}, %r{1}; mul.lo.u64 %rd{0}, %rd{0}, 0x9E3779B97F4A7C15;".format(24 + k, 1 + k % 4)
            for k in range(8)] + ["cvt.u16.u32 %h{0}, %r{1};".format(k, 1 + k % 4) for k in range(8)]
    return kernel("\n    ".join([""] + init + lines), depot=depot)


@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None, derandomize=EXAMPLES <= 100,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), nthreads=st.sampled_from([32, 48, 64]))
def test_random_local_programs_are_identical_on_both_engines(seed, nthreads):
    rng = np.random.default_rng(seed)
    text = random_local_kernel(rng)
    module, ref, fast, diffs = run_both(text, nthreads=nthreads)
    assert "error" not in ref, (ref.get("error"), text)
    assert not diffs, (diffs, text)
    assert sum(handback_counts(module.program("k")).values()) == 0, text
