"""Hand-written PTX for the control-flow captures: brx.idx jump tables (divergent indices, nested in { }
scopes, guarded, .uni), indirect calls through .callprototype / .calltargets, and wgmma chains whose
registers a non-wgmma instruction touches while they are in flight (ptxas serialises those itself)."""
import numpy as np

# ------------------------------------------------------------------------------------------------
# brx.idx: a small interpreter per lane (a jump table in a loop, with fall-through, a jump, a halt, and a
# nested table inside a { } scope), and the plain forms
INTERP = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry interp(.param .u64 prog, .param .u64 out)
{
.reg .pred %p<4>; .reg .b32 %r<16>; .reg .b64 %rd<8>;
mov.u32 %r1, %tid.x;
mov.u32 %r9, %ctaid.x;
mov.u32 %r10, %ntid.x;
mad.lo.u32 %r1, %r9, %r10, %r1;
ld.param.u64 %rd1, [prog];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r1, 64;
add.s64 %rd1, %rd1, %rd2;
mov.u32 %r2, 0;
mov.u32 %r3, 1;
mov.u32 %r4, 0;
LOOP:
setp.ge.u32 %p1, %r2, 16;
@%p1 bra DONE;
mul.wide.u32 %rd3, %r2, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r5, [%rd4];
and.b32 %r6, %r5, 7;
shr.u32 %r7, %r5, 3;
add.u32 %r2, %r2, 1;
add.u32 %r4, %r4, 1;
setp.gt.u32 %p2, %r4, 40;
@%p2 bra DONE;
ops: .branchtargets OP0, OP1, OP2, OP3, OP4, OP5, OP6, OP7;
brx.idx %r6, ops;
OP0:
add.u32 %r3, %r3, %r7;
bra.uni LOOP;
OP1:
mul.lo.u32 %r3, %r3, %r7;
bra.uni LOOP;
OP2:
xor.b32 %r3, %r3, %r7;
bra.uni LOOP;
OP3:
shl.b32 %r3, %r3, 1;
OP4:
add.u32 %r3, %r3, 3;
bra.uni LOOP;
OP5:
and.b32 %r2, %r7, 15;
bra.uni LOOP;
OP6:
bra.uni DONE;
OP7:
{
.reg .b32 %q;
inner: .branchtargets I0, I1, I0, I2;
and.b32 %q, %r7, 3;
brx.idx %q, inner;
I0:
sub.u32 %r3, %r3, 5;
bra.uni LOOP;
I1:
mad.lo.u32 %r3, %r3, 3, 1;
bra.uni LOOP;
I2:
shr.u32 %r3, %r3, 1;
bra.uni LOOP;
}
DONE:
ld.param.u64 %rd5, [out];
cvta.to.global.u64 %rd5, %rd5;
mul.wide.u32 %rd6, %r1, 8;
add.s64 %rd5, %rd5, %rd6;
st.global.v2.u32 [%rd5], {%r3, %r4};
ret;
}
"""

FORMS_HEAD = """.version 8.5
.target sm_90a
.address_size 64
.visible .entry forms(.param .u64 out)
{
.reg .pred %p<4>; .reg .b32 %r<12>; .reg .b64 %rd<8>;
mov.u32 %r1, %tid.x;
and.b32 %r2, %r1, 3;
setp.eq.u32 %p1, %r2, 0;
mov.u32 %r3, 0;
"""
FORMS_TAIL = """
A:
add.u32 %r3, %r3, 1;
B:
add.u32 %r3, %r3, 10;
C:
add.u32 %r3, %r3, 100;
bra.uni END;
D:
add.u32 %r3, %r3, 1000;
END:
ld.param.u64 %rd3, [out];
mul.wide.u32 %rd4, %r1, 4;
add.s64 %rd3, %rd3, %rd4;
st.global.u32 [%rd3], %r3;
ret;
}
"""
BRX_FORMS = {
    "basic": "ts: .branchtargets A, B, C, D;\nbrx.idx %r2, ts;",
    "uni": "ts: .branchtargets A, B, C, D;\nshr.u32 %r5, %r1, 5;\nand.b32 %r5, %r5, 3;\nbrx.idx.uni %r5, ts;",
    "guard": "ts: .branchtargets A, B, C, D;\n@%p1 brx.idx %r2, ts;\nadd.u32 %r3, %r3, 20000;",
    "negguard": "ts: .branchtargets A, B, C, D;\n@!%p1 brx.idx %r2, ts;\nadd.u32 %r3, %r3, 20000;",
    "imm": "ts: .branchtargets A, B, C, D;\nbrx.idx 2, ts;",
    "dup": "ts: .branchtargets D, A, D, A;\nbrx.idx %r2, ts;",
    "scope": "{\nts: .branchtargets A, B, C, D;\nbrx.idx %r2, ts;\n}",
    "scope_labels": "{\n.reg .b32 %q;\nmov.u32 %q, %r2;\nts: .branchtargets X, Y, Y, X;\nbrx.idx %q, ts;\nX:\n"
                    "add.u32 %r3, %r3, 5;\nY:\nadd.u32 %r3, %r3, 7;\n}",
    "reuse": "ts: .branchtargets A, B, C, D;\nand.b32 %r6, %r1, 1;\n@%p1 brx.idx %r6, ts;\nbrx.idx %r2, ts;",
}


def brx_cases(rng):
    out = {}
    prog = rng.integers(0, 2**12, (256, 16), dtype=np.int64).astype(np.uint32)
    out["ptx_brx_interp"] = (INTERP, dict(kernel="interp", grid=[2, 1, 1], block=[128, 1, 1]),
                             [("array", "prog", prog), ("array", "out", np.zeros(512, np.uint32))], ["out"])
    for name, body in BRX_FORMS.items():
        out[f"ptx_brx_{name}"] = (FORMS_HEAD + body + FORMS_TAIL, dict(kernel="forms", grid=[1, 1, 1],
                                                                        block=[64, 1, 1]),
                                  [("array", "out", np.zeros(64, np.uint32))], ["out"])
    return out


# ------------------------------------------------------------------------------------------------
# indirect calls: every form ptxas accepts on sm_90a
CALL_HEAD = """.version 8.5
.target sm_90a
.address_size 64
.func (.param .b32 r) f1(.param .b32 a)
{
.reg .b32 %x;
ld.param.b32 %x, [a];
add.u32 %x, %x, 1;
st.param.b32 [r], %x;
ret;
}
.func (.param .b32 r) f2(.param .b32 a)
{
.reg .b32 %x;
ld.param.b32 %x, [a];
mul.lo.u32 %x, %x, 3;
st.param.b32 [r], %x;
ret;
}
.func (.param .b32 r) f3(.param .b32 a)
{
.reg .b32 %x;
ld.param.b32 %x, [a];
xor.b32 %x, %x, 255;
st.param.b32 [r], %x;
ret;
}
.global .align 8 .u64 ftab[3] = {f1, f2, f3};
.func g0()
{
ret;
}
.visible .entry calls(.param .u64 out)
{
.reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<10>;
mov.u32 %r1, %tid.x;
and.b32 %r2, %r1, 1;
setp.eq.u32 %p1, %r2, 0;
mov.u64 %rd1, f1;
mov.u64 %rd2, f2;
selp.b64 %rd5, %rd1, %rd2, %p1;
mov.u32 %r3, 7;
"""
CALL_TAIL = """
ld.param.u64 %rd3, [out];
mul.wide.u32 %rd4, %r1, 4;
add.s64 %rd3, %rd3, %rd4;
st.global.u32 [%rd3], %r3;
ret;
}
"""


def _pcall(body, pre=""):
    return ("{\n" + pre + ".param .b32 a0;\n.param .b32 r0;\nst.param.b32 [a0], %r1;\n" + body +
            "\nld.param.b32 %r3, [r0];\n}")


PR = "pr: .callprototype (.param .b32 _) _ (.param .b32 _);\n"
CALL_FORMS = {
    "proto": _pcall(PR + "call (r0), %rd5, (a0), pr;"),
    "proto_uni": _pcall(PR + "call.uni (r0), %rd1, (a0), pr;"),
    "proto_guard": _pcall(PR + "st.param.b32 [r0], %r3;\n@%p1 call (r0), %rd5, (a0), pr;"),
    "calltargets": _pcall("ct: .calltargets f1, f2;\ncall (r0), %rd5, (a0), ct;"),
    "proto_named": _pcall("pr: .callprototype (.param .b32 rr) _ (.param .b32 aa);\ncall (r0), %rd5, (a0), pr;"),
    "void_proto": "{\npv: .callprototype _ ();\nmov.u64 %rd6, g0;\ncall %rd6, (), pv;\nmov.u32 %r3, 5;\n}",
    "void_noargs": "{\npv: .callprototype _ ();\nmov.u64 %rd6, g0;\ncall %rd6, pv;\nmov.u32 %r3, 5;\n}",
    "u32ptr": _pcall(PR + "call (r0), %r5, (a0), pr;", "mov.u32 %r5, f2;\n"),
    "table": _pcall(PR + "call (r0), %rd8, (a0), pr;",
                    "rem.u32 %r6, %r1, 3;\nmul.wide.u32 %rd6, %r6, 8;\nmov.u64 %rd7, ftab;\nadd.s64 %rd7, %rd7, %rd6;\n"
                    "ld.global.u64 %rd8, [%rd7];\n"),
}


def call_cases():
    return {f"ptx_call_{n}": (CALL_HEAD + b + CALL_TAIL, dict(kernel="calls", grid=[1, 1, 1], block=[64, 1, 1]),
                              [("array", "out", np.zeros(64, np.uint32))], ["out"]) for n, b in CALL_FORMS.items()}


# ------------------------------------------------------------------------------------------------
# wgmma: non-wgmma instructions touching registers of an in-flight chain
# make_descriptor(0 / 4096, sbo=1024, swizzle=128), the start address added at run time: the shared window's
# addresses do not start at 0 on the H100
DA, DB = 4611686293305360384, 4611686293305360640
WG_HEAD = """.version 8.5
.target sm_90a
.address_size 64
.shared .align 1024 .b8 smem[8192];
.visible .entry k(.param .u64 inp, .param .u64 out)
{
.reg .pred %p<4>; .reg .b32 %r<24>; .reg .f32 %f<16>; .reg .b64 %rd<8>;
mov.u32 %r1, %tid.x;
ld.param.u64 %rd6, [inp];
cvta.to.global.u64 %rd6, %rd6;
mul.wide.u32 %rd7, %r1, 64;
add.s64 %rd6, %rd6, %rd7;
mov.u32 %r20, smem;
mad.lo.u32 %r20, %r1, 64, %r20;
ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd6];
st.shared.v4.u32 [%r20], {%r10, %r11, %r12, %r13};
ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd6+16];
st.shared.v4.u32 [%r20+16], {%r10, %r11, %r12, %r13};
ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd6+32];
st.shared.v4.u32 [%r20+32], {%r10, %r11, %r12, %r13};
ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd6+48];
st.shared.v4.u32 [%r20+48], {%r10, %r11, %r12, %r13};
fence.proxy.async.shared::cta;
bar.sync 0;
mov.f32 %f0, 0f00000000;
mov.f32 %f1, 0f3F800000;
mov.f32 %f2, 0f40000000;
mov.f32 %f3, 0f40400000;
mov.f32 %f5, 0f00000000;
mov.f32 %f6, 0f00000000;
mov.f32 %f8, 0fBF800000;
mov.f32 %f9, 0f00000000;
mov.f32 %f10, 0f3E800000;
mov.f32 %f11, 0f00000000;
mov.u32 %r21, smem;
cvt.u64.u32 %rd5, %r21;
shr.u64 %rd5, %rd5, 4;
and.b64 %rd5, %rd5, 16383;
""" + f"or.b64 %rd1, %rd5, {DA};\nadd.s64 %rd2, %rd1, {DB - DA};\n"
WG_TAIL = """
ld.param.u64 %rd3, [out];
cvta.to.global.u64 %rd3, %rd3;
mul.wide.u32 %rd4, %r1, 48;
add.s64 %rd3, %rd3, %rd4;
st.global.v4.f32 [%rd3], {%f0, %f1, %f2, %f3};
st.global.v4.f32 [%rd3+16], {%f8, %f9, %f10, %f11};
st.global.v2.f32 [%rd3+32], {%f5, %f6};
ret;
}
"""
MMA = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, %rd1, %rd2, 1, 1, 1, 0, 0;"
MMB = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f8, %f9, %f10, %f11}, %rd1, %rd2, 1, 1, 1, 0, 0;"
F, C = "wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;"


def W(n):
    return f"wgmma.wait_group.sync.aligned {n};"


WG_FORMS = {
    "read_before_wait": [F, MMA, C, "add.f32 %f5, %f2, %f2;", W(0)],
    "read_old_group": [F, MMA, C, MMB, C, "add.f32 %f5, %f2, %f2;", W(0)],
    "read_new_group": [F, MMA, C, MMB, C, "add.f32 %f5, %f9, %f9;", W(0)],
    "read_uncommitted": [F, MMA, C, MMB, "add.f32 %f5, %f9, %f9;", C, W(0)],
    "read_chain": [F, MMA, MMA, C, "add.f32 %f5, %f0, %f1;", W(0)],
    "write_before_wait": [F, MMA, C, "mov.f32 %f2, 0f3F800000;", W(0), "add.f32 %f5, %f2, %f2;"],
    "keep_newest": [F, MMA, C, W(1), "add.f32 %f5, %f0, %f0;"],
    "read_then_wait1": [F, MMA, C, MMB, C, "add.f32 %f5, %f2, %f2;", W(1), "add.f32 %f6, %f9, %f9;", W(0)],
    "no_fence": [MMA, C, W(0)],
    "write_after_fence": [F, "mov.f32 %f1, 0f3F800000;", MMA, C, W(0)],
}


def wgmma_cases(rng):
    inp = rng.standard_normal(4096).astype(np.float16)
    return {f"ptx_wgmma_{n}": (WG_HEAD + "\n".join(body) + WG_TAIL, dict(kernel="k", grid=[1, 1, 1],
                                                                         block=[128, 1, 1]),
                               [("array", "inp", inp), ("array", "out", np.zeros(1536, np.float32))], ["out"])
            for n, body in WG_FORMS.items()}
