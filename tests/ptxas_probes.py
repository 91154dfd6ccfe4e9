"""PTX probes of what ptxas does beyond the instruction semantics (shared by tests and
``tools/hwcapture/ptxas_compile.py``): approximate math on constant operands, which ptxas evaluates at compile
time (``emulator/frontend/constfold.py``), and unrounded mul/add pairs, which it fuses only when every reader of
the product is such an add (``emulator/frontend/contract.py``)."""
HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"


def fold_module(form, consts):
    """One thread stores ``form`` of each constant (a bit pattern, or a pair for the divisions), each operand a
    register that one ``mov`` of an immediate defines."""
    two = form.startswith("div")
    lines = [".version 8.0", ".target sm_90a", ".address_size 64", ".visible .entry k(.param .u64 out)", "{",
             ".reg .b32 %r<9000>;", ".reg .b64 %rd<4>;", "ld.param.u64 %rd1, [out];"]
    for i, c in enumerate(consts):
        if two:
            lines += [f"mov.b32 %r{3 * i}, 0f{int(c[0]):08X};", f"mov.b32 %r{3 * i + 1}, 0f{int(c[1]):08X};",
                      f"{form} %r{3 * i + 2}, %r{3 * i}, %r{3 * i + 1};"]
        else:
            lines += [f"mov.b32 %r{3 * i}, 0f{int(c):08X};", f"{form} %r{3 * i + 2}, %r{3 * i};"]
        lines.append(f"st.global.b32 [%rd1+{4 * i}], %r{3 * i + 2};")
    return "\n".join(lines + ["ret;", "}"]) + "\n"


# each kernel: %f1..%f4 = a[i], b[i], c[i], d[i]; stores (%f6, %f7) at out[2i]
CONTRACT_PATTERNS = {
    "mul_add": "mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; mov.f32 %f7, %f6;",
    "mul_add_store": "mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; mov.f32 %f7, %f5;",
    "mul_add_add": "mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; sub.f32 %f7, %f4, %f5;",
    "mul_add_mul": "mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; mul.f32 %f7, %f5, %f4;",
    "mul_add_fma": "mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; fma.rn.f32 %f7, %f5, %f4, %f3;",
    "div_sub_sub": "div.full.f32 %f5, %f1, %f2; sub.f32 %f6, %f3, %f5; sub.f32 %f7, %f4, %f5;",
    "div_add_store": "div.full.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; mov.f32 %f7, %f5;",
    "divapprox_add_cvt": ("div.approx.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; cvt.rn.f16.f32 %rs1, %f5; "
                          "cvt.f32.f16 %f7, %rs1;"),
    "mul_add_branch_add": ("mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; mov.f32 %f7, 0f00000000; "
                           "setp.gt.f32 %p1, %f4, 0f00000000; @%p1 bra L1; add.f32 %f7, %f5, %f4; L1:"),
    "mul_add_branch_use": ("mul.f32 %f5, %f1, %f2; add.f32 %f6, %f5, %f3; mov.f32 %f7, 0f00000000; "
                           "setp.gt.f32 %p1, %f4, 0f00000000; @%p1 bra L1; mov.f32 %f7, %f5; L1:"),
    "mul_label_add": "mul.f32 %f5, %f1, %f2; $L__tmp1: add.f32 %f6, %f5, %f3; mov.f32 %f7, %f6;",
}
# whether ptxas fuses the add/sub into an FFMA (the H100's results; ptxas 13's SASS agrees: in
# mul_add_branch_add it turns the branch into a predicated FADD and fuses neither add)
CONTRACT_FUSED = {"mul_add": True, "mul_add_store": False, "mul_add_add": True, "mul_add_mul": False,
                  "mul_add_fma": False, "div_sub_sub": True, "div_add_store": False, "divapprox_add_cvt": False,
                  "mul_add_branch_add": False, "mul_add_branch_use": False, "mul_label_add": True}


def contract_module():
    src = [HEAD.rstrip("\n")]
    for name, body in CONTRACT_PATTERNS.items():
        src += [f".visible .entry {name}(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd, "
                f".param .u64 po, .param .u32 n)", "{", ".reg .f32 %f<12>;", ".reg .b64 %rd<12>;", ".reg .b32 %r<8>;",
                ".reg .pred %p<3>;", ".reg .b16 %rs<3>;",
                "mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mad.lo.s32 %r4, %r1, %r2, %r3;",
                "ld.param.u32 %r5, [n]; setp.ge.u32 %p2, %r4, %r5; @%p2 bra DONE;", "mul.wide.u32 %rd1, %r4, 4;"]
        for i, p in enumerate("abcd"):
            src += [f"ld.param.u64 %rd{2 + i}, [p{p}];", f"add.s64 %rd{2 + i}, %rd{2 + i}, %rd1;",
                    f"ld.global.f32 %f{1 + i}, [%rd{2 + i}];"]
        src += [body, "ld.param.u64 %rd6, [po];", "mul.wide.u32 %rd7, %r4, 8;", "add.s64 %rd6, %rd6, %rd7;",
                "st.global.v2.f32 [%rd6], {%f6, %f7};", "DONE:", "ret;", "}"]
    return "\n".join(src) + "\n"
