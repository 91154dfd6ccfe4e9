"""Which mma.sync spellings does ptxas accept, per architecture?

Compiles a one-instruction PTX kernel for every candidate spelling (the table in isa/mma.py plus
neighbouring forms that PTX documents or that one might guess) with ``ptxas -arch=sm_XX`` and prints a
table.  ``--check`` exits non-zero when isa/mma.py's ``archs`` column disagrees with ptxas.

    python tools/hwcapture/ptx_probe.py [--check] [--ptxas PATH]
"""
import argparse
import os
import subprocess
import sys
import tempfile
from itertools import product

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from isa.mma import ARCHS, VARIANTS, MmaVariant  # noqa: E402

PTX_VERSION = "9.0"


def reg_names(var, op, base):
    t = {"A": var.atype, "B": var.btype, "C": var.ctype, "D": var.dtype}[op]
    prefix = "%fd" if t == "f64" else "%f" if t == "f32" else "%r"
    return [f"{prefix}{base + i}" for i in range(var.n_regs(op))]


def operands(var):
    base = {"D": 0, "A": 10, "B": 20, "C": 30}
    return {op: reg_names(var, op, base[op]) for op in "DABC"}


def kernel_ptx(spelling, var, arch):
    ops = operands(var)
    lines = [f".version {PTX_VERSION}", f".target {arch}", ".address_size 64", "",
             ".visible .entry probe(.param .u64 out)", "{",
             "  .reg .b32 %r<40>;", "  .reg .f32 %f<40>;", "  .reg .f64 %fd<40>;", "  .reg .b64 %rd<2>;",
             "  ld.param.u64 %rd1, [out];"]
    for op in "ABC":
        for r in ops[op]:
            kind = "f64" if r.startswith("%fd") else "f32" if r.startswith("%f") else "b32"
            lines.append(f"  mov.{kind} {r}, {'0d0000000000000000' if kind == 'f64' else '0f00000000' if kind == 'f32' else '0'};")
    lines.append(f"  {spelling} {{{', '.join(ops['D'])}}}, {{{', '.join(ops['A'])}}}, "
                 f"{{{', '.join(ops['B'])}}}, {{{', '.join(ops['C'])}}};")
    for i, r in enumerate(ops["D"]):
        kind = "f64" if r.startswith("%fd") else "f32" if r.startswith("%f") else "b32"
        lines.append(f"  st.global.{kind} [%rd1+{8 * i}], {r};")
    lines += ["  ret;", "}"]
    return "\n".join(lines) + "\n"


def accepts(ptxas, spelling, var, arch):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        open(src, "w").write(kernel_ptx(spelling, var, arch))
        r = subprocess.run([ptxas, f"-arch={arch}", src, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True)
        return r.returncode == 0, r.stderr.strip()


def candidates():
    """Table entries plus forms one might expect: mixed d/c, fp8 m16n8k16, Turing integer shapes."""
    seen = dict((s, v) for s, v in VARIANTS.items())
    extra = []
    for k in (8, 16):
        extra += [MmaVariant((16, 8, k), "row", "col", False, d, "f16", "f16", c, ())
                  for d, c in (("f32", "f16"), ("f16", "f32"))]
        extra.append(MmaVariant((16, 8, k), "row", "col", False, "f16", "bf16", "bf16", "f16", ()))
    for a, b in product(("e4m3", "e5m2"), repeat=2):
        extra.append(MmaVariant((16, 8, 16), "row", "col", False, "f32", a, b, "f32", ()))
        extra.append(MmaVariant((16, 8, 16), "row", "col", False, "f16", a, b, "f16", ()))
        extra.append(MmaVariant((16, 8, 32), "row", "col", False, "f32", a, b, "f16", ()))
    extra.append(MmaVariant((16, 8, 32), "row", "col", True, "f32", "e4m3", "e4m3", "f32", ()))
    extra.append(MmaVariant((16, 8, 16), "row", "col", True, "f32", "f16", "f16", "f32", ()))
    for v in extra:
        seen.setdefault(v.spelling, v)
    return seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptxas", default="ptxas")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    bad = 0
    for spelling, var in candidates().items():
        got = tuple(a for a in ARCHS if accepts(args.ptxas, spelling, var, a)[0])
        table = VARIANTS[spelling].archs if spelling in VARIANTS else ()
        flag = "" if got == table else "   <-- table says " + (",".join(table) or "absent")
        bad += bool(flag)
        print(f"{spelling:62s} {','.join(got) or '-':20s}{flag}")
    if args.check and bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
