"""Read how ptxas lowers each wmma.mma, and check isa/wmma.py's ``lowering`` against it.

Every fragment register is loaded from its own global address (256 bytes apart, so ptxas cannot merge the
loads) and every D register stored to its own address.  Reading the SASS back, each tensor-core instruction's
operands are traced to the PTX registers they came from (through moves), which shows which wmma registers
each HMMA/IMMA/DMMA/BMMA reads.  ``--check`` compares that with the steps of ``isa.wmma.lowering`` (the first
register of each operand, per instruction, as a multiset); the software sequences (s4/u4, b1 .xor) and the
C operand of a widened .f16 C are not traced.

    python tools/hwcapture/wmma/sass.py [--arch sm_90a] [--cuobjdump PATH] [--check] [--show SPELLING]
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
from isa.wmma import MMA_FORMS  # noqa: E402

BASE = {"a": 0, "b": 20, "c": 40}


def kernel(spelling, arch):
    f = MMA_FORMS[spelling]
    L = [".version 8.3", f".target {arch}", ".address_size 64", ".visible .entry k(.param .u64 p)", "{",
         " .reg .b32 %r<200>;", " .reg .b64 %rd<200>;", " ld.param.u64 %rd199, [p];"]
    names = {}
    for op in "abcd":
        pfx = "%rd" if f.reg_bits(op) == 64 else "%r"
        base = {"a": 0, "b": 20, "c": 40, "d": 60}[op]
        names[op] = [f"{pfx}{base + i}" for i in range(f.n_regs(op))]
    for op in "abc":
        for i, r in enumerate(names[op]):
            t = "b64" if r.startswith("%rd") else "b32"
            L.append(f" ld.global.{t} {r}, [%rd199+{256 * (BASE[op] + i)}];")
    L.append(f" {spelling} " + ", ".join("{" + ", ".join(names[op]) + "}" for op in "dabc") + ";")
    for i, r in enumerate(names["d"]):
        t = "b64" if r.startswith("%rd") else "b32"
        L.append(f" st.global.{t} [%rd199+{100000 + 256 * i}], {r};")
    L += [" ret;", "}"]
    return "\n".join(L) + "\n"


def sass(spelling, arch, cuobjdump):
    with tempfile.TemporaryDirectory() as d:
        src, cub = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as fh:
            fh.write(kernel(spelling, arch))
        subprocess.run(["ptxas", f"-arch={arch}", src, "-o", cub], check=True, capture_output=True)
        out = subprocess.run([cuobjdump, "-sass", cub], capture_output=True, text=True, check=True).stdout
    return [re.sub(r"\s+", " ", m.group(1)) for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", out)]


def _name(off):
    i = off // 256
    return f"A{i}" if i < 20 else f"B{i - 20}" if i < 40 else f"C{i - 40}"


def trace(lines):
    """Tensor-core instructions with their operands' first registers named after the PTX registers."""
    regmap, mmas = {}, []
    for ln in lines:
        m = re.match(r"LDG\.E(\.64)? (R\d+), (?:desc\[UR\d+\])?\[R\d+\.64(?:\+0x([0-9a-f]+))?\]", ln)
        if m:
            regmap[int(m.group(2)[1:])] = _name(int(m.group(3) or "0", 16))
            continue
        m = re.match(r"(?:IMAD\.MOV\.U32 (R\d+), RZ, RZ, (R\d+)|MOV (R\d+), (R\d+))$", ln)
        if m:
            d, s = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            regmap[int(d[1:])] = regmap.get(int(s[1:]), s)
            continue
        m = re.match(r"([HIDB]MMA\.\S+) (R\d+), (R\d+)\S*, (R\d+)\S*, (R\d+|RZ)", ln)
        if m:
            ops = [regmap.get(int(r[1:]), r) if r != "RZ" else "RZ" for r in m.group(3, 4, 5)]
            mmas.append((m.group(1), *ops))
            regmap[int(m.group(2)[1:])] = ops[2]      # D carries on the accumulator it was computed from
    return mmas


def expected(form):
    out = []
    for st in form.steps:
        a, b = f"A{st.a[0]}", f"B{st.b[0]}"
        out.append(((b, a) if st.swap else (a, b)) + ((None,) if form.convert_c else (f"C{st.c[0]}",)))
    return collections.Counter(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--show")
    args = ap.parse_args()
    if args.show:
        for ln in trace(sass(args.show, args.arch, args.cuobjdump)):
            print(ln)
        return 0
    bad = checked = 0
    for sp, f in MMA_FORMS.items():
        if f.shape == "m8n8k32" or f.bop == "xor":
            continue                              # software sequences around IMMA.8816 / BMMA (exact)
        got = trace(sass(sp, args.arch, args.cuobjdump))
        if not args.check:
            print(sp, got)
            continue
        checked += 1
        seen = collections.Counter((a, b, None if f.convert_c else c) for _, a, b, c in got)
        if seen != expected(f):
            bad += 1
            print(f"DIFFERS {sp}: SASS {sorted(seen.elements())}, table {sorted(expected(f).elements())}")
    if args.check:
        print(f"{args.arch}: {checked} wmma.mma forms traced, {bad} differ from isa/wmma.py")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
