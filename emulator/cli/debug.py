"""Sub-command ``debug``: a small cuda-gdb-like front end to ``machine.debugger.Debugger``.

    python -m emulator debug kernel.ptx --kernel k --grid 1 --block 64 --arg a.npy --arg 16 \\
        -ex "break 86 warp 1" -ex run -ex "print %r4 lane 3" -ex "info warps" -ex step -ex continue

Commands (from -ex, then from stdin unless --batch):
  break LOC [cta X,Y,Z] [warp W] [lane L]   LOC: a PTX line (86), a source line (kernel.cu:44) or an opcode (mma)
  delete N | info breakpoints | info warps | where
  run | continue (c) | step [N] (s) | finish
  print REG [lane L] [warp W]   (p)     e.g. print %r4 lane 3; without a lane, every lane's value
  x shared|global ADDR [COUNT] [TYPE]   memory as TYPE (u32 default; f32, f16, u8, s32, u64, ...)
  quit (q)
"""
from __future__ import annotations

import shlex
import sys

from ..errors import EmulatorError, OperandError
from .run import _dims, _parse_args, _read_text

HELP = __doc__.split("Commands", 1)[1]


def add_parser(subparsers):
    p = subparsers.add_parser(
        "debug", help="debug a kernel: breakpoints, stepping, registers and memory (cuda-gdb style)",
        description="Run one kernel of a PTX module under the debugger. Arguments as for `run`. Commands come from "
                    "each -ex, then from standard input (one per line) unless --batch." + HELP,
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("ptx", help="the .ptx file")
    p.add_argument("--kernel", required=True, help="entry name, mangled or plain")
    p.add_argument("--grid", default="1", help="X[,Y[,Z]] CTAs (default 1)")
    p.add_argument("--block", default="32", help="X[,Y[,Z]] threads per CTA (default 32)")
    p.add_argument("--arg", action="append", default=[], metavar="VALUE", help="kernel argument (repeat, in order)")
    p.add_argument("--shared", type=int, default=0, metavar="BYTES", help="dynamic shared memory per CTA")
    p.add_argument("--arch", default=None, help="the machine emulated (default sm_90)")
    p.add_argument("-ex", dest="commands", action="append", default=[], metavar="COMMAND",
                   help="a command to run first (repeat)")
    p.add_argument("--batch", action="store_true", help="run the -ex commands only, not standard input")
    p.set_defaults(func=_cmd_debug)
    return p


class Session:
    """One debugging session: commands in, text out (``run_command`` returns False on quit)."""

    def __init__(self, module, entry, launch_kw, out=None):
        from ..machine.debugger import Debugger
        self.dbg = Debugger(module)
        self.entry, self.launch_kw = entry, launch_kw
        self.out = out or sys.stdout

    def say(self, text):
        self.out.write(text + "\n")

    def _show_stop(self, stop):
        if stop is None:
            r = self.dbg.result
            self.say(f"the launch finished: {len(r.ctas)} CTA(s), {r.instructions} warp instructions" if r else
                     "the launch finished")
        else:
            self.say(str(stop))

    def run_command(self, line):
        words = shlex.split(line.split("#", 1)[0]) if line.strip() else []
        if not words:
            return True
        cmd, rest = words[0], words[1:]
        try:
            return self._dispatch(cmd, rest)
        except EmulatorError as e:
            self.say(f"error: {e}")
            return True

    def _dispatch(self, cmd, rest):
        d = self.dbg
        if cmd in ("q", "quit", "exit"):
            d.close()
            return False
        if cmd in ("b", "break"):
            if not rest:
                raise OperandError("break: where? a PTX line, file:line or an opcode")
            loc, conds = rest[0], _conds(rest[1:])
            if loc.isdigit():
                bp = d.break_at(line=int(loc), **conds)
            elif ":" in loc:
                bp = d.break_at(source=loc, **conds)
            else:
                bp = d.break_at(opcode=loc, **conds)
            self.say(bp.describe())
        elif cmd in ("d", "delete"):
            d.delete(_num(rest[0] if rest else "", "delete"))
        elif cmd in ("r", "run"):
            self._show_stop(d.launch(self.entry, **self.launch_kw))
        elif cmd in ("c", "continue"):
            self._show_stop(d.cont())
        elif cmd in ("s", "step", "n", "next", "stepi", "si"):
            self._show_stop(d.step(_num(rest[0], "step") if rest else 1))
        elif cmd == "finish":
            r = d.finish()
            self.say(f"the launch finished: {len(r.ctas)} CTA(s), {r.instructions} warp instructions")
        elif cmd in ("p", "print"):
            if not rest:
                raise OperandError("print: which register? e.g. print %r4 lane 3")
            conds = _conds(rest[1:], allowed=("lane", "warp"))
            reg, lane, warp = rest[0], conds.get("lane"), conds.get("warp")
            if lane is None:
                vals = d.read(reg, None, warp)
                self.say(f"{reg} = [" + ", ".join(str(int(v)) if vals.dtype == bool else hex(int(v))
                                                  for v in vals.reshape(32, -1)[:, 0]) + "]")
            else:
                bits, val = d.read(reg, lane, warp), d.value(reg, lane, warp)
                shown = str(int(bits)) if isinstance(bits, bool) else hex(bits)
                self.say(f"{reg} lane {lane} = {shown}" + (f" ({val})" if val != bits or isinstance(val, float) else ""))
        elif cmd == "x":
            if len(rest) < 2 or rest[0] not in ("shared", "global"):
                raise OperandError("x: x shared|global ADDR [COUNT] [TYPE]")
            addr = _num(rest[1], "x")
            count = _num(rest[2], "x") if len(rest) > 2 else 1
            dtype = rest[3] if len(rest) > 3 else "u32"
            vals = d.shared(addr, count, dtype) if rest[0] == "shared" else d.memory(addr, count, dtype)
            self.say(f"{rest[0]} {addr:#x}: " + " ".join(str(v) if vals.dtype.kind == "f" else hex(int(v))
                                                         for v in vals))
        elif cmd == "info":
            what = rest[0] if rest else ""
            if what.startswith("b"):
                for b in d.breakpoints:
                    self.say(b.describe())
                if not d.breakpoints:
                    self.say("no breakpoints")
            elif what.startswith("w"):
                for w in d.warps():
                    self.say(f"{'*' if w['focus'] else ' '} warp {w['warp']}: {w['live']} live lane(s), "
                             f"{w['exited']} exited, {w['waiting']} waiting" +
                             (f"; next PTX line {w['line']}: {w['instruction']}" if w["line"] else ""))
            else:
                raise OperandError("info: info breakpoints | info warps")
        elif cmd in ("where", "bt", "list", "l"):
            self.say(d.where())
        elif cmd in ("h", "help"):
            self.say(HELP.strip("\n"))
        else:
            raise OperandError(f"unknown command {cmd!r} (help lists them)")
        return True


def _num(text, what):
    try:
        return int(text, 0)
    except ValueError:
        raise OperandError(f"{what}: expected a number, got {text!r}") from None


def _conds(words, allowed=("cta", "warp", "lane")):
    out = {}
    words = [w for w in words if w != "if"]
    if len(words) % 2:
        raise OperandError(f"expected pairs such as 'warp 1 lane 3', got {' '.join(words)!r}")
    for k, v in zip(words[::2], words[1::2]):
        if k not in allowed:
            raise OperandError(f"unknown condition {k!r}; use {', '.join(allowed)}")
        out[k] = tuple(_num(x, k) for x in v.split(",")) if k == "cta" else _num(v, k)
    return out


def _cmd_debug(a):
    from ..machine.module import load_ptx
    from ..memory import GlobalMemory
    module = load_ptx(_read_text(a.ptx), arch=a.arch)
    entry = module.resolve(a.kernel)
    g = GlobalMemory()
    args, _ = _parse_args(module, entry, a.arg, g)
    s = Session(module, entry, dict(grid=_dims(a.grid, "grid"), block=_dims(a.block, "block"), args=args, gmem=g,
                                    shared_bytes=a.shared))
    for c in a.commands:
        if not s.run_command(c):
            return 0
    if not a.batch:
        for line in sys.stdin:
            if not s.run_command(line):
                break
    s.dbg.close()
    return 0
