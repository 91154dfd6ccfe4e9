"""A debugger for kernels: breakpoints, stepping, and the registers and memories at each stop.

    dbg = Debugger(module)
    dbg.break_at(line=86)                          # a PTX line
    dbg.break_at(source="kernel.cu:44", warp=1)    # a source line (.loc), only in warp 1
    dbg.break_at(opcode="mma", lane=3)             # every mma.* that lane 3 executes
    stop = dbg.launch("k", grid, block, args, gmem=g)   # runs to the first stop (None: the launch finished)
    dbg.read("%r4", lane=3); dbg.value("%f1", 3); dbg.shared(0, 8, "u32"); dbg.memory(addr, 4, "f32")
    stop = dbg.step()                              # the focus warp's next warp-instruction
    stop = dbg.cont()                              # the next breakpoint, or None when the launch is done
    dbg.result                                     # the LaunchResult, once done

The launch runs on a worker thread that the debugger holds at each stop: the kernel runs only between a
``launch``/``step``/``cont`` call and the stop it returns, so the same breakpoints give the same stops on every
run (the scheduler is deterministic; a seeded ``schedule`` is too). A stop comes *before* the instruction
executes. A launch under the debugger runs on the reference executors, CTA after CTA.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from ..errors import OperandError
from ..memory import LANES
from ..ops.common import format_lanes
from .profile import source_map
from .warp import SPECIAL_REGISTERS

_DTYPES = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "s8": np.int8, "s16": np.int16,
           "s32": np.int32, "s64": np.int64, "f16": np.float16, "f32": np.float32, "f64": np.float64,
           "b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64}


class _Abort(BaseException):
    """Unwinds the launch thread when the debugger is closed mid-launch."""


@dataclass
class Breakpoint:
    """Where to stop: a PTX line, a source line or an opcode, with optional CTA, warp and lane conditions."""
    id: int
    line: int | None = None
    source: tuple | None = None          # (path, line)
    opcode: str | None = None
    cta: tuple | None = None
    warp: int | None = None
    lane: int | None = None
    hits: int = 0
    enabled: bool = True
    _lines: frozenset = field(default=frozenset(), repr=False)   # the PTX lines a source breakpoint covers

    def describe(self):
        where = (f"PTX line {self.line}" if self.line is not None else
                 f"{self.source[0]}:{self.source[1]}" if self.source else f"opcode {self.opcode}")
        conds = [f"cta {self.cta}" if self.cta else "", f"warp {self.warp}" if self.warp is not None else "",
                 f"lane {self.lane}" if self.lane is not None else ""]
        return f"breakpoint {self.id} at {where}" + "".join(f" {c}" for c in conds if c) + \
            f" (hit {self.hits} time{'s' if self.hits != 1 else ''})"


@dataclass
class Stop:
    """Where the launch stands: the instruction about to execute, its CTA, warp and lanes."""
    reason: str
    cta: tuple
    warp: int
    pc: int
    line: int
    instruction: str
    lanes: tuple
    source: tuple | None = None

    def __str__(self):
        src = f" ({self.source[0].rsplit('/', 1)[-1]}:{self.source[1]})" if self.source else ""
        return (f"{self.reason}: PTX line {self.line}{src}, CTA {self.cta} warp {self.warp} lanes "
                f"{format_lanes(list(self.lanes))}: {self.instruction}")


class Debugger:
    """Breakpoints and stepping over launches of one module (see the module's docstring)."""

    def __init__(self, module):
        if not hasattr(module, "launch") or not hasattr(module, "text"):
            raise OperandError(f"Debugger: expected a module from load_ptx, not {module!r}")
        self.module = module
        self.files, self._where = source_map(module.text)
        self.breakpoints: list[Breakpoint] = []
        self._next_id = 1
        self.stop: Stop | None = None
        self.result = None
        self._thread = None
        self._to_main = threading.Semaphore(0)
        self._to_worker = threading.Semaphore(0)
        self._mode = "run"            # "run": to the next breakpoint; "step": the focus warp's next instruction
        self._focus = None            # (cta object, warp object) of the last stop
        self._error = None
        self._abort = False
        self._cta = self._warp = None
        self._last_line = {}          # (ctaid, warp) -> PTX line of its previous instruction
        self._gmem = None

    # -- breakpoints --------------------------------------------------------------------------------
    def break_at(self, line: int | None = None, source=None, opcode: str | None = None, cta=None,
                 warp: int | None = None, lane: int | None = None) -> Breakpoint:
        """A breakpoint at a PTX ``line``, a ``source`` line (``"file.cu:44"`` or ``(path, 44)``; stops when a
        warp enters that line) or an ``opcode`` (``"mma"``, ``"ld.shared"``: the opcode or a dotted prefix),
        taken only in CTA ``cta`` (x, y, z), warp ``warp``, and when lane ``lane`` executes it."""
        given = [x is not None for x in (line, source, opcode)]
        if sum(given) != 1:
            raise OperandError("break_at: give exactly one of line=, source= or opcode=")
        lines = frozenset()
        if line is not None:
            line = _int(line, "line")
            if not any(op.instr.line == line for op in self._code()):
                raise OperandError(f"break_at: PTX line {line} holds no instruction of the module's kernels")
        if source is not None:
            if isinstance(source, str):
                path, _, ln = source.rpartition(":")
                try:
                    source = (path, int(ln))
                except ValueError:
                    raise OperandError(f"break_at: source must be 'file:line', not {source!r}") from None
            path, ln = source[0], _int(source[1], "source line")
            nums = {k for k, v in self.files.items() if v == path or v.rsplit("/", 1)[-1] == path.rsplit("/", 1)[-1]}
            if not nums:
                raise OperandError(f"break_at: no .file names {path!r}; files: "
                                   f"{', '.join(self.files.values()) or 'none (the PTX has no .loc lines)'}")
            lines = frozenset(i for i, loc in self._where.items() if loc[0] in nums and loc[1] == ln)
            if not lines:
                raise OperandError(f"break_at: no instruction comes from {path}:{ln}")
            source = (path, ln)
        if opcode is not None and (not isinstance(opcode, str) or not opcode):
            raise OperandError(f"break_at: opcode must be a non-empty string, not {opcode!r}")
        if cta is not None:
            cta = (_int(cta, "cta"),) if isinstance(cta, (int, np.integer)) else tuple(_int(c, "cta") for c in cta)
            cta = (cta + (0, 0))[:3]
        if warp is not None:
            warp = _int(warp, "warp")
        if lane is not None:
            lane = _int(lane, "lane")
            if not 0 <= lane < LANES:
                raise OperandError(f"break_at: lane must be 0..31, not {lane}")
        bp = Breakpoint(self._next_id, line, source, opcode, cta, warp, lane, _lines=lines)
        self._next_id += 1
        self.breakpoints.append(bp)
        return bp

    def delete(self, bp):
        """Remove a breakpoint (the object or its id)."""
        n = bp.id if isinstance(bp, Breakpoint) else bp
        before = len(self.breakpoints)
        self.breakpoints = [b for b in self.breakpoints if b.id != n]
        if len(self.breakpoints) == before:
            raise OperandError(f"delete: no breakpoint {n}")

    def _code(self):
        for name in self.module.kernels:
            yield from self.module.program(name).code

    # -- running ------------------------------------------------------------------------------------
    def launch(self, kernel, grid=(1, 1, 1), block=(32, 1, 1), args=(), gmem=None, stop_at_start=False, **kw):
        """Start a launch (``Module.launch``'s arguments) and run it to the first stop; returns the ``Stop``,
        or None when the launch finished without one (then ``result`` holds its LaunchResult)."""
        if self._thread is not None and not self.done:
            raise OperandError("Debugger.launch: a launch is under way; cont() it to the end or close() it first")
        from ..memory import GlobalMemory
        self._gmem = gmem if gmem is not None else GlobalMemory()
        self.result, self.stop, self._error, self._abort = None, None, None, False
        self._mode = "step" if stop_at_start else "run"
        self._focus = None
        self._last_line = {}
        for b in self.breakpoints:
            b.hits = 0
        kw.pop("debug", None)

        def body():
            try:
                self.result = self.module.launch(kernel, grid, block, args, gmem=self._gmem, debug=self, **kw)
            except _Abort:
                pass
            except BaseException as e:       # handed to the caller at its next call
                self._error = e
            finally:
                self.stop = None
                self._to_main.release()
        self._thread = threading.Thread(target=body, daemon=True, name="warpemu-debugger")
        self._thread.start()
        return self._wait()

    @property
    def done(self):
        return self._thread is None or not self._thread.is_alive()

    def _wait(self):
        self._to_main.acquire()
        if self.done and self._error is not None:
            e, self._error = self._error, None
            raise e
        return self.stop

    def _resume(self, mode):
        if self._thread is None:
            raise OperandError("the debugger has no launch: call launch() first")
        if self.done:
            raise OperandError("the launch has finished (see .result)")
        self._mode = mode
        self._to_worker.release()
        return self._wait()

    def cont(self):
        """Run to the next breakpoint; returns its Stop, or None when the launch finished."""
        return self._resume("run")

    def step(self, n: int = 1):
        """Execute the focus warp's next ``n`` warp-instructions (then the next of any warp once the focus warp
        has exited); returns the Stop before the next one, or None when the launch finished."""
        n = _int(n, "step count")
        stop = self.stop
        for _ in range(max(n, 1)):
            stop = self._resume("step")
            if stop is None:
                break
        return stop

    def finish(self):
        """Run to the end, past every breakpoint; returns the LaunchResult."""
        saved, self.breakpoints = self.breakpoints, []
        try:
            while not self.done:
                self._resume("run")
        finally:
            self.breakpoints = saved
        return self.result

    def close(self):
        """Abandon a launch that is stopped (its thread unwinds)."""
        if not self.done:
            self._abort = True
            self._to_worker.release()
            self._thread.join(timeout=10)

    # -- the hook the CTA scheduler calls before each warp-instruction (launch's ``debug=``) -----------
    def before(self, cta, w, p, mask):
        op = cta.prog.code[p]
        instr = op.instr
        key = (cta.ctaid, w.warp_id)
        prev = self._last_line.get(key)
        self._last_line[key] = instr.line
        reason = None
        if self._mode == "step":
            fc = self._focus
            if fc is None or (fc[0] is cta and fc[1] is w) or fc[1].exited.all():
                reason = "step"
        if reason is None:
            for b in self.breakpoints:
                if not b.enabled or not self._matches(b, cta, w, instr, mask, prev):
                    continue
                b.hits += 1
                reason = f"breakpoint {b.id}"
                break
        if reason is None:
            return
        loc = self._where.get(instr.line)
        self._cta, self._warp = cta, w
        self._focus = (cta, w)
        self.stop = Stop(reason, tuple(int(c) for c in cta.ctaid), w.warp_id, p, instr.line,
                         " ".join((instr.text or instr.opcode).split()), tuple(int(x) for x in np.flatnonzero(mask)),
                         (self.files.get(loc[0], f"file{loc[0]}"), loc[1]) if loc else None)
        self._to_main.release()
        self._to_worker.acquire()
        if self._abort:
            raise _Abort()

    @staticmethod
    def _matches(b, cta, w, instr, mask, prev):
        if b.line is not None and instr.line != b.line:
            return False
        if b.source is not None and (instr.line not in b._lines or prev in b._lines):
            return False
        if b.opcode is not None and not (instr.opcode == b.opcode or instr.opcode.startswith(b.opcode + ".")):
            return False
        if b.cta is not None and tuple(int(c) for c in cta.ctaid) != b.cta:
            return False
        if b.warp is not None and w.warp_id != b.warp:
            return False
        if b.lane is not None and not mask[b.lane]:
            return False
        return True

    # -- the state at a stop ------------------------------------------------------------------------
    def _stopped(self, what):
        if self.stop is None or self._warp is None:
            raise OperandError(f"{what}: the launch is not stopped")

    def _warp_of(self, warp):
        if warp is None:
            return self._warp
        warp = _int(warp, "warp")
        ws = self._cta.warps
        if not 0 <= warp < len(ws):
            raise OperandError(f"no warp {warp} in this CTA (warps 0..{len(ws) - 1})")
        return ws[warp]

    def read(self, reg: str, lane: int | None = None, warp: int | None = None):
        """A register's raw bits: one lane's (an int) or all 32 (an array), of the stopped warp or ``warp``."""
        self._stopped("read")
        w = self._warp_of(warp)
        if not isinstance(reg, str) or not (reg in w.regs or reg in w.reg_types or reg in SPECIAL_REGISTERS):
            raise OperandError(f"read: no register {reg!r} in this kernel (names such as %r4, %f1, %rd2, %p1, "
                               f"%tid.x)")
        v = w.get_reg(reg, f"read {reg}")
        if lane is None:
            return v.copy()
        lane = _int(lane, "lane")
        if not 0 <= lane < LANES:
            raise OperandError(f"read: lane must be 0..31, not {lane}")
        x = v[lane]
        return int(x[0]) | (int(x[1]) << 64) if np.ndim(x) else (bool(x) if v.dtype == np.bool_ else int(x))

    def value(self, reg: str, lane: int, warp: int | None = None):
        """A register's value in one lane, read as its declared type (floats as floats)."""
        bits = self.read(reg, lane, warp)
        t = self._warp_of(warp).reg_type(reg)
        if t in ("f16", "f32", "f64", "bf16") and not isinstance(bits, bool):
            if t == "bf16":
                return float(np.array([bits << 16], np.uint32).view(np.float32)[0])
            dt = _DTYPES[t]
            return float(np.array([bits], {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize])
                         .view(dt)[0])
        if t.startswith("s") and t[1:].isdigit() and not isinstance(bits, bool):
            n = int(t[1:])
            return bits - (1 << n) if bits >> (n - 1) else bits
        return bits

    def shared(self, addr: int, count: int = 1, dtype="u32"):
        """``count`` elements of ``dtype`` from the stopped CTA's shared memory at byte ``addr``."""
        self._stopped("shared")
        dt = _dtype(dtype)
        addr, count = _int(addr, "address"), _int(count, "count")
        n = count * dt.itemsize
        smem = self._cta.smem
        if addr < 0 or addr + n > smem.size:
            raise OperandError(f"shared: [{addr:#x}, {addr + n:#x}) is outside the CTA's {smem.size} bytes of "
                               f"shared memory")
        return smem[addr:addr + n].copy().view(dt)

    def memory(self, addr: int, count: int = 1, dtype="u32"):
        """``count`` elements of ``dtype`` from global memory at ``addr``."""
        if self._gmem is None:
            raise OperandError("memory: no launch yet")
        dt = _dtype(dtype)
        return self._gmem.download(_int(addr, "address"), _int(count, "count") * dt.itemsize).view(dt)

    def warps(self):
        """The stopped CTA's warps: [{warp, lanes, exited, waiting, pc, line, instruction, focus}]."""
        self._stopped("warps")
        out = []
        code = self._cta.prog.code
        for w in self._cta.warps:
            live = ~w.exited
            pcs = sorted(set(int(x) for x in w.pc[live])) if live.any() else []
            p = pcs[0] if pcs else None
            out.append({"warp": w.warp_id, "live": int(live.sum()), "exited": int(w.exited.sum()),
                        "waiting": int((w.waiting & live).sum()), "pcs": pcs,
                        "line": code[p].instr.line if p is not None and p < len(code) else None,
                        "instruction": " ".join((code[p].instr.text or code[p].instr.opcode).split())
                        if p is not None and p < len(code) else "", "focus": w is self._warp})
        return out

    def where(self):
        """The stopped instruction with its source line, as text."""
        self._stopped("where")
        return str(self.stop)


def _int(v, what):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise OperandError(f"debugger: {what} must be an integer, not {v!r}")
    return int(v)


def _dtype(d):
    if isinstance(d, str):
        if d not in _DTYPES:
            raise OperandError(f"debugger: unknown type {d!r}; known: {', '.join(_DTYPES)}")
        return np.dtype(_DTYPES[d])
    try:
        return np.dtype(d)
    except TypeError:
        raise OperandError(f"debugger: unknown type {d!r}") from None
