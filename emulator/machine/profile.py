"""A launch's profile, per PTX line and per source line (``launch(..., profile=True)``, ``--profile``).

Counted for every instruction of the kernel's compiled code (its PC), then summed per PTX line and per source
line (the ``.loc`` before the instruction names the file and line of the CUDA or Triton source; ``.file``
names the files):

* ``instructions`` -- warp-instructions executed (issued: predicated-off lanes included, as ncu counts);
* ``threads`` -- lanes that executed them, ``predicated_on`` -- those whose guard was true;
  ``efficiency`` = threads / (32 * instructions): the active-lane share (divergence, partial warps);
* ``smem_wavefronts`` / ``smem_conflicts`` -- shared-memory wavefronts and bank conflicts, from the H100 model
  of ``emulator.memory.banks`` (what ncu's ``l1tex__data_pipe_lsu_wavefronts_mem_shared`` and
  ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared`` count);
* ``global_requests`` / ``global_sectors`` -- global loads and stores (``ld``/``st``/``atom``/``red`` and
  generic accesses that land in global memory) and the distinct 32-byte sectors each touched
  (``l1tex__t_sectors_pipe_lsu_mem_global_op_ld`` / ``_op_st``); sectors per request measure coalescing
  (4 for 32 lanes reading consecutive 4-byte words);
* ``tensor_instructions`` / ``macs`` -- ``mma``, ``wgmma``, ``wmma.mma`` warp-instructions and their
  multiply-adds (m*n*k per warp for mma/wmma, m*n*k/4 per warp of a wgmma's warpgroup).

A profiled launch runs on the reference executors (the fast engine's jitted loops count nothing), so it is
slower than a plain one; the bits are the same. ``Profile.table()`` is a text table sorted by cost,
``Profile.html()`` a source view with the figures in the margin (like Nsight Compute's source page).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from html import escape

import numpy as np

from ..memory import LANES

FIELDS = ("instructions", "threads", "predicated_on", "smem_wavefronts", "smem_conflicts", "global_requests",
          "global_sectors", "tensor_instructions", "macs")

_FILE_RE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC_RE = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:.*?inlined_at\s+(\d+)\s+(\d+))?")
_SHAPE_RE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")


def source_map(text: str):
    """({file number: path}, {PTX line: (file number, source line, call site)}) from a module's ``.file`` /
    ``.loc`` directives: each instruction line takes the last ``.loc`` above it (within its function); the call
    site is the ``(file number, line)`` of its ``inlined_at`` (nvcc's inlined functions), else None."""
    files, where, cur = {}, {}, None
    for i, line in enumerate(text.splitlines(), 1):
        s = line.lstrip()
        if not s:
            continue
        if s.startswith(".file"):
            m = _FILE_RE.match(s)
            if m:
                files[int(m.group(1))] = m.group(2)
            continue
        if s.startswith(".loc"):
            m = _LOC_RE.match(s)
            if m:
                cur = (int(m.group(1)), int(m.group(2)),
                       (int(m.group(4)), int(m.group(5))) if m.group(4) else None)
            continue
        if s.startswith((".entry", ".func", ".visible", ".weak", ".extern")):
            cur = None
            continue
        if cur is not None and s[0] not in "/.{}":
            where[i] = cur
    return files, where


def _macs(instr):
    base = instr.base
    if base not in ("mma", "wgmma", "wmma"):
        return 0
    if base == "wmma" and (not instr.mods or instr.mods[0] != "mma"):
        return 0
    for m in instr.mods:
        s = _SHAPE_RE.match(m)
        if s:
            n = int(s.group(1)) * int(s.group(2)) * int(s.group(3))
            return n // 4 if base == "wgmma" else n
    return 0


@dataclass
class LineStats:
    """The figures of one PTX line or source line."""
    where: str
    instructions: int = 0
    threads: int = 0
    predicated_on: int = 0
    smem_wavefronts: int = 0
    smem_conflicts: int = 0
    global_requests: int = 0
    global_sectors: int = 0
    tensor_instructions: int = 0
    macs: int = 0
    text: str = ""

    @property
    def efficiency(self):
        """Active lanes per issued lane slot (1.0: every instruction ran on 32 lanes)."""
        return self.threads / (LANES * self.instructions) if self.instructions else 0.0

    @property
    def sectors_per_request(self):
        return self.global_sectors / self.global_requests if self.global_requests else 0.0

    def cost(self):
        """What the text table sorts by: issue slots plus the memory pipes' extra work."""
        return self.instructions + self.smem_wavefronts + self.global_sectors


class Profile:
    """Per-PC counters of one launch; ``lines()`` / ``sources()`` sum them per PTX line / per source line."""

    def __init__(self, prog, text: str):
        self.kernel = prog.entry.name
        code = prog.code
        n = len(code)
        self.counts = {f: np.zeros(n, np.int64) for f in FIELDS}
        self._line = [op.instr.line for op in code]
        self._text = [" ".join((op.instr.text or op.instr.opcode).split()) for op in code]
        self._macs = [_macs(op.instr) for op in code]
        self._guard = []
        for op in code:
            g = op.instr.guard
            self._guard.append(None if g is None else (g[0].name, g[1]))
        self._ptx_lines = text.splitlines()
        self.files, self._where = source_map(text)

    # -- counting (called by the CTA scheduler and the memory executors) ---------------------------------
    def step(self, w, p, mask):
        c = self.counts
        n = int(np.count_nonzero(mask))
        c["instructions"][p] += 1
        c["threads"][p] += n
        g = self._guard[p]
        if g is not None:
            v = w.get_reg(g[0], "profile")
            v = v if v.dtype == np.bool_ else v != 0
            n = int(np.count_nonzero(mask & (~v if g[1] else v)))
        c["predicated_on"][p] += n
        if self._macs[p]:
            c["tensor_instructions"][p] += 1
            c["macs"][p] += self._macs[p]

    def smem(self, p, op, addrs, width, mask, nmat=0, src=None):
        from ..memory.banks import SmemAccess, counts
        wf, cf = counts(SmemAccess(self._text[p], op, np.asarray(addrs, np.int64), int(width),
                                   np.asarray(mask, np.bool_), int(nmat)))
        self.counts["smem_wavefronts"][p] += wf
        self.counts["smem_conflicts"][p] += cf

    def gmem(self, p, addrs, mask, nbytes):
        """A global request: the distinct 32-byte sectors its active lanes touch."""
        lanes = np.flatnonzero(mask)
        if not lanes.size:
            return
        a = np.asarray(addrs).astype(np.int64)[lanes]
        first, last = a // 32, (a + int(nbytes) - 1) // 32
        sectors = np.unique(np.concatenate([first, last])) if (last != first).any() else np.unique(first)
        self.counts["global_requests"][p] += 1
        self.counts["global_sectors"][p] += int(sectors.size)

    # -- reports -----------------------------------------------------------------------------------------
    def lines(self):
        """[LineStats] per PTX line that executed, in line order."""
        rows = {}
        for p in np.flatnonzero(self.counts["instructions"]):
            ln = self._line[p]
            r = rows.get(ln)
            if r is None:
                r = rows[ln] = LineStats(f"{ln}", text=self._text[p])
            for f in FIELDS:
                setattr(r, f, getattr(r, f) + int(self.counts[f][p]))
        return [rows[k] for k in sorted(rows)]

    def sources(self, inlined: bool = False):
        """[LineStats] per source line (``file:line``) that executed, in file and line order; PTX lines
        without a ``.loc`` are summed under ``?``. ``inlined``: also credit an inlined function's lines to
        the line that calls it (the ``.loc``'s ``inlined_at``), as Nsight Compute's source view does."""
        rows = {}
        for r in self.lines():
            loc = self._where.get(int(r.where))
            keys = [(self.files.get(loc[0], f"file{loc[0]}"), loc[1]) if loc else ("?", 0)]
            if inlined and loc and loc[2] is not None and loc[2] != loc[:2]:
                keys.append((self.files.get(loc[2][0], f"file{loc[2][0]}"), loc[2][1]))
            for key in keys:
                s = rows.get(key)
                if s is None:
                    s = rows[key] = LineStats(f"{os.path.basename(key[0])}:{key[1]}" if loc else "?")
                    s.file, s.line = key
                for f in FIELDS:
                    setattr(s, f, getattr(s, f) + getattr(r, f))
        return [rows[k] for k in sorted(rows, key=lambda k: (k[0], k[1]))]

    def source_of(self, ptx_line: int):
        """(path, line) of the source that PTX line ``ptx_line`` belongs to, or None."""
        loc = self._where.get(int(ptx_line))
        return (self.files.get(loc[0], f"file{loc[0]}"), loc[1]) if loc else None

    def ptx_lines_of(self, path: str, line: int):
        """The PTX lines whose ``.loc`` names source ``line`` of ``path`` (a full path or its base name)."""
        nums = {k for k, v in self.files.items() if v == path or os.path.basename(v) == os.path.basename(path)}
        return sorted(i for i, loc in self._where.items() if loc[0] in nums and loc[1] == int(line))

    def totals(self):
        t = LineStats("total")
        for f in FIELDS:
            setattr(t, f, int(self.counts[f].sum()))
        return t

    def table(self, by: str = "source", top: int | None = 20) -> str:
        """A text table, costliest lines first (``by``: ``"source"`` or ``"ptx"``)."""
        if by not in ("source", "ptx"):
            from ..errors import OperandError
            raise OperandError(f"profile.table: by must be 'source' or 'ptx', not {by!r}")
        rows = self.sources() if by == "source" else self.lines()
        if by == "source" and all(r.where == "?" for r in rows):
            rows = self.lines()
            by = "ptx"
        rows = sorted(rows, key=lambda r: -r.cost())
        shown = rows if top is None else rows[:top]
        head = f"{'source line' if by == 'source' else 'PTX line':>22} {'instrs':>9} {'lanes%':>6} " \
               f"{'smem wf':>8} {'conflicts':>9} {'gl req':>7} {'sectors':>8} {'sec/req':>7} {'tensor':>7} " \
               f"{'MACs':>10}"
        out = [f"profile of {self.kernel}", head]
        for r in shown + [self.totals()]:
            out.append(f"{r.where[-22:]:>22} {r.instructions:>9} {100 * r.efficiency:>6.1f} {r.smem_wavefronts:>8} "
                       f"{r.smem_conflicts:>9} {r.global_requests:>7} {r.global_sectors:>8} "
                       f"{r.sectors_per_request:>7.2f} {r.tensor_instructions:>7} {r.macs:>10}"
                       + (f"  {r.text[:60]}" if by == "ptx" and r.text else ""))
        if len(shown) < len(rows):
            out.insert(len(out) - 1, f"{'... ' + str(len(rows) - len(shown)) + ' more':>22}")
        return "\n".join(out)

    def __str__(self):
        return self.table()

    def __repr__(self):
        t = self.totals()
        return (f"<Profile of {self.kernel}: {t.instructions} warp-instructions on {len(self.lines())} PTX lines, "
                f"{t.smem_wavefronts} shared wavefronts ({t.smem_conflicts} conflicts), {t.global_sectors} global "
                f"sectors>")

    def html(self, sources: dict | None = None, by: str = "source") -> str:
        """A page with the source and each line's figures in the margin, the hottest lines shaded.
        ``by="source"`` shows each source file (read from disk, or from ``sources`` = {path: text}) when the
        PTX has ``.loc`` lines, else the PTX; ``by="ptx"`` always shows the PTX."""
        sources = dict(sources or {})
        blocks = []
        srows = [r for r in self.sources() if r.where != "?"] if by == "source" else []
        if srows:
            per_file = {}
            for r in srows:
                per_file.setdefault(r.file, {})[r.line] = r
            for path, rows in per_file.items():
                text = sources.get(path)
                if text is None and os.path.isfile(path):
                    try:
                        with open(path, encoding="utf-8", errors="replace") as f:
                            text = f.read()
                    except OSError:
                        text = None
                lines = text.splitlines() if text is not None else []
                hi = max(max(rows), len(lines))
                lo = 1 if lines else min(rows)
                body = [(n, lines[n - 1] if n <= len(lines) else "", rows.get(n)) for n in range(lo, hi + 1)
                        if lines or n in rows]
                blocks.append((path + ("" if lines else " (source not found: figures only)"), body))
        else:
            rows = {int(r.where): r for r in self.lines()}
            body = [(n, t, rows.get(n)) for n, t in enumerate(self._ptx_lines, 1)]
            blocks.append(("PTX", body))
        top = max((r.cost() for _, b in blocks for _, _, r in b if r is not None), default=1) or 1
        t = self.totals()
        out = ["<div class='warpemu-profile' style='font-family:monospace;font-size:12px'>",
               f"<h3 style='font-family:sans-serif'>profile of {escape(self.kernel)}</h3>",
               f"<p style='font-family:sans-serif'>{t.instructions} warp-instructions "
               f"({100 * t.efficiency:.1f}% lanes active), {t.smem_wavefronts} shared wavefronts with "
               f"{t.smem_conflicts} bank conflicts, {t.global_requests} global requests in {t.global_sectors} "
               f"sectors, {t.tensor_instructions} tensor-core instructions ({t.macs} MACs)</p>"]
        cols = ("instrs", "lanes%", "smem wf", "confl.", "sectors", "sec/req", "MACs")
        for title, body in blocks:
            out.append(f"<h4 style='font-family:sans-serif'>{escape(title)}</h4><table style='border-collapse:"
                       f"collapse'><tr>" + "".join(f"<th style='text-align:right;padding:0 6px'>{c}</th>"
                                                  for c in cols) + "<th>#</th><th style='text-align:left'>line</th></tr>")
            for n, src, r in body:
                if r is None:
                    cells = "<td></td>" * len(cols)
                    shade = ""
                else:
                    vals = (r.instructions, f"{100 * r.efficiency:.0f}", r.smem_wavefronts, r.smem_conflicts,
                            r.global_sectors, f"{r.sectors_per_request:.1f}" if r.global_requests else "",
                            r.macs or "")
                    cells = "".join(f"<td style='text-align:right;padding:0 6px'>{v}</td>" for v in vals)
                    a = 0.08 + 0.6 * r.cost() / top
                    shade = f" style='background:rgba(225,87,89,{a:.2f})'"
                out.append(f"<tr{shade}>{cells}<td style='color:#888;text-align:right;padding:0 6px'>{n}</td>"
                           f"<td style='white-space:pre'>{escape(src)}</td></tr>")
            out.append("</table>")
        out.append("</div>")
        return "\n".join(out)

    def _repr_html_(self):
        return self.html()

    def save(self, path: str, by: str = "source", sources: dict | None = None):
        """Write the HTML source view (``.html``) or the whole text table (any other name)."""
        with open(path, "w", encoding="utf-8") as f:
            if path.endswith((".html", ".htm")):
                f.write(f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>profile of {escape(self.kernel)}"
                        f"</title></head><body>\n{self.html(sources, by)}\n</body></html>\n")
            else:
                f.write(self.table(by, top=None) + "\n")

    def to_dict(self):
        """{"ptx": [...], "source": [...]}: every line's figures, JSON-ready."""
        def row(r):
            d = {f: getattr(r, f) for f in FIELDS}
            d["where"] = r.where
            return d
        return {"kernel": self.kernel, "ptx": [row(r) for r in self.lines()],
                "source": [row(r) for r in self.sources()]}
