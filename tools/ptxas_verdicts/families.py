"""A second mutation space for the validator, written apart from ``mutate.py``: 24 operator families, each a
small edit of one line of a real module (a line replaced, deleted, or followed by inserted lines), labelled
with ptxas's verdict. ``--held-out`` splits the sources in two by a hash of their name: the rules are
written against one half and the agreement is reported on the other.

    python tools/ptxas_verdicts/families.py --src 'DIR/*.ptx' --per-source 30 --out /tmp/fam.jsonl
    python tools/ptxas_verdicts/families.py --score /tmp/fam.jsonl            # load_ptx against ptxas, by family
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import glob
import hashlib
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

from mutate import _INSTR_RE, apply, instruction_lines, ptxas_verdict, split_operands  # noqa: E402

TARGETS_DOWN = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"]
QUAL_SETS = {"wide", "lo", "hi", "rn", "rz", "rm", "rp", "ftz", "sat", "approx", "full", "cc", "sync", "aligned",
             "uni", "volatile", "relaxed", "acquire", "release", "cta", "gpu", "sys", "nc", "v2", "v4"}
ODD_CHARS = list("%.,;:[]{}()@!$_0123456789abcxyz+-* \t")
HUGE = ["18446744073709551616", "18446744073709551615", "0xFFFFFFFFFFFFFFFF", "0x10000000000000000", "-1",
        "4294967296", "9223372036854775808", "-9223372036854775809", "0f7F800001", "0d7FF8000000000001", "1e309"]


def held_out(name):
    """True for the half of the sources the rules were not written from (a stable hash of the name)."""
    return int(hashlib.sha1(name.encode()).hexdigest(), 16) % 2 == 1


def _lines_matching(lines, pattern):
    rx = re.compile(pattern)
    return [i for i, ln in enumerate(lines) if rx.search(ln)]


def _entry_params(lines):
    """[(line index of the parameter, name, is_entry)]."""
    out, entry = [], None
    for i, ln in enumerate(lines):
        s = ln.strip()
        if re.search(r"\.entry\s", s):
            entry = True
        elif re.search(r"\.func\s", s):
            entry = False
        m = re.search(r"\.param\s+(?:\.align\s+\d+\s+)?\.\w+\s+([\w$]+)", s)
        if m and entry is not None and not s.startswith(("st.", "ld.", "{")):
            out.append((i, m.group(1), entry))
        if s == "{" or s.startswith("{"):
            entry = None if s == "{" else entry
    return out


def _body_start(lines):
    """Index of the first line after the first function body's opening brace."""
    for i, ln in enumerate(lines):
        if ln.strip() == "{" and i > 0:
            return i + 1
    return None


# each family: (rng, lines, instrs) -> (line index, new text or None) or None
def f_dup_label(rng, lines, instrs):
    ix = _lines_matching(lines, r"^\s*\$?[\w$]+:\s*$")
    if not ix:
        return None
    i = rng.choice(ix)
    return i, lines[i] + "\n" + lines[i]


def f_dup_reg(rng, lines, instrs):
    ix = _lines_matching(lines, r"^\s*\.reg\s")
    return (lambda i: (i, lines[i] + "\n" + lines[i]))(rng.choice(ix)) if ix else None


def f_dup_shared(rng, lines, instrs):
    ix = _lines_matching(lines, r"^\s*(\.extern\s+)?\.shared\s|^\s*\.(global|const)\s")
    return (lambda i: (i, lines[i] + "\n" + lines[i]))(rng.choice(ix)) if ix else None


def f_dup_param(rng, lines, instrs):
    ps = _entry_params(lines)
    if not ps:
        return None
    i, name, _ = rng.choice(ps)
    ln = lines[i].rstrip()
    return i, (ln if ln.endswith(",") else ln + ",") + "\n" + ln


def f_drop_version(rng, lines, instrs):
    ix = _lines_matching(lines, r"^\s*\.version\s")
    return (ix[0], None) if ix else None


def f_drop_target(rng, lines, instrs):
    ix = _lines_matching(lines, r"^\s*\.target\s")
    return (ix[0], None) if ix else None


def f_dup_directive(rng, lines, instrs):
    ix = _lines_matching(lines, r"^\s*\.(version|target|address_size)\s")
    return (lambda i: (i, lines[i] + "\n" + lines[i]))(rng.choice(ix)) if ix else None


def f_target_down(rng, lines, instrs):
    ix = _lines_matching(lines, r"^\s*\.target\s")
    if not ix:
        return None
    return ix[0], re.sub(r"sm_\d+a?", rng.choice(TARGETS_DOWN), lines[ix[0]], count=1)


def f_version_down(rng, lines, instrs):
    ix = _lines_matching(lines, r"^\s*\.version\s")
    if not ix:
        return None
    return ix[0], re.sub(r"\d+\.\d+", rng.choice(["6.0", "7.0", "7.8", "8.0", "8.3", "9.9", "10.0"]), lines[ix[0]])


def f_address_size(rng, lines, instrs):
    ix = _lines_matching(lines, r"^\s*\.address_size\s")
    if not ix:
        return None
    return ix[0], rng.choice([".address_size 32", "", ".address_size 16", ".address_size 64\n.address_size 64"])


def f_qualifier_order(rng, lines, instrs):
    for _ in range(8):
        i = rng.choice(instrs)
        m = _INSTR_RE.match(lines[i])
        parts = m.group(3).split(".")
        if len(parts) < 3:
            continue
        j, k = rng.sample(range(1, len(parts)), 2)
        if parts[j] == parts[k]:
            continue
        parts[j], parts[k] = parts[k], parts[j]
        return i, lines[i].replace(m.group(3), ".".join(parts), 1)
    return None


def f_st_param_entry(rng, lines, instrs):
    ps = [p for p in _entry_params(lines) if p[2]]
    start = _body_start(lines)
    if not ps or start is None:
        return None
    _, name, _ = rng.choice(ps)
    regs = re.findall(r"(%r)<(\d+)>", "\n".join(lines))
    reg = "%r1" if regs else "0"
    return start, lines[start] + f"\n\tst.param.u32 [{name}], {reg};" if regs else None


def f_one_char_delete(rng, lines, instrs):
    i = rng.choice(instrs)
    s = lines[i]
    j = rng.randrange(len(s.rstrip()))
    return i, s[:j] + s[j + 1:]


def f_one_char_insert(rng, lines, instrs):
    i = rng.choice(instrs)
    s = lines[i]
    j = rng.randrange(len(s.rstrip()) + 1)
    return i, s[:j] + rng.choice(ODD_CHARS) + s[j:]


def f_one_char_replace(rng, lines, instrs):
    i = rng.choice(instrs)
    s = lines[i]
    j = rng.randrange(len(s.rstrip()))
    return i, s[:j] + rng.choice(ODD_CHARS) + s[j + 1:]


def f_vector_shrink(rng, lines, instrs):
    cand = [i for i in instrs if "{" in lines[i]]
    if not cand:
        return None
    i = rng.choice(cand)
    m = re.search(r"\{([^{}]*,[^{}]*)\}", lines[i])
    if not m:
        return None
    items = [x.strip() for x in m.group(1).split(",")]
    del items[rng.randrange(len(items))]
    return i, lines[i][:m.start()] + "{" + ", ".join(items) + "}" + lines[i][m.end():]


def f_vector_grow(rng, lines, instrs):
    cand = [i for i in instrs if "{" in lines[i]]
    if not cand:
        return None
    i = rng.choice(cand)
    m = re.search(r"\{([^{}]*)\}", lines[i])
    if not m:
        return None
    items = [x.strip() for x in m.group(1).split(",")]
    items.append(rng.choice(items))
    return i, lines[i][:m.start()] + "{" + ", ".join(items) + "}" + lines[i][m.end():]


def f_async_space(rng, lines, instrs):
    cand = [i for i in instrs if re.search(r"\b(wgmma|mbarrier|cp\.async|cp\.reduce|barrier|fence|ld|st)\.", lines[i])]
    if not cand:
        return None
    i = rng.choice(cand)
    spaces = ["shared::cta", "shared::cluster", "shared", "global", "local", "const", "param"]
    m = re.search(r"\.(shared::cta|shared::cluster|shared|global|local|const|param)\b", lines[i])
    if not m:
        return None
    return i, lines[i][:m.start()] + "." + rng.choice([s for s in spaces if s != m.group(1)]) + lines[i][m.end():]


def f_huge_imm(rng, lines, instrs):
    cand = [i for i in instrs if re.search(r",\s*-?\d+\s*;", lines[i])]
    if not cand:
        return None
    i = rng.choice(cand)
    return i, re.sub(r",\s*-?\d+\s*;", ", " + rng.choice(HUGE) + ";", lines[i], count=1)


def f_drop_operand(rng, lines, instrs):
    i = rng.choice(instrs)
    m = _INSTR_RE.match(lines[i])
    ops = split_operands(m.group(5) or "")
    if not ops:
        return None
    del ops[rng.randrange(len(ops))]
    indent, guard = m.group(1), m.group(2) or ""
    return i, f"{indent}{guard}{m.group(3)}" + (" " + ", ".join(ops) if ops else "") + ";"


def f_debug_section(rng, lines, instrs):
    ix = _lines_matching(lines, r"^\s*\.(section|file|loc|b8|b32|b64)\b")
    ix = [i for i in ix if not re.match(r"^\s*\.(b8|b32|b64)\s", lines[i]) or any(".section" in x for x in lines)]
    if not ix:
        return None
    i = rng.choice(ix)
    s = lines[i]
    return i, rng.choice([None, s.replace(".loc", ".loc 99"), s + " junk", s.replace(".file", ".file x"),
                          re.sub(r"\d+", "99999999999", s, count=1)])


def f_drop_brace(rng, lines, instrs):
    ix = _lines_matching(lines, r"^\s*[{}]\s*$")
    return (rng.choice(ix), None) if ix else None


def f_undeclared_register(rng, lines, instrs):
    i = rng.choice(instrs)
    m = re.search(r"%(r|rd|f|fd|p|rs)(\d+)\b", lines[i])
    if not m:
        return None
    return i, lines[i][:m.start()] + f"%{m.group(1)}{int(m.group(2)) + 100000}" + lines[i][m.end():]


FAMILIES = {n[2:]: f for n, f in list(globals().items()) if n.startswith("f_") and callable(f)}


def mutants(rng, name, text, count):
    lines = text.split("\n")
    instrs = instruction_lines(lines)
    if not instrs:
        return []
    out, tries, seen = [], 0, set()
    fams = sorted(FAMILIES)
    while len(out) < count and tries < count * 10:
        tries += 1
        fam = rng.choice(fams)
        r = FAMILIES[fam](rng, lines, instrs)
        if r is None or r[1] == lines[r[0]] or (r[0], r[1]) in seen:
            continue
        seen.add((r[0], r[1]))
        out.append({"src": name, "family": fam, "line": r[0] + 1, "old": lines[r[0]], "new": r[1]})
    return out


def _label(job):
    text, m = job
    ok, msg = ptxas_verdict(apply(text, m["line"], m["old"], m["new"]))
    return dict(m, ok=ok, msg=msg)


def _emulator_verdict(text):
    from emulator import EmulatorError, load_ptx
    try:
        mod = load_ptx(text)
        for k in mod.kernels:
            mod.program(k)
        return True, ""
    except EmulatorError as e:
        return False, str(e)[:160]
    except RecursionError:
        return None, "RecursionError"
    except Exception as e:                        # noqa: BLE001 (a crash is its own verdict)
        return None, f"{type(e).__name__}: {e}"[:160]


def score(path, sources_glob):
    texts = {os.path.basename(p): open(p).read() for p in glob.glob(sources_glob)}
    rows = [json.loads(ln) for ln in open(path)]
    stats = {}
    for r in rows:
        if r["ok"] is None:
            continue
        ok, msg = _emulator_verdict(apply(texts[r["src"]], r["line"], r["old"], r["new"]))
        half = "held-out" if held_out(r["src"]) else "train"
        key = (half, r["family"])
        s = stats.setdefault(key, {"rej": 0, "refused": 0, "acc": 0, "loaded": 0, "crash": 0, "miss": []})
        if ok is None:
            s["crash"] += 1
        if r["ok"]:
            s["acc"] += 1
            s["loaded"] += ok is True
            if ok is not True:
                s["miss"].append(("refused-valid", r["src"], r["line"], r["new"], msg))
        else:
            s["rej"] += 1
            s["refused"] += ok is False
            if ok is not False:
                s["miss"].append(("loaded-invalid", r["src"], r["line"], r["new"], r["msg"]))
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default="/tmp/csptx/*.ptx")
    ap.add_argument("--per-source", type=int, default=30)
    ap.add_argument("--out", default="/tmp/families.jsonl")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--score", help="score a labelled file against load_ptx")
    ap.add_argument("--show", type=int, default=3, help="misses shown per family")
    a = ap.parse_args()
    if a.score:
        stats = score(a.score, a.src)
        tot = {}
        for (half, fam), s in sorted(stats.items()):
            t = tot.setdefault(half, {"rej": 0, "refused": 0, "acc": 0, "loaded": 0, "crash": 0})
            for k in t:
                t[k] += s[k]
            print(f"{half:8} {fam:22} rejections refused {s['refused']}/{s['rej']}  acceptances loaded "
                  f"{s['loaded']}/{s['acc']}  crashes {s['crash']}")
            for miss in s["miss"][:a.show]:
                print("        ", miss)
        for half, t in tot.items():
            print(f"TOTAL {half}: refused {t['refused']}/{t['rej']} = {100 * t['refused'] / max(t['rej'], 1):.1f}%  "
                  f"loaded {t['loaded']}/{t['acc']} = {100 * t['loaded'] / max(t['acc'], 1):.2f}%  crashes {t['crash']}")
        return
    rng = random.Random(a.seed)
    jobs = []
    for p in sorted(glob.glob(a.src)):
        text = open(p).read()
        if ptxas_verdict(text)[0] is not True:
            continue
        jobs += [(text, m) for m in mutants(rng, os.path.basename(p), text, a.per_source)]
    with cf.ThreadPoolExecutor(a.jobs) as ex, open(a.out, "w") as f:
        for r in ex.map(_label, jobs):
            f.write(json.dumps(r) + "\n")
    print(f"{len(jobs)} mutants -> {a.out}")


if __name__ == "__main__":
    main()
