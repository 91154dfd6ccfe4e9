"""The fast engine's integer, bit, half-precision, conversion, warp-collective and atomic rows (fastcore/scalarx.py,
fastcore/atomics.py) against the reference executors: every form over edge values (zeros, extremes, signs,
subnormals, infinities, NaN payloads, shift and field amounts around 32 and 64, zero divisors) and random bits,
compared bit for bit (registers, memory, shared-memory access logs), with every instruction run in the loop
and none handed back. The comparison can fail (a wrong row is caught), and a lane that breaks a rule hands
the row back so that the executor raises its own error."""
import numpy as np
import pytest

from emulator import EmulatorError, load_ptx
from emulator.machine.fastcore import table as T
from emulator.machine.fastcore.engine import handback_counts, translation
from engines import differences, launch_outcome

INT_EDGES = np.array([0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 255, 256, 0x1F1F, 0x2008, 0x7FFF, 0x8000,
                      0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF, 0x12345678,
                      0xDEADBEEF, 0xAAAAAAAA, 0x00FF00FF, 0xFF00FF00], np.uint32)
HALF_EDGES = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x7BFF, 0xFBFF,
                       0x7C00, 0xFC00, 0x7C01, 0x7E00, 0xFE01, 0x7FFF, 0x3555, 0x0200, 0x5BFF,       # f16
                       0x007F, 0x0080, 0x3F80, 0x7F7F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF, 0x4049, 0x3EAB,
                       0x8080], np.uint32)                                                               # bf16
F32_EDGES = np.array([0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F800000, 0xBF800000,
                      0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF,
                      0x477FE000, 0x477FF000, 0x477FF001, 0x33800000, 0x33000001, 0x38800000, 0x387FC000,
                      0x387FE000, 0x00FFFFFF, 0x3F7FFFFF, 0x4B000001, 0x7F7F8000, 0x7F7FC000, 0x3FC00000,
                      0xC7800000, 0x337FFFFF, 0x33800001, 0x34000000], np.uint32)

# template: {D} the 32-bit result, {A} {B} {C} 32-bit sources; %x<4> 64-bit, %h<4> 16-bit, %t<4> 32-bit scratch,
# %p<4> predicates
FORMS = {
    "lop3 96": "lop3.b32 {D}, {A}, {B}, {C}, 0x96;",
    "lop3 e8": "lop3.b32 {D}, {A}, {B}, {C}, 0xE8;",
    "lop3 imm": "lop3.b32 {D}, {A}, 0x0F0F00FF, {C}, 0x1B;",
    "popc": "popc.b32 {D}, {A};",
    "popc.b64": "mov.b64 %x0, {{{A}, {B}}}; popc.b64 {D}, %x0;",
    "clz": "clz.b32 {D}, {A};",
    "clz.b64": "mov.b64 %x0, {{{A}, {B}}}; clz.b64 {D}, %x0;",
    "brev": "brev.b32 {D}, {A};",
    "brev.b64": "mov.b64 %x0, {{{A}, {B}}}; brev.b64 %x1, %x0; mov.b64 {{%t0, %t1}}, %x1; xor.b32 {D}, %t0, %t1;",
    "bfind.u32": "bfind.u32 {D}, {A};",
    "bfind.s32": "bfind.s32 {D}, {A};",
    "bfind.shiftamt.s64": "mov.b64 %x0, {{{A}, {B}}}; bfind.shiftamt.s64 {D}, %x0;",
    "bfi.b32": "shr.u32 %t0, {C}, 8; bfi.b32 {D}, {A}, {B}, {C}, %t0;",
    "bfi.b64": "shr.u32 %t0, {C}, 8; mov.b64 %x0, {{{A}, {B}}}; mov.b64 %x1, {{{B}, {A}}}; "
               "bfi.b64 %x2, %x0, %x1, {C}, %t0; mov.b64 {{%t1, %t2}}, %x2; xor.b32 {D}, %t1, %t2;",
    "bfi imm": "bfi.b32 {D}, {A}, {B}, 5, 9;",
    **{f"prmt.{m}": f"prmt.b32.{m} {{D}}, {{A}}, {{B}}, {{C}};" for m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")},
    "shf.l.wrap": "shf.l.wrap.b32 {D}, {A}, {B}, {C};",
    "shf.r.clamp": "shf.r.clamp.b32 {D}, {A}, {B}, {C};",
    "shf.l.clamp": "shf.l.clamp.b32 {D}, {A}, {B}, {C};",
    "shf.r.wrap": "shf.r.wrap.b32 {D}, {A}, {B}, {C};",
    "div.u32": "div.u32 {D}, {A}, {B};",
    "div.s32": "div.s32 {D}, {A}, {B};",
    "rem.u32": "rem.u32 {D}, {A}, {B};",
    "rem.s32": "rem.s32 {D}, {A}, {B};",
    "div.s32 imm": "div.s32 {D}, {A}, -7;",
    "div.u64": "mov.b64 %x0, {{{A}, {B}}}; mov.b64 %x1, {{{C}, {A}}}; div.u64 %x2, %x0, %x1; "
               "mov.b64 {{%t1, %t2}}, %x2; xor.b32 {D}, %t1, %t2;",
    "div.s64": "mov.b64 %x0, {{{A}, {B}}}; mov.b64 %x1, {{{C}, {B}}}; div.s64 %x2, %x0, %x1; "
               "mov.b64 {{%t1, %t2}}, %x2; xor.b32 {D}, %t1, %t2;",
    "rem.s64": "mov.b64 %x0, {{{A}, {B}}}; cvt.s64.s32 %x1, {C}; rem.s64 %x2, %x0, %x1; "
               "mov.b64 {{%t1, %t2}}, %x2; xor.b32 {D}, %t1, %t2;",
    "div.s16": "cvt.u16.u32 %h0, {A}; cvt.u16.u32 %h1, {B}; div.s16 %h2, %h0, %h1; cvt.u32.u16 {D}, %h2;",
    "bmsk.clamp": "bmsk.clamp.b32 {D}, {A}, {B};",
    "bmsk.wrap": "bmsk.wrap.b32 {D}, {A}, {B};",
    "szext.clamp.s32": "szext.clamp.s32 {D}, {A}, {B};",
    "szext.wrap.u32": "szext.wrap.u32 {D}, {A}, {B};",
    "szext.wrap.s32": "szext.wrap.s32 {D}, {A}, {B};",
    "carry add": "add.cc.u32 %t0, {A}, {B}; addc.cc.u32 %t1, {C}, {A}; addc.u32 %t2, {B}, 0; "
                 "xor.b32 {D}, %t0, %t1; xor.b32 {D}, {D}, %t2;",
    "carry sub": "sub.cc.u32 %t0, {A}, {B}; subc.cc.s32 %t1, {C}, {A}; subc.u32 %t2, {B}, {C}; "
                 "xor.b32 {D}, %t0, %t1; xor.b32 {D}, {D}, %t2;",
    "carry mad": "mad.lo.cc.u32 %t0, {A}, {B}, {C}; madc.hi.cc.s32 %t1, {A}, {B}, {C}; madc.hi.u32 %t2, {C}, {B}, 5; "
                 "xor.b32 {D}, %t0, %t1; xor.b32 {D}, {D}, %t2;",
    "carry 64": "mov.b64 %x0, {{{A}, {B}}}; mov.b64 %x1, {{{C}, {A}}}; add.cc.u64 %x2, %x0, %x1; "
                "madc.hi.cc.s64 %x3, %x0, %x1, %x2; subc.cc.u64 %x2, %x3, %x0; madc.lo.u64 %x3, %x2, %x1, %x0; "
                "mov.b64 {{%t1, %t2}}, %x3; xor.b32 {D}, %t1, %t2;",
    "mov pack/unpack": "mov.b32 {{%h0, %h1}}, {A}; mov.b32 {D}, {{%h1, %h0}}; mov.b32 {{_, %h2}}, {B}; "
                       "mov.b64 %x0, {{%h2, %h0, %h1, %h2}}; mov.b64 {{%t0, _}}, %x0; add.u32 {D}, {D}, %t0;",
    **{f"{op}.{t}": (f"mov.b32 {{{{%h0, %h1}}}}, {{A}}; mov.b32 {{{{%h2, %h3}}}}, {{B}}; " +
                     f"{op}{'.rn' if op == 'fma' else ''}.{t} %h0, %h0, %h2{', %h3' if op == 'fma' else ''}; "
                     f"cvt.u32.u16 {{D}}, %h0;")
       for op in ("add", "sub", "mul", "fma") for t in ("f16", "bf16")},
    **{f"{op}.{t}": f"{op}{'.rn' if op != 'sub' else ''}.{t} {{D}}, {{A}}, {{B}}{', {C}' if op == 'fma' else ''};"
       for op in ("add", "sub", "mul", "fma") for t in ("f16x2", "bf16x2")},
    "cvt.bf16.f16": "cvt.u16.u32 %h0, {A}; cvt.rn.bf16.f16 %h1, %h0; cvt.u32.u16 {D}, %h1;",
    "cvt.f16.bf16": "cvt.u16.u32 %h0, {A}; cvt.rn.f16.bf16 %h1, %h0; cvt.u32.u16 {D}, %h1;",
    "cvt.f32.f16": "cvt.u16.u32 %h0, {A}; cvt.f32.f16 {D}, %h0;",
    "cvt.f32.bf16 rn": "cvt.u16.u32 %h0, {A}; cvt.f32.bf16 {D}, %h0;",
    "cvt.f64.f32": "cvt.f64.f32 %x0, {A}; mov.b64 {{%t0, %t1}}, %x0; xor.b32 {D}, %t0, %t1;",
    "cvt.f64.f16": "cvt.u16.u32 %h0, {A}; cvt.f64.f16 %x0, %h0; mov.b64 {{%t0, %t1}}, %x0; xor.b32 {D}, %t0, %t1;",
    "cvt.rn.f32.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rn.f32.f64 {D}, %x0;",
    "cvt.rn.f16.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rn.f16.f64 %h0, %x0; cvt.u32.u16 {D}, %h0;",
    "cvt.rn.bf16.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rn.bf16.f64 %h0, %x0; cvt.u32.u16 {D}, %h0;",
    "cvt.rn.bf16.f32": "cvt.rn.bf16.f32 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "cvt.f16x2.e4m3x2": "cvt.u16.u32 %h0, {A}; cvt.rn.f16x2.e4m3x2 {D}, %h0;",
    "cvt.relu.f16x2.e4m3x2": "cvt.u16.u32 %h0, {A}; cvt.rn.relu.f16x2.e4m3x2 {D}, %h0;",
    "cvt.f16x2.e5m2x2": "cvt.u16.u32 %h0, {A}; cvt.rn.f16x2.e5m2x2 {D}, %h0;",
    "cvt.relu.f16x2.e5m2x2": "cvt.u16.u32 %h0, {A}; cvt.rn.relu.f16x2.e5m2x2 {D}, %h0;",
    "vote": "setp.lt.u32 %p0, {A}, {B}; vote.sync.ballot.b32 %t0, %p0, -1; vote.sync.all.pred %p1, %p0, -1; "
            "vote.sync.any.pred %p2, %p0, -1; vote.sync.uni.pred %p3, %p0, 0xFFFFFFFF; selp.u32 %t1, 1, 0, %p1; "
            "selp.u32 %t2, 2, 0, %p2; selp.u32 %t3, 4, 0, %p3; add.u32 {D}, %t0, %t1; add.u32 {D}, {D}, %t2; "
            "add.u32 {D}, {D}, %t3;",
    "redux": "redux.sync.add.u32 %t0, {A}, -1; redux.sync.min.s32 %t1, {B}, -1; redux.sync.max.u32 %t2, {C}, -1; "
             "redux.sync.xor.b32 %t3, {A}, -1; xor.b32 {D}, %t0, %t1; xor.b32 {D}, {D}, %t2; xor.b32 {D}, {D}, %t3; "
             "redux.sync.max.s32 %t0, {A}, -1; redux.sync.min.u32 %t1, {C}, -1; redux.sync.and.b32 %t2, {B}, -1; "
             "redux.sync.or.b32 %t3, {C}, -1; add.u32 {D}, {D}, %t0; add.u32 {D}, {D}, %t1; add.u32 {D}, {D}, %t2; "
             "add.u32 {D}, {D}, %t3; redux.sync.add.s32 %t0, {B}, -1; add.u32 {D}, {D}, %t0;",
    "match": "and.b32 %t0, {A}, 3; match.any.sync.b32 %t1, %t0, -1; and.b32 %t2, {B}, 1; "
             "match.all.sync.b32 %t3|%p0, %t2, -1; selp.u32 %t2, 7, 0, %p0; mov.b64 %x0, {{%t0, %t2}}; "
             "match.any.sync.b64 %t0, %x0, -1; activemask.b32 %t2; add.u32 {D}, %t1, %t3; add.u32 {D}, {D}, %t0; "
             "add.u32 {D}, {D}, %t2;",
}
FORMS.update({
    "contract f16x2": "mul.f16x2 %t0, {A}, {B}; add.f16x2 {D}, %t0, {C};",
    "contract sub bf16x2": "mul.bf16x2 %t0, {A}, {B}; sub.bf16x2 {D}, {C}, %t0;",
    "contract sub f16": "mov.b32 {{%h0, %h1}}, {A}; mov.b32 {{%h2, %h3}}, {B}; mul.f16 %h0, %h0, %h2; "
                        "sub.f16 %h0, %h0, %h3; cvt.u32.u16 {D}, %h0;",
    "contract bf16": "mov.b32 {{%h0, %h1}}, {A}; mov.b32 {{%h2, %h3}}, {B}; mul.bf16 %h0, %h0, %h2; "
                     "add.bf16 %h0, %h3, %h0; cvt.u32.u16 {D}, %h0;",
})
FORMS.update({f"video {v}": v for v in (        # K_VIDEO rows: selectors, masks, merge, .sat, .add
    "vabsdiff4.u32.u32.u32 {D}, {A}, {B}, {C};", "vabsdiff4.add.u32.u32.u32 {D}, {A}, {B}, {C};",
    "vadd2.sat.s32.s32.s32 {D}.h0, {A}.h21, {B}.h03, {C};", "vset4.s32.u32.lt.add {D}, {A}.b3210, {B}.b7654, {C};",
    "vmin4.s32.s32.s32 {D}.b20, {A}.b7654, {B}.b0123, {C};", "vavrg2.u32.s32.u32 {D}, {A}, {B}, {C};",
    "vmax2.sat.s32.u32.s32 {D}.h1, {A}.h32, {B}.h10, {C};", "vsub4.sat.s32.s32.s32 {D}, {A}, {B}, {C};",
    "vset2.u32.u32.ne {D}.h10, {A}.h23, {B}.h01, {C};", "vavrg4.sat.s32.s32.u32 {D}.b31, {A}, {B}, {C};")})
_F64 = "mov.b64 %x0, {{{B}, {A}}}; mov.b64 %x1, {{{A}, {C}}}; mov.b64 %x3, {{{C}, {B}}}; OP " \
       "mov.b64 {{%t0, %t1}}, %x2; xor.b32 {D}, %t0, %t1;"
FORMS.update({f"f64 {op}": _F64.replace("OP", op) for op in (
    "add.f64 %x2, %x0, %x1;", "sub.f64 %x2, %x0, %x1;", "mul.f64 %x2, %x0, %x1;", "add.rz.f64 %x2, %x0, %x1;",
    "add.rm.f64 %x2, %x0, %x1;", "sub.rp.f64 %x2, %x0, %x1;", "sub.rm.f64 %x2, %x0, %x1;",
    "fma.rn.f64 %x2, %x0, %x1, %x3;", "mad.rn.f64 %x2, %x1, %x3, %x0;", "div.rn.f64 %x2, %x0, %x1;",
    "rcp.rn.f64 %x2, %x0;", "sqrt.rn.f64 %x2, %x0;", "neg.f64 %x2, %x0;", "abs.f64 %x2, %x1;",
    "add.f64 %x2, %x0, 0d3FF0000000000001;", "sub.f64 %x2, %x0, 0d7FF4000000000001;",
    "mul.rn.f64 %x2, %x0, 0dFFF0000000000000;", "mul.rz.f64 %x2, %x0, %x1;", "mul.rm.f64 %x2, %x0, %x1;",
    "mul.rp.f64 %x2, %x3, %x0;", "div.rz.f64 %x2, %x0, %x1;", "div.rm.f64 %x2, %x3, %x1;",
    "div.rp.f64 %x2, %x0, %x3;", "rcp.rz.f64 %x2, %x0;", "rcp.rm.f64 %x2, %x1;", "rcp.rp.f64 %x2, %x3;",
    "sqrt.rz.f64 %x2, %x0;", "sqrt.rm.f64 %x2, %x1;", "sqrt.rp.f64 %x2, %x3;", "min.f64 %x2, %x0, %x1;",
    "max.f64 %x2, %x1, %x0;", "min.f64 %x2, %x3, %x3;", "max.f64 %x2, %x0, %x3;")})
# cvt to the fp8 pairs, cvt float -> integer, half-precision min/max/neg/abs, bar.warp.sync
FORMS.update({
    "fp8 f32 e4m3": "cvt.rn.satfinite.e4m3x2.f32 %h0, {A}, {B}; cvt.u32.u16 {D}, %h0;",
    "fp8 f32 e5m2": "cvt.rn.satfinite.e5m2x2.f32 %h0, {A}, {B}; cvt.u32.u16 {D}, %h0;",
    "fp8 f32 relu e4m3": "cvt.rn.satfinite.relu.e4m3x2.f32 %h0, {B}, {A}; cvt.u32.u16 {D}, %h0;",
    "fp8 f32 relu e5m2 to b32": "cvt.rn.satfinite.relu.e5m2x2.f32 {D}, {A}, {C};",
    "cvt.e4m3x2.f16x2": "cvt.rn.satfinite.e4m3x2.f16x2 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "cvt.relu.e5m2x2.f16x2": "cvt.rn.satfinite.relu.e5m2x2.f16x2 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "cvt.rni.s32.f32": "cvt.rni.s32.f32 {D}, {A};",
    "cvt.rzi.u32.f32": "cvt.rzi.u32.f32 {D}, {A};",
    "cvt.rmi.ftz.s32.f32": "cvt.rmi.ftz.s32.f32 {D}, {A};",
    "cvt.rpi.ftz.sat.u32.f32": "cvt.rpi.ftz.sat.u32.f32 {D}, {A};",
    "cvt.rzi.s16.f32": "cvt.rzi.s16.f32 %h0, {A}; cvt.s32.s16 {D}, %h0;",
    "cvt.rni.u16.f32": "cvt.rni.u16.f32 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "cvt.rzi.s8.f32 in b32": "cvt.rzi.s8.f32 {D}, {A};",
    "cvt.rni.s64.f32": "cvt.rni.s64.f32 %x0, {A}; mov.b64 {{%t0, %t1}}, %x0; xor.b32 {D}, %t0, %t1;",
    "cvt.rpi.u64.f32": "cvt.rpi.u64.f32 %x0, {A}; mov.b64 {{%t0, %t1}}, %x0; xor.b32 {D}, %t0, %t1;",
    "cvt.rni.s32.f16": "cvt.u16.u32 %h0, {A}; cvt.rni.s32.f16 {D}, %h0;",
    "cvt.rzi.u16.f16": "cvt.u16.u32 %h0, {A}; cvt.rzi.u16.f16 %h1, %h0; cvt.u32.u16 {D}, %h1;",
    "f64 cvt.rzi.s32.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rzi.s32.f64 {D}, %x0;",
    "f64 cvt.rni.u32.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rni.u32.f64 {D}, %x0;",
    "f64 cvt.rmi.s64.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rmi.s64.f64 %x1, %x0; mov.b64 {{%t0, %t1}}, %x1; "
                           "xor.b32 {D}, %t0, %t1;",
    "f64 cvt.rpi.u64.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rpi.u64.f64 %x1, %x0; mov.b64 {{%t0, %t1}}, %x1; "
                           "xor.b32 {D}, %t0, %t1;",
    **{f"{op}.{t}": f"{op}.{t} {{D}}, {{A}}, {{B}};" for op in ("min", "max", "min.NaN", "max.NaN",
                                                               "min.xorsign.abs", "max.xorsign.abs")
       for t in ("f16x2", "bf16x2")},
    "min.ftz.f16x2": "min.ftz.f16x2 {D}, {A}, {B};",
    "max.ftz.NaN.f16x2": "max.ftz.NaN.f16x2 {D}, {A}, {B};",
    "min.f16": "mov.b32 {{%h0, %h1}}, {A}; mov.b32 {{%h2, %h3}}, {B}; min.f16 %h0, %h0, %h3; cvt.u32.u16 {D}, %h0;",
    "max.NaN.bf16": "mov.b32 {{%h0, %h1}}, {A}; mov.b32 {{%h2, %h3}}, {B}; max.NaN.bf16 %h0, %h1, %h2; "
                    "cvt.u32.u16 {D}, %h0;",
    **{f"{op}.{t}": f"{op}.{t} {{D}}, {{A}};" for op in ("neg", "abs", "neg.ftz", "abs.ftz")
       for t in ("f16x2", "bf16x2") if not (op.endswith("ftz") and t == "bf16x2")},
    "neg.bf16": "mov.b32 {{%h0, %h1}}, {A}; neg.bf16 %h0, %h1; cvt.u32.u16 {D}, %h0;",
    "abs.f16": "mov.b32 {{%h0, %h1}}, {A}; abs.f16 %h0, %h0; cvt.u32.u16 {D}, %h0;",
    "bar.warp.sync": "bar.warp.sync -1; xor.b32 {D}, {A}, {B};",
    "cvtf2 cvt.ftz.sat.f32.f32": "cvt.ftz.sat.f32.f32 {D}, {A};",
    "i2f cvt.rz.f32.s32": "cvt.rz.f32.s32 {D}, {A};",
    "i2f cvt.rm.f32.u32": "cvt.rm.f32.u32 {D}, {A};",
    "i2f cvt.rp.sat.f32.s32": "cvt.rp.sat.f32.s32 {D}, {A};",
    "i2f cvt.rn.f16.u32": "cvt.rn.f16.u32 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "i2f cvt.rz.f16.s32": "cvt.rz.f16.s32 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "i2f cvt.rp.bf16.s16": "cvt.u16.u32 %h1, {A}; cvt.rp.bf16.s16 %h0, %h1; cvt.u32.u16 {D}, %h0;",
    "i2f cvt.rm.f64.s32": "cvt.rm.f64.s32 %x0, {A}; mov.b64 {{%t0, %t1}}, %x0; xor.b32 {D}, %t0, %t1;",
    **{f"i2f cvt.{r}.{f}.{i}64": f"mov.b64 %x0, {{{{{{A}}, {{B}}}}}}; cvt.{r}.{f}.{i}64 {'%x1' if f == 'f64' else '%t0' if f == 'f32' else '%h0'}, %x0; "
       + ("mov.b64 {{%t0, %t1}}, %x1; xor.b32 {D}, %t0, %t1;" if f == "f64" else
          "mov.b32 {D}, %t0;" if f == "f32" else "cvt.u32.u16 {D}, %h0;")
       for r in ("rn", "rz", "rm", "rp") for f in ("f64", "f32", "f16") for i in ("s", "u")},
    "cvtf2 cvt.sat.f32.f32": "cvt.sat.f32.f32 {D}, {A};",
    "cvtf2 cvt.rni.sat.f32.f32": "cvt.rni.sat.f32.f32 {D}, {A};",
    "cvtf2 cvt.rzi.ftz.sat.f32.f32": "cvt.rzi.ftz.sat.f32.f32 {D}, {A};",
    "cvtf2 cvt.rp.sat.f16.f32": "cvt.rp.sat.f16.f32 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "cvtf2 cvt.rz.f16.f32": "cvt.rz.f16.f32 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "cvtf2 cvt.rm.bf16.f32": "cvt.rm.bf16.f32 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "cvtf2 cvt.rn.satfinite.f16.f32": "cvt.rn.satfinite.f16.f32 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "cvtf2 cvt.rn.relu.bf16.f32": "cvt.rn.relu.bf16.f32 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "cvtf2 cvt.rz.relu.satfinite.f16.f32": "cvt.rz.relu.satfinite.f16.f32 %h0, {A}; cvt.u32.u16 {D}, %h0;",
    "cvtf2 cvt.ftz.f64.f32": "cvt.ftz.f64.f32 %x0, {A}; mov.b64 {{%t0, %t1}}, %x0; xor.b32 {D}, %t0, %t1;",
    "cvtf2 cvt.rn.f16.f16 rni": "cvt.u16.u32 %h0, {A}; cvt.rni.f16.f16 %h1, %h0; cvt.u32.u16 {D}, %h1;",
    "f64 cvtf2 cvt.rmi.f64.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rmi.f64.f64 %x1, %x0; mov.b64 {{%t0, %t1}}, %x1; "
                                 "xor.b32 {D}, %t0, %t1;",
    "f64 cvtf2 cvt.rpi.sat.f64.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rpi.sat.f64.f64 %x1, %x0; "
                                        "mov.b64 {{%t0, %t1}}, %x1; xor.b32 {D}, %t0, %t1;",
    "f64 cvtf2 cvt.rz.f32.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rz.f32.f64 {D}, %x0;",
    "f64 cvtf2 cvt.rm.ftz.f32.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rm.ftz.f32.f64 {D}, %x0;",
    "f64 cvtf2 cvt.rp.ftz.sat.f32.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rp.ftz.sat.f32.f64 {D}, %x0;",
    "f64 cvtf2 cvt.rm.f16.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rm.f16.f64 %h0, %x0; cvt.u32.u16 {D}, %h0;",
    "f64 cvtf2 cvt.rp.bf16.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.rp.bf16.f64 %h0, %x0; cvt.u32.u16 {D}, %h0;",
    "f64 cvtf2 cvt.sat.f64.f64": "mov.b64 %x0, {{{B}, {A}}}; cvt.sat.f64.f64 %x1, %x0; mov.b64 {{%t0, %t1}}, %x1; "
                                 "xor.b32 {D}, %t0, %t1;",
    "dp4a.u32.u32": "dp4a.u32.u32 {D}, {A}, {B}, {C};",
    "dp4a.s32.u32": "dp4a.s32.u32 {D}, {A}, {B}, {C};",
    "dp4a.u32.s32 imm": "dp4a.u32.s32 {D}, {A}, 0x80FF7F01, {C};",
    "dp4a.s32.s32": "dp4a.s32.s32 {D}, {A}, {B}, {C};",
    "dp2a.lo.s32.u32": "dp2a.lo.s32.u32 {D}, {A}, {B}, {C};",
    "dp2a.hi.u32.s32": "dp2a.hi.u32.s32 {D}, {A}, {B}, {C};",
    "dp2a.hi.s32.s32": "dp2a.hi.s32.s32 {D}, {A}, {B}, {C};",
    "sad.s32": "sad.s32 {D}, {A}, {B}, {C};",
    "sad.u32": "sad.u32 {D}, {A}, {B}, {C};",
    "sad.u16": "cvt.u16.u32 %h0, {A}; cvt.u16.u32 %h1, {B}; sad.u16 %h2, %h0, %h1, %h1; cvt.u32.u16 {D}, %h2;",
    "sad.s16": "cvt.u16.u32 %h0, {A}; cvt.u16.u32 %h1, {B}; sad.s16 %h2, %h0, %h1, %h0; cvt.u32.u16 {D}, %h2;",
    "sad.s64": "mov.b64 %x0, {{{A}, {B}}}; mov.b64 %x1, {{{C}, {A}}}; sad.s64 %x2, %x0, %x1, %x0; "
               "mov.b64 {{%t1, %t2}}, %x2; xor.b32 {D}, %t1, %t2;",
    "sad.u64": "mov.b64 %x0, {{{A}, {B}}}; mov.b64 %x1, {{{C}, {A}}}; sad.u64 %x2, %x1, %x0, %x1; "
               "mov.b64 {{%t1, %t2}}, %x2; xor.b32 {D}, %t1, %t2;",
    "createpolicy": "createpolicy.fractional.L2::evict_last.L2::evict_first.b64 %x0, 0.5; "
                    "createpolicy.fractional.L2::evict_normal.b64 %x1; mov.b64 {{%t1, %t2}}, %x0; "
                    "mov.b64 {{%t0, %t3}}, %x1; xor.b32 {D}, %t2, %t3; xor.b32 {D}, {D}, {A};",
    "ld/st L2::cache_hint": "mov.b64 %x0, 0x10F0000000000000; ld.global.L1::no_allocate.L2::cache_hint.u32 {D}, "
                            "[%q0+4], %x0; st.global.L2::cache_hint.u32 [%q1], {D}, %x0; "
                            "ld.global.nc.L2::cache_hint.v2.u32 {{%t0, %t1}}, [%q0+8], 0x10F0000000000000; "
                            "xor.b32 {D}, {D}, %t1;",
})
FORMS.update({f"f32 {op}": f"{op} {{D}}, {{A}}, {{B}}{', {C}' if op.startswith(('fma', 'mad')) else ''};"
              for op in ("add.rz.f32", "add.rm.f32", "sub.rm.ftz.f32", "add.rp.sat.f32", "add.rn.sat.f32",
                         "sub.rz.ftz.sat.f32", "mul.rz.f32", "mul.rp.ftz.f32", "mul.rm.sat.f32", "fma.rn.sat.f32",
                         "fma.rm.f32", "fma.rz.ftz.f32", "fma.rp.f32", "mad.rp.ftz.sat.f32", "div.rn.f32",
                         "div.rz.ftz.f32", "div.rm.f32", "div.rp.ftz.f32", "div.rn.ftz.f32")})
FORMS.update({f"f32 {op}": f"{op} {{D}}, {{A}}, {{B}};" for op in ("min.xorsign.abs.f32", "max.xorsign.abs.f32",
                                                                 "min.ftz.NaN.xorsign.abs.f32",
                                                                 "max.NaN.xorsign.abs.f32")})
FORMS.update({f"f32 {op}": f"{op} {{D}}, {{A}};" for op in ("rcp.rn.f32", "rcp.rp.ftz.f32", "rcp.rz.f32",
                                                          "sqrt.rn.f32", "sqrt.rm.ftz.f32", "sqrt.rp.f32")})
FP8_F32_EDGES = np.array([0x43E00000, 0x43E80000, 0x43E7FFFF, 0x43F00000, 0xC3E80001, 0x47600000, 0x47700000,
                          0x476FFFFF, 0xC7700000, 0x3A000000, 0x39800000, 0x39800001, 0x39C00000, 0xB9800000,
                          0x37800000, 0x37000000, 0x37000001, 0xB7400000, 0x3C800000, 0x3C880000, 0x3C980000,
                          0x38800000, 0x38000000, 0x3F880000, 0x3F900000, 0x3F980000, 0xFFC00000, 0x7F800001,
                          0x41880000, 0x41980000, 0x47400000, 0x46E00000], np.uint32)
F64HI_EDGES = np.array([0x00000000, 0x80000000, 0x000FFFFF, 0x00100000, 0x80100000, 0x3FF00000, 0xBFF00000,
                        0x7FEFFFFF, 0xFFEFFFFF, 0x7FF00000, 0xFFF00000, 0x7FF80000, 0x7FF40000, 0xFFF80001,
                        0x43400000, 0x3CA00000, 0x3CB00000, 0xC3400000, 0x7FE00000, 0x00000001, 0x3FF80000,
                        0x40000000, 0xBCA00000, 0x7FDFFFFF], np.uint32)


def form_kernel(text, n_per_thread=4):
    """Each thread reads ``n_per_thread`` (a, b, c) triples and writes what ``text`` makes of each."""
    body = []
    for k in range(n_per_thread):
        body.append(f"ld.global.v4.u32 {{%a0, %a1, %a2, %a4}}, [%q0+{16 * k}]; " +
                    text.format(D="%a3", A="%a0", B="%a1", C="%a2") + f" st.global.u32 [%q1+{4 * k}], %a3;")
    return f"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{{
    .reg .b32 %a<5>; .reg .b16 %h<4>; .reg .b32 %t<4>; .reg .b64 %x<4>; .reg .b64 %q<4>; .reg .pred %p<4>;
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


def _edges(form):
    if form.startswith("i2f") and "64" in form.split(".")[-1]:
        return np.concatenate([INT_EDGES, np.array([0x00200000, 0x001FFFFF, 0x00400001, 0x7FFFFFFF, 0x80000000,
                                                     0xFFFFFFFF, 0xFFFFFC00, 0xFFFFFBFF, 0x000003FF], np.uint32)])
    if form.startswith("f64"):
        return F64HI_EDGES
    if form.startswith(("fp8 f32", "f32 ", "cvtf2")):
        return np.concatenate([F32_EDGES, FP8_F32_EDGES])
    if any(t in form for t in ("f16", "bf16", "e4m3", "e5m2")) or form.startswith(("add.", "sub.", "mul.", "fma.")):
        h = HALF_EDGES
        return np.concatenate([h | (h[::-1] << 16), np.repeat(h, h.size) | (np.tile(h, h.size) << 16)])
    if "cvt" in form:
        return F32_EDGES
    return INT_EDGES


def _inputs(form, per=4, nrand=256, seed=0):
    rng = np.random.default_rng(seed + len(form))
    e = _edges(form)
    r = rng.integers(0, 1 << 32, size=(3, nrand), dtype=np.uint64).astype(np.uint32)
    n0 = e.size if e.size > 64 else e.size * e.size
    a = np.concatenate([e if e.size > 64 else np.repeat(e, e.size), r[0]])
    b = np.concatenate([np.roll(e, 3) if e.size > 64 else np.tile(e, e.size), r[1]])
    c = np.concatenate([np.roll(a[:n0], 11), r[2]])
    if form.startswith("f64"):          # low words: 0, 1, all ones, random
        b[:n0] = np.resize(np.array([0, 1, 0xFFFFFFFF, 0, 0x80000000, 0x12345678], np.uint32), n0)
    n = -(-a.size // (32 * per)) * 32 * per
    words = np.zeros((n, 4), np.uint32)
    words[:a.size, 0], words[:a.size, 1], words[:a.size, 2] = a, b, c
    return n // (32 * per), [words, np.zeros(n, np.uint32)]


def compare(module, grid, block, arrays):
    ref = launch_outcome(module, "k", grid, block, arrays, engine="reference")
    fast = launch_outcome(module, "k", grid, block, arrays, engine="fast")
    return ref, fast, differences(ref, fast)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_forms_over_edge_values_are_identical_on_both_engines(form):
    module = load_ptx(form_kernel(FORMS[form]))
    grid, arrays = _inputs(form)
    ref, fast, diffs = compare(module, grid, 32, arrays)
    assert not diffs, diffs
    assert "error" not in ref
    tr = translation(module.program("k"))
    assert tr.fast.all(), [str(op.instr.text) for op, ok in zip(module.program("k").code, tr.fast) if not ok]
    if not form.startswith(F64_DIRECTED):
        assert fast["fast_executed"] == fast["instructions"]   # every instruction ran in the loop


# mul/div/rcp/sqrt .f64 in a directed mode: a lane with a zero, an infinity, a NaN or a value beyond 2^+-900
# (operand or result) hands the row back (the executor's exact rationals decide); other values stay in the loop
F64_DIRECTED = tuple(f"f64 {op}.{m}" for op in ("mul", "div", "rcp", "sqrt") for m in ("rz", "rm", "rp"))


@pytest.mark.parametrize("op", ["mul.rz.f64 %x2, %x0, %x1;", "div.rm.f64 %x2, %x0, %x1;", "rcp.rp.f64 %x2, %x0;",
                                "sqrt.rz.f64 %x2, %x0;", "sqrt.rp.f64 %x2, %x1;"])
def test_f64_directed_rounding_in_the_loop(op):
    """Ordinary operands (random signs, exponents within 2^+-440, random fractions): every lane in the loop,
    the reference's bits (round toward zero, down and up of the product, quotient, reciprocal and root); the
    same rows in the opposite mode differ (the comparison can fail)."""
    assert _f64_directed(op, False) == []
    assert _f64_directed(op, True) != []


def _f64_directed(op, wrong):
    module = load_ptx(form_kernel(_F64.replace("OP", op)))
    if wrong:
        tr = translation(module.program("k"))
        rows = np.flatnonzero((tr.code[:, T.OP] == T.XROW) & (tr.code[:, T.Z] > 0))
        tr.code[rows, T.Z] = 4 - tr.code[rows, T.Z] if "rm" not in op else 3          # rz <-> rp, rm -> rp
    rng = np.random.default_rng(7)
    n = 32 * 4 * 8
    mag = (rng.random((n, 2)) + 1.0) * np.exp2(rng.integers(-440, 440, size=(n, 2)))
    if op.startswith("sqrt"):
        vals = mag
    else:
        vals = mag * rng.choice([-1.0, 1.0], size=(n, 2))
    bits = vals.view(np.uint64)
    words = np.zeros((n, 4), np.uint32)
    words[:, 0] = (bits[:, 0] >> np.uint64(32)).astype(np.uint32)      # A: the high word of x0 (and of x1's low)
    words[:, 1] = (bits[:, 0] & np.uint64(0xFFFFFFFF)).astype(np.uint32)  # B: x0's low word, x3's high word
    words[:, 2] = (bits[:, 1] >> np.uint64(32)).astype(np.uint32)      # C: x1's high word
    ref, fast, diffs = compare(module, n // (32 * 4), 32, [words, np.zeros(n, np.uint32)])
    assert fast["fast_executed"] == fast["instructions"]
    return diffs


def test_random_bits_on_more_warps():
    """Random operands for every form at once, on 4 warps of a CTA (the CTA loop)."""
    text = " ".join(FORMS[f] for f in ("lop3 96", "div.s32", "carry mad", "bfi.b32", "add.f16x2", "redux",
                                       "cvt.rn.f32.f64", "mov pack/unpack"))
    module = load_ptx(form_kernel(text, 2))
    rng = np.random.default_rng(3)
    words = rng.integers(0, 1 << 32, size=(128 * 2, 4), dtype=np.uint64).astype(np.uint32)
    ref, fast, diffs = compare(module, 1, 128, [words, np.zeros(256, np.uint32)])
    assert not diffs, diffs


ATOM_KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pcell, .param .u64 pold)
{
    .shared .align 8 .b8 s[256];
    .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<2>;
    ld.param.u64 %rd1, [pin];
    ld.param.u64 %rd2, [pcell];
    ld.param.u64 %rd3, [pold];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd4, %r1, 8;
    add.s64 %rd5, %rd1, %rd4;
    ld.global.v2.u32 {%r2, %r3}, [%rd5];
    and.b32 %r4, %r2, 7;
    shl.b32 %r4, %r4, 3;
    cvt.u64.u32 %rd6, %r4;
    add.s64 %rd6, %rd2, %rd6;
    setp.lt.u32 %p1, %r1, 64;
    @%p1 ld.global.u64 %rd7, [%rd6];
    @%p1 st.shared.u64 [%r4], %rd7;
    bar.sync 0;
    BODY
    bar.sync 0;
    @%p1 ld.shared.u64 %rd7, [%r4];
    @%p1 st.global.u64 [%rd6+64], %rd7;
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd3, %rd4;
    st.global.u32 [%rd5], %r5;
    ret;
}
"""

ATOMS = {
    "add.u32": "atom.global.add.u32 %r5, [%rd6], %r3; atom.shared.add.u32 %r6, [%r4], %r3; add.u32 %r5, %r5, %r6;",
    "red.add.u32": "red.global.add.u32 [%rd6], %r3; red.shared.add.u32 [%r4], %r3; mov.u32 %r5, 0;",
    "generic": "mov.u64 %rd7, s; cvt.u64.u32 %rd4, %r4; add.s64 %rd7, %rd7, %rd4; "
               "atom.add.u32 %r5, [%rd7], %r3; atom.max.s32 %r6, [%rd6], %r3; xor.b32 %r5, %r5, %r6;",
    **{f"{op}.{t}": f"atom.global.{op}.{t} %r5, [%rd6], %r3; atom.shared.{op}.{t} %r6, [%r4], %r2; "
                    f"xor.b32 %r5, %r5, %r6;"
       for op, ts in (("min", ("u32", "s32")), ("max", ("u32", "s32")), ("and", ("b32",)), ("or", ("b32",)),
                      ("xor", ("b32",)), ("exch", ("b32",)), ("inc", ("u32",)), ("dec", ("u32",)))
       for t in ts},
    "cas.b32": "atom.global.cas.b32 %r5, [%rd6], %r2, %r3; atom.shared.cas.b32 %r6, [%r4], %r3, %r2; "
               "xor.b32 %r5, %r5, %r6;",
    "64-bit": "cvt.u64.u32 %rd7, %r3; atom.global.add.u64 %rd4, [%rd6], %rd7; atom.shared.min.s64 %rd4, [%r4], %rd7; "
              "atom.global.exch.b64 %rd4, [%rd6], %rd7; atom.shared.cas.b64 %rd4, [%r4], %rd7, %rd4; "
              "atom.global.max.u64 %rd4, [%rd6], %rd7; cvt.u32.u64 %r5, %rd4;",
    "add.f32": "atom.global.add.f32 %r5, [%rd6], %r3; atom.shared.add.f32 %r6, [%r4], %r3; "
               "red.global.add.f32 [%rd6+4], %r2; xor.b32 %r5, %r5, %r6;",
    "add.f64": "mov.b64 %rd7, {%r2, %r3}; atom.global.add.f64 %rd4, [%rd6], %rd7; atom.shared.add.f64 %rd4, [%r4], %rd4; "
               "cvt.u32.u64 %r5, %rd4;",
}
F64_EDGES = np.array([0, 1 << 63, 1, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x3FF0000000000000, 0xBFF0000000000000,
                      0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
                      0x7FF0000000000001, 0xFFF4000000000123, 0x8000000000000001, 0x4340000000000000,
                      0x3CA0000000000000], np.uint64)


def _atom_inputs(form, seed=0):
    rng = np.random.default_rng(seed + len(form))
    words = rng.integers(0, 1 << 32, size=(128, 2), dtype=np.uint64).astype(np.uint32)
    if "f32" in form:
        words[:, 1] = np.resize(F32_EDGES, 128)
        words[::3, 1] = rng.integers(0x3F000000, 0x40000000, size=words[::3, 1].size)
    if "f64" in form:
        words.view(np.uint64)[:, 0] = np.resize(F64_EDGES, 128)
    if form in ("inc.u32", "dec.u32"):
        words[:, 1] %= 6
    cells = rng.integers(0, 1 << 64, size=16, dtype=np.uint64)
    if "f" in form.split(".")[-1]:
        cells[:8] = F64_EDGES[:8] if "f64" in form else np.resize(F32_EDGES[:16], 16).view(np.uint64)[:8]
    if form == "cas.b32":                      # half of the compares succeed
        words[::2, 0] = cells.view(np.uint32)[::2][words[::2, 0] % 8]
    return [words, cells, np.zeros(128, np.uint32)]


@pytest.mark.parametrize("form", sorted(ATOMS))
def test_atomics_are_identical_on_both_engines(form):
    module = load_ptx(ATOM_KERNEL.replace("BODY", ATOMS[form]))
    arrays = _atom_inputs(form)
    ref, fast, diffs = compare(module, 1, 128, arrays)
    assert not diffs, diffs
    assert "error" not in ref
    tr = translation(module.program("k"))
    assert (tr.code[:, T.OP] == T.ATOM).sum() >= 1
    assert tr.fast.all(), [str(op.instr.text) for op, ok in zip(module.program("k").code, tr.fast) if not ok]
    assert fast["fast_executed"] == fast["instructions"]


def test_atomic_lane_order_on_one_cell():
    """Every lane of a warp updates the same cell: the old values each lane sees are the reference's (updates
    in ascending lane order), also for a non-commutative exch and cas chain."""
    body = ("and.b32 %r4, %r4, 0; cvt.u64.u32 %rd6, %r4; add.s64 %rd6, %rd2, %rd6; "
            "atom.global.exch.b32 %r5, [%rd6], %r1; atom.global.cas.b32 %r6, [%rd6+8], %r1, %r2; "
            "add.u32 %r5, %r5, %r6;")
    module = load_ptx(ATOM_KERNEL.replace("and.b32 %r4, %r2, 7;", "mov.u32 %r4, %tid.x; and.b32 %r4, %r4, 7;")
                      .replace("BODY", body))
    words = np.zeros((128, 2), np.uint32)
    words[:, 0] = np.arange(1, 129)          # cas compares with lane+1: the chain of exchanges follows the lanes
    ref, fast, diffs = compare(module, 1, 128, [words, np.zeros(16, np.uint64), np.zeros(128, np.uint32)])
    assert not diffs, diffs
    assert fast["fast_executed"] == fast["instructions"]


def test_atomic_errors_are_the_references():
    """A misaligned or out-of-range atomic address hands the row back: the executor raises its error."""
    for change in ("shl.b32 %r4, %r4, 3;", "shl.b32 %r4, %r4, 2; add.u32 %r4, %r4, 2;"):
        text = ATOM_KERNEL.replace("shl.b32 %r4, %r4, 3;", change if "add" in change else "shl.b32 %r4, %r4, 9;")
        module = load_ptx(text.replace("BODY", ATOMS["add.u32"]))
        arrays = _atom_inputs("add.u32")
        ref, fast, diffs = compare(module, 1, 128, arrays)
        assert "error" in ref and ref["error"] == fast["error"], (ref.get("error"), fast.get("error"))


def test_membermask_errors_are_the_references():
    """A membermask that names lanes not executing the instruction: the row goes back, the executor raises."""
    text = form_kernel("setp.lt.u32 %p0, {A}, {B}; @%p0 vote.sync.ballot.b32 {D}, %p0, -1;", 1)
    module = load_ptx(text)
    words = np.zeros((32, 4), np.uint32)
    words[:, 1] = np.arange(32) % 2
    ref, fast, diffs = compare(module, 1, 32, [words, np.zeros(32, np.uint32)])
    assert "error" in ref and ref["error"] == fast["error"]
    assert "WarpSyncError" in ref["error"][0]


def test_a_wrong_row_is_caught():
    """The comparison can fail: lop3 with another truth table, a signed division read as unsigned, e4m3 packed as
    e5m2, an add rounded to nearest instead of toward zero, an s32 conversion saturated as u32, an s64
    conversion to f32 rounded to nearest."""
    for form, field, value in (("lop3 96", T.Y, 0x69), ("div.s32", T.SGN, 0), ("fp8 f32 e4m3", T.Y, 1),
                               ("f32 add.rz.f32", T.Y, 0), ("cvt.rni.s32.f32", T.Z, 32),
                               ("i2f cvt.rz.f32.s64", T.Y, 8)):
        module = load_ptx(form_kernel(FORMS[form]))
        tr = translation(module.program("k"))
        rows = np.flatnonzero(tr.code[:, T.OP] == T.XROW)
        tr.code[rows, field] = value
        grid, arrays = _inputs(form)
        ref, fast, diffs = compare(module, grid, 32, arrays)
        assert diffs


def test_handback_counts_name_the_opcodes():
    """The hand-back counter (benchmarks/bench_handback.py) names what went back: here a form the loop does not
    hold (a vector atom) and nothing else."""
    body = "mov.b64 %rd7, {%r2, %r3}; atom.global.add.v2.f32 {%r5, %r6}, [%rd6], {%r2, %r3}; mov.u32 %r5, 0;"
    module = load_ptx(ATOM_KERNEL.replace("BODY", body))
    from emulator import GlobalMemory
    g = GlobalMemory()
    a = [g.upload(x) for x in _atom_inputs("add.u32")]
    r = module.launch("k", 1, 128, a, gmem=g, engine="fast")
    counts = handback_counts(r.ctas[0][1][0].program)
    assert counts == {"atom.global.add.v2.f32": 4}, counts


# ---------------------------------------------------------------------------------------------------------
# The H100's own bits: every scalar form of the differential capture (tests/data/scalar) that the loop runs as
# an XROW, on the fast engine, against the H100's results

def _capture_kernel(form, n):
    """A kernel running the capture's instruction text once per thread: sources loaded from (nsrc, n) uint64,
    destinations stored to (ndst, n) uint64."""
    regs = {}
    for reg, w, *_ in form["srcs"] + form["dsts"]:
        regs[reg] = w
    decls = " ".join(f".reg .pred {r};" if w == 1 else f".reg .b{w} {r};" for r, w in regs.items())
    lines = []
    for k, (reg, w, _) in enumerate(form["srcs"]):
        lines.append(f"ld.global.u64 %zv, [%zin+{8 * k * n}];")
        lines.append({64: f"mov.b64 {reg}, %zv;", 32: f"cvt.u32.u64 {reg}, %zv;", 16: f"cvt.u16.u64 {reg}, %zv;",
                      1: f"and.b64 %zv, %zv, 1; setp.ne.u64 {reg}, %zv, 0;"}[w])
    lines.append(form["text"])
    for j, (reg, w) in enumerate(form["dsts"]):
        lines.append({64: f"mov.b64 %zv, {reg};", 32: f"cvt.u64.u32 %zv, {reg};", 16: f"cvt.u64.u16 %zv, {reg};",
                      1: f"selp.u64 %zv, 1, 0, {reg};"}[w])
        lines.append(f"st.global.u64 [%zout+{8 * j * n}], %zv;")
    body = "\n    ".join(lines)
    return f"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{{
    .reg .b64 %zin, %zout, %zv, %zo; .reg .b32 %zi, %zj;
    {decls}
    ld.param.u64 %zin, [pin];
    ld.param.u64 %zout, [pout];
    mov.u32 %zi, %tid.x;
    mov.u32 %zj, %ctaid.x;
    mad.lo.u32 %zi, %zj, 32, %zi;
    mul.wide.u32 %zo, %zi, 8;
    add.s64 %zin, %zin, %zo;
    add.s64 %zout, %zout, %zo;
    {body}
    ret;
}}
"""


_XFAMILIES = {"abs", "add", "bfi", "bfind", "bmsk", "brev", "clz", "cvt", "div", "fma", "lop3", "mad", "mul", "neg",
              "popc", "prmt", "rcp", "rem", "shf", "sqrt", "sub", "szext", "mov", "vote", "redux", "match", "min",
              "max", "vadd2", "vadd4", "vsub2", "vsub4", "vavrg2", "vavrg4", "vabsdiff2", "vabsdiff4", "vmin2",
              "vmin4", "vmax2", "vmax4", "vset2", "vset4"}


def _xrow_forms(step=1):
    """(capture, form index) of the capture's forms the loop runs as an XROW; ``step``: every step-th form of
    each capture only (the default run; the slow test takes them all)."""
    import scalar_replay as S
    out = []
    for name in S.CAPTURES:
        forms, inputs, results, _ = S.capture(name)
        for i, form in enumerate(forms):
            fam, *mods = S.opcode(form).split(".")
            if fam not in _XFAMILIES or i % step:
                continue                     # (what the loop cannot hold as an XROW: quicker to skip here)
            try:
                module = load_ptx(_capture_kernel(form, 32))
            except EmulatorError:
                continue                     # forms the emulator refuses (the capture's tests list them)
            tr = translation(module.program("k"))
            key = " ".join(form["text"].rstrip(";").split())
            p = next((p for p, op in enumerate(module.program("k").code)
                      if op.kind == "op" and " ".join(str(op.instr.text).rstrip(";").split()) == key), None)
            if p is None:
                continue
            if tr.code[p, T.OP] == T.XROW:
                out.append((name, i))
    return out


@pytest.fixture(scope="module")
def xrow_forms():
    return _xrow_forms(5)


def _replay_capture(forms_idx, lanes):
    import scalar_replay as S
    bad = []
    for name, i in forms_idx:
        forms, inputs, results, _ = S.capture(name)
        form = forms[i]
        n = lanes.size
        src = np.stack([inputs[kind][k][lanes] for k, (_, _, kind) in enumerate(form["srcs"])]) \
            if form["srcs"] else np.zeros((1, n), np.uint64)
        module = load_ptx(_capture_kernel(form, n))
        from emulator import GlobalMemory
        g = GlobalMemory()
        pin, pout = g.upload(src.astype(np.uint64)), g.alloc(8 * n * len(form["dsts"]))
        r = module.launch("k", n // 32, 32, [pin, pout], gmem=g, engine="fast")
        got = g.download(pout, 8 * n * len(form["dsts"])).view(np.uint64).reshape(len(form["dsts"]), n)
        want = results[i][:, lanes].astype(np.uint64)
        if (got != want).any():
            bad.append((form["text"], int(np.flatnonzero((got != want).any(axis=0))[0])))
        if not ("f64" in S.opcode(form) and S.opcode(form).split(".")[0] in ("mul", "div", "rcp", "sqrt") and
                set(S.opcode(form).split(".")) & {"rz", "rm", "rp"}):     # (F64_DIRECTED: special lanes go back)
            assert r.instructions == sum(w.fast.executed for _, ws in r.ctas for w in ws), form["text"]
    return bad


def test_xrows_replay_the_h100_scalar_capture(xrow_forms):
    """All 2048 lanes (edge crossings, extra edges, random operands) of every fifth form of the capture that the
    loop runs as an XROW (integer, bit, f64, f32, half and conversion rows), run in the loop: the H100's bits."""
    assert len(xrow_forms) >= 190, len(xrow_forms)
    assert _replay_capture(xrow_forms, np.arange(2048)) == []


@pytest.mark.slow
def test_every_xrow_form_replays_the_h100_scalar_capture():
    """As above, every form of the capture the loop holds (1,059 forms: integer, bit, f64, f32 in every rounding,
    half precision, and every conversion), not every fifth."""
    forms = _xrow_forms()
    assert len(forms) >= 1000, len(forms)
    assert _replay_capture(forms, np.arange(2048)) == []


PARAM_KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.func (.param .b32 r) twice(.param .b32 x, .param .b64 y)
{
    .reg .b32 %a<3>; .reg .b64 %b<2>;
    ld.param.b32 %a0, [x];
    ld.param.b64 %b0, [y];
    cvt.u32.u64 %a1, %b0;
    add.u32 %a2, %a0, %a1;
    st.param.b32 [r], %a2;
    ret;
}
.visible .entry k(.param .u64 pin, .param .u64 pout, .param .align 8 .b8 blob[24])
{
    .reg .b32 %r<8>; .reg .b64 %rd<8>;
    mov.b64 %rd1, blob;
    ld.param.u32 %r1, [%rd1+4];
    ld.param.v2.u32 {%r2, %r3}, [%rd1+8];
    add.s64 %rd2, %rd1, 16;
    ld.param.u64 %rd3, [%rd2];
    cvta.param.u64 %rd4, %rd1;
    cvta.to.param.u64 %rd5, %rd4;
    ld.param.u32 %r4, [%rd5];
    ld.param.u64 %rd6, [pout];
    st.global.v4.u32 [%rd6+256], {%r2, 7, %r3, -9};
    mov.u32 %r5, %tid.x;
    add.u32 %r1, %r1, %r5;
    {
    .param .b32 x; .param .b64 y; .param .b32 r;
    st.param.b32 [x], -1;
    st.param.b64 [y], 0x100000007;
    call (r), twice, (x, y);
    ld.param.b32 %r7, [r];
    add.u32 %r1, %r1, %r7;
    st.param.b32 [x], %r1;
    st.param.b64 [y], %rd3;
    call (r), twice, (x, y);
    ld.param.b32 %r6, [r];
    }
    add.u32 %r6, %r6, %r2;
    xor.b32 %r6, %r6, %r3;
    xor.b32 %r6, %r6, %r4;
    mul.wide.u32 %rd7, %r5, 8;
    add.s64 %rd6, %rd6, %rd7;
    st.global.v2.u32 [%rd6], {%r6, %r4};
    st.global.u32 [%rd6+4], %r4;
    cvt.u32.u64 %r7, %rd4;
    st.global.u32 [%rd6+4], %r7;
    ret;
}
"""


def test_param_space_in_the_loop():
    """ld.param through a register holding a parameter's address (nvcc's and CUTLASS's [%rd+off] into a struct
    parameter), st.param of a call's arguments, mov of a .param symbol and cvta{.to}.param run in the loop; the
    callee's instructions stay with the Python scheduler. Both engines agree; only the call goes back."""
    module = load_ptx(PARAM_KERNEL)
    blob = np.arange(24, dtype=np.uint8) * 7 + 3
    arrays = [np.zeros(4, np.uint32), np.zeros(68, np.uint32)]
    outs = []
    for engine in ("reference", "fast"):
        from emulator import GlobalMemory
        g = GlobalMemory()
        pin, pout = g.upload(arrays[0]), g.upload(arrays[1])
        r = module.launch("k", 1, 32, [pin, pout, blob.tobytes()], gmem=g, engine=engine)
        outs.append(g.download(pout, 272).copy())
        if engine == "fast":
            kprog = r.ctas[0][1][0].program
            assert set(handback_counts(kprog)) <= {"call"}, handback_counts(kprog)
            tr = translation(module.program("k"))
            slow = [str(op.instr.text) for op, ok in zip(module.program("k").code, tr.fast)
                    if not ok and getattr(op, "instr", None) is not None and op.kind == "op"]
            assert slow == [], slow
    assert np.array_equal(outs[0], outs[1])
    assert outs[1].view(np.uint32)[0] != 0


# mma.sync of the f64 and integer families: K_MMAX rows, the executor's tile kernels called from xcall.mma_c
MMAX = {  # spelling: (register width, n_d, n_a, n_b, n_c)
    "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64": (64, 2, 1, 1, 2),
    "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64": (64, 4, 8, 4, 4),
    "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32": (32, 4, 4, 2, 4),
    "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32": (32, 4, 4, 2, 4),
    "mma.sync.aligned.m8n8k16.row.col.satfinite.s32.u8.u8.s32": (32, 2, 1, 1, 2),
    "mma.sync.aligned.m16n8k64.row.col.satfinite.s32.s4.u4.s32": (32, 4, 4, 2, 4),
    "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc": (32, 4, 4, 2, 4),
}


def _mma_kernel(spelling, w, nd, na, nb, nc):
    regs = [f"%v{i}" for i in range(na + nb + nc)]
    loads = " ".join(f"ld.global.b{w} {r}, [%q0+{w // 8 * 32 * i}];" for i, r in enumerate(regs))
    stores = " ".join(f"st.global.b{w} [%q1+{w // 8 * 32 * i}], %d{i};" for i in range(nd))
    a, b, c = regs[:na], regs[na:na + nb], regs[na + nb:]
    d = [f"%d{i}" for i in range(nd)]
    return f"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{{
    .reg .b{w} %v<{na + nb + nc}>; .reg .b{w} %d<{nd}>; .reg .b64 %q<4>; .reg .b32 %t<4>;
    ld.param.u64 %q0, [pin];
    ld.param.u64 %q1, [pout];
    mov.u32 %t0, %tid.x;
    mov.u32 %t1, %ctaid.x;
    mul.wide.u32 %q3, %t0, {w // 8};
    add.s64 %q0, %q0, %q3;
    add.s64 %q1, %q1, %q3;
    mul.wide.u32 %q3, %t1, {w // 8 * 32 * (na + nb + nc)};
    add.s64 %q0, %q0, %q3;
    mul.wide.u32 %q3, %t1, {w // 8 * 32 * nd};
    add.s64 %q1, %q1, %q3;
    {loads}
    {spelling} {{{", ".join(d)}}}, {{{", ".join(a)}}}, {{{", ".join(b)}}}, {{{", ".join(c)}}};
    {stores}
    ret;
}}
"""


@pytest.mark.parametrize("spelling", sorted(MMAX))
def test_mma_f64_and_integer_tiles_in_the_loop(spelling):
    """Both engines on random and special register bits (f64: NaN payloads, infinities, subnormals, values whose
    products cancel; integers: accumulators at the edges of the s32 range for .satfinite), 8 instructions."""
    w, nd, na, nb, nc = MMAX[spelling]
    module = load_ptx(_mma_kernel(spelling, w, nd, na, nb, nc))
    rng = np.random.default_rng(len(spelling))
    nblk, nreg = 8, na + nb + nc
    if w == 64:
        x = rng.normal(size=(nblk, nreg, 32)) * np.exp2(rng.integers(-30, 30, size=(nblk, nreg, 32)))
        bits = x.view(np.uint64)
        bits[1] = np.resize(F64_EDGES, bits[1].size).reshape(bits[1].shape)
        bits[2, :, ::3] = rng.integers(0, 1 << 64, size=bits[2, :, ::3].shape, dtype=np.uint64)
        bits[3] = bits[0]
        bits[3, na + nb:] ^= np.uint64(1 << 63)          # C = -(A B) where the shapes line up: cancellation
    else:
        bits = rng.integers(0, 1 << 32, size=(nblk, nreg, 32), dtype=np.uint64).astype(np.uint32)
        bits[1, na + nb:] = np.resize(np.array([0x7FFFFFFF, 0x80000000, 0x7FFFFF00, 0x80000100], np.uint32),
                                      bits[1, na + nb:].size).reshape(bits[1, na + nb:].shape)
    ref, fast, diffs = compare(module, nblk, 32, [bits, np.zeros((nblk, nd, 32), bits.dtype)])
    assert not diffs, diffs
    assert "error" not in ref
    tr = translation(module.program("k"))
    assert tr.fast.all(), [str(op.instr.text) for op, ok in zip(module.program("k").code, tr.fast) if not ok]
    assert fast["fast_executed"] == fast["instructions"]
