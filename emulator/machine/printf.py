"""CUDA's device printf (``vprintf(format, argument buffer)``) formatted on the host side.

The argument buffer holds the arguments one after the other, each aligned to its own size: 4 bytes for
``%d %i %u %x %X %o %c`` (8 with ``l``/``ll``/``z``/``j``/``t``), 8 bytes for floating conversions (a
``float`` argument is promoted to ``double`` by the compiler) and for ``%s``/``%p`` pointers.
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import MemoryAccessError, OperandError, fail

_SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d+|\*)?(?:\.(?P<prec>\d+|\*))?"
                   r"(?P<len>hh|h|ll|l|L|z|j|t)?(?P<conv>[diouxXcspfFeEgGaA%n])")


MAX_FIELD = 4096            # widths and precisions above this are refused (a field, not a page)
MAX_TEXT = 1 << 20          # one call prints at most this much: the device's printf FIFO holds 1 MiB by default


def read_cstring(gmem, addr, instr, limit=1 << 16):
    hit = gmem._find(int(addr), 1)
    if hit is None:
        fail(MemoryAccessError, instr, f"printf string address {int(addr):#x} is outside every global allocation")
    buf, off = hit
    end = np.flatnonzero(buf[off:off + limit] == 0)
    if not end.size:
        fail(MemoryAccessError, instr, f"printf string at {int(addr):#x} is not NUL-terminated in its allocation")
    return bytes(buf[off:off + int(end[0])]).decode("utf-8", errors="replace")


def format_printf(gmem, fmt_addr, args_addr, instr="vprintf"):
    """The text one thread's printf prints, and the number of arguments it consumed."""
    fmt = read_cstring(gmem, fmt_addr, instr)
    out = []
    pos = 0
    off = 0
    nargs = 0

    def take(size):
        nonlocal off
        off = -(-off // size) * size
        raw = gmem.download(args_addr + off, size) if args_addr else None
        if raw is None:
            fail(OperandError, instr, "printf has conversions but no argument buffer")
        off += size
        return raw

    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        conv, length = m.group("conv"), m.group("len") or ""
        if conv == "%":
            out.append("%")
            continue
        if conv == "n" or m.group("width") == "*" or m.group("prec") == "*":
            fail(OperandError, instr, f"printf conversion {m.group(0)!r} is not supported")
        for part in ("width", "prec"):
            if m.group(part) is not None and int(m.group(part)) > MAX_FIELD:
                fail(OperandError, instr, f"printf conversion {m.group(0)[:40]!r}: a field {part} of "
                                          f"{int(m.group(part))} is more than the {MAX_FIELD} taken")
        spec = "%" + m.group("flags") + (m.group("width") or "") + \
            ("." + m.group("prec") if m.group("prec") is not None else "")
        nargs += 1
        if conv in "diouxXc":
            size = 8 if length in ("l", "ll", "z", "j", "t") else 4
            raw = take(size)
            u = int(raw.view(np.uint64 if size == 8 else np.uint32)[0])
            s = int(raw.view(np.int64 if size == 8 else np.int32)[0])
            if length == "hh":
                u = u & 0xFF
                s = u - 0x100 if u & 0x80 else u
            elif length == "h":
                u = u & 0xFFFF
                s = u - 0x10000 if u & 0x8000 else u
            if conv == "c":
                out.append((spec + "c") % chr(u & 0xFF))
            else:
                out.append((spec + conv.replace("i", "d")) % (s if conv in "di" else u))
        elif conv in "fFeEgGaA":
            v = float(take(8).view(np.float64)[0])
            if conv in "aA":
                txt = v.hex()
                out.append(txt.upper() if conv == "A" else txt)
            else:
                out.append((spec + conv) % v)
        elif conv == "s":
            p = int(take(8).view(np.uint64)[0])
            out.append((spec + "s") % ("(null)" if p == 0 else read_cstring(gmem, p, instr)))
        elif conv == "p":
            p = int(take(8).view(np.uint64)[0])
            out.append((spec + "s") % (f"{p:#x}" if p else "(nil)"))
        if sum(map(len, out)) > MAX_TEXT:
            fail(OperandError, instr, f"printf output of one call exceeds {MAX_TEXT} characters (the device's "
                                      f"printf buffer)")
    out.append(fmt[pos:])
    return "".join(out), nargs


def assert_message(w, op, mask):
    """The text a failed device ``assert`` prints: file:line: function: block, thread: Assertion `...` failed."""
    site = op.call
    lane = int(np.flatnonzero(mask)[0])
    ptrs = [int(w.param[lane, a:a + 8].copy().view(np.uint64)[0]) for a in site.args[:4]]
    line = int(w.param[lane, site.args[2]:site.args[2] + 4].copy().view(np.uint32)[0])

    def cstr(addr):
        try:
            return read_cstring(w.gmem, addr, "__assertfail")
        except Exception:  # noqa: BLE001 - an unreadable string still gives the rest of the message
            return "?"
    return (f"{op.instr.text}: lane {lane}: {cstr(ptrs[1])}:{line}: {cstr(ptrs[3])}: "
            f"Assertion `{cstr(ptrs[0])}` failed")
