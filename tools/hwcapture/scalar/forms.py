"""Candidate scalar PTX forms for the differential capture, and the PTX kernels that run them.

``candidates()`` lists opcode x type x modifier combinations generously; ptxas decides which exist for
sm_90a (``accepted()``), and only those are captured. Each form is one instruction over registers:
sources ``%rs1..`` (16-bit, also for 8-bit types), ``%r1..`` (32-bit), ``%rd1..`` (64-bit), ``%p1..``
(predicates) and destinations ``%rs10`` / ``%r10`` / ``%rd10`` / ``%p10`` (``%p11`` for a second one).
The same instruction text is what the tests give ``Warp.run``.

    python tools/hwcapture/scalar/forms.py [--ptxas ptxas] --out forms.json
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass

WIDTH = {"pred": 1, "b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
         "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32, "tf32": 32, "u16x2": 32,
         "s16x2": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64, "e4m3x2": 16, "e5m2x2": 16,
         "e2m3x2": 16, "e3m2x2": 16, "e2m1x2": 8, "ue8m0x2": 16}
KIND = {"f16": "f16", "bf16": "bf16", "f32": "f32", "tf32": "f32", "f64": "f64", "f16x2": "f16x2",
        "bf16x2": "bf16x2", "u16x2": "i16x2", "s16x2": "i16x2", "e4m3x2": "fp8x2", "e5m2x2": "fp8x2",
        "e2m3x2": "fp8x2", "e3m2x2": "fp8x2", "e2m1x2": "i8", "ue8m0x2": "fp8x2", "pred": "pred"}
PREFIX = {1: "%p", 8: "%rs", 16: "%rs", 32: "%r", 64: "%rd"}


def kind_of(t):
    return KIND.get(t) or f"i{max(8, WIDTH[t])}"


@dataclass(frozen=True)
class Form:
    text: str                 # one PTX instruction, ';'-terminated
    dsts: tuple               # ((register, width), ...)
    srcs: tuple               # ((register, width, input kind), ...)

    def to_json(self):
        return {"text": self.text, "dsts": [list(d) for d in self.dsts], "srcs": [list(s) for s in self.srcs]}

    @staticmethod
    def from_json(d):
        return Form(d["text"], tuple(tuple(x) for x in d["dsts"]), tuple(tuple(x) for x in d["srcs"]))


def F(op, dtypes, stypes, kinds=None, tail="", dsep=", "):
    """A form: opcode ``op``, destination types, source types (their kinds default from the types)."""
    dsts, used = [], {}
    for i, t in enumerate(dtypes):
        w = WIDTH[t]
        dsts.append((f"{PREFIX[w]}{10 + i}", 16 if w == 8 else w))
    srcs = []
    for i, t in enumerate(stypes):
        w = WIDTH[t]
        k = (kinds[i] if kinds and kinds[i] else None) or kind_of(t)
        used[w] = used.get(w, 0) + 1
        srcs.append((f"{PREFIX[w]}{i + 1}", 16 if w == 8 else w, k))
    ops = dsep.join(d[0] for d in dsts)
    if srcs:
        ops += ", " + ", ".join(s[0] for s in srcs)
    return Form(f"{op} {ops}{tail};", tuple(dsts), tuple(srcs))


INTS = ("u16", "s16", "u32", "s32", "u64", "s64")
SINTS = ("s16", "s32", "s64")
FRND = ("", ".rn", ".rz", ".rm", ".rp")
IRND = (".rni", ".rzi", ".rmi", ".rpi")
FLT = ("f16", "bf16", "f32", "f64")
CVT_TYPES = ("u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64", "f16", "bf16", "f32", "f64")
INT_CMP = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
FLT_CMP = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


def integer_forms():
    out = []
    for t in INTS + ("u16x2", "s16x2"):
        for op in ("add", "sub"):
            out.append(F(f"{op}.{t}", [t], [t, t]))
            out.append(F(f"{op}.sat.{t}", [t], [t, t]))
        for op in ("min", "max"):
            out.append(F(f"{op}.{t}", [t], [t, t]))
            out.append(F(f"{op}.relu.{t}", [t], [t, t]))
    for t in INTS:
        for m in ("lo", "hi", "wide"):
            wide = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64", "u64": "u64", "s64": "s64"}[t]
            dt = wide if m == "wide" else t
            out.append(F(f"mul.{m}.{t}", [dt], [t, t]))
            out.append(F(f"mad.{m}.{t}", [dt], [t, t, dt]))
        out.append(F(f"mad.hi.sat.{t}", [t], [t, t, t]))
        out.append(F(f"mad.lo.sat.{t}", [t], [t, t, t]))
        out.append(F(f"div.{t}", [t], [t, t]))
        out.append(F(f"rem.{t}", [t], [t, t]))
        out.append(F(f"sad.{t}", [t], [t, t, t]))
        out.append(F(f"abs.{t}", [t], [t]))
        out.append(F(f"neg.{t}", [t], [t]))
    for t in ("u32", "s32"):
        for m in ("lo", "hi"):
            out.append(F(f"mul24.{m}.{t}", [t], [t, t]))
            out.append(F(f"mad24.{m}.{t}", [t], [t, t, t]))
            out.append(F(f"mad24.{m}.sat.{t}", [t], [t, t, t]))
    for t in ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64"):
        sh = "sh"
        out.append(F(f"shl.{t}", [t], [t, "u32"], [None, sh]))
        out.append(F(f"shr.{t}", [t], [t, "u32"], [None, sh]))
    for t in ("b16", "b32", "b64", "pred"):
        for op in ("and", "or", "xor"):
            out.append(F(f"{op}.{t}", [t], [t, t]))
        out.append(F(f"not.{t}", [t], [t]))
        out.append(F(f"cnot.{t}", [t], [t]))
    for t in ("b32", "b64"):
        out.append(F(f"popc.{t}", ["u32"], [t]))
        out.append(F(f"clz.{t}", ["u32"], [t]))
        out.append(F(f"brev.{t}", [t], [t]))
        out.append(F(f"bfi.{t}", [t], [t, t, "u32", "u32"], [None, None, "sh", "sh"]))
    for t in ("u32", "s32", "u64", "s64"):
        out.append(F(f"bfind.{t}", ["u32"], [t]))
        out.append(F(f"bfind.shiftamt.{t}", ["u32"], [t]))
        out.append(F(f"bfe.{t}", [t], [t, "u32", "u32"], [None, "sh", "sh"]))
    out.append(F("fns.b32", ["b32"], ["b32", "u32", "s32"], [None, None, "sh"]))
    for m in ("", ".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"):
        out.append(F(f"prmt.b32{m}", ["b32"], ["b32", "b32", "b32"]))
    for d in ("l", "r"):
        for m in ("wrap", "clamp"):
            for t in ("b32", "u32", "s32"):
                out.append(F(f"shf.{d}.{m}.{t}", [t], ["b32", "b32", "u32"], [None, None, "sh"]))
    for m in ("clamp", "wrap"):
        out.append(F(f"bmsk.{m}.b32", ["b32"], ["u32", "u32"], ["sh", "sh"]))
        for t in ("u32", "s32"):
            out.append(F(f"szext.{m}.{t}", [t], [t, "u32"], [None, "sh"]))
    for lut in ("0x96", "0xe8", "0xf0", "0xcc", "0xaa", "0x3c", "0xfe", "0x80", "0x01", "0x6a", "0x1e", "0x00",
                "0xff"):
        out.append(F("lop3.b32", ["b32"], ["b32", "b32", "b32"], tail=f", {lut}"))
    for a in ("u32", "s32"):
        for b in ("u32", "s32"):
            out.append(F(f"dp4a.{a}.{b}", ["s32" if "s32" in (a, b) else "u32"], ["b32", "b32", "b32"]))
            for m in ("lo", "hi"):
                out.append(F(f"dp2a.{m}.{a}.{b}", ["s32" if "s32" in (a, b) else "u32"], ["b32", "b32", "b32"]))
    # carry chains: two instructions, the carry flag between them
    for t, w, pre in (("u32", 32, "%r"), ("s32", 32, "%r"), ("u64", 64, "%rd"), ("s64", 64, "%rd")):
        k = f"i{w}"
        srcs = tuple((f"{pre}{i}", w, k) for i in range(1, 5))
        dsts = ((f"{pre}10", w), (f"{pre}11", w))
        for a, b in (("add.cc", "addc"), ("sub.cc", "subc"), ("add.cc", "addc.cc"), ("sub.cc", "subc.cc")):
            out.append(Form(f"{a}.{t} {pre}10, {pre}1, {pre}2; {b}.{t} {pre}11, {pre}3, {pre}4;", dsts, srcs))
        for a, b in (("mad.lo.cc", "madc.hi"), ("mad.hi.cc", "madc.lo"), ("mad.lo.cc", "madc.hi.cc")):
            srcs3 = srcs[:3]
            out.append(Form(f"{a}.{t} {pre}10, {pre}1, {pre}2, {pre}3; {b}.{t} {pre}11, {pre}1, {pre}3, {pre}2;",
                            dsts, srcs3))
    return out


def float_forms():
    out = []
    for t in ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2"):
        for r in FRND:
            for ftz in ("", ".ftz"):
                for sat in ("", ".sat"):
                    for op in ("add", "sub", "mul"):
                        out.append(F(f"{op}{r}{ftz}{sat}.{t}", [t], [t, t]))
                    for relu in ("", ".relu"):
                        if relu and sat:
                            continue
                        out.append(F(f"fma{r}{ftz}{sat}{relu}.{t}", [t], [t, t, t]))
                        out.append(F(f"mad{r}{ftz}{sat}{relu}.{t}", [t], [t, t, t]))
        for ftz in ("", ".ftz"):
            for nan in ("", ".NaN"):
                for xs in ("", ".xorsign.abs"):
                    for op in ("min", "max"):
                        out.append(F(f"{op}{ftz}{nan}{xs}.{t}", [t], [t, t]))
            for op in ("neg", "abs"):
                out.append(F(f"{op}{ftz}.{t}", [t], [t]))
    for t in ("f32", "f64"):
        for r in FRND[1:]:
            for ftz in ("", ".ftz"):
                out.append(F(f"div{r}{ftz}.{t}", [t], [t, t]))
                out.append(F(f"rcp{r}{ftz}.{t}", [t], [t]))
                out.append(F(f"sqrt{r}{ftz}.{t}", [t], [t]))
        out.append(F(f"copysign.{t}", [t], [t, t]))
        for op in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"):
            out.append(F(f"testp.{op}.{t}", ["pred"], [t]))
    return out


def cmp_forms():
    out = []
    ctypes = ("b16", "b32", "b64", "u16", "s16", "u32", "s32", "u64", "s64", "f16", "bf16", "f32", "f64",
              "f16x2", "bf16x2")
    for t in ctypes:
        isf = t[0] in "fb" and t not in ("b16", "b32", "b64")
        cmps = FLT_CMP if isf else INT_CMP
        ftzs = ("", ".ftz") if isf else ("",)
        pair = t.endswith("x2")
        for c in cmps:
            for ftz in ftzs:
                op = f"setp.{c}{ftz}.{t}"
                if pair:
                    out.append(F(op, ["pred", "pred"], [t, t], dsep="|"))
                else:
                    out.append(F(op, ["pred"], [t, t]))
        for c in cmps[:6] + (cmps[10:12] if isf else ()):
            for b in ("and", "or", "xor"):
                op = f"setp.{c}.{b}{'.ftz' if isf and b == 'and' else ''}.{t}"
                out.append(F(op, ["pred", "pred"] if pair else ["pred"], [t, t, "pred"], dsep="|"))
            if not pair:
                out.append(F(f"setp.{c}.{t}", ["pred", "pred"], [t, t], dsep="|"))
        for dt in ("u32", "s32", "f32", "f16", "bf16", "f16x2", "bf16x2", "u16x2", "s16x2"):
            for c in cmps if dt in ("u32", "f32") else cmps[:3]:
                for ftz in ftzs if dt == "f32" or t == "f32" else ("",):
                    out.append(F(f"set.{c}{ftz}.{dt}.{t}", [dt], [t, t]))
            out.append(F(f"set.{cmps[2]}.or.{dt}.{t}", [dt], [t, t, "pred"]))
        if not pair:
            out.append(F(f"selp.{t}", [t], [t, t, "pred"]))
    for t in ("b16", "b32", "b64", "u16", "s16", "u32", "s32", "u64", "s64", "f16", "bf16", "f32", "f64"):
        for c in ("s32", "f32"):
            for ftz in ("", ".ftz") if c == "f32" else ("",):
                out.append(F(f"slct{ftz}.{t}.{c}", [t], [t, t, c]))
    return out


def cvt_forms():
    out = []
    for d in CVT_TYPES:
        for a in CVT_TYPES:
            df, af = d in FLT, a in FLT
            if not df and not af:
                rnds = ("",)
            elif not df:
                rnds = IRND
            elif not af:
                rnds = FRND
            elif d == a:
                rnds = IRND + ("",)
            else:
                rnds = FRND
            for r in rnds:
                for ftz in ("", ".ftz") if (af or df) else ("",):
                    for sat in ("", ".sat"):
                        out.append(F(f"cvt{r}{ftz}{sat}.{d}.{a}", [d], [a]))
    # relu / satfinite narrowing to f16/bf16
    for d in ("f16", "bf16"):
        for a in ("f32", "f64"):
            for r in FRND[1:]:
                for m in (".relu", ".satfinite", ".relu.satfinite"):
                    out.append(F(f"cvt{r}{m}.{d}.{a}", [d], [a]))
    # packs of two f32
    for d in ("f16x2", "bf16x2"):
        for r in FRND[1:]:
            for m in ("", ".relu", ".satfinite", ".relu.satfinite"):
                out.append(F(f"cvt{r}{m}.{d}.f32", [d], ["f32", "f32"]))
    # tf32
    for r in (".rna", ".rn", ".rz"):
        for m in ("", ".satfinite", ".relu", ".relu.satfinite"):
            out.append(F(f"cvt{r}{m}.tf32.f32", ["b32"], ["f32"]))
    # packed fp8 / fp6 / fp4
    for t in ("e4m3x2", "e5m2x2", "e2m3x2", "e3m2x2", "e2m1x2"):
        for m in (".satfinite", ".relu.satfinite", "", ".relu"):
            out.append(F(f"cvt.rn{m}.{t}.f32", ["b16"], ["f32", "f32"]))
            out.append(F(f"cvt.rn{m}.{t}.f16x2", ["b16"], ["f16x2"]))
            out.append(F(f"cvt.rn{m}.{t}.bf16x2", ["b16"], ["bf16x2"]))
        for m in ("", ".relu"):
            out.append(F(f"cvt.rn{m}.f16x2.{t}", ["f16x2"], [t]))
            out.append(F(f"cvt.rn{m}.bf16x2.{t}", ["bf16x2"], [t]))
    for r in (".rz", ".rp"):
        for m in ("", ".satfinite"):
            out.append(F(f"cvt{r}{m}.ue8m0x2.f32", ["b16"], ["f32", "f32"]))
            out.append(F(f"cvt{r}{m}.ue8m0x2.bf16x2", ["b16"], ["bf16x2"]))
    out.append(F("cvt.rn.bf16x2.ue8m0x2", ["bf16x2"], ["ue8m0x2"]))
    return out


def _imm_form(text, dst, srcs):
    """A form whose instruction names immediates: ``dst`` (register, width), ``srcs`` the register sources."""
    return Form(text, (dst,), tuple(srcs))


def immediate_forms():
    """Forms with immediate operands, which ptxas folds or specialises: division by a constant zero, shifts and
    bit fields by constant amounts, constant NaN operands."""
    out = []
    for t in INTS:
        w = WIDTH[t]
        r, k = f"{PREFIX[w]}", f"i{w}"
        for op in ("div", "rem"):
            for c in ("0", "1", "7"):
                out.append(_imm_form(f"{op}.{t} {r}10, {r}1, {c};", (f"{r}10", w), [(f"{r}1", w, k)]))
            out.append(_imm_form(f"{op}.{t} {r}10, 0, {r}2;", (f"{r}10", w), [(f"{r}2", w, k)]))
    for t in ("b16", "b32", "b64", "s32", "s64", "u32"):
        w = WIDTH[t]
        r, k = f"{PREFIX[w]}", f"i{w}"
        for op in ("shl", "shr"):
            for c in (0, 1, w - 1, w, w + 1, 255, 256):
                out.append(_imm_form(f"{op}.{t} {r}10, {r}1, {c};", (f"{r}10", w), [(f"{r}1", w, k)]))
    for t in ("u32", "s32", "u64", "s64"):
        w = WIDTH[t]
        r, k = f"{PREFIX[w]}", f"i{w}"
        for pos, ln in ((0, 0), (3, 5), (w - 1, 1), (w - 4, 8), (w, 1), (0, w), (0, w + 1), (100, 100), (255, 255),
                        (256, 4), (4, 256)):
            out.append(_imm_form(f"bfe.{t} {r}10, {r}1, {pos}, {ln};", (f"{r}10", w), [(f"{r}1", w, k)]))
    for t in ("b32", "b64"):
        w = WIDTH[t]
        r, k = f"{PREFIX[w]}", f"i{w}"
        for pos, ln in ((0, 0), (3, 5), (w - 4, 8), (w, 1), (0, w + 1), (255, 255), (256, 4)):
            out.append(_imm_form(f"bfi.{t} {r}10, {r}1, {r}2, {pos}, {ln};", (f"{r}10", w),
                                 [(f"{r}1", w, k), (f"{r}2", w, k)]))
    for c in ("0x3210", "0x7654", "0x0000", "0x8888", "0xfedc", "0x1357", "0x4567"):
        out.append(_imm_form(f"prmt.b32 %r10, %r1, %r2, {c};", ("%r10", 32), [("%r1", 32, "i32"), ("%r2", 32, "i32")]))
    for t, nan in (("f32", "0f7FC00000"), ("f32", "0fFF800001"), ("f64", "0d7FF0000000000001"),
                   ("f64", "0dFFF8000000000000")):
        w = WIDTH[t]
        r = PREFIX[w]
        for op in ("add", "mul", "min", "max", "sub"):
            out.append(_imm_form(f"{op}.{t} {r}10, {r}1, {nan};", (f"{r}10", w), [(f"{r}1", w, t)]))
            out.append(_imm_form(f"{op}.{t} {r}10, {nan}, {r}1;", (f"{r}10", w), [(f"{r}1", w, t)]))
        out.append(_imm_form(f"fma.rn.{t} {r}10, {r}1, {r}2, {nan};", (f"{r}10", w), [(f"{r}1", w, t), (f"{r}2", w, t)]))
    return out


def pack_forms():
    """cvt.pack.sat (integer packing with saturation) and the SIMD video instructions on bytes and halves."""
    out = []
    for d in ("u16", "s16"):
        for a in ("s32", "u32"):
            out.append(F(f"cvt.pack.sat.{d}.{a}", ["b32"], [a, a]))
    for d in ("u8", "s8"):
        for a in ("s32", "u32"):
            out.append(F(f"cvt.pack.sat.{d}.{a}.b32", ["b32"], [a, a, "b32"]))
    for op in ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"):
        for n in ("2", "4"):
            for t in ("u32", "s32"):
                for sat in ("", ".sat"):
                    out.append(F(f"{op}{n}{sat}.{t}.{t}.{t}", ["b32"], ["b32", "b32", "b32"]))
                out.append(F(f"{op}{n}.add.{t}.{t}.{t}", ["b32"], ["b32", "b32", "b32"]))
    for n in ("2", "4"):
        for t in ("u32", "s32"):
            for c in ("eq", "lt", "ge"):
                out.append(F(f"vset{n}.{t}.{t}.{c}", ["b32"], ["b32", "b32", "b32"]))
    return out


def extra_candidates():
    return _dedup(immediate_forms() + pack_forms())


def _dedup(forms):
    seen, out = set(), []
    for f in forms:
        if f.text not in seen:
            seen.add(f.text)
            out.append(f)
    return out


def candidates():
    seen, out = set(), []
    for f in integer_forms() + float_forms() + cmp_forms() + cvt_forms():
        if f.text not in seen:
            seen.add(f.text)
            out.append(f)
    return out


# ----------------------------------------------------------------------------------------------
# PTX generation

HEADER = ".version 8.7\n.target sm_90a\n.address_size 64\n\n"
LD = {1: "b32", 16: "b16", 32: "b32", 64: "b64"}


def kernel(name, form):
    """One kernel: thread i loads its inputs (8 bytes each) from in<k>[i], runs the form, stores the
    destinations to out[2 i + j] (8 bytes each; predicates as 0/1)."""
    lines = [f".visible .entry {name}(.param .u64 out, .param .u64 in0, .param .u64 in1, .param .u64 in2, "
             f".param .u64 in3)", "{",
             "  .reg .pred %p<12>;", "  .reg .b16 %rs<12>;", "  .reg .b32 %r<12>;", "  .reg .b64 %rd<12>;",
             "  .reg .b32 %t<4>;", "  .reg .b64 %a<8>;",
             "  mov.u32 %t0, %ctaid.x;", "  mov.u32 %t1, %ntid.x;", "  mov.u32 %t2, %tid.x;",
             "  mad.lo.u32 %t3, %t0, %t1, %t2;", "  mul.wide.u32 %a0, %t3, 8;"]
    for k, (reg, w, _) in enumerate(form.srcs):
        lines += [f"  ld.param.u64 %a1, [in{k}];", "  cvta.to.global.u64 %a1, %a1;", "  add.s64 %a1, %a1, %a0;"]
        if w == 1:
            lines += ["  ld.global.b32 %t0, [%a1];", f"  setp.ne.b32 {reg}, %t0, 0;"]
        else:
            lines.append(f"  ld.global.{LD[w]} {reg}, [%a1];")
    lines.append("  " + form.text)
    lines += ["  ld.param.u64 %a1, [out];", "  cvta.to.global.u64 %a1, %a1;", "  add.s64 %a1, %a1, %a0;",
              "  add.s64 %a1, %a1, %a0;"]
    for j, (reg, w) in enumerate(form.dsts):
        if w == 1:
            lines += [f"  selp.b32 %t0, 1, 0, {reg};", f"  st.global.b32 [%a1+{8 * j}], %t0;"]
        else:
            lines.append(f"  st.global.{LD[w]} [%a1+{8 * j}], {reg};")
    lines += ["  ret;", "}", ""]
    return "\n".join(lines)


def module(forms, prefix="k"):
    return HEADER + "\n".join(kernel(f"{prefix}{i}", f) for i, f in enumerate(forms))


_ERR = re.compile(r"line (\d+); error")


def accepted(forms, ptxas="ptxas", arch="sm_90a", chunk=400, log=None):
    """The forms ptxas accepts: compile modules of many kernels, drop the kernels an error points into,
    repeat until a module compiles."""
    keep = []
    for s in range(0, len(forms), chunk):
        part = list(forms[s:s + chunk])
        while part:
            text = module(part)
            starts = [m.start() for m in re.finditer(r"^\.visible \.entry", text, re.M)]
            line_of = [text.count("\n", 0, p) + 1 for p in starts]
            with tempfile.TemporaryDirectory() as d:
                p = os.path.join(d, "m.ptx")
                open(p, "w").write(text)
                r = subprocess.run([ptxas, f"-arch={arch}", p, "-o", os.path.join(d, "m.cubin")],
                                   capture_output=True, text=True)
            if r.returncode == 0:
                keep += part
                break
            bad = set()
            for ln in map(int, _ERR.findall(r.stderr)):
                k = max(i for i, l0 in enumerate(line_of) if l0 <= ln)
                bad.add(k)
            if not bad:
                raise RuntimeError(f"ptxas failed without a line: {r.stderr[:2000]}")
            if log is not None:
                for k in sorted(bad):
                    msg = [e for e in r.stderr.splitlines() if "error" in e]
                    log.append((part[k].text, msg[0] if msg else ""))
            part = [f for i, f in enumerate(part) if i not in bad]
    return keep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptxas", default="ptxas")
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", choices=("main", "extra"), default="main",
                    help="main: the scalar forms over registers; extra: immediates, cvt.pack, SIMD video")
    args = ap.parse_args()
    cands = candidates() if args.set == "main" else extra_candidates()
    ok = accepted(cands, args.ptxas)
    print(f"{len(cands)} candidates, {len(ok)} accepted by ptxas", file=sys.stderr)
    json.dump([f.to_json() for f in ok], open(args.out, "w"), indent=0)


if __name__ == "__main__":
    main()
