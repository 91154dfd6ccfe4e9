"""Which wmma spellings does ptxas accept?  Checks isa/wmma.py against ptxas, per architecture.

Every spelling of the table is compiled in a one-instruction kernel (it must be accepted), and so is a grid of
neighbouring spellings that the table leaves out (other shapes, types, layouts, mixed A/B types, .satfinite on
float forms, rounding modes on non-f64 forms): each must be rejected with every plausible register count.

    python tools/hwcapture/wmma/probe.py [--ptxas PATH] [--arch sm_90a]     # exits 1 on a disagreement
"""
import argparse
import os
import subprocess
import sys
import tempfile
from itertools import product

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
from isa.wmma import (BIG, ELEM_BITS, LAYOUTS, MEM_FORMS, MMA_FORMS, SHAPES, WmmaMem, WmmaMma,  # noqa: E402
                      reg_bits)

HEAD = ".version 8.0\n.target {arch}\n.address_size 64\n"


def _regs(prefix, base, n):
    return "{" + ", ".join(f"{prefix}{base + i}" for i in range(n)) + "}"


def _prefix(bits):
    return "%rd" if bits == 64 else "%r"


def mem_ptx(spelling, n, bits, stride=True):
    regs = _regs(_prefix(bits), 0, n)
    st = ", %r60" if stride else ""
    body = f"{spelling} [%rd70], {regs}{st};" if ".store." in spelling else f"{spelling} {regs}, [%rd70]{st};"
    return body


def mma_ptx(spelling, counts, bits):
    parts = [_regs(_prefix(b), base, n) for (n, b, base) in zip(counts, bits, (0, 10, 20, 30))]
    return f"{spelling} {', '.join(parts)};"


def kernel(arch, body):
    return HEAD.format(arch=arch) + (".visible .entry k(.param .u64 p)\n{\n .reg .b32 %r<80>;\n .reg .b64 %rd<80>;\n"
                                     " ld.param.u64 %rd70, [p];\n mov.u32 %r60, 64;\n " + body + "\n ret;\n}\n")


def accepts(ptxas, arch, body):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(kernel(arch, body))
        r = subprocess.run([ptxas, f"-arch={arch}", src, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True)
        return r.returncode == 0, r.stderr.strip()


def mem_candidates():
    types = list(ELEM_BITS)
    for op, mat in (("load", "a"), ("load", "b"), ("load", "c"), ("store", "d")):
        for layout, shape, t, space in product(LAYOUTS, SHAPES, types, (None, "global", "shared")):
            yield WmmaMem(op, mat, layout, shape, space, t, ())


def mma_candidates():
    for f in MMA_FORMS.values():
        yield f
    lay = list(product(LAYOUTS, repeat=2))
    for shape, (al, bl) in product(SHAPES, lay):
        for d, c in product(("f16", "f32"), repeat=2):
            yield WmmaMma(shape, al, bl, d, "f16", "f16", c, True, None, None, ())          # float .satfinite
            yield WmmaMma(shape, al, bl, d, "f16", "f16", c, False, None, None, ())
        yield WmmaMma(shape, al, bl, "f32", "bf16", "bf16", "f32", False, None, None, ())
        yield WmmaMma(shape, al, bl, "f32", "bf16", "bf16", "f32", True, None, None, ())
        yield WmmaMma(shape, al, bl, "f32", "tf32", "tf32", "f32", False, None, None, ())
        yield WmmaMma(shape, al, bl, "f64", "f64", "f64", "f64", False, "rz", None, ())
        yield WmmaMma(shape, al, bl, "f32", "f16", "f16", "f32", False, "rz", None, ())
        for a, b in product(("s8", "u8"), repeat=2):
            yield WmmaMma(shape, al, bl, "s32", a, b, "s32", False, None, None, ())
        for a, b in product(("s4", "u4"), repeat=2):
            yield WmmaMma(shape, al, bl, "s32", a, b, "s32", False, None, None, ())
        for bop in ("xor", "and"):
            yield WmmaMma(shape, al, bl, "s32", "b1", "b1", "s32", False, None, bop, ())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptxas", default="ptxas")
    ap.add_argument("--arch", default="sm_90a")
    args = ap.parse_args()
    bad = []
    seen = set()
    n_acc = n_rej = 0
    for f in mem_candidates():
        if f.spelling in seen:
            continue
        seen.add(f.spelling)
        bits = reg_bits(f.type)
        if f.spelling in MEM_FORMS:
            ok, err = accepts(args.ptxas, args.arch, mem_ptx(f.spelling, MEM_FORMS[f.spelling].n_regs, bits))
            ok2, _ = accepts(args.ptxas, args.arch,
                             mem_ptx(f.spelling, MEM_FORMS[f.spelling].n_regs, bits, stride=False))
            if not (ok and ok2):
                bad.append(f"table has {f.spelling} but ptxas rejects it: {err}")
            n_acc += 1
        else:
            for n in (1, 2, 4, 8):
                if accepts(args.ptxas, args.arch, mem_ptx(f.spelling, n, bits))[0]:
                    bad.append(f"ptxas accepts {f.spelling} with {n} registers; the table lacks it")
                    break
            n_rej += 1
    for f in mma_candidates():
        if f.spelling in seen:
            continue
        seen.add(f.spelling)
        if f.spelling in MMA_FORMS:
            g = MMA_FORMS[f.spelling]
            counts = [g.n_regs(op) for op in "dabc"]
            ok, err = accepts(args.ptxas, args.arch, mma_ptx(f.spelling, counts, [g.reg_bits(op) for op in "dabc"]))
            if not ok:
                bad.append(f"table has {f.spelling} but ptxas rejects it: {err}")
            n_acc += 1
        else:
            bits = [reg_bits(t) for t in (f.dtype, f.atype, f.btype, f.ctype)]
            for counts in product((1, 2, 4, 8), repeat=4):
                if counts[0] != counts[3]:
                    continue
                if accepts(args.ptxas, args.arch, mma_ptx(f.spelling, counts, bits))[0]:
                    bad.append(f"ptxas accepts {f.spelling} with registers {counts}; the table lacks it")
                    break
            n_rej += 1
    print(f"{args.arch}: {n_acc} table spellings, {n_rej} neighbours checked; {len(bad)} disagreements")
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
