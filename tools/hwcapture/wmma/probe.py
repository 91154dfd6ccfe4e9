"""Which wmma spellings does ptxas accept?  Checks isa/wmma.py against ptxas, per architecture.

Every spelling of the table is compiled in a one-instruction kernel (it must be accepted), and so is a grid of
neighbouring spellings that the table leaves out (other shapes, types, layouts, mixed A/B types, .satfinite on
float forms, rounding modes on non-f64 forms): ptxas must reject each for its spelling, not merely for its
operands ("Argument vector size mismatch" / "Arguments mismatch" alone would mean the spelling exists).

    python tools/hwcapture/wmma/probe.py [--ptxas PATH] [--arch sm_90a]     # exits 1 on a disagreement
"""
import argparse
import os
import subprocess
import sys
import tempfile
from itertools import product

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
from isa.wmma import (ELEM_BITS, LAYOUTS, MEM_FORMS, MMA_FORMS, SHAPES, WmmaMem, WmmaMma,  # noqa: E402
                      reg_bits)


def known_quirk(spelling):
    """Spellings ptxas accepts that the table leaves out on purpose: .f64 wmma.mma with other shapes than
    m8n8k4 (ptxas emits no arithmetic for them; isa.wmma.F64_SHAPE_QUIRK)."""
    return spelling.startswith("wmma.mma") and ".f64" in spelling and ".m8n8k4." not in spelling

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


OPERAND_ERRORS = ("Argument vector size mismatch", "Arguments mismatch")


def verdict(ptxas, arch, body):
    """'ok', 'operands' (only the operand counts or widths are wrong: the spelling itself exists) or 'no'."""
    ok, err = accepts(ptxas, arch, body)
    if ok:
        return "ok"
    errs = [ln for ln in err.splitlines() if "error" in ln and "fatal" not in ln]
    return "operands" if errs and all(any(e in ln for e in OPERAND_ERRORS) for ln in errs) else "no"


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
    jobs, seen = [], set()          # (spelling, in the table?, body)
    for f in mem_candidates():
        if f.spelling not in seen:
            seen.add(f.spelling)
            form = MEM_FORMS.get(f.spelling)
            n = form.n_regs if form else 1
            jobs.append((f.spelling, form is not None, mem_ptx(f.spelling, n, reg_bits(f.type))))
            if form:
                jobs.append((f.spelling, True, mem_ptx(f.spelling, n, reg_bits(f.type), stride=False)))
    for f in mma_candidates():
        if f.spelling not in seen:
            seen.add(f.spelling)
            g = MMA_FORMS.get(f.spelling)
            counts = [g.n_regs(op) for op in "dabc"] if g else [1, 1, 1, 1]
            bits = [reg_bits(t) for t in (f.dtype, f.atype, f.btype, f.ctype)]
            jobs.append((f.spelling, g is not None, mma_ptx(f.spelling, counts, bits)))
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as ex:
        verdicts = list(ex.map(lambda j: verdict(args.ptxas, args.arch, j[2]), jobs))
    # a neighbour refused for its operands only (ptxas checks them before some spelling rules) is tried again
    # with every plausible register count; it disagrees with the table if any is accepted
    retry = {}
    for (sp, in_table, _), v in zip(jobs, verdicts):
        if not in_table and v == "operands":
            if sp.startswith("wmma.mma"):
                f = next(x for x in mma_candidates() if x.spelling == sp)
                bits = [reg_bits(t) for t in (f.dtype, f.atype, f.btype, f.ctype)]
                retry[sp] = [mma_ptx(sp, (c, a, b, c), bits) for a, b, c in product((1, 2, 4, 8), repeat=3)]
            else:
                t = sp.rsplit(".", 1)[1]
                retry[sp] = [mem_ptx(sp, n, reg_bits(t)) for n in (1, 2, 4, 8)]
    flat = [(sp, b) for sp, bs in retry.items() for b in bs]
    with ThreadPoolExecutor(4) as ex:
        again = list(ex.map(lambda j: accepts(args.ptxas, args.arch, j[1])[0], flat))
    accepted = {sp for (sp, _), ok in zip(flat, again) if ok}
    bad, quirks = [], []
    for (sp, in_table, _), v in zip(jobs, verdicts):
        if in_table and v != "ok":
            bad.append(f"table has {sp} but ptxas rejects it")
        elif not in_table and (v == "ok" or sp in accepted):
            (quirks if known_quirk(sp) else bad).append(sp)
    bad = [b if b.startswith("table") else f"ptxas accepts {b}; the table lacks it" for b in bad]
    n_tab = sum(1 for j in jobs if j[1])
    print(f"{args.arch}: {n_tab} table checks (spellings, with and without stride), {len(jobs) - n_tab} neighbouring "
          f"spellings ({len(retry)} retried with other register counts); {len(quirks)} known ptxas quirks refused on "
          f"purpose; {len(bad)} disagreements")
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
