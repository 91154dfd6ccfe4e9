"""Mutate real compiler PTX one edit at a time and label every mutant with ptxas's verdict.

Sources: the PTX of tests/data/corpus/*.npz (Triton, nvcc, CuTe; the small cases) and tests/data/kernels/*.ptx.
Each mutant is one source with exactly one line replaced (or removed); ptxas (``-arch=sm_90a``) says whether
it assembles. The output is JSON lines: ``{"src", "line", "old", "new", "kind", "ok", "msg"}`` with ``line``
1-based, ``new`` None for a deleted line, ``ok`` ptxas's verdict and ``msg`` its first error line.

    python tools/ptxas_verdicts/mutate.py --count 4000 --out /tmp/verdicts.jsonl [--jobs 2] [--seed 1]
    python tools/ptxas_verdicts/mutate.py --pack /tmp/verdicts.jsonl      # -> tests/data/ptxas_verdicts.jsonl.gz

``tests/test_validation.py`` replays the committed sample through ``load_ptx``.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import gzip
import json
import os
import random
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from ptxas_sources import sources  # noqa: E402

OUT_DEFAULT = os.path.join(ROOT, "tests", "data", "ptxas_verdicts.jsonl.gz")

TYPES = ["b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16", "f16x2",
         "bf16", "bf16x2", "f32", "f64", "pred", "b128", "tf32"]
SPACES = ["global", "shared", "local", "const", "param", "shared::cta", "shared::cluster"]
REG_CLASSES = ["%r", "%rd", "%rs", "%f", "%fd", "%p", "%h", "%hh"]
OPCODE_SWAPS = [
    ["add", "sub", "mul", "min", "max", "and", "or", "xor", "div", "rem", "shl", "shr", "mad", "fma"],
    ["ld", "st", "ldu", "prefetch", "atom", "red"],
    ["mov", "cvt", "cvta", "neg", "not", "abs", "popc", "clz", "brev", "sqrt", "rcp", "ex2", "lg2"],
    ["setp", "set", "selp", "slct", "testp"],
    ["bra", "call", "ret", "exit", "bar"],
    ["shfl", "vote", "redux", "match", "activemask"],
]
MODIFIERS = ["rn", "rz", "sat", "ftz", "lo", "hi", "wide", "approx", "full", "sync", "aligned", "volatile",
             "relaxed", "acquire", "release", "gpu", "cta", "sys", "nc", "v2", "v4", "cc", "uni", "x4", "trans",
             "L1::evict_last", "L2::128B", "rni", "rzi", "shared", "global", "u32", "f32"]
IMM_VALUES = ["0x1FFFFFFFFFFFFFFFF", "4294967296", "-1", "1.5", "0f3F800000", "0d3FF0000000000000", "65536",
              "0xFFFFFFFF", "-2147483649", "256", "0", "1e10", "0fFFFFFFFF", "99999999999999999999"]

_INSTR_RE = re.compile(r"^(\s*)(@!?[%\w$]+\s+)?([a-z][\w.:]*)(\s+(.*?))?\s*;\s*(//.*)?$")
_REG_RE = re.compile(r"%(rd|rs|fd|r|f|p|hh|h)(\d+)\b")
_IMM_RE = re.compile(r"(?<![\w%$.])(-?(?:0[fFdD][0-9a-fA-F]+|0[xX][0-9a-fA-F]+|\d+(?:\.\d+)?))(?![\w.])")


def split_operands(text):
    """Top-level comma split (brackets and braces kept together)."""
    out, depth, cur = [], 0, ""
    for c in text:
        if c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def instruction_lines(lines):
    """Indices of instruction statements inside function bodies (one statement per line)."""
    out, depth = [], 0
    for i, ln in enumerate(lines):
        s = ln.strip()
        if depth > 0 and s and not s.startswith((".", "//", "{", "}", "$", "(", ")")) and _INSTR_RE.match(ln) \
                and not s.endswith(":"):
            out.append(i)
        depth += ln.count("{") - ln.count("}") if not s.startswith("//") else 0
    return out


def directive_lines(lines):
    return [i for i, ln in enumerate(lines) if ln.strip().startswith((".reg", ".shared", ".local", ".global", ".const",
                                                                       ".param", ".version", ".target", ".address_size",
                                                                       ".maxntid", ".reqntid", ".entry", ".visible",
                                                                       ".func", ".align", ".pragma", ".minnctapersm",
                                                                       ".extern"))]


def rebuild(m, opcode, ops):
    indent, guard = m.group(1), m.group(2) or ""
    return f"{indent}{guard}{opcode}" + (" " + ", ".join(ops) if ops else "") + ";"


def declared(lines):
    """{class prefix: count} from '.reg .T %x<N>' (any function)."""
    out = {}
    for ln in lines:
        for pre, n in re.findall(r"(%[a-z]+)<(\d+)>", ln):
            out[pre] = max(out.get(pre, 0), int(n))
    return out


def mutate_instruction(rng, line, decl, labels):
    m = _INSTR_RE.match(line)
    opcode, rest = m.group(3), m.group(5) or ""
    ops = split_operands(rest)
    parts = opcode.split(".")
    kind = rng.choice(["reg_class", "reg_class", "reg_class", "type", "type", "type", "drop", "dup", "undeclared",
                       "space", "space", "opcode", "imm", "imm", "label", "mod_drop", "mod_add", "guard", "vector",
                       "address", "swap", "reg_to_imm", "imm_to_reg"])
    if kind == "reg_class":
        regs = list(_REG_RE.finditer(rest))
        if not regs:
            return None
        r = rng.choice(regs)
        cls = rng.choice([c for c in REG_CLASSES if c != "%" + r.group(1)])
        n = decl.get(cls, 0)
        idx = rng.randrange(1, n) if n > 1 else 1
        new_rest = rest[:r.start()] + f"{cls}{idx}" + rest[r.end():]
        return kind, rebuild(m, opcode, split_operands(new_rest))
    if kind == "type":
        ts = [i for i, p in enumerate(parts) if p in TYPES]
        if not ts:
            return None
        i = rng.choice(ts)
        parts[i] = rng.choice([t for t in TYPES if t != parts[i]])
        return kind, rebuild(m, ".".join(parts), ops)
    if kind == "drop":
        if not ops:
            return None
        ops.pop(rng.randrange(len(ops)))
        return kind, rebuild(m, opcode, ops)
    if kind == "dup":
        if not ops:
            return None
        i = rng.randrange(len(ops))
        ops.insert(rng.randrange(len(ops) + 1), ops[i])
        return kind, rebuild(m, opcode, ops)
    if kind == "undeclared":
        regs = list(_REG_RE.finditer(rest))
        if not regs:
            return None
        r = rng.choice(regs)
        cls = "%" + r.group(1)
        new_rest = rest[:r.start()] + f"{cls}{decl.get(cls, 0) + rng.choice([0, 1, 7, 1000])}" + rest[r.end():]
        return kind, rebuild(m, opcode, split_operands(new_rest))
    if kind == "space":
        sp = [i for i, p in enumerate(parts) if p in SPACES or p.startswith("shared::")]
        if sp:
            i = rng.choice(sp)
            parts[i] = rng.choice([s for s in SPACES if s != parts[i]])
        elif parts[0] in ("ld", "st", "atom", "red", "cvta", "prefetch", "mbarrier", "cp"):
            parts.insert(1 if parts[0] != "cvta" else 2, rng.choice(SPACES))
        else:
            return None
        return kind, rebuild(m, ".".join(parts), ops)
    if kind == "opcode":
        group = next((g for g in OPCODE_SWAPS if parts[0] in g), None) or rng.choice(OPCODE_SWAPS)
        parts[0] = rng.choice([o for o in group if o != parts[0]])
        return kind, rebuild(m, ".".join(parts), ops)
    if kind == "imm":
        imms = list(_IMM_RE.finditer(rest))
        if not imms:
            return None
        r = rng.choice(imms)
        new_rest = rest[:r.start()] + rng.choice(IMM_VALUES) + rest[r.end():]
        return kind, rebuild(m, opcode, split_operands(new_rest))
    if kind == "label":
        if parts[0] not in ("bra", "call") or not ops:
            return None
        choice = rng.choice(["$L__undefined", "%r1", "%rd1", "1", rng.choice(labels) if labels else "$nolabel"])
        ops[-1 if parts[0] == "bra" else 0] = choice if parts[0] == "bra" else ops[0]
        if parts[0] == "call":
            return None
        return kind, rebuild(m, opcode, ops)
    if kind == "mod_drop":
        if len(parts) < 2:
            return None
        parts.pop(rng.randrange(1, len(parts)))
        return kind, rebuild(m, ".".join(parts), ops)
    if kind == "mod_add":
        parts.insert(rng.randrange(1, len(parts) + 1), rng.choice(MODIFIERS))
        return kind, rebuild(m, ".".join(parts), ops)
    if kind == "guard":
        g = m.group(2)
        new_g = rng.choice(["@%r1 ", "@%rd1 ", "@%p999 ", "@!%f1 ", "@%p1 "])
        return kind, f"{m.group(1)}{new_g}{opcode}" + (" " + ", ".join(ops) if ops else "") + ";" \
            if g or rng.random() < 0.5 else None
    if kind == "vector":
        vs = [i for i, o in enumerate(ops) if o.startswith("{")]
        if not vs:
            return None
        i = rng.choice(vs)
        items = split_operands(ops[i][1:-1])
        if rng.random() < 0.5 and len(items) > 1:
            items.pop(rng.randrange(len(items)))
        else:
            items.append(rng.choice(items))
        ops[i] = "{" + ", ".join(items) + "}"
        return kind, rebuild(m, opcode, ops)
    if kind == "address":
        ad = [i for i, o in enumerate(ops) if o.startswith("[")]
        if not ad:
            return None
        i = rng.choice(ad)
        ops[i] = rng.choice(["[%r1]", "[%rd1+4]", "[%rs1]", "[%f1]", "[%p1]", "[0]", "[%rd1+-8]", "%rd1",
                             "[%rd1+%r1]", "[%r1+0x7FFFFFFF]", "[%rd1+99999999999]"])
        return kind, rebuild(m, opcode, ops)
    if kind == "swap":
        if len(ops) < 2:
            return None
        i, j = rng.sample(range(len(ops)), 2)
        if ops[i] == ops[j]:
            return None
        ops[i], ops[j] = ops[j], ops[i]
        return kind, rebuild(m, opcode, ops)
    if kind == "reg_to_imm":
        plain = [i for i, o in enumerate(ops) if _REG_RE.fullmatch(o)]
        if not plain:
            return None
        ops[rng.choice(plain)] = rng.choice(["1", "0", "-1", "0f3F800000", "7"])
        return kind, rebuild(m, opcode, ops)
    if kind == "imm_to_reg":
        imm = [i for i, o in enumerate(ops) if _IMM_RE.fullmatch(o)]
        if not imm:
            return None
        ops[rng.choice(imm)] = rng.choice(["%r1", "%rd1", "%rs1", "%f1", "%p1"])
        return kind, rebuild(m, opcode, ops)
    return None


def mutate_directive(rng, line):
    s = line.strip()
    kind = "directive"
    choices = []
    if s.startswith(".reg"):
        choices += [re.sub(r"\.(b|u|s|f)(8|16|32|64)\b|\.pred\b", lambda _: "." + rng.choice(TYPES), line, count=1),
                    re.sub(r"<(\d+)>", lambda m: f"<{rng.choice([0, 1, int(m.group(1)) // 2])}>", line),
                    None]       # delete the declaration
    if s.startswith(".version"):
        choices += [f".version {rng.choice(['1.0', '7.0', '8.0', '9.9', '10.0', '8', 'x'])}"]
    if s.startswith(".target"):
        targets = ["sm_70", "sm_89", "sm_100a", "sm_90", "sm_90a", "sm_20", "foo", "sm_80, texmode_independent"]
        choices += [f".target {rng.choice(targets)}"]
    if s.startswith(".address_size"):
        choices += [f".address_size {rng.choice(['32', '16', '128'])}"]
    if ".align" in s:
        choices += [re.sub(r"\.align\s+\d+", f".align {rng.choice([0, 3, 6, 2, 1, 256])}", line, count=1)]
    if re.search(r"\.(maxntid|reqntid|minnctapersm)", s):
        choices += [re.sub(r"\d+", lambda _: rng.choice(["0", "2048", "-1", "x"]), line, count=1)]
    if re.search(r"\.param\s", s) or s.startswith((".shared", ".global", ".const", ".local")):
        choices += [re.sub(r"\.(b|u|s|f)(8|16|32|64)\b", lambda _: "." + rng.choice(TYPES), line, count=1),
                    re.sub(r"\.(shared|global|const|local|param)\b", lambda _: "." + rng.choice(SPACES), line,
                           count=1),
                    re.sub(r"\[(\d+)\]", lambda m: f"[{rng.choice(['0', '-1', 'x', ''])}]", line, count=1)]
    if s.startswith((".visible", ".entry", ".func")):
        choices += [line.replace(".entry", rng.choice([".func", ".entry .entry", ".kernel"]), 1),
                    line.replace(".visible", rng.choice([".extern", ".weak", ""]), 1)]
    choices = [c for c in choices if c != line]
    if not choices:
        return None
    return kind, rng.choice(choices)


def make_mutants(rng, name, text, count):
    lines = text.split("\n")
    instrs = instruction_lines(lines)
    dirs = directive_lines(lines)
    decl = declared(lines)
    labels = [ln.strip()[:-1] for ln in lines if re.match(r"^\s*\$?[\w$]+:\s*$", ln)]
    out, tries = [], 0
    while len(out) < count and tries < count * 20:
        tries += 1
        if dirs and rng.random() < 0.12:
            i = rng.choice(dirs)
            r = mutate_directive(rng, lines[i])
        else:
            i = rng.choice(instrs)
            r = mutate_instruction(rng, lines[i], decl, labels)
        if r is None or r[1] == lines[i]:
            continue
        out.append({"src": name, "line": i + 1, "old": lines[i], "new": r[1], "kind": r[0]})
    return out


def apply(text, line, old, new):
    lines = text.split("\n")
    if lines[line - 1] != old:
        raise ValueError(f"line {line} is not {old!r}")
    if new is None:
        del lines[line - 1]
    else:
        lines[line - 1] = new
    return "\n".join(lines)


def ptxas_verdict(text, ptxas="ptxas"):
    r = subprocess.run([ptxas, "-arch=sm_90a", "-", "-o", "/dev/null"], input=text.encode(), capture_output=True,
                       timeout=120)
    msg = next((ln for ln in r.stderr.decode(errors="replace").splitlines() if "error" in ln or "fatal" in ln), "")
    msg = re.sub(r"^ptxas [^,]*, ", "", msg)
    if r.returncode < 0:            # ptxas itself crashed (a signal): no verdict
        return None, f"ptxas died with signal {-r.returncode}"
    return r.returncode == 0, msg[:200]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=4000)
    ap.add_argument("--out", default="/tmp/ptxas_verdicts.jsonl")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-lines", type=int, default=1500, help="skip sources longer than this")
    ap.add_argument("--ptxas", default="ptxas")
    ap.add_argument("--pack", help="compress a JSON-lines verdict file into the committed sample")
    args = ap.parse_args()
    if args.pack:
        with open(args.pack) as f, gzip.open(OUT_DEFAULT, "wt", compresslevel=9) as g:
            for ln in f:
                r = json.loads(ln)
                g.write(json.dumps({k: r[k] for k in ("src", "line", "old", "new", "kind", "ok", "msg")}) + "\n")
        print(f"wrote {OUT_DEFAULT}")
        return
    rng = random.Random(args.seed)
    srcs = {n: t for n, t in sources().items() if t.count("\n") <= args.max_lines}
    # the sources must assemble as they are
    names = sorted(srcs)
    per = -(-args.count // len(names))
    todo = []
    for n in names:
        todo.extend(make_mutants(rng, n, srcs[n], per))
    rng.shuffle(todo)
    todo = todo[:args.count]
    done = 0
    with open(args.out, "w") as f, cf.ThreadPoolExecutor(args.jobs) as ex:
        futs = {ex.submit(ptxas_verdict, apply(srcs[m["src"]], m["line"], m["old"], m["new"]), args.ptxas): m
                for m in todo}
        for fut in cf.as_completed(futs):
            m = futs[fut]
            m["ok"], m["msg"] = fut.result()
            if m["ok"] is None:
                continue
            f.write(json.dumps(m) + "\n")
            done += 1
            if done % 200 == 0:
                f.flush()
                print(f"{done}/{len(todo)}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
