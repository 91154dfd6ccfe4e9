"""The instruction trace of a launch: what ran, on which lanes, and every register it wrote.

``launch(..., trace=stream)`` writes one text line per executed warp-instruction. ``trace=Trace(stream, ...)``
chooses the format (``"text"`` or ``"jsonl"``, one JSON object per line) and filters: CTAs, warps, lanes, a
range of PTX lines, opcodes. Every register the instruction wrote is listed, the fragments of ``mma``,
``wgmma`` and ``wmma`` included (the registers of the instruction's destination operand, with the values of
the lanes that executed it).

A JSON line: ``{"cta": [x, y, z], "warp": w, "pc": p, "line": L, "lanes": [...], "instr": "...",
"regs": {"%r2": [v, ...]}}`` where ``regs`` lists each register's raw bits (unsigned integers; predicates 0/1)
for the lanes in ``lanes``, in the same order.
"""
from __future__ import annotations

import json

import numpy as np

from ..errors import OperandError
from ..frontend.ptx import Pair, Reg, Vec
from ..ops.common import format_lanes

FORMATS = ("text", "jsonl")


def _set(v, what, n=None):
    """None, one int or an iterable of ints -> None or a frozenset."""
    if v is None:
        return None
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v),)
    try:
        out = frozenset(int(x) for x in v)
    except (TypeError, ValueError):
        raise OperandError(f"Trace: {what} must be an int or a list of ints, not {v!r}") from None
    if n is not None and any(not 0 <= x < n for x in out):
        raise OperandError(f"Trace: {what} must be 0..{n - 1}, got {sorted(out)}")
    return out


def dest_registers(instr):
    """The registers of an instruction's destination operand (the first operand when it is a register, a
    brace list or a ``p|q`` pair): what ``mma``/``wgmma``/``wmma`` write without the per-register hook."""
    if not instr.operands:
        return ()
    d = instr.operands[0]
    if isinstance(d, Reg):
        return (d.name,)
    if isinstance(d, (Vec, Pair)):
        return tuple(x.name for x in d.items if isinstance(x, Reg))
    return ()


class Trace:
    """Where and what to trace. ``cta``: a CTA index (x, y, z) or a list of them (an int means (x, 0, 0));
    ``warp``, ``lane``: an int or a list; ``lines``: (first, last) PTX lines, inclusive; ``opcode``: a string
    or a list of strings, each matching an opcode that equals it or starts with it followed by a dot
    (``"mma"``, ``"ld.shared"``); ``format``: ``"text"`` or ``"jsonl"``."""

    def __init__(self, stream, format: str = "text", cta=None, warp=None, lane=None, lines=None, opcode=None):
        if not hasattr(stream, "write"):
            raise OperandError(f"Trace: expected a writable stream (a file, sys.stdout, io.StringIO), not {stream!r}")
        if format not in FORMATS:
            raise OperandError(f"Trace: format must be one of {', '.join(FORMATS)}, not {format!r}")
        self.stream, self.format = stream, format
        if cta is not None:
            items = [cta] if isinstance(cta, (int, np.integer)) or (isinstance(cta, tuple) and cta and
                                                                   isinstance(cta[0], (int, np.integer))) else cta
            try:
                cta = frozenset(tuple(int(c) for c in ((x,) if isinstance(x, (int, np.integer)) else x)) + (0, 0)
                                for x in items)
                cta = frozenset(c[:3] for c in cta)
            except (TypeError, ValueError):
                raise OperandError(f"Trace: cta must be (x, y, z), an int or a list of them, not {cta!r}") from None
        self.cta = cta
        self.warp = _set(warp, "warp", 32)
        self.lane = _set(lane, "lane", 32)
        if lines is not None:
            if isinstance(lines, (int, np.integer)):
                lines = (lines, lines)
            if not (isinstance(lines, (tuple, list)) and len(lines) == 2 and
                    all(isinstance(x, (int, np.integer)) for x in lines)):
                raise OperandError(f"Trace: lines must be (first, last), not {lines!r}")
            lines = (int(lines[0]), int(lines[1]))
        self.lines = lines
        if isinstance(opcode, str):
            opcode = (opcode,)
        if opcode is not None and not all(isinstance(o, str) and o for o in opcode):
            raise OperandError(f"Trace: opcode must be a string or a list of strings, not {opcode!r}")
        self.opcode = tuple(opcode) if opcode is not None else None
        self._lane_mask = None
        if self.lane is not None:
            self._lane_mask = np.zeros(32, np.bool_)
            self._lane_mask[list(self.lane)] = True

    def write(self, text):          # a Trace can stand where a stream is expected
        self.stream.write(text)

    def wants(self, ctaid, w, instr):
        """Whether an instruction of this CTA and warp is traced (the lanes are checked at emit)."""
        if self.cta is not None and tuple(int(c) for c in ctaid) not in self.cta:
            return False
        if self.warp is not None and w.warp_id not in self.warp:
            return False
        if self.lines is not None and not self.lines[0] <= instr.line <= self.lines[1]:
            return False
        if self.opcode is not None and not any(instr.opcode == o or instr.opcode.startswith(o + ".")
                                               for o in self.opcode):
            return False
        return True

    def emit(self, ctaid, w, pc, instr, mask, names):
        if not self.wants(ctaid, w, instr):
            return
        if self._lane_mask is not None:
            mask = mask & self._lane_mask
            if not mask.any():
                return
        lanes = np.flatnonzero(mask)
        regs, flags = {}, set()
        for name in names:
            v = w.regs.get(name)
            if v is None:
                continue
            v = v[mask]
            if v.dtype == np.bool_:
                flags.add(name)
            if v.ndim == 2:                         # 128-bit registers: (lanes, 2) uint64, low half first
                regs[name] = [int(lo) | (int(hi) << 64) for lo, hi in v]
            else:
                regs[name] = [int(x) for x in v]
        txt = " ".join((instr.text or instr.opcode).split())
        if self.format == "jsonl":
            self.stream.write(json.dumps({"cta": [int(c) for c in ctaid], "warp": int(w.warp_id), "pc": int(pc),
                                          "line": int(instr.line), "lanes": [int(x) for x in lanes],
                                          "instr": txt, "regs": regs}) + "\n")
            return
        parts = []
        for name, vals in regs.items():
            f = str if name in flags else hex
            shown = ", ".join(f(x) for x in vals[:4]) + (", ..." if len(vals) > 4 else "")
            if vals and all(x == vals[0] for x in vals):
                shown = f"{f(vals[0])} (all)"
            parts.append(f"{name}=[{shown}]")
        cta = ",".join(map(str, ctaid))
        self.stream.write(f"cta({cta}) w{w.warp_id} pc{pc:>4} lanes {format_lanes(lanes)}: {txt}"
                          + (f"  -> {' '.join(parts)}" if parts else "") + "\n")
