"""The fast engine (emulator/machine/fastcore) against the reference executors, bit for bit.

Every launch runs twice, ``engine="reference"`` and ``engine="fast"``, and everything a launch leaves
behind is compared: global memory, every register of every warp, shared memory, program counters, issued
counts, printf output, the shared-memory access log and the error raised (``tests/engines.py``).
Random kernels cover every opcode the fast engine translates, with guards, divergent branches and loops,
mixed with instructions it hands back to the reference executors.
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator import load_ptx
from emulator.numerics import mufu as MUFU
from emulator.machine.fastcore import table as T
from emulator.machine.fastcore import translation
from engines import compare_engines, differences, launch_outcome, replay_outcome

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = int(os.environ.get("WARPEMU_FUZZ_EXAMPLES", "60"))

# ---------------------------------------------------------------------------------------------------------
# The repository's nvcc kernels (the H100 replay cases) on both engines

from test_kernel_hw import CASES, _module  # noqa: E402


def _case_launch(name):
    import json
    case = CASES[name]
    cfg = json.loads(str(case["config"]))
    arrays, scalars = [], []
    for kind, val in cfg["args"]:
        if kind == "array":
            arrays.append(case["before"][val])
        else:
            scalars.append(val)
    # the arrays come first in launch_outcome; keep the kernel's argument order by re-ordering
    order = [k for k, _ in cfg["args"]]
    return cfg, arrays, scalars, order


@pytest.mark.parametrize("name", sorted(CASES))
def test_repository_kernels_are_identical_on_both_engines(name):
    cfg, arrays, scalars, order = _case_launch(name)
    module = _module(cfg["ptx"])
    if order != sorted(order, key=lambda k: k != "array"):
        pytest.skip("arguments interleave arrays and scalars")     # none of the committed cases do
    ref, fast, diffs = compare_engines(module, cfg["kernel"], cfg["grid"], cfg["block"], arrays, scalars,
                                       shared_bytes=cfg["shared"])
    assert not diffs, diffs
    assert "error" not in ref
    assert fast["fast_executed"] > 0


def test_gemm_kernel_translates_its_integer_and_memory_code():
    module = _module("tests/data/kernels/gemm_tiled.ptx")
    tr = translation(module.program("gemm_tiled"))
    ops = {T.NAMES[int(o)] for o in tr.code[:, T.OP]}
    assert {"ADD", "MAD_LO", "SHL", "SETP", "BRA", "ST", "LD", "CVT_II", "MUL_WIDE", "MMA", "LDMATRIX", "CPASYNC",
            "CP_COMMIT", "CP_WAIT"} <= ops
    assert tr.coverage == 1.0 and tr.cta_ok          # cp.async included: the whole CTA runs in the loop


# ---------------------------------------------------------------------------------------------------------
# Random kernels

TYPES_INT = {16: ("u16", "s16"), 32: ("u32", "s32"), 64: ("u64", "s64")}
REGS = {16: [f"%h{i}" for i in range(4)], 32: [f"%r{i}" for i in range(6)], 64: [f"%d{i}" for i in range(4)],
        1: [f"%p{i}" for i in range(4)]}
SPECIAL32 = [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
             0xFFC00123, 0x00000001, 0x80000001, 0x007FFFFF, 0x3F800000, 0xBF800000, 0x4B800000, 0x00800000,
             0x80000000, 31, 32, 33, 63, 64, 65,
             # float edges of the MUFU forms: NaN payloads, huge, 2^126 (division rescaling), -126/-128/128 (ex2)
             0x7FC00001, 0xFF800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7E800001, 0xFE800000, 0xC2FC0000, 0xC2FD0000,
             0xC3000000, 0x43000000, 0x0D000000, 0x3E22F983, 0x80800000]
CMPS_INT = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
CMPS_F = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
SLOW_OPS = ("popc.b32 {r32}, {r32b};", "brev.b32 {r32}, {r32b};",
            "prmt.b32.f4e {r32}, {r32b}, {r32c}, {r32};", "add.sat.s32 {r32}, {r32b}, {r32c};",
            "mov.b64 {{{r32}, {r32b}}}, {r64};", "mov.b32 {{{r16}, {r16b}}}, {r32};",
            "min.f32 {r32}, {r32b}, {r32c};", "cvt.rn.f32.s32 {r32}, {r32b};", "add.rz.f32 {r32}, {r32b}, {r32c};",
            "mul.lo.s64 {r64}, {r64b}, {r64c};", "testp.notanumber.f32 {p}, {r32};", "mov.u32 {r32}, %clock;",
            # forms ptxas specialises (immediates) and the packing instructions: executors only; the video
            # instructions (K_VIDEO rows, with their selectors)
            "bfe.s32 {r32}, {r32b}, 40, 3;", "sub.f64 {r64}, {r64b}, 0d7FF0000000000001;",
            "max.f64 {r64}, 0dFFF8000000000000, {r64b};", "cvt.pack.sat.s8.s32.b32 {r32}, {r32b}, {r32c}, {r32};",
            "vabsdiff4.sat.s32.s32.s32 {r32}, {r32b}, {r32c}, {r32};",
            "vset2.u32.s32.lt.add {r32}.h1, {r32b}, {r32c}, {r32};",
            "vavrg2.s32.u32.s32 {r32}.h0, {r32b}.h21, {r32c}, {r32};")


BARS = ("bar.sync 0;", "barrier.sync 1;", "bar.arrive 2;", "barrier.sync.aligned 0;", "bar.cta.sync 3;",
        "barrier.arrive 1;", "bar.sync 2;")


def _imm(rng, w):
    k = rng.integers(4)
    if k == 0:
        return str(int(rng.integers(0, 70)))
    if k == 1:
        return str(-int(rng.integers(1, 1 << min(w - 1, 20))))
    return hex(int(rng.integers(0, 1 << w, dtype=np.uint64)) if w < 64 else int(rng.integers(0, 1 << 63)))


def _instruction(rng):
    """One random instruction (PTX text) from every family the fast engine translates, or a slow one."""
    w = int(rng.choice([16, 32, 64]))
    R = REGS[w]
    pick = lambda regs: str(rng.choice(regs))                    # noqa: E731
    t = str(rng.choice(TYPES_INT[w]))
    srcb = lambda: _imm(rng, w) if rng.random() < 0.25 else pick(R)    # noqa: E731
    fam = int(rng.integers(24))
    if fam == 0:
        op = str(rng.choice(["add", "sub", "min", "max", "mul.lo", "mul.hi"]))
        return f"{op}.{t} {pick(R)}, {pick(R)}, {srcb()};"
    if fam == 1 and w < 64:
        return f"mul.wide.{t} {pick(REGS[2 * w])}, {pick(R)}, {srcb()};"
    if fam == 2:
        mode = str(rng.choice(["lo", "hi"] + (["wide"] if w < 64 else [])))
        dw = 2 * w if mode == "wide" else w
        return f"mad.{mode}.{t} {pick(REGS[dw])}, {pick(R)}, {srcb()}, {pick(REGS[dw])};"
    if fam == 3:
        op = str(rng.choice(["shl", "shr"]))
        ty = str(rng.choice([t, f"b{w}"]))
        amt = str(int(rng.integers(0, 70))) if rng.random() < 0.4 else pick(REGS[32])
        return f"{op}.{ty} {pick(R)}, {pick(R)}, {amt};"
    if fam == 4:
        if rng.random() < 0.3:
            op = str(rng.choice(["and", "or", "xor"]))
            return f"{op}.pred {pick(REGS[1])}, {pick(REGS[1])}, {pick(REGS[1])};"
        op = str(rng.choice(["and", "or", "xor", "not"]))
        if op == "not":
            return f"not.b{w} {pick(R)}, {pick(R)};"
        return f"{op}.b{w} {pick(R)}, {pick(R)}, {srcb()};"
    if fam == 5:
        return f"{rng.choice(['neg', 'abs'])}.s{w} {pick(R)}, {pick(R)};"
    if fam in (6, 7):
        cmp = str(rng.choice(CMPS_INT))
        ty = str(rng.choice([t, f"b{w}"])) if cmp in ("eq", "ne") else t
        d = pick(REGS[1]) if rng.random() < 0.7 else f"{pick(REGS[1])}|{pick(REGS[1])}"
        if rng.random() < 0.4:
            bop = str(rng.choice(["and", "or", "xor"]))
            c = ("!" if rng.random() < 0.5 else "") + pick(REGS[1])
            return f"setp.{cmp}.{bop}.{ty} {d}, {pick(R)}, {srcb()}, {c};"
        return f"setp.{cmp}.{ty} {d}, {pick(R)}, {srcb()};"
    if fam == 8:
        cmp = str(rng.choice(CMPS_F))
        fw = int(rng.choice([32, 64]))
        return f"setp.{cmp}.f{fw} {pick(REGS[1])}, {pick(REGS[fw])}, {pick(REGS[fw])};"
    if fam == 9:
        ty = str(rng.choice([t, f"b{w}"] + (["f32"] if w == 32 else ["f64"] if w == 64 else ["f16", "bf16"])))
        c = ("!" if rng.random() < 0.3 else "") + pick(REGS[1])
        return f"selp.{ty} {pick(R)}, {pick(R)}, {srcb()}, {c};"
    if fam == 10:
        dt = str(rng.choice(["u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64"]))
        at = str(rng.choice(["u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64"]))
        rw = lambda ty: max(16, int(ty[1:]))                         # noqa: E731
        return f"cvt.{dt}.{at} {pick(REGS[rw(dt)])}, {pick(REGS[rw(at)])};"
    if fam in (11, 12):
        op = str(rng.choice(["add", "sub", "mul", "fma"]))
        rnd = ".rn" if op == "fma" or rng.random() < 0.5 else ""
        R32 = REGS[32]
        if op == "fma":
            return f"fma.rn.f32 {pick(R32)}, {pick(R32)}, {pick(R32)}, {pick(R32)};"
        b = pick(R32) if rng.random() < 0.8 else "0f3F800000"
        return f"{op}{rnd}.f32 {pick(R32)}, {pick(R32)}, {b};"
    if fam == 13:
        if rng.random() < 0.3:
            return f"mov.u32 {pick(REGS[32])}, {rng.choice(['%tid.x', '%laneid', '%ntid.x', '%ctaid.x', '%warpid'])};"
        if rng.random() < 0.2:
            return f"mov.pred {pick(REGS[1])}, {pick(REGS[1])};"
        if rng.random() < 0.25:          # pack / unpack (a sink among the parts)
            ww, pw = [(32, 16), (64, 32), (64, 16)][int(rng.integers(3))]
            parts = ", ".join(pick(REGS[pw]) for _ in range(ww // pw))
            if rng.random() < 0.5:
                return f"mov.b{ww} {pick(REGS[ww])}, {{{parts}}};"
            parts = parts if rng.random() < 0.7 else "_" + parts[parts.index(","):]
            return f"mov.b{ww} {{{parts}}}, {pick(REGS[ww])};"
        return f"mov.b{w} {pick(R)}, {srcb()};"
    if fam == 14:                # shared memory: 16 bytes per thread at %s0
        ew = int(rng.choice([2, 4, 8]))
        n = int(rng.choice([1, 2] + ([4] if ew < 8 else [])))
        rr = REGS[max(16, ew * 8)]
        off = int(rng.integers(0, 16 // (ew * n))) * ew * n
        regs = [pick(rr) for _ in range(n)]
        v = f".v{n}" if n > 1 else ""
        val = regs[0] if n == 1 else "{" + ", ".join(regs) + "}"
        if rng.random() < 0.5:
            return f"st.shared{v}.b{ew * 8} [%s0+{off}], {val};"
        return f"ld.shared{v}.b{ew * 8} {val}, [%s0+{off}];"
    if fam == 15:                # global scratch: 64 bytes per thread at %q2
        ew = int(rng.choice([1, 2, 4, 8]))
        n = 1 if ew == 1 else int(rng.choice([1, 2]))
        rr = REGS[max(16, ew * 8)]
        off = int(rng.integers(0, 64 // (ew * n))) * ew * n
        sgn = str(rng.choice(["u", "s", "b"]))
        regs = [pick(rr) for _ in range(n)]
        v = f".v{n}" if n > 1 else ""
        val = regs[0] if n == 1 else "{" + ", ".join(regs) + "}"
        if rng.random() < 0.5:
            return f"st.global{v}.{sgn}{ew * 8} [%q2+{off}], {val};"
        if n > 1 and len(set(regs)) < n:
            return f"st.global{v}.{sgn}{ew * 8} [%q2+{off}], {val};"
        return f"ld.global{v}.{sgn}{ew * 8} {val}, [%q2+{off}];"
    if fam == 16:                # generic addressing of the thread's shared bytes
        return str(rng.choice(["st.u32 [%s0+4], {r};", "ld.u32 {r}, [%s0+8];"])).format(r=pick(REGS[32]))
    if fam == 17:
        if rng.random() < 0.2:
            return "membar.cta;"
        mode = str(rng.choice(["up", "down", "bfly", "idx"]))
        d = pick(REGS[32]) if rng.random() < 0.5 else f"{pick(REGS[32])}|{pick(REGS[1])}"
        b = str(int(rng.integers(0, 40))) if rng.random() < 0.6 else pick(REGS[32])
        c = str(rng.choice(["0x1f", "0x0", "0x181f", "0x1c1f", "0x1f00", "7"])) if rng.random() < 0.8 else pick(REGS[32])
        mask = "%t1" if rng.random() < 0.9 else "0xffffffff"
        return f"activemask.b32 %t1; shfl.sync.{mode}.b32 {d}, {pick(REGS[32])}, {b}, {c}, {mask};"
    if fam == 22:                # byte permutes, tf32 rounding, cvta
        k = rng.random()
        if k < 0.4:
            sel = pick(REGS[32]) if rng.random() < 0.5 else hex(int(rng.integers(0, 1 << 16)))
            return f"prmt.b32 {pick(REGS[32])}, {pick(REGS[32])}, {pick(REGS[32])}, {sel};"
        if k < 0.8:
            sat = ".satfinite" if rng.random() < 0.4 else ""
            return f"cvt.rna{sat}.tf32.f32 {pick(REGS[32])}, {pick(REGS[32])};"
        to = ".to" if rng.random() < 0.5 else ""
        sp = str(rng.choice(["global", "shared", "shared::cta"]))
        return f"cvta{to}.{sp}.u64 {pick(REGS[64])}, {pick(REGS[64])};" if rng.random() < 0.5 else \
            f"cvta{to}.{sp}.u32 {pick(REGS[32])}, {pick(REGS[32])};"
    if fam == 21 and rng.random() < 0.5:     # bit-field extract: every type, immediate or register fields
        bw = int(rng.choice([32, 64]))
        ty = f"{rng.choice(['u', 's'])}{bw}"
        f = lambda: str(int(rng.choice([0, 1, 7, 8, 13, 31, 32, 33, 63, 64, 65, 200, 255, 256, 300])))  # noqa: E731
        pos = f() if rng.random() < 0.6 else pick(REGS[32])
        ln = f() if rng.random() < 0.6 else pick(REGS[32])
        return f"bfe.{ty} {pick(REGS[bw])}, {pick(REGS[bw])}, {pos}, {ln};"
    if fam == 20 and rng.random() < 0.25:    # CTA barriers (run by the fast engine's CTA loop)
        return str(rng.choice(BARS))
    if fam in (18, 19):
        return str(rng.choice(SLOW_OPS)).format(
            r32=pick(REGS[32]), r32b=pick(REGS[32]), r32c=pick(REGS[32]), r16=pick(REGS[16]),
            r16b=pick(REGS[16]), r64=pick(REGS[64]), r64b=pick(REGS[64]), r64c=pick(REGS[64]), p=pick(REGS[1]))
    if fam == 23:                # the MUFU forms and the other float rows (fastcore/fmath.py)
        return _float_instruction(rng, lambda: pick(REGS[32]))
    return f"add.{t} {pick(R)}, {pick(R)}, {srcb()};"


MUFU_F32 = [f for f in MUFU.PTX_SEQUENCES if f.endswith(".f32")]
# the other float rows of fastcore/fmath.py, as templates: {D} {A} {B} {C} 32-bit registers, {H} a 16-bit source,
# {G} a 16-bit destination, {T} a 32-bit temporary
FLOAT_FORMS = {
    **{f: f"{f} {{D}}, {{A}}, {{B}};" if f.startswith("div") else f"{f} {{D}}, {{A}};" for f in MUFU_F32},
    **{f"{op}{ftz}{nan}.f32": f"{op}{ftz}{nan}.f32 {{D}}, {{A}}, {{B}};" for op in ("min", "max")
       for ftz in ("", ".ftz") for nan in ("", ".NaN")},
    **{f"{op}{ftz}.f32": f"{op}{ftz}.f32 {{D}}, {{A}};" for op in ("neg", "abs") for ftz in ("", ".ftz")},
    "copysign.f32": "copysign.f32 {D}, {A}, {B};",
    **{f"{op}{rn}.ftz.f32": f"{op}{rn}.ftz.f32 {{D}}, {{A}}, {{B}};" for op in ("add", "sub", "mul")
       for rn in ("", ".rn")},
    "fma.rn.ftz.f32": "fma.rn.ftz.f32 {D}, {A}, {B}, {C};", "mad.rn.ftz.f32": "mad.rn.ftz.f32 {D}, {A}, {B}, {C};",
    **{f"contract {m}{c}{ftz}": f"mul{ftz}.f32 {{T}}, {{A}}, {{B}}; " + (
        f"{c}{ftz}.f32 {{D}}, {{T}}, {{C}};" if m == "pc" else f"{c}{ftz}.f32 {{D}}, {{C}}, {{T}};")
       for m in ("pc", "cp") for c in ("add", "sub") for ftz in ("", ".ftz")},
    **{f"contract {dv}{ftz} {c}": f"{dv}{ftz}.f32 {{T}}, {{A}}, {{B}}; " + (
        f"add{ftz}.f32 {{D}}, {{T}}, {{C}};" if c == "add" else f"sub{ftz}.f32 {{D}}, {{C}}, {{T}};")
       for dv in ("div.full", "div.approx") for ftz in ("", ".ftz") for c in ("add", "sub")},
    "cvt.rn.f32.s32": "cvt.rn.f32.s32 {D}, {A};", "cvt.rn.f32.u32": "cvt.rn.f32.u32 {D}, {A};",
    **{f"cvt.{r}{ftz}.f32.f32": f"cvt.{r}{ftz}.f32.f32 {{D}}, {{A}};" for r in ("rni", "rzi", "rmi", "rpi")
       for ftz in ("", ".ftz")},
    "cvt.f32.f16": "cvt.f32.f16 {D}, {H};", "cvt.ftz.f32.f16": "cvt.ftz.f32.f16 {D}, {H};",
    "cvt.f32.bf16": "cvt.f32.bf16 {D}, {H};", "cvt.rn.f16.f32": "cvt.rn.f16.f32 {G}, {A};",
    "cvt.rn.bf16.f32": "cvt.rn.bf16.f32 {G}, {A};", "cvt.rn.f16x2.f32": "cvt.rn.f16x2.f32 {D}, {A}, {B};",
    "cvt.rn.bf16x2.f32": "cvt.rn.bf16x2.f32 {D}, {A}, {B};",
}


def _float_instruction(rng, reg):
    """A MUFU form or another float row of fmath.py, on random registers (or a 0f immediate where PTX
    allows one)."""
    name = str(rng.choice(sorted(FLOAT_FORMS)))
    text = FLOAT_FORMS[name]

    def imm():
        return f"0f{int(rng.choice(SPECIAL32)):08X}" if rng.random() < 0.15 and "cvt" not in name else reg()
    return text.format(D=reg(), A=imm(), B=imm(), C=imm(), T=reg(), H=str(rng.choice(REGS[16])),
                       G=str(rng.choice(REGS[16])))


def random_kernel(rng, n=40):
    """A kernel: load per-thread registers, run ``n`` random instructions (guards, forward branches, a
    divergent loop), store every register."""
    body = []
    labels = 0
    i = 0
    while i < n:
        r = rng.random()
        if r < 0.1:
            body.append(f"@{'!' if rng.random() < 0.5 else ''}{rng.choice(REGS[1])} bra L{labels};")
            k = int(rng.integers(1, 6))
            for _ in range(k):
                body.append(_instruction(rng))
            body.append(f"L{labels}:")
            labels += 1
            i += k
        elif r < 0.14:
            k = int(rng.integers(1, 5))
            body.append(f"mov.u32 %c0, 0; and.b32 %c1, %t0, 3; LOOP{labels}:")
            for _ in range(k):
                body.append(_instruction(rng))
            body.append(f"add.u32 %c0, %c0, 1; setp.le.u32 %pc, %c0, %c1; @%pc bra LOOP{labels};")
            labels += 1
            i += k
        else:
            ins = _instruction(rng)
            if rng.random() < 0.15:
                ins = f"@{'!' if rng.random() < 0.5 else ''}{rng.choice(REGS[1])} " + ins
            body.append(ins)
            i += 1
    loads = ([f"ld.global.u16 %h{k}, [%q0+{2 * k}];" for k in range(4)]
             + [f"ld.global.u32 %r{k}, [%q0+{8 + 4 * k}];" for k in range(6)]
             + [f"ld.global.u64 %d{k}, [%q0+{32 + 8 * k}];" for k in range(4)]
             + [f"ld.global.u32 %c1, [%q0+{64 + 4 * k}]; setp.ne.b32 %p{k}, %c1, 0;" for k in range(4)])
    stores = ([f"st.global.u16 [%q1+{2 * k}], %h{k};" for k in range(4)]
              + [f"st.global.u32 [%q1+{8 + 4 * k}], %r{k};" for k in range(6)]
              + [f"st.global.u64 [%q1+{32 + 8 * k}], %d{k};" for k in range(4)]
              + [f"selp.u32 %c1, 1, 0, %p{k}; st.global.u32 [%q1+{64 + 4 * k}], %c1;" for k in range(4)])
    lines = "\n    ".join(loads + body + stores)
    return f"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout, .param .u64 pscratch)
{{
    .reg .b16 %h<4>; .reg .b32 %r<6>; .reg .b64 %d<4>; .reg .pred %p<4>; .reg .b64 %q<4>;
    .reg .b32 %t<2>; .reg .b32 %s<1>; .reg .b32 %c<2>; .reg .pred %pc;
    .shared .align 16 .b8 buf[1024];
    ld.param.u64 %q0, [pin];
    ld.param.u64 %q1, [pout];
    ld.param.u64 %q2, [pscratch];
    mov.u32 %t0, %tid.x;
    mul.wide.u32 %q3, %t0, 128;
    add.s64 %q0, %q0, %q3;
    add.s64 %q1, %q1, %q3;
    mul.wide.u32 %q3, %t0, 64;
    add.s64 %q2, %q2, %q3;
    shl.b32 %s0, %t0, 4;
    {lines}
    ret;
}}
"""


def random_inputs(rng, nthreads):
    words = rng.integers(0, 1 << 32, size=(nthreads, 32), dtype=np.uint64).astype(np.uint32)
    special = rng.random(words.shape) < 0.3
    words[special] = rng.choice(np.array(SPECIAL32, np.uint32), size=int(special.sum()))
    words[:, 16:20] = rng.integers(0, 2, size=(nthreads, 4))          # predicates
    scratch = rng.integers(0, 256, size=nthreads * 64, dtype=np.uint8)
    return [words, np.zeros((nthreads, 32), np.uint32), scratch]


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 100,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), nthreads=st.sampled_from([32, 48, 64]))
def test_random_kernels_are_identical_on_both_engines(seed, nthreads):
    rng = np.random.default_rng(seed)
    text = random_kernel(rng, n=int(rng.integers(10, 60)))
    module = load_ptx(text, validate=False)    # the generator also writes forms only the emulator takes
    ref, fast, diffs = compare_engines(module, "k", 1, nthreads, random_inputs(rng, nthreads))
    assert not diffs, (diffs, text)
    if "error" not in ref:
        assert fast["fast_executed"] > 0


MMAS = ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%r0, %r1, %r2, %r3}, {A4}, {%r4, %r5}, {%r0, %r1, %r2, %r3};",
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%r2, %r3, %r0, %r1}, {A4}, {%r5, %r4}, {%r0, %r1, %r2, %r3};",
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%r0, %r1, %r2, %r3}, {A4}, {%r4, %r5}, {%r3, %r2, %r1, %r0};",
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%r0, %r1}, {A4}, {%r4, %r5}, {%r2, %r3};",
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32 {%r0, %r1, %r2, %r3}, {A4}, {%r4, %r5}, {%r0, %r1, %r2, %r3};")
LDSM = ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r0, %r1, %r2, %r3}, [%s1];",
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r2, %r3, %r4, %r5}, [%s1+16];",
        "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r1, %r5}, [%s1];",
        "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r3}, [%s1];",
        "ldmatrix.sync.aligned.x2.trans.m8n8.shared.b16 {%r0, %r4}, [%s1+32];")
STSM = ("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%s1], {%r0, %r1, %r2, %r3};",
        "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%s1+32], {%r4, %r5};",
        "stmatrix.sync.aligned.m8n8.x1.shared.b16 [%s1+16], {%r3};",
        "stmatrix.sync.aligned.x4.trans.m8n8.shared::cta.b16 [%s1], {%r5, %r4, %r1, %r0};")


def tensor_kernel(rng, n=8):
    """Random mma.sync (f16, bf16, tf32, f16 accumulators, fp8), ldmatrix and stmatrix (every shape, row
    addresses permuted across lanes) over registers holding random and special values."""
    body = ["st.shared.v4.b32 [%s0], {%r0, %r1, %r2, %r3};", "st.shared.v4.b32 [%s0+512], {%r4, %r5, %r0, %r1};",
            f"xor.b32 %s1, %t0, {int(rng.integers(0, 32))}; and.b32 %s1, %s1, 31; shl.b32 %s1, %s1, 4;"]
    for _ in range(n):
        r = rng.random()
        if r < 0.45:
            regs = ", ".join(f"%r{int(i)}" for i in rng.permutation(6)[:4])
            body.append(str(rng.choice(MMAS)).replace("{A4}", "{" + regs + "}"))
        elif r < 0.75:
            body.append(str(rng.choice(LDSM)))
        else:
            body.append(str(rng.choice(STSM)))
        if rng.random() < 0.3:
            body.append(_instruction(rng))
    return random_kernel(rng, 0).replace("    ret;\n}", "    " + "\n    ".join(body) + "\n    ret;\n}").replace(
        "shl.b32 %s0, %t0, 4;", "shl.b32 %s0, %t0, 4;").replace(".reg .b32 %s<1>;", ".reg .b32 %s<2>;").replace("buf[1024]", "buf[2048]")


@settings(max_examples=max(EXAMPLES // 3, 10), deadline=None, derandomize=EXAMPLES <= 100,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), nthreads=st.sampled_from([32, 64, 48]))
def test_random_tensor_core_kernels_are_identical_on_both_engines(seed, nthreads):
    rng = np.random.default_rng(seed)
    text = tensor_kernel(rng)
    ref, fast, diffs = compare_engines(load_ptx(text, validate=False), "k", 1, nthreads, random_inputs(rng, nthreads))
    assert not diffs, (diffs, text)
    if nthreads != 48:
        assert "error" not in ref, ref["error"]
        assert fast["fast_executed"] > 0


def test_every_translated_opcode_is_exercised_by_the_random_kernels():
    """The random kernels reach every opcode of the fast engine (else the fuzz would prove nothing)."""
    seen = set()
    rng = np.random.default_rng(1)
    for _ in range(30):
        tr = translation(load_ptx(random_kernel(rng, 60), validate=False).program("k"))
        seen |= {T.NAMES[int(o)] for o in tr.code[:, T.OP]}
    for _ in range(5):
        tr = translation(load_ptx(tensor_kernel(rng), validate=False).program("k"))
        seen |= {T.NAMES[int(o)] for o in tr.code[:, T.OP]}
        tr = translation(load_ptx(cp_kernel(rng, 40)).program("k"))
        seen |= {T.NAMES[int(o)] for o in tr.code[:, T.OP]}
    # the random kernels store every register at the end, so a quotient is always read by a store too and
    # ptxas (hence the emulator) fuses it with no add: the fused division comes from the float-form kernels,
    # which run on both engines in test_float_forms_over_special_values_are_identical_on_both_engines
    for form in ("contract div.full add", "contract div.approx.ftz sub"):
        tr = translation(load_ptx(_form_kernel(FLOAT_FORMS[form], 2)).program("k"))
        seen |= {T.NAMES[int(o)] for o in tr.code[:, T.OP]}
    # wgmma in the CTA loop: its random programs (test_fastcore_wgmma runs them on both engines)
    import test_fastcore_wgmma as WG
    tr = translation(load_ptx(WG.wgmma_kernel(np.random.default_rng(2), 8), validate=False).program("k"))
    seen |= {T.NAMES[int(o)] for o in tr.code[:, T.OP]}
    # the integer, bit, half, f64, conversion, collective and atomic rows: their own forms (test_fastcore_scalarx)
    import test_fastcore_scalarx as X
    for text in (X.form_kernel(X.FORMS["lop3 96"], 1), X.ATOM_KERNEL.replace("BODY", X.ATOMS["add.u32"])):
        tr = translation(load_ptx(text).program("k"))
        seen |= {T.NAMES[int(o)] for o in tr.code[:, T.OP]}
    # Hopper's rows (HOPX): their own kernels and random mbarrier pipelines (test_fast_async)
    import test_fast_async as H
    tr = translation(load_ptx(H.ELECT).program("k"))
    seen |= {T.NAMES[int(o)] for o in tr.code[:, T.OP]}
    # TMA box copies (BULKX): the capture kernels of test_fast_bulk, which also runs random tensor maps
    import test_fast_bulk as B
    tr = translation(B.module().program("tma_load_2d"))
    seen |= {T.NAMES[int(o)] for o in tr.code[:, T.OP]}
    # brx.idx (BRX): test_fast_brx's random jump tables
    import test_fast_brx as BX
    tr = translation(load_ptx(BX.interp_kernel(np.random.default_rng(3))).program("k"))
    seen |= {T.NAMES[int(o)] for o in tr.code[:, T.OP]}
    assert set(T.NAMES.values()) - seen == set()


def test_a_wrong_fast_engine_is_caught():
    """The comparison can fail: an add translated as a subtract shows up as differing registers."""
    rng = np.random.default_rng(5)
    text = random_kernel(rng, 5).replace("ret;", "add.s32 %r1, %r2, %r3;\n    ret;")
    module = load_ptx(text)
    tr = translation(module.program("k"))
    adds = np.flatnonzero(tr.code[:, T.OP] == T.ADD)
    tr.code[adds[-1], T.OP] = T.SUB
    ref, fast, diffs = compare_engines(module, "k", 1, 32, random_inputs(rng, 32))
    assert any("%r1" in d for d in diffs)


# ---------------------------------------------------------------------------------------------------------
# Errors and limits: the fast engine hands the instruction back and the reference raises

ERR_KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
    .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .pred %p<2>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r3, [n];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, BODY;
}
"""


@pytest.mark.parametrize("body", [
    "4; add.s64 %rd2, %rd2, 2; add.s64 %rd3, %rd1, %rd2; ld.global.u32 %r2, [%rd3]; ret;",         # misaligned
    "4; add.s64 %rd3, %rd1, %rd2; ld.global.u32 %r2, [%rd3+128]; ret;",                          # out of bounds
    "4; add.s64 %rd3, %rd1, %rd2; st.global.v2.u32 [%rd3+4], {%r1, %r1}; ret;",                  # misaligned vector
    "4; shl.b32 %r2, %r1, 6; st.shared.u32 [%r2], %r1; ret;",                                    # shared bounds
    "4; L: add.s32 %r2, %r2, 1; setp.ne.s32 %p1, %r2, %r3; @%p1 bra L; ret;",                    # budget
])
def test_errors_are_the_references(body):
    text = ERR_KERNEL.replace("BODY;", body).replace("{\n    .reg", "{\n    .shared .b8 s[1024];\n    .reg")
    module = load_ptx(text)
    arrays = [np.zeros(32, np.uint32)]
    ref = launch_outcome(module, "k", 1, 32, arrays, [1000], engine="reference", max_instructions=300)
    fast = launch_outcome(module, "k", 1, 32, arrays, [1000], engine="fast", max_instructions=300)
    assert "error" in ref
    assert ref["error"] == fast["error"]
    assert not differences(ref, fast)


def test_engine_argument_is_checked():
    module = load_ptx(ERR_KERNEL.replace("BODY;", "4; ret;"))
    from emulator import EmulatorError
    with pytest.raises(EmulatorError, match="engine"):
        module.launch("k", 1, 32, [0, 0], engine="jit")


def test_auto_engine_switches_to_the_fast_engine_between_ctas(monkeypatch):
    """engine="auto" while the loops compile in the background: the first CTAs run on the reference executors,
    the rest on the fast engine once it is ready; the launch's result is the one both engines give."""
    from emulator.machine.fastcore import warmup
    rng = np.random.default_rng(7)
    text = random_kernel(rng, 30).replace("mov.u32 %t0, %tid.x;", "mov.u32 %t0, %tid.x; mov.u32 %c0, %ctaid.x; "
                                          "mad.lo.u32 %t0, %c0, %ntid.x, %t0;")
    module = load_ptx(text, validate=False)    # a random kernel (forms only the emulator takes)
    arrays = random_inputs(rng, 4 * 32)
    ref = launch_outcome(module, "k", 4, 32, arrays, engine="reference")
    calls = []

    def ready(start=True):
        calls.append(1)
        return len(calls) > 2                       # not ready at the launch and before CTA 0, then ready
    monkeypatch.setattr(warmup, "ready", ready)
    monkeypatch.setattr(warmup, "wait", lambda: None)
    auto = launch_outcome(module, "k", 4, 32, arrays, engine="auto")
    assert not differences(ref, auto)
    if "error" not in ref:
        assert auto["fast_executed"] > 0


# ---------------------------------------------------------------------------------------------------------
# MUFU forms and f32 min/max/neg/abs in the loop (fastcore/fmath.py)

FLOAT_EDGES = np.array(sorted(set(SPECIAL32) | {
    0x00000002, 0x00400000, 0x807FFFFF, 0x00800001, 0x3F000000, 0xBF000000, 0x3FFFFFFF, 0x7E7FFFFF, 0x7E800000,
    0xFE800001, 0x7F000000, 0x01000000, 0x4B7FFFFF, 0xC2FE0000, 0xC2FBFFFF, 0x42FFFFFF, 0xC3010000, 0x33800000,
    0xB3800000, 0x40490FDB, 0xC0490FDB, 0x49742400, 0x3B800000, 0x3C000000, 0x41000000, 0x40FFFFFF, 0x7FBFFFFF,
    0xFFFFFFFE,
    # products just below 2^-126 that reach it on the subnormal grid but not with 24 bits (.ftz flushes them)
    0x3F7FFFFF, 0x3F7FFFFE, 0x3F800001, 0x00FFFFFF, 0x3F000001, 0x80FFFFFF, 0x4B000000, 0x477FFF00}), np.uint32)


def _form_kernel(text, n_per_thread):
    """Each thread reads ``n_per_thread`` (a, b, c) triples and writes what ``text`` (a FLOAT_FORMS template)
    makes of each."""
    body = []
    for k in range(n_per_thread):
        body.append(f"ld.global.v4.u32 {{%a0, %a1, %a2, %a4}}, [%q0+{16 * k}]; cvt.u16.u32 %h0, %a0; " +
                    text.format(D="%a3", A="%a0", B="%a1", C="%a2", T="%a4", H="%h0", G="%h1") +
                    (" cvt.u32.u16 %a3, %h1;" if "{G}" in text else "") + f" st.global.u32 [%q1+{4 * k}], %a3;")
    return f"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{{
    .reg .b32 %a<5>; .reg .b16 %h<2>; .reg .b32 %t<3>; .reg .b64 %q<4>;
    ld.param.u64 %q0, [pin];
    ld.param.u64 %q1, [pout];
    mov.u32 %t0, %tid.x;
    mov.u32 %t1, %ctaid.x;
    mov.u32 %t2, %ntid.x;
    mad.lo.u32 %t0, %t1, %t2, %t0;
    mul.wide.u32 %q3, %t0, {16 * n_per_thread};
    add.s64 %q0, %q0, %q3;
    mul.wide.u32 %q3, %t0, {4 * n_per_thread};
    add.s64 %q1, %q1, %q3;
    {chr(10).join(body)}
    ret;
}}
"""


def _inputs(a, b, c, per=8):
    """The (a, b, c, 0) words of the threads, padded to whole warps of ``per`` elements each."""
    n = -(-a.size // (32 * per)) * 32 * per
    words = np.zeros((n, 4), np.uint32)
    words[:a.size, 0], words[:a.size, 1], words[:a.size, 2] = a, b, c
    return n // (32 * per), [words, np.zeros(n, np.uint32)]


@pytest.mark.parametrize("form", MUFU_F32)
def test_mufu_forms_replay_the_h100_sample_on_the_fast_engine(form):
    """The committed H100 sample (tests/data/mufu) through the loop's MUFU rows, not handed back."""
    sample = np.load(os.path.join(ROOT, "tests", "data", "mufu", "h100_sample.npz"), allow_pickle=False)
    a = sample[f"{form}__in0"]
    b = sample[f"{form}__in1"] if f"{form}__in1" in sample.files else np.zeros_like(a)
    want = sample[f"{form}__out"]
    module = load_ptx(_form_kernel(FLOAT_FORMS[form], 8))
    grid, arrays = _inputs(a, b, b)
    out = launch_outcome(module, "k", grid, 32, arrays)
    got = out["memory"][1][1].view(np.uint32)[:a.size]
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(int(a[i])), hex(int(b[i])), hex(int(want[i])), hex(int(got[i]))) for i in bad[:5]]
    tr = translation(module.program("k"))
    want = "MUFU_DIV" if form.startswith("div") else "MUFU_X" if form.split(".")[0] in ("sin", "cos", "tanh") \
        else "MUFU_R" if form.split(".")[0] in ("lg2", "rsqrt", "sqrt") else "MUFU"
    assert {T.NAMES[int(o)] for o in tr.code[:, T.OP]} >= {want}
    assert out["fast_executed"] == out["instructions"]          # every instruction ran in the loop, none handed back


@pytest.mark.parametrize("form", sorted(FLOAT_FORMS))
def test_float_forms_over_special_values_are_identical_on_both_engines(form):
    """Every pair of special values (zeros, subnormals, inf, NaN payloads, negatives, huge and tiny, the
    rescaling edges of ptxas's sequences) with a third operand cycling through them, and random bits, on both
    engines: everything compared, and every instruction translated."""
    rng = np.random.default_rng(len(form))
    e = FLOAT_EDGES
    r = rng.integers(0, 1 << 32, size=(3, 512), dtype=np.uint64).astype(np.uint32)
    a = np.concatenate([np.repeat(e, e.size), r[0]])
    b = np.concatenate([np.tile(e, e.size), r[1]])
    c = np.concatenate([np.roll(np.repeat(e, e.size), 7), r[2]])
    if "{H}" in FLOAT_FORMS[form]:                                # a 16-bit source (a's low half): all of them
        a = np.concatenate([a, np.arange(65536, dtype=np.uint32)])
        b, c = (np.concatenate([x, np.zeros(65536, np.uint32)]) for x in (b, c))
    module = load_ptx(_form_kernel(FLOAT_FORMS[form], 8))
    grid, arrays = _inputs(a, b, c)
    ref, fast, diffs = compare_engines(module, "k", grid, 32, arrays)
    assert not diffs, diffs
    assert "error" not in ref and fast["fast_executed"] == fast["instructions"]
    assert translation(module.program("k")).fast.all()


def test_fmath_equals_the_mufu_model_on_random_bits():
    """fastcore.fmath lane by lane against numerics.mufu (the model the H100 matched on every input) on
    random bits, exponents near the interesting binades and the edges, for every f32 form."""
    from numba import njit
    from emulator.machine.fastcore import fmath as F

    @njit
    def unary(form, ftz, xs, out, mptr, msz):
        for i in range(xs.size):        # (sin, cos, tanh: the mufu_x family's unary_x; the others unary)
            if form == F.SIN or form == F.COS or form == F.TANH:
                out[i] = F.unary_x(form, np.int64(xs[i]), mptr, msz)
            else:
                out[i] = F.unary(form, ftz, np.int64(xs[i]), mptr)

    @njit
    def div(full, ftz, a, b, out, mptr):
        for i in range(a.size):
            out[i] = F.div(full, ftz, np.int64(a[i]), np.int64(b[i]), mptr)

    tabs = MUFU.tables()
    keep = [tabs[n] for n in F.TABLES]
    mptr = np.array([t.ctypes.data for t in keep], np.int64)
    msz = np.array([t.size for t in keep], np.int64)
    rng = np.random.default_rng(7)
    n = 20000
    near = (rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32) & 0x807FFFFF) | (
        rng.integers(100, 160, n).astype(np.uint32) << 23)
    x = np.concatenate([FLOAT_EDGES, rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32), near])
    y = rng.permutation(x)
    y[::3] = (y[::3] & 0x807FFFFF) | (rng.integers(240, 256, y[::3].size).astype(np.uint32) << 23)
    out = np.zeros(x.size, np.int64)
    with np.errstate(all="ignore"):
        for form in MUFU_F32:
            if form.startswith("div"):
                div(form.startswith("div.full"), ".ftz." in form, x, y, out, mptr)
                want = MUFU.ptx_f32_div(np, form, x, y)
            else:
                unary(F.UNARY[form.split(".")[0]], ".ftz." in form, x, out, mptr, msz)
                want = MUFU.ptx_f32_unary(np, form, x)
            bad = np.flatnonzero(out.astype(np.uint32) != want)
            assert bad.size == 0, (form, [(hex(int(x[i])), hex(int(out[i])), hex(int(want[i]))) for i in bad[:4]])


@pytest.mark.parametrize("form", ["div.full.ftz.f32", "ex2.approx.f32", "fma.rn.ftz.f32", "contract pcsub",
                                  "contract div.full sub"])
def test_a_wrong_float_row_is_caught(form):
    """The comparison can fail: div.full.ftz run without .ftz, ex2.approx.f32 with it, fma.rn.ftz without it,
    a contracted sub (of a product, of a quotient) with its negation dropped: each differs."""
    e = FLOAT_EDGES
    module = load_ptx(_form_kernel(FLOAT_FORMS[form], 8))
    tr = translation(module.program("k"))
    ops = (T.FARITH, T.MUFU_DIVFMA) if form.startswith("contract") else (T.MUFU, T.MUFU_R, T.MUFU_DIV, T.FARITH)
    rows = np.flatnonzero(np.isin(tr.code[:, T.OP], ops))
    assert rows.size == 8
    field = T.Z if form.startswith("contract") else T.Y
    tr.code[rows, field] = (1 - tr.code[rows, field]) if field == T.Y else 0
    grid, arrays = _inputs(np.repeat(e, e.size), np.tile(e, e.size), np.roll(np.repeat(e, e.size), 3))
    ref, fast, diffs = compare_engines(module, "k", grid, 32, arrays)
    assert any("global allocation" in d for d in diffs)


@pytest.mark.parametrize("text", ["tanh.approx.ftz.f32 {D}, {A};", "ex2.approx.f64 {D}, {A};",
                                  "div.full.rn.f32 {D}, {A}, {B};", "rcp.rn.ftz.f32 {D}, {A};",
                                  "min.xorsign.abs.f32 {D}, {A}, {B};", "cvt.rz.f32.s32 {D}, {A};",
                                  "fma.rz.ftz.f32 {D}, {A}, {B}, {C};", "cvt.rn.satfinite.f16x2.f32 {D}, {A}, {B};"])
def test_float_forms_the_loop_does_not_hold_stay_with_the_executors(text):
    """Forms outside the float rows (unknown spellings, other rounding modes, .sat/.satfinite, .xorsign) are
    handed back or run as XROW rows (scalarx.py): the executor's result, or its error, on both engines."""
    module = load_ptx(_form_kernel(text, 2), validate=False)
    rng = np.random.default_rng(3)
    grid, arrays = _inputs(*rng.integers(0, 1 << 32, size=(3, 64), dtype=np.uint64).astype(np.uint32), per=2)
    ref, fast, diffs = compare_engines(module, "k", grid, 32, arrays)
    assert not diffs, diffs
    if "error" not in ref:                   # (an unknown spelling is refused before anything runs)
        tr = translation(module.program("k"))
        assert not np.isin(tr.code[:, T.OP], T.MUFU_ROWS + T.FLOAT_ROWS + (T.FCVT, T.MUFU_X, T.MUFU_R)).any()




# ---------------------------------------------------------------------------------------------------------
# cp.async (Ampere's asynchronous copies) in the loop: records, groups, waits, hazards, hand-backs

NSLOT = 8                   # 16-byte destination slots per thread: slot j of thread t at buf + (j * NT + t) * 16


def _cp_copy(rng, slot, nt, size=None):
    """One cp.async into ``slot``: every cp-size, .ca/.cg, src-size (none, constant, register), hints,
    destinations per thread, permuted across lanes, or one address for every lane (the last lane wins)."""
    if rng.random() < 0.05:             # a symbol (every lane, every warp: the same bytes)
        return f"cp.async.ca.shared.global [buf+{slot * nt * 16}], [%g0], 4;"
    size = size or int(rng.choice([4, 8, 16]))
    cache = "cg" if size == 16 and rng.random() < 0.5 else "ca"
    hint = str(rng.choice(["", "", "", ".L2::128B", ".L2::cache_hint", ".L2::64B.L2::cache_hint"]))
    off = int(rng.integers(0, 16 // size)) * size
    r = rng.random()
    if r < 0.7:
        dst = f"[%a0+{slot * nt * 16 + off}]"
    elif r < 0.8:
        dst = f"[%a1+{slot * nt * 16 + off}]"             # thread t ^ 1's bytes
    elif r < 0.9:
        dst = f"[%d1+{slot * nt * 16 + off}]"             # a 64-bit address register
    else:
        dst = f"[%a2+{slot * nt * 16 + off}]"              # the same bytes for every lane of the warp
    src = f"[%g0+{int(rng.integers(0, 64 // size)) * size}]"
    ops = [dst, src, str(size) if rng.random() < 0.8 else hex(size)]
    r = rng.random()
    if r < 0.25:
        ops.append(str(int(rng.choice([0, 1, size // 2, size - 1, size]))))
    elif r < 0.45:
        ops.append({4: "%z0", 8: "%z1", 16: "%z2"}[size])     # tid % (size + 1): every src-size of a lane
    elif r < 0.5:
        ops.append("%p0")                                    # ignore-src: the reference executes it
    if "cache_hint" in hint:
        ops.append("%d3")
    return f"cp.async.{cache}.shared.global{hint} {', '.join(ops)};"


def cp_kernel(rng, n=30, nt=64):
    """A random cp.async pipeline: copies into per-thread slots, commits, waits (every N, wait_all), reads and
    writes of the slots (a hazard when the copy is still in flight), guards, divergent branches, instructions
    handed back to the reference mid-pipeline, barriers."""
    pending = {}             # slot -> group (None: not committed); guarded or divergent commits and waits are
    groups = 0               # left out (the copies stay pending), so that most kernels run to their end
    used = {j: -1 for j in range(NSLOT)}
    body = []
    labels = 0

    def op(inside):
        nonlocal groups
        r = rng.random()
        guard = f"@{'!' if rng.random() < 0.5 else ''}{rng.choice(['%p0', '%p1', '%p2'])} " \
            if rng.random() < 0.15 else ""
        if r < 0.35:
            free = sorted((used[j], j) for j in range(NSLOT) if j not in pending)
            slot = free[0][1] if free and rng.random() < 0.95 else int(rng.integers(NSLOT))
            pending[slot] = None
            used[slot] = len(body)
            return guard + _cp_copy(rng, slot, nt)
        sure = not (guard or inside)
        guard = guard if rng.random() < 0.5 else ""
        if r < 0.5:
            if sure:
                for j in pending:
                    if pending[j] is None:
                        pending[j] = groups
                groups += 1
            return guard + "cp.async.commit_group;"
        if r < 0.62:
            if rng.random() < 0.25:
                if sure:
                    pending.clear()
                return guard + "cp.async.wait_all;"
            keep = int(rng.choice([0, 1, 2, 3]))
            for j in list(pending):
                if sure and pending[j] is not None and pending[j] < groups - keep:
                    del pending[j]
            return guard + f"cp.async.wait_group {keep};"
        if r < 0.8:
            done = [j for j in range(NSLOT) if j not in pending]
            slot = int(rng.choice(done)) if done and rng.random() < 0.9 else int(rng.integers(NSLOT))
            k = int(rng.integers(4))
            if rng.random() < 0.6:
                return guard + f"ld.shared.v4.u32 {{%r0, %r1, %r2, %r3}}, [%a0+{slot * nt * 16}];"
            if rng.random() < 0.5:
                return guard + f"ld.shared.u32 %r{4 + k % 3}, [%a1+{slot * nt * 16 + 4 * k}];"
            return guard + f"st.shared.u32 [%a0+{slot * nt * 16 + 4 * k}], %r{k};"
        if r < 0.88:
            return str(rng.choice(["popc.b32 %r6, %r5;", "add.u32 %r5, %r5, %r0;", "xor.b32 %r4, %r4, %r1;",
                                   "prmt.b32 %r5, %r0, %r1, 0x3210;"]))
        if r < 0.92 and not inside:
            return "bar.sync 0;"
        return "add.u32 %r4, %r4, 1;"

    i = 0
    while i < n:
        if rng.random() < 0.12:
            k = int(rng.integers(1, 5))
            body.append(f"@{'!' if rng.random() < 0.5 else ''}{rng.choice(['%p0', '%p1', '%p2'])} bra L{labels};")
            body += [op(True) for _ in range(k)]
            body.append(f"L{labels}:")
            labels += 1
            i += k
        else:
            body.append(op(False))
            i += 1
    if rng.random() < 0.7:
        body.append("cp.async.wait_all;")
    stores = [f"st.global.u32 [%g1+{4 * k}], %r{k};" for k in range(7)]
    lines = "\n    ".join(body + stores)
    return f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 psrc, .param .u64 pout)
{{
    .reg .b32 %r<7>; .reg .b32 %t<3>; .reg .b32 %a<3>; .reg .b32 %z<3>; .reg .b64 %g<2>; .reg .b64 %d<4>;
    .reg .pred %p<3>;
    .shared .align 16 .b8 buf[{NSLOT * nt * 16}];
    ld.param.u64 %g0, [psrc];
    ld.param.u64 %g1, [pout];
    mov.u32 %t0, %tid.x;
    mul.wide.u32 %d0, %t0, 64;
    add.s64 %g0, %g0, %d0;
    mul.wide.u32 %d0, %t0, 28;
    add.s64 %g1, %g1, %d0;
    mov.u32 %a0, buf;
    shl.b32 %t1, %t0, 4;
    add.u32 %a0, %a0, %t1;
    xor.b32 %t2, %t0, 1;
    shl.b32 %t2, %t2, 4;
    mov.u32 %a1, buf;
    add.u32 %a1, %a1, %t2;
    cvt.u64.u32 %d1, %a0;
    and.b32 %t2, %t1, 0xFFFFFE00;
    mov.u32 %a2, buf;
    add.u32 %a2, %a2, %t2;
    rem.u32 %z0, %t0, 5;
    rem.u32 %z1, %t0, 9;
    rem.u32 %z2, %t0, 17;
    and.b32 %t2, %t0, 1;
    setp.ne.u32 %p0, %t2, 0;
    and.b32 %t2, %t0, 6;
    setp.eq.u32 %p1, %t2, 0;
    setp.lt.u32 %p2, %t0, 20;
    mov.u64 %d3, 0x1000000000000000;
    mov.u32 %r0, 1; mov.u32 %r1, 2; mov.u32 %r2, 3; mov.u32 %r3, 4; mov.u32 %r4, 5; mov.u32 %r5, 6; mov.u32 %r6, 7;
    {lines}
    ret;
}}
"""


def _cp_inputs(rng, nt):
    return [rng.integers(0, 256, nt * 64, dtype=np.uint8), np.zeros(nt * 7, np.uint32)]


@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None, derandomize=EXAMPLES <= 100,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), nthreads=st.sampled_from([32, 64, 48]))
def test_random_cp_async_pipelines_are_identical_on_both_engines(seed, nthreads):
    rng = np.random.default_rng(seed)
    text = cp_kernel(rng, int(rng.integers(10, 50)), nthreads)
    module = load_ptx(text)
    ref, fast, diffs = compare_engines(module, "k", 1, nthreads, _cp_inputs(rng, nthreads))
    assert not diffs, (diffs, text)
    if "error" not in ref:
        assert fast["fast_executed"] > 0


PIPE = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 psrc, .param .u64 pout)
{
    .reg .b32 %r<8>; .reg .b64 %g<2>; .reg .b64 %d<1>; .reg .b32 %a<1>; .reg .b32 %z<1>; .reg .b32 %t<2>;
    .reg .pred %p<1>; .reg .b64 %m;
    .shared .align 16 .b8 buf[SMEM];
    .shared .align 8 .b64 mbar;
    ld.param.u64 %g0, [psrc];
    ld.param.u64 %g1, [pout];
    mov.u32 %t0, %tid.x;
    mul.wide.u32 %d0, %t0, 64;
    add.s64 %g0, %g0, %d0;
    mul.wide.u32 %d0, %t0, 32;
    add.s64 %g1, %g1, %d0;
    mov.u32 %a0, buf;
    shl.b32 %t1, %t0, 4;
    add.u32 %a0, %a0, %t1;
    rem.u32 %z0, %t0, 17;
    and.b32 %t1, %t0, 1;
    setp.ne.u32 %p0, %t1, 0;
    PRE
    cp.async.ca.shared.global [%a0+S0], [%g0], 4;
    cp.async.ca.shared.global [%a0+S0+4], [%g0+4], 4, 3;
    cp.async.ca.shared.global [%a0+S0+8], [%g0+8], 8, 0;
    cp.async.commit_group;
    cp.async.ca.shared.global [%a0+S1], [%g0+16], 8;
    MID1
    cp.async.ca.shared.global [%a0+S1+8], [%g0+24], 8, 5;
    cp.async.commit_group;
    cp.async.cg.shared.global [%a0+S2], [%g0+32], 16, %z0;
    cp.async.commit_group;
    cp.async.ca.shared.global.L2::128B [%a0+S3], [%g0+48], 16;
    MID2
    cp.async.commit_group;
    cp.async.cg.shared.global.L2::256B [%a0+S4], [%g0+16], 16, 9;
    cp.async.wait_group 3;
    ld.shared.v4.u32 {%r0, %r1, %r2, %r3}, [%a0+S0];
    MID3
    cp.async.wait_group 2;
    ld.shared.v2.u32 {%r4, %r5}, [%a0+S1+8];
    cp.async.wait_group 1;
    ld.shared.u32 %r6, [%a0+S2+12];
    LAST
    ld.shared.u32 %r7, [%a0+S4+8];
    st.global.v4.u32 [%g1], {%r0, %r1, %r2, %r3};
    st.global.v4.u32 [%g1+16], {%r4, %r5, %r6, %r7};
    ret;
}
"""


def pipe_kernel(nt, pre="", mid1="", mid2="", mid3="", last="cp.async.wait_all;"):
    text = PIPE.replace("SMEM", str(6 * nt * 16))
    for k in range(6):
        text = text.replace(f"S{k}", str(k * nt * 16))
    return text.replace("PRE", pre).replace("MID1", mid1).replace("MID2", mid2).replace("MID3", mid3) \
        .replace("LAST", last)


def pipe_expected(src, nt):
    """The shared memory the pipeline leaves: slot k of thread t at (k * nt + t) * 16 (numpy, from the PTX
    rules: src-size bytes copied, the rest of cp-size zero)."""
    s = src.reshape(nt, 64)
    smem = np.zeros((6, nt, 16), np.uint8)
    smem[0, :, 0:4] = s[:, 0:4]
    smem[0, :, 4:7] = s[:, 4:7]
    smem[1, :, 0:8] = s[:, 16:24]
    smem[1, :, 8:13] = s[:, 24:29]
    for t in range(nt):
        smem[2, t, :t % 17] = s[t, 32:32 + t % 17]
    smem[3] = s[:, 48:64]
    smem[4, :, 0:9] = s[:, 16:25]
    return smem.reshape(-1)


@pytest.mark.parametrize("nt", [32, 96, 40])
def test_cp_async_pipeline_runs_in_the_loop(nt):
    """Every cp-size, .ca/.cg, src-size zero fill (constants and a register), four groups and wait_group 3, 2,
    1, wait_all: the loop runs every instruction, both engines leave the shared memory the PTX rules give."""
    rng = np.random.default_rng(nt)
    src = rng.integers(0, 256, nt * 64, dtype=np.uint8)
    module = load_ptx(pipe_kernel(nt))
    ref, fast, diffs = compare_engines(module, "k", 1, nt, [src, np.zeros(nt * 8, np.uint32)])
    assert not diffs, diffs
    assert "error" not in ref, ref["error"]
    want = pipe_expected(src, nt)
    for out in (ref, fast):
        for (_, _), (_, smem, *_rest) in out["warps"].items():
            assert smem[:want.size].tobytes() == want.tobytes()
    tr = translation(module.program("k"))
    slow = [module.program("k").code[p].instr.text for p in np.flatnonzero(tr.code[:, T.OP] == T.SLOW)]
    assert not slow, slow
    assert fast["fast_executed"] == fast["instructions"]          # every instruction (the rem too) in the loop
    ops = {T.NAMES[int(o)] for o in tr.code[:, T.OP]}
    assert {"CPASYNC", "CP_COMMIT", "CP_WAIT"} <= ops


@pytest.mark.parametrize("variant", [
    dict(mid1="popc.b32 %r7, %r0;", mid2="cp.async.ca.shared.global [%a0+S5], [%g0+60], 4, %p0;"),  # ignore-src
    dict(mid1="cp.async.ca.shared.global [%a0+S5], [%g0+60], 4, %p0;", mid3="popc.b32 %r7, %r0;",
         last="cp.async.commit_group; cp.async.wait_group 0;"),
    dict(mid2="@%p0 bra SKIP; cp.async.commit_group; SKIP:",                            # lanes' groups differ
         mid3="bar.sync 0; mov.u32 %r7, %clock;"),                                      # (the reference runs it)
    dict(pre="mbarrier.init.shared.b64 [mbar], 1000;",                                 # the Python scheduler
         last="cp.async.mbarrier.arrive.noinc.shared.b64 [mbar];"),
])
def test_cp_async_hand_backs_mid_pipeline(variant):
    """Instructions the reference runs between the loop's copies, commits and waits (an ignore-src copy, a
    commit and wait of cp.async.mbarrier.arrive): one state for both engines."""
    nt = 64
    rng = np.random.default_rng(3)
    src = rng.integers(0, 256, nt * 64, dtype=np.uint8)
    text = pipe_kernel(nt, **variant)
    for k in range(6):
        text = text.replace(f"S{k}", str(k * nt * 16))
    module = load_ptx(text)
    ref, fast, diffs = compare_engines(module, "k", 1, nt, [src, np.zeros(nt * 8, np.uint32)])
    assert not diffs, diffs
    assert "error" not in ref, ref["error"]
    assert 0 < fast["fast_executed"] < fast["instructions"]


@pytest.mark.parametrize("change, error", [
    (dict(mid3="ld.shared.u32 %r7, [%a0+S1];"), "reads shared bytes"),                # group 1 still in flight
    (dict(mid3="st.shared.u32 [%a0+S2+4], %r1;"), "overwrites shared bytes"),
    (dict(mid1="cp.async.ca.shared.global [%a0+S0+4], [%g0], 4;"), "overwrites shared bytes"),   # at issue
    (dict(mid1="ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r7}, [%a0+S0];"), "reads shared bytes"),
    (dict(mid1="stmatrix.sync.aligned.m8n8.x1.shared.b16 [%a0+S0], {%r7};"), "overwrites shared bytes"),
    (dict(mid1="stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%a0+S5+8], {%r7, %r1};"), "aligned"),
    (dict(mid1="stmatrix.sync.aligned.m8n8.x4.shared.b16 [%a0+S6], {%r7, %r1, %r7, %r1};"), "outside shared"),
    (dict(last="cp.async.wait_group 1;"), "reads shared bytes"),                       # S4 not committed
    (dict(mid1="cp.async.ca.shared.global [%a0+S5], [%g0], 8, %z0;"), "src-size"),
    (dict(mid1="cp.async.cg.shared.global [%a0+S5+8], [%g0], 16;"), "aligned"),
    (dict(mid1="cp.async.ca.shared.global [%a0+S5], [%g0+2], 4, 0;"), "aligned"),      # src-size 0 too
    (dict(mid1="cp.async.ca.shared.global [%a0+S5], [%g0+0x7000000], 4, 1;"), "outside every global"),
    (dict(mid1="cp.async.ca.shared.global [%a0+S6], [%g0], 4;"), "outside shared"),
])
def test_cp_async_errors_are_the_references(change, error):
    nt = 64
    rng = np.random.default_rng(4)
    src = rng.integers(0, 256, nt * 64, dtype=np.uint8)
    text = pipe_kernel(nt, **change)
    for k in range(7):
        text = text.replace(f"S{k}", str(k * nt * 16))
    if "stmatrix" in text:
        text = text.replace(".target sm_80", ".target sm_90")
    module = load_ptx(text)
    ref, fast, diffs = compare_engines(module, "k", 1, nt, [src, np.zeros(nt * 8, np.uint32)])
    assert not diffs, diffs
    assert "error" in ref and error in ref["error"][1], ref.get("error")


def test_cp_async_with_src_size_zero_reads_nothing():
    """src-size 0 from an address outside every allocation is legal: nothing is read, zeros land."""
    nt = 32
    text = pipe_kernel(nt, mid1="cp.async.ca.shared.global [%a0+S5], [%g0+0x7000000], 8, 0;")
    text = text.replace("S5", str(5 * nt * 16))
    ref, fast, diffs = compare_engines(load_ptx(text), "k", 1, nt, [np.ones(nt * 64, np.uint8),
                                                                      np.zeros(nt * 8, np.uint32)])
    assert not diffs and "error" not in ref, (diffs, ref.get("error"))


def test_a_wrong_cp_async_is_caught():
    """The comparison can fail: a wait_group that keeps one group fewer in flight, or a commit that is lost,
    shows up (as pending copies, shared memory, or an error only one engine raises)."""
    nt = 32
    src = np.arange(nt * 64, dtype=np.uint32).astype(np.uint8)
    text = pipe_kernel(nt, last="cp.async.wait_group 1;").replace("ld.shared.u32 %r7", "mov.u32 %r7, 0; //")
    for opc, field, value in ((T.CP_WAIT, T.X, 0), (T.CP_COMMIT, T.OP, T.NOP), (T.CPASYNC, T.X, 8)):
        module = load_ptx(text)
        tr = translation(module.program("k"))
        rows = np.flatnonzero((tr.code[:, T.OP] == opc) & ((opc != T.CPASYNC) | (tr.code[:, T.X] == 16) &
                                                           (tr.code[:, T.C] == -1)))     # 16 bytes, no src-size
        tr.code[rows[-1], field] = value
        ref, fast, diffs = compare_engines(module, "k", 1, nt, [src, np.zeros(nt * 8, np.uint32)])
        assert diffs, (opc, field)


def test_cp_async_fills_the_access_log_and_eager_mode():
    """More cp.async than the loop's access log holds (the loop returns to empty it), in the default mode and
    in the eager one (copies land at issue: the loop hands every copy back)."""
    from emulator import WarpOptions
    text = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 psrc, .param .u64 pout)
{
    .reg .b32 %r<4>; .reg .b64 %g<2>; .reg .b64 %d<1>; .reg .b32 %a<1>; .reg .pred %p;
    .shared .align 16 .b8 buf[2048];
    ld.param.u64 %g0, [psrc];
    ld.param.u64 %g1, [pout];
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %d0, %r0, 16;
    add.s64 %g0, %g0, %d0;
    add.s64 %g1, %g1, %d0;
    mov.u32 %a0, buf;
    shl.b32 %r1, %r0, 4;
    add.u32 %a0, %a0, %r1;
    mov.u32 %r2, 0;
L:
    cp.async.cg.shared.global [%a0], [%g0], 16;
    cp.async.ca.shared.global [%a0+1024], [%g0+4], 4;
    cp.async.wait_all;
    ld.shared.u32 %r3, [%a0+1024];
    add.u32 %r2, %r2, %r3;
    add.u32 %r1, %r1, 1;
    setp.lt.u32 %p, %r1, 700;
    @%p bra L;
    st.global.u32 [%g1], %r2;
    ret;
}
"""
    src = np.arange(64 * 16, dtype=np.uint32).astype(np.uint8)
    module = load_ptx(text)
    for options in (None, WarpOptions(cp_async="eager"), WarpOptions(bank_log=1500)):
        ref, fast, diffs = compare_engines(module, "k", 1, 64, [src, np.zeros(64 * 4, np.uint32)], options=options,
                                           max_instructions=10 ** 6)
        assert not diffs, (options, diffs)
        assert "error" not in ref, ref["error"]


def test_cp_async_records_grow_past_the_first_table():
    """More copies in flight than a warp's first record table holds (a loop that issues 48 copies before it
    waits, from one cp.async row: the table starts at cpasync.RECORDS): the loop hands the copy back, the
    reference's issue grows the table, the loop goes on with the larger one; the translation keeps the grown size,
    so that the next launch starts with it and hands nothing back."""
    from emulator.machine.fastcore import cpasync
    n = 3 * cpasync.RECORDS
    text = f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 psrc)
{{
    .reg .b32 %r<3>; .reg .b64 %g<1>; .reg .b64 %d<1>; .reg .b32 %a<1>; .reg .pred %p<2>;
    .shared .align 16 .b8 buf[{64 * n}];
    ld.param.u64 %g0, [psrc];
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %d0, %r0, 16;
    add.s64 %g0, %g0, %d0;
    mov.u32 %a0, buf;
    shl.b32 %r1, %r0, 2;
    and.b32 %r1, %r1, 60;
    add.u32 %a0, %a0, %r1;
    mov.u32 %r2, 0;
LOOP:
    cp.async.ca.shared.global [%a0], [%g0+4], 4;
    rem.u32 %r1, %r2, 5;
    setp.eq.u32 %p1, %r1, 4;
    @%p1 cp.async.commit_group;
    add.u32 %a0, %a0, 64;
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p0, %r2, {n};
    @%p0 bra LOOP;
    cp.async.wait_group 2;
    ret;
}}
"""
    module = load_ptx(text)
    src = np.arange(256, dtype=np.uint32).astype(np.uint8)
    ref, fast, diffs = compare_engines(module, "k", 1, 16, [src])
    assert not diffs, diffs
    assert "error" not in ref, ref["error"]
    assert sum(len(p[0]) for p in fast["cp_async"].values()) > 0       # the last groups still in flight
    assert fast["fast_executed"] == fast["instructions"] - 2             # two hand-backs: 16 -> 32 -> 64 records
    ref, fast, diffs = compare_engines(module, "k", 1, 16, [src])      # the same translation: 64 records at once
    assert not diffs, diffs
    assert fast["fast_executed"] == fast["instructions"]


def test_cp_async_records_start_as_many_as_the_copy_rows():
    """A pipeline's prologue with more copy rows than cpasync.RECORDS before its first wait (CuTe's Hopper tutorial
    GEMM with cp.async: 48 copies a warp in flight) runs without a hand-back, equal to the H100's output, and both
    engines end with the same registers and memory."""
    import corpus_lib
    from emulator.machine.fastcore.engine import handback_counts
    case = corpus_lib.load_all()["cute_tutorial_wgmma_cpasync_tn_sm90a"]
    got, res, _ = corpus_lib.replay(case, engine="fast")
    assert corpus_lib.mismatches(case, got) == []
    back = {}
    for prog in {id(w.program): w.program for _, ws in res.ctas for w in ws}.values():
        for k, v in handback_counts(prog).items():
            back[k] = back.get(k, 0) + v
    assert back == {}
    got_r, ref = replay_outcome(case, "reference")
    got_f, fast = replay_outcome(case, "fast")
    assert corpus_lib.mismatches(case, got_r) == [] and corpus_lib.mismatches(case, got_f) == []
    assert not differences(ref, fast)


def test_cvta_to_and_from_global_and_shared_is_a_move():
    """cvta{.to}.{global,shared}: identity conversions (KernelWarp.cvta) the loop runs as moves."""
    text = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pout)
{
    .reg .b32 %r<4>; .reg .b64 %d<5>;
    .shared .align 16 .b8 buf[512];
    ld.param.u64 %d0, [pout];
    cvta.to.global.u64 %d1, %d0;
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %d2, %r0, 16;
    add.s64 %d1, %d1, %d2;
    mov.u64 %d3, buf;
    cvta.shared.u64 %d3, %d3;
    cvt.u32.u64 %r1, %d3;
    cvta.to.shared.u32 %r1, %r1;
    mov.u32 %r2, buf;
    cvta.shared.u32 %r3, %r2;
    cvta.global.u64 %d4, %d1;
    st.global.v2.u32 [%d1], {%r1, %r3};
    st.global.u64 [%d4+8], %d3;
    ret;
}
"""
    module = load_ptx(text)
    ref, fast, diffs = compare_engines(module, "k", 1, 32, [np.zeros(32 * 4, np.uint32)])
    assert not diffs and "error" not in ref, (diffs, ref.get("error"))
    tr = translation(module.program("k"))
    assert (tr.code[:, T.OP] != T.SLOW).all()


CORPUS_CP_ASYNC = ["nvcc_pipeline_copy_sm80", "cute_hgemm_tn_sm80", "triton_matmul_int8_64x64_sm80",
                   "triton_matmul_f32_ieee_sm80"]


@pytest.mark.parametrize("name", CORPUS_CP_ASYNC)
def test_corpus_cp_async_kernels_are_identical_on_both_engines(name):
    """Compiler-written cp.async pipelines (nvcc's cuda_pipeline, CuTe, Triton, WMMA) on both engines:
    memory, registers, shared memory, bank logs and the copies still in flight (test_corpus checks the bits
    against the H100)."""
    case = _corpus()[name]

    ref, fast = replay_outcome(case, "reference")[1], replay_outcome(case, "fast")[1]
    assert not differences(ref, fast)
    assert any(rec[1].startswith("cp.async") for w in fast["warps"].values() for rec in w[4])


_CORPUS = {}


def _corpus():
    if not _CORPUS:
        import corpus_lib
        _CORPUS.update(corpus_lib.load_all())
    return _CORPUS


def test_cp_async_addresses_wrap_as_the_references():
    """A 32-bit address register plus an offset wraps at 2^32 (``ops.common.address``): lane 0, predicated off,
    logs the wrapped address too, so the loop computes it the same way."""
    nt = 32
    text = pipe_kernel(nt, mid1="mul.lo.u32 %t1, %t0, 16; sub.u32 %t1, %t1, 16; "
                                "@%p0 cp.async.ca.shared.global [%t1+S6], [%g0], 4;")
    text = text.replace("S6", str(5 * nt * 16 + 16))
    ref, fast, diffs = compare_engines(load_ptx(text), "k", 1, nt, [np.ones(nt * 64, np.uint8),
                                                                      np.zeros(nt * 8, np.uint32)])
    assert not diffs, diffs
    assert "error" not in ref, ref["error"]
    rec = next(r for r in ref["warps"][((0, 0, 0), 0)][4] if "%t1" in r[0])
    assert rec[2][0] == 5 * nt * 16 and not rec[4][0]           # lane 0: 0xFFFFFFF0 + offset, wrapped


@pytest.mark.parametrize("access", ["@%p ld.shared.u32 %r2, [%r1+-16];", "@%p st.shared.u32 [%r1+4294967280], %r0;",
                                    "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r2}, [%r1+-16];"])
def test_ld_st_ldmatrix_addresses_wrap_as_the_references(access):
    """[%r+off] with a 32-bit register wraps at 2^32 (``ops.common.address``): the address of lane 0 (predicated
    off; for ldmatrix .x1, lane 31, whose address is not used) shows in the access log, wrapped."""
    text = f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pout)
{{
    .reg .b32 %r<4>; .reg .pred %p;
    .shared .align 16 .b8 buf[1024];
    mov.u32 %r0, %tid.x;
    shl.b32 %r1, %r0, 4;
    add.u32 %r1, %r1, 16;
    setp.ne.u32 %p, %r0, 0;
    @!%p mov.u32 %r1, 0;
    {access}
    ret;
}}
"""
    if "ldmatrix" in access:
        text = text.replace("@!%p mov.u32 %r1, 0;", "setp.eq.u32 %p, %r0, 31; @%p mov.u32 %r1, 0;")
    ref, fast, diffs = compare_engines(load_ptx(text), "k", 1, 32, [np.zeros(4, np.uint32)])
    assert not diffs, diffs
    assert "error" not in ref, ref["error"]
    assert fast["fast_executed"] == fast["instructions"]
