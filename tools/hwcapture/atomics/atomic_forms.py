"""Candidate ``atom`` / ``red`` / ``red.async`` / ``st.async`` forms for the atomics differential capture.

``candidates()`` crosses every qualifier PTX names for these instructions (memory semantics, scope, state
space, operation, ``.noftz``, vector width, type, ``.L2::cache_hint``) generously; ptxas decides which exist
for sm_90a (``accepted()``, the same one-kernel-per-candidate probe as ``scalar/forms.py``).

A form is one instruction text over fixed registers, which the GPU kernels (``atomic_kernels.py``) and the
emulator's replay (tests/atomics_replay.py) both run:

* the address: ``%ad`` (64-bit: generic and ``.global``) or ``%as`` (32-bit: the shared spaces);
* values, by element width: ``%h`` (16-bit), ``%r`` (32-bit), ``%rd`` (64-bit), ``%q`` (128-bit); the
  destination is ``<p>11..``, the operand ``b`` is ``<p>1..``, ``c`` (cas) ``<p>21..``; a vector is ``{..}``;
* ``%pol``: the cache policy of ``.L2::cache_hint``; ``%mb`` (32-bit) or, without a state space, ``%mbd``
  (a generic address): the mbarrier of ``red.async``/``st.async``.

    python tools/hwcapture/atomics/atomic_forms.py [--ptxas ptxas] --out forms.json
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, asdict

SEMS = ("", "relaxed", "acquire", "release", "acq_rel", "sc", "weak", "mmio", "volatile")
SCOPES = ("", "cta", "cluster", "gpu", "sys")
SPACES = ("", "global", "shared", "shared::cta", "shared::cluster")
OPS = ("add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec")
TYPES = ("b16", "b32", "b64", "b128", "u16", "s16", "u32", "s32", "u64", "s64", "f16", "bf16", "f16x2",
         "bf16x2", "f32", "f64")
VECS = ("", "v2", "v4", "v8")
WIDTH = {"b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16, "b32": 32, "u32": 32, "s32": 32, "f32": 32,
         "f16x2": 32, "bf16x2": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64, "b128": 128}
PREFIX = {16: "%h", 32: "%r", 64: "%rd", 128: "%q"}
COMPLETE = "mbarrier::complete_tx::bytes"


@dataclass(frozen=True)
class Form:
    base: str           # atom, red, red.async, st.async
    sem: str = ""
    scope: str = ""
    space: str = ""
    op: str = ""        # empty for st.async
    type: str = ""
    vec: str = ""
    noftz: bool = False
    hint: bool = False
    complete: bool = False   # .mbarrier::complete_tx::bytes (red.async, st.async)

    @property
    def width(self):
        return WIDTH[self.type]

    @property
    def nvec(self):
        return int(self.vec[1:]) if self.vec else 1

    @property
    def nbytes(self):
        """Bytes of memory the instruction reads or writes at its address."""
        return self.width * self.nvec // 8

    @property
    def shared_address(self):
        return self.space.startswith("shared")

    def regs(self, first):
        p = PREFIX[self.width]
        names = [f"{p}{first + i}" for i in range(self.nvec)]
        return names

    def _vals(self, first):
        r = self.regs(first)
        return "{" + ", ".join(r) + "}" if self.vec else r[0]

    @property
    def quals(self):
        q = [self.base]
        q += [x for x in (self.sem, self.scope, self.space) if x]
        if self.complete:
            q.append(COMPLETE)
        if self.op:
            q.append(self.op)
        if self.noftz:
            q.append("noftz")
        if self.hint:
            q.append("L2::cache_hint")
        if self.vec:
            q.append(self.vec)
        q.append(self.type)
        return ".".join(q)

    @property
    def text(self):
        addr = "[%as]" if self.shared_address else "[%ad]"
        ops = []
        if self.base == "atom":
            ops.append(self._vals(11))
        ops += [addr, self._vals(1)]
        if self.op == "cas":
            ops.append(self._vals(21))
        if self.base in ("red.async", "st.async"):
            ops.append("[%mb]" if self.space else "[%mbd]")    # no state space: generic addresses
        if self.hint:
            ops.append("%pol")
        return f"{self.quals} {', '.join(ops)};"

    def to_json(self):
        d = asdict(self)
        d["text"] = self.text
        return d

    @staticmethod
    def from_json(d):
        return Form(**{k: v for k, v in d.items() if k != "text"})


def _cores(base):
    """(op, type, vec, noftz) tuples to try for ``base``."""
    out = []
    for op in OPS:
        for t in TYPES:
            for v in VECS:
                for nf in (False, True):
                    out.append((op, t, v, nf))
    return out


def candidates():
    """Every atom/red qualifier combination worth asking ptxas about (the cache hint separately)."""
    out = []
    cores = _cores("atom")
    for base in ("atom", "red"):
        for sem in SEMS:
            for scope in SCOPES:
                for space in SPACES:
                    for op, t, v, nf in cores:
                        if base == "red" and op in ("exch", "cas"):
                            continue
                        out.append(Form(base, sem, scope, space, op, t, v, nf))
    return out


def hint_candidates(accepted_forms):
    """The .L2::cache_hint variant of every accepted form."""
    return [Form(**{**asdict(f), "hint": True}) for f in accepted_forms if f.base in ("atom", "red")]


def async_candidates():
    out = []
    for sem in ("", "relaxed", "weak", "release", "mmio"):
        for scope in ("", "cluster", "cta", "gpu", "sys"):
            for space in ("", "shared::cluster", "global", "shared::cta"):
                for comp in (False, True):
                    for op, t, v, nf in _cores("red"):
                        if op in ("exch", "cas"):
                            continue
                        out.append(Form("red.async", sem, scope, space, op, t, v, nf, False, comp))
                    for t in TYPES + ("b8", "u8", "s8"):
                        for v in ("", "v2", "v4"):
                            out.append(Form("st.async", sem, scope, space, "", t, v, False, False, comp))
    return out


WIDTH.update({"b8": 8, "u8": 8, "s8": 8})
PREFIX[8] = "%h"


def kernel(name, form):
    """A kernel that declares every register a form may use and executes it once (for ptxas's verdict)."""
    return "\n".join([
        f".visible .entry {name}(.param .u64 p)",
        "{",
        "  .reg .b16 %h<40>; .reg .b32 %r<40>; .reg .b64 %rd<40>; .reg .b128 %q<40>;",
        "  .reg .b64 %ad; .reg .b32 %as; .reg .b64 %pol; .reg .b32 %mb; .reg .b64 %mbd;",
        "  ld.param.u64 %ad, [p];",
        "  cvt.u32.u64 %as, %ad;",
        "  mov.b32 %mb, %as;",
        "  mov.b64 %mbd, %ad;",
        "  createpolicy.fractional.L2::evict_last.b64 %pol, 1.0;",
        f"  {form.text}",
        "  ret;",
        "}",
    ])


def module(forms, prefix="k"):
    head = ".version 8.8\n.target sm_90a\n.address_size 64\n"
    return head + "\n".join(kernel(f"{prefix}{i}", f) for i, f in enumerate(forms)) + "\n"


_ERR = re.compile(r"line (\d+); error")


def accepted(forms, ptxas="ptxas", arch="sm_90a", chunk=2000, log=None):
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
                r = subprocess.run([ptxas, f"-arch={arch}", "-O0", p, "-o", os.path.join(d, "m.cubin")],
                                   capture_output=True, text=True)
            if r.returncode == 0:
                keep += part
                break
            bad = set()
            import bisect
            for ln in map(int, _ERR.findall(r.stderr)):
                bad.add(bisect.bisect_right(line_of, ln) - 1)
            if not bad:
                raise RuntimeError(f"ptxas failed without a line: {r.stderr[:2000]}")
            if log is not None:
                errs = {int(m.group(1)): m.group(0) for m in re.finditer(r"line (\d+); error.*", r.stderr)}
                for ln, msg in errs.items():
                    log.append((part[bisect.bisect_right(line_of, ln) - 1].text, msg))
            part = [f for i, f in enumerate(part) if i not in bad]
    return keep


def staged(ptxas="ptxas", log=None):
    """The accepted forms, found in stages (the full cross product is half a million candidates): the
    operation/type/vector/.noftz/state-space cores without semantics and scope, then every semantics x scope
    on the accepted cores; red.async/st.async: their cores under one qualifier set, then every qualifier set
    on those. Returns (forms, forms with .L2::cache_hint)."""
    cores = accepted([f for f in candidates() if f.sem == "" and f.scope == ""], ptxas, log=log)
    full = accepted([Form(**{**asdict(f), "sem": sem, "scope": sc}) for f in cores for sem in SEMS
                     for sc in SCOPES], ptxas, log=log)
    a = async_candidates()
    first = accepted([f for f in a if (f.base, f.sem, f.scope, f.space, f.complete) in
                      (("red.async", "relaxed", "cluster", "shared::cluster", True),
                       ("st.async", "", "", "shared::cluster", True))], ptxas, log=log)
    keys = {(f.base, f.op, f.type, f.vec, f.noftz) for f in first}
    full += accepted([f for f in a if (f.base, f.op, f.type, f.vec, f.noftz) in keys], ptxas, log=log)
    hints = accepted(hint_candidates(full), ptxas, log=log)
    return full, hints


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptxas", default="ptxas")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    ok, hints = staged(args.ptxas)
    print(f"{len(ok)} forms accepted by ptxas; {len(hints)} more with .L2::cache_hint", file=sys.stderr)
    json.dump({"forms": [f.to_json() for f in ok], "hint_forms": [f.to_json() for f in hints]},
              open(args.out, "w"), indent=0)


if __name__ == "__main__":
    main()
