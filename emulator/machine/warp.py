"""One warp: 32 lanes, their registers, a shared memory and a view of global memory.

``Warp.run(text)`` parses PTX (inline-asm style: statements end at ';' or a line break), compiles each
instruction once (cached by text) and executes it on every lane whose guard predicate holds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.types import SPECIAL_REGISTERS, name_width, type_width
from ..frontend import ptx
from ..frontend.validate import validate_statements
from ..errors import EmulatorError, OperandError, PTXSyntaxError, UnsupportedError
from ..memory import LANES, MAX_SHARED_BYTES, GlobalMemory, SmemAccess, count_rows  # noqa: F401 (SmemAccess: re-exported)
from .fastcore import warmup  # noqa: F401 (tells the executors while the jitted kernels compile in the background)

GLOBALTIMER_NS = 32      # %globaltimer: nanoseconds per issued instruction of the warp (a deterministic model)
H100_SMS = 132           # %nsmid; a kernel's CTA runs on %smid = (linear CTA id) % 132
NO_MODEL = ("%envreg", "%pm", "%gridid", "%reserved_smem", "%aggr_smem_size", "%current_graph_exec")  # refused

ARCHS = ("sm_80", "sm_86", "sm_90", "sm_90a")     # machines with a tensor-core model (sm_89 has none: not offered)

_UINT = {1: np.bool_, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64, 128: np.uint64}


def _zeros(width):
    """A register's 32 lane values: (32,) of its width; a 128-bit register is (32, 2) uint64 (low, high)."""
    return np.zeros((LANES, 2) if width == 128 else LANES, _UINT[width])


def _b128_values(name, values):
    if isinstance(values, int):
        values = [values] * LANES
    v = np.asarray(values, dtype=object if not isinstance(values, np.ndarray) else None)
    if v.shape == (LANES, 2) and v.dtype.kind in "ui":
        return v.astype(np.uint64)
    if v.shape == (LANES,) and v.dtype.kind == "u":
        return np.stack([v.astype(np.uint64), np.zeros(LANES, np.uint64)], axis=1)
    if v.shape == (LANES,) and v.dtype == object and all(isinstance(x, int) and 0 <= x < 1 << 128 for x in v):
        return np.array([[x & (2**64 - 1), x >> 64] for x in v], np.uint64)
    raise OperandError(f"write {name}: a 128-bit register takes (32, 2) uint64 (low, high), 32 ints in "
                       f"[0, 2**128) or one such int")
ALL_LANES = np.ones(LANES, np.bool_)


def _quiet_state():
    """(numpy's context variable of the floating-point error state, its value under ``np.errstate(all="ignore")``),
    or (None, None) where numpy keeps the state otherwise: ``Warp.run`` sets and resets the variable itself, which
    costs a fraction of entering and leaving ``np.errstate`` (the same state: NaN, overflow, ... are results, not
    warnings)."""
    try:
        from numpy._core._ufunc_config import _extobj_contextvar as var
        with np.errstate(all="ignore"):
            quiet = var.get()
        return var, quiet
    except (ImportError, AttributeError, LookupError):
        return None, None


_ERRSTATE, _QUIET = _quiet_state()
_NAME_TYPES = (("%rd", "b64"), ("%fd", "f64"), ("%rs", "b16"), ("%h", "f16"), ("%p", "pred"), ("%f", "f32"))
_FLOAT_NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def _to_bits(name, ptype, width, values):
    """32 lanes of raw register bits from what ``Warp.write`` was given (its docstring states the rule)."""
    what = f"write {name} (.{ptype})"
    if isinstance(values, (str, bytes)) or values is None:
        raise OperandError(f"{what}: expected numbers, got {type(values).__name__}")
    try:
        v = np.asarray(values)
    except (ValueError, TypeError) as e:
        raise OperandError(f"{what}: cannot make an array of the values ({e})") from None
    if v.ndim == 0:
        v = np.full(LANES, v, dtype=v.dtype)
    if v.shape != (LANES,):
        raise OperandError(f"{what}: expected 32 per-lane values or one scalar, got shape {v.shape}")
    if v.dtype == object:                       # Python ints beyond 64 bits, or a mix
        if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v):
            raise OperandError(f"{what}: the values must all be ints, or all floats")
        ints = [int(x) for x in v]
        bad = [x for x in ints if not -(1 << (width - 1)) <= x < (1 << width)]
        if bad:
            raise OperandError(f"{what}: {bad[0]} does not fit {width} bits")
        return np.array([x & ((1 << width) - 1) for x in ints], np.uint64).astype(_UINT[width])
    kind = v.dtype.kind
    if width == 1:
        if kind == "b":
            return v.astype(np.bool_)
        if kind in "iu" and ((v == 0) | (v == 1)).all():
            return v.astype(np.bool_)
        raise OperandError(f"{what}: a predicate takes bools or the ints 0 and 1")
    dt = _UINT[width]
    if kind == "b":
        return v.astype(dt)
    if kind in "iu":
        if kind == "i":
            lo, hi = int(v.min()), int(v.max())
        else:
            lo, hi = 0, int(v.max())
        if lo < -(1 << (width - 1)) or hi >= (1 << width):
            bad = lo if lo < -(1 << (width - 1)) else hi
            raise OperandError(f"{what}: {bad} does not fit {width} bits (integers are raw bits; they must fit "
                               f"the register as unsigned or two's-complement signed numbers)")
        return (v.astype(np.int64).view(np.uint64) if kind == "i" else v.astype(np.uint64)).astype(dt)
    if kind == "f" or v.dtype.name in ("bfloat16",):
        fdt = _FLOAT_NP.get(ptype)
        if ptype == "bf16":
            import ml_dtypes
            fdt = ml_dtypes.bfloat16
        if fdt is not None:
            if v.dtype == fdt:
                return v.view(dt).copy()
            with np.errstate(all="ignore"):
                return v.astype(np.float64 if v.dtype.itemsize <= 8 else v.dtype).astype(fdt).view(dt)
        if v.dtype.itemsize * 8 <= width and isinstance(values, (np.ndarray, np.generic)):
            return v.view(_UINT[v.dtype.itemsize * 8]).astype(dt)         # its bits, zero-extended
        raise OperandError(f"{what}: a {v.dtype.name} value for a register that is not a float register; pass "
                           f"an int (raw bits) or a numpy float of at most {width} bits (its bits)")
    raise OperandError(f"{what}: values of dtype {v.dtype} cannot be written to a register")


@dataclass(frozen=True)
class WarpOptions:
    """Behaviour switches, validated on construction.

    cp_async:  'deferred' (default) — a cp.async copy lands in shared memory when a wait retires its
               group, and touching its destination before then raises AsyncHazardError;
               'eager' — the copy lands at issue (permissive; hides missing waits).
    uninitialized: what a register never written reads as: 'zero' (default) or 'error'.
    bank_log:  how many shared-memory instructions each warp records for ``bank_report`` (default 10,000;
               None: all). Later ones are only counted, in ``warp.smem_log_dropped``, so that a long kernel
               runs in bounded memory.
    wgmma_hazards: 'wait' (default) — as ptxas compiles it: an instruction that touches registers of an
               in-flight wgmma.mma_async first waits for the warp's wgmma to complete (ptxas injects
               warpgroup.wait, C7517), a missing wgmma.fence is inserted (warpgroup.arrive, C7519), and the
               launch records a note (``LaunchResult.notes``); 'error' — the PTX manual's rules: both raise
               AsyncHazardError.
    """
    cp_async: str = "deferred"
    uninitialized: str = "zero"
    bank_log: int | None = 10_000
    wgmma_hazards: str = "wait"

    def __post_init__(self):
        if not isinstance(self.cp_async, str) or self.cp_async not in ("deferred", "eager"):
            raise EmulatorError(f"WarpOptions: cp_async must be 'deferred' or 'eager', not {self.cp_async!r}")
        if not isinstance(self.wgmma_hazards, str) or self.wgmma_hazards not in ("wait", "error"):
            raise EmulatorError(f"WarpOptions: wgmma_hazards must be 'wait' or 'error', not {self.wgmma_hazards!r}")
        if not isinstance(self.uninitialized, str) or self.uninitialized not in ("zero", "error"):
            raise EmulatorError(f"WarpOptions: uninitialized must be 'zero' or 'error', not {self.uninitialized!r}")
        if self.bank_log is not None and (isinstance(self.bank_log, bool) or
                                          not isinstance(self.bank_log, (int, np.integer)) or self.bank_log < 0):
            raise EmulatorError(f"WarpOptions: bank_log must be None or an int >= 0, not {self.bank_log!r}")


_DEFAULT_OPTIONS = WarpOptions()        # (frozen: every warp without options shares it)


class _CpAsyncState:
    """cp.async bookkeeping, vectorised over lanes.

    ``records``: in-flight copies in issue order, one per executed cp.async instruction:
    [dst (int64[32]), data (uint8[32, cp]), lanes still in flight (bool[32]), group (int64[32], -1 while
    uncommitted)]. ``committed[lane]`` counts the groups each lane has committed.
    """

    def __init__(self):
        self.records = []
        self.committed = np.zeros(LANES, np.int64)

    def issue(self, dst, data, mask):
        """A cp.async of the lanes ``mask`` (destinations ``dst``, the bytes read at issue ``data``)."""
        self.records.append([dst.copy(), data, mask.copy(), np.full(LANES, -1, np.int64)])

    def pending(self):
        """The copies in flight, in issue order (lanes, destinations, bytes, groups of the live lanes), and the
        groups each lane committed: what the fast engine's records must equal."""
        out = [(np.flatnonzero(live).tolist(), dst[live].tolist(), data[live].tobytes(), group[live].tolist())
               for dst, data, live, group in self.records]
        return out, self.committed.tolist()

    def commit(self, mask):
        for rec in self.records:
            new = mask & rec[2] & (rec[3] < 0)
            rec[3][new] = self.committed[new]
        self.committed[mask] += 1

    def retire(self, warp, mask, keep):
        """Land every copy of the active lanes whose group is older than their ``keep`` newest groups."""
        limit = self.committed - keep
        alive = []
        for rec in self.records:
            dst, data, live, group = rec
            done = mask & live & (group >= 0) & (group < limit)
            if done.any():
                lanes = np.flatnonzero(done)
                idx = dst[lanes, None] + np.arange(data.shape[1])
                if warp.san is not None:        # the copy lands: a write by the lanes that issued it
                    warp.san.shared(warp, "cp.async", dst, done, data.shape[1], True, data)
                warp.smem[idx] = data[lanes]
                count_rows(warp.smem_inflight, dst[lanes], data.shape[1], -1)
                warp._inflight_n -= lanes.size
                live &= ~done
            if live.any():
                alive.append(rec)
        self.records = alive


class Warp:
    """One warp of 32 lanes (see docs/api.md: Memory and the warp, Writing registers)."""

    san = None          # the sanitizer's observer (machine.sanitize) while one watches; None costs nothing
    profile = None          # a launch's machine.profile.Profile while it profiles (counted per cur_pc)

    def __init__(self, smem_bytes: int = 48 * 1024, gmem: GlobalMemory | None = None, arch: str = "sm_90",
                 options: WarpOptions | None = None, *, smem: np.ndarray | None = None, warp_id: int = 0):
        if not isinstance(arch, str) or arch not in ARCHS:
            raise UnsupportedError(f"Warp: architecture {arch!r} is not supported; supported: {', '.join(ARCHS)}")
        self.arch = arch
        if gmem is not None and not isinstance(gmem, GlobalMemory):
            raise OperandError(f"Warp: gmem must be a GlobalMemory, not {type(gmem).__name__}")
        self.gmem = gmem if gmem is not None else GlobalMemory()
        if options is not None and not isinstance(options, WarpOptions):
            raise OperandError(f"Warp: options must be a WarpOptions, not {options!r}")
        self.options = options or _DEFAULT_OPTIONS
        self.smem_log_cap = self.options.bank_log if self.options.bank_log is not None else 1 << 62
        self.smem_log_dropped = 0              # shared-memory instructions beyond the cap, not recorded
        self._smem_n = 0
        if smem is None:
            if isinstance(smem_bytes, (bool, np.bool_)) or not isinstance(smem_bytes, (int, np.integer)) or \
                    not 0 <= smem_bytes <= MAX_SHARED_BYTES:
                raise OperandError(f"Warp: smem_bytes must be an integer 0..{MAX_SHARED_BYTES} (the H100's shared "
                                   f"memory per CTA), not {smem_bytes!r}")
        self.smem = smem if smem is not None else np.zeros(int(smem_bytes), np.uint8)
        self.warp_id = warp_id
        self.regs: dict[str, np.ndarray] = {}
        self.reg_types: dict[str, str] = {}     # declared with .reg
        self.symbols: dict[str, tuple] = {}     # name -> (state space, address)
        self.special_values: dict[str, np.ndarray] = {}
        self.cp_async = _CpAsyncState()
        # in-flight cp.async destination bytes of shared memory (count of copies covering each byte)
        self.smem_inflight = self._inflight_counts()
        self._inflight_n = 0
        self._smem_log: list[SmemAccess] = []
        self._programs: dict[str, list] = {}
        self.clock = 0
        self._async = None                      # the async unit (mbarriers, bulk copies), made on first use

    def _inflight_counts(self):
        """Per byte of shared memory, the cp.async copies in flight that cover it (a CTA's warps share one)."""
        return np.zeros(self.smem.size, np.int32)

    def __repr__(self):
        return (f"<Warp {self.arch}: 32 lanes, {len(self.regs)} register(s) written, {self.smem.size} bytes of "
                f"shared memory, {len(self._smem_log)} shared-memory access(es) logged>")

    # -- registers ---------------------------------------------------------------------------------
    def reg_width(self, name: str) -> int:
        t = self.reg_types.get(name)
        if t is not None:
            return type_width(t)
        if name in SPECIAL_REGISTERS:
            return SPECIAL_REGISTERS[name]
        return name_width(name)

    def is_register(self, name: str) -> bool:
        return name.startswith("%") or name in self.reg_types

    def declare(self, ptype: str, names):
        from isa.types import TYPES
        if not isinstance(ptype, str) or ptype not in TYPES:
            raise UnsupportedError(f"declare: unknown type .{ptype}; types: {', '.join(TYPES)}")
        if isinstance(names, str) or not isinstance(names, (list, tuple)) or \
                not all(isinstance(n, str) for n in names):
            raise OperandError(f"declare: names is a list of register names (strings), not {names!r:.60}")
        for n in names:
            self.reg_types[n] = ptype

    def reg_type(self, name: str) -> str:
        """The PTX type of a register: its ``.reg`` declaration, else nvcc's naming (``%p`` pred, ``%f`` f32,
        ``%fd`` f64, ``%h`` f16, ``%rd`` b64, ``%rs`` b16, any other name b32)."""
        t = self.reg_types.get(name)
        if t is not None:
            return t
        if name in SPECIAL_REGISTERS:
            return {32: "u32", 64: "u64"}[SPECIAL_REGISTERS[name]]
        for prefix, ptype in _NAME_TYPES:
            if name.startswith(prefix):
                return ptype
        return "b32"

    def write(self, name: str, values) -> None:
        """Set a register in every lane: 32 per-lane values or one scalar.

        How values become bits (docs/api.md, "Writing registers"):

        * integers (Python ``int``, numpy integer scalars and arrays, lists of ints) are raw bits: each must
          fit the register's width as an unsigned or a two's-complement signed number, else OperandError;
        * floats (Python ``float``, numpy float scalars and arrays, lists of floats) written to a float
          register (declared ``.f16``/``.bf16``/``.f32``/``.f64``, or named ``%h``/``%f``/``%fd``) are
          converted to that format, rounding to nearest even; written to any other register, a numpy float
          (scalar or array) no wider than the register gives its raw bits, zero-extended (``np.float32``
          into ``%r1``), anything else raises OperandError (a Python float has no width: say which bits
          you mean with ``np.float32(x)`` or an int);
        * a predicate takes bools, or the ints 0 and 1;
        * a 128-bit register takes (32, 2) uint64 (low half first), 32 Python ints or one int.
        Anything else (strings, None, nested or object arrays, a shape other than () or (32,)) raises."""
        if not isinstance(name, str):
            raise OperandError(f"write: the register name must be a string, not {name!r}")
        width = self.reg_width(name)
        if width == 128:                       # (32, 2) uint64, low half first; 32 Python ints or one int
            self.regs[name] = _b128_values(name, values)
            return
        if width not in _UINT:
            raise UnsupportedError(f"write {name}: {width}-bit registers are not supported")
        self.regs[name] = _to_bits(name, self.reg_type(name), width, values)

    def read(self, name: str) -> np.ndarray:
        """A copy of a register's 32 per-lane raw values (uint16/32/64 or bool)."""
        return self.get_reg(name, "read").copy()

    def get_reg(self, name: str, instr="read") -> np.ndarray:
        if not isinstance(name, str):
            raise OperandError(f"{instr}: the register name must be a string, not {name!r}")
        r = self.regs.get(name)
        if r is not None:
            return r
        if name in SPECIAL_REGISTERS:
            return self.special(name)
        if self.options.uninitialized == "error":
            raise OperandError(f"{instr}: register {name} is read before it is written")
        if self.san is not None:
            self.san.uninit_reg(self, name)
        width = self.reg_width(name)
        if width not in _UINT:
            raise UnsupportedError(f"{instr}: register {name} is {width} bits wide; {width}-bit registers are not "
                                   f"supported here")
        return _zeros(width)

    def set_reg(self, name: str, values: np.ndarray, mask: np.ndarray) -> None:
        """Write raw bits (already of the register's dtype) to the active lanes."""
        if name == "_":
            return
        cur = self.regs.get(name)
        if cur is None:
            width = self.reg_width(name)
            if width not in _UINT:
                raise UnsupportedError(f"register {name} is {width} bits wide; such registers are not supported here")
            if mask is ALL_LANES or mask.all():
                self.regs[name] = np.array(values, dtype=_UINT[width], copy=True).reshape(_zeros(width).shape)
                return
            cur = self.regs[name] = _zeros(width)
        if mask is ALL_LANES or mask.all():
            cur[:] = values
        else:
            cur[mask] = values[mask]

    def special(self, name: str) -> np.ndarray:  # noqa: C901
        """Values of a special register (%laneid, %tid.x, ...); a lone warp is CTA (32,1,1), warp 0."""
        v = self.special_values.get(name)
        if v is not None:
            return v
        lane = np.arange(LANES, dtype=np.uint32)
        if name in ("%laneid",):
            return lane
        if name == "%tid.x":
            return lane + np.uint32(32 * self.warp_id)
        if name in ("%ntid.x",):
            return np.full(LANES, 32, np.uint32)
        if name in ("%ntid.y", "%ntid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%nwarpid", "%cluster_nctarank",
                    "%cluster_nctaid.x", "%cluster_nctaid.y", "%cluster_nctaid.z", "%nclusterid.x",
                    "%nclusterid.y", "%nclusterid.z"):
            return np.ones(LANES, np.uint32)
        if name in ("%warpid",):
            return np.full(LANES, self.warp_id, np.uint32)
        if name == "%lanemask_eq":
            return (np.uint32(1) << lane).astype(np.uint32)
        if name == "%lanemask_lt":
            return ((np.uint64(1) << lane.astype(np.uint64)) - np.uint64(1)).astype(np.uint32)
        if name == "%lanemask_le":
            return ((np.uint64(2) << lane.astype(np.uint64)) - np.uint64(1)).astype(np.uint32)
        if name == "%lanemask_gt":
            return (~((np.uint64(2) << lane.astype(np.uint64)) - np.uint64(1))).astype(np.uint32)
        if name == "%lanemask_ge":
            return (~((np.uint64(1) << lane.astype(np.uint64)) - np.uint64(1))).astype(np.uint32)
        if name in ("%clock", "%clock64"):
            return np.full(LANES, self.clock, np.uint64 if name == "%clock64" else np.uint32)
        if name in ("%dynamic_smem_size", "%total_smem_size"):
            return np.full(LANES, self.smem.size, np.uint32)
        if name.startswith("%globaltimer"):     # deterministic: 32 ns per instruction the warp has issued
            t = np.uint64(GLOBALTIMER_NS * self.clock)
            v = {"%globaltimer": t, "%globaltimer_lo": t & np.uint64(0xFFFFFFFF), "%globaltimer_hi": t >> np.uint64(32)}
            return np.full(LANES, v[name], _UINT[SPECIAL_REGISTERS.get(name, 64)])
        if name == "%nsmid":
            return np.full(LANES, H100_SMS, np.uint32)
        if name.startswith(NO_MODEL):
            raise UnsupportedError(f"{name}: the driver or the profiler sets this special register on the GPU; "
                                   f"the emulator has no model of its value and refuses to make one up")
        return np.zeros(LANES, _UINT[SPECIAL_REGISTERS[name]])

    # -- execution ---------------------------------------------------------------------------------
    def run(self, text: str, sanitize=None):
        """Execute PTX instructions (separated by ';' and/or line breaks) on all 32 lanes.
        ``sanitize``: as ``Module.launch`` (docs/sanitize.md); then the list of reports is returned (an error
        that cannot continue carries them as ``e.reports``). The sanitizer's state lasts for this call."""
        if not isinstance(text, str):
            raise OperandError(f"Warp.run: expected PTX text (a str), not {type(text).__name__}")
        prog = self._programs.get(text)
        if prog is None:
            prog = self._programs[text] = self._compile(text)
        if sanitize is not None:
            return self._run_sanitized(prog, sanitize)
        if self.gmem._uninit:                 # an unwatched run may write anything: nothing stays uninitialised
            self.gmem._uninit.clear()
        if _ERRSTATE is None:
            with np.errstate(all="ignore"):      # NaN, overflow, ... are results here, not warnings
                for fn in prog:
                    fn(self, ALL_LANES)
            return
        token = _ERRSTATE.set(_QUIET)           # (np.errstate(all="ignore"), set and reset directly)
        try:
            for fn in prog:
                fn(self, ALL_LANES)
        finally:
            _ERRSTATE.reset(token)

    def _run_sanitized(self, prog, sanitize):
        from .sanitize import lone_warp, tools_of
        tools = tools_of(sanitize)
        if tools is None:
            for fn in prog:
                fn(self, ALL_LANES)
            return []
        launch, self.san = lone_warp(tools, self)
        au = self.async_unit
        au.on_hazard = self.san.async_hazard
        try:
            for fn in prog:
                fn(self, ALL_LANES)
        except EmulatorError as e:
            raise launch.fatal(e, self) from None
        finally:
            self.san = None
            au.on_hazard = None
        return launch.reports

    def _compile(self, text):
        statements = ptx.parse(text, newline_terminates=True)
        with ptx.deep_scopes():
            prog = self._compile_statements(statements)
        # ptxas's rules (frontend.validate), after the executors' own checks so that their messages come first;
        # undeclared registers are typed from nvcc's naming
        validate_statements(statements, self.reg_types)
        return prog

    def _compile_statements(self, statements):
        from ..ops import compile_instruction
        from ..frontend.contract import contract
        prog = []
        contract(statements)              # ptxas fuses unrounded mul/add pairs (frontend/contract.py)
        for st in statements:
            if isinstance(st, ptx.Instruction):
                prog.append(compile_instruction(st, self))
            elif isinstance(st, ptx.Directive) and st.name == ".reg":
                ptype, names = ptx.expand_reg_directive(st)
                self.declare(ptype, names)
            elif isinstance(st, ptx.Block):
                prog.extend(self._compile_statements(st.statements))
            elif isinstance(st, ptx.Label):
                raise UnsupportedError(f"line {st.line}, column {st.col}: label {st.name}: Warp.run executes "
                                       f"straight-line code; run kernels with branches through load_ptx")
            else:
                raise PTXSyntaxError(f"line {st.line}, column {st.col}: directive {st.name} is not allowed "
                                     f"in Warp.run (only .reg)")
        return prog

    # -- the asynchronous side: mbarriers, bulk copies, tensor maps ---------------------------------------
    @property
    def async_unit(self):
        if self._async is None:
            from ..memory.asyncunit import AsyncUnit
            self._async = AsyncUnit(self.smem.size)
        return self._async

    def stall(self, mask, reason):
        """Lanes that cannot go on until ``reason.ready()``: a lone warp has nobody to wait for, so the
        instruction answers 'not yet' (False); a warp in a CTA returns True and is woken later."""
        return False

    def yield_turn(self, reason=None):
        """Let other warps run (a failed test_wait in a spin loop); nothing to do for a lone warp."""

    # -- thread-block clusters (a lone warp is CTA rank 0 of a cluster of one) -------------------------
    cluster_rank = 0
    cluster_size = 1

    def peer(self, instr, rank, lane=None, addr=None):
        """The warp through which shared memory of CTA ``rank`` of the cluster is reached (this warp for
        its own CTA); an error for a rank outside the cluster."""
        if rank == self.cluster_rank:
            return self
        from ..errors import MemoryAccessError, fail
        what = f"shared::cluster address {addr:#x} names" if addr is not None else "names"
        fail(MemoryAccessError, instr, f"{what} CTA rank {rank} of the cluster, but the cluster has "
             f"{self.cluster_size} CTA(s) (ranks 0-{self.cluster_size - 1}); this CTA is rank {self.cluster_rank}",
             lane)

    def cluster_targets(self, cta_mask, instr="multicast", lane=None):
        """The warps (one per CTA) a multicast with ``cta_mask`` reaches."""
        m = int(cta_mask)
        return [self.peer(instr, r, lane) for r in range(16) if m >> r & 1]

    def tensormap_bytes(self, instr, space, addr, lane):
        """A copy of the 128 bytes of a tensor map at ``addr`` (generic when ``space`` is None)."""
        if space in ("shared", "shared::cta") or (space is None and 0 <= addr < self.smem.size):
            if addr < 0 or addr + 128 > self.smem.size:
                from ..errors import MemoryAccessError, fail
                fail(MemoryAccessError, instr, f"tensor map at shared {addr:#x} runs past shared memory", lane)
            return self.smem[addr:addr + 128].copy()
        if addr % 64:
            from ..errors import AlignmentError, fail
            fail(AlignmentError, instr, f"tensor map address {addr:#x} is not 64-byte aligned", lane)
        buf, off = self.gmem._locate(addr, 128, instr, lane)
        return buf[off:off + 128].copy()

    def tensormap_store(self, instr, space, addr, raw, lane):
        if space in ("shared", "shared::cta") or (space is None and 0 <= addr < self.smem.size):
            self.smem[addr:addr + 128] = raw
            return
        buf, off = self.gmem._locate(addr, 128, instr, lane)
        buf[off:off + 128] = raw

    def _inflight_any(self):
        return self._inflight_n > 0

    # -- address spaces ----------------------------------------------------------------------------
    def cvta(self, space, values, to):
        """cvta / cvta.to: the shared window starts at generic address 0 and global addresses are generic
        addresses, so both conversions are the identity."""
        if space in ("shared", "shared::cta", "shared::cluster", "global"):
            return values                       # shared::cluster: emulator.memory.dsmem
        raise UnsupportedError(f"cvta.{space}: the .{space} window exists only in kernels run through load_ptx")

    def space_load(self, instr, space, addrs, mask, nbytes, align):
        raise UnsupportedError(f"{instr}: .{space} memory exists only in kernels run through load_ptx")

    def space_store(self, instr, space, addrs, mask, data, align):
        raise UnsupportedError(f"{instr}: .{space} memory exists only in kernels run through load_ptx")

    # -- shared-memory traffic -----------------------------------------------------------------------
    def log_smem(self, instruction, op, addrs, width, mask, nmat=0, src=None):
        if self.profile is not None:
            self.profile.smem(self.cur_pc, op, addrs, width, mask, nmat)
        if self._smem_n >= self.smem_log_cap:
            self.smem_log_dropped += 1
            return
        self._smem_n += 1
        self._smem_log.append(SmemAccess(str(instruction), op, np.asarray(addrs, np.int64).copy(), int(width),
                                         np.asarray(mask, np.bool_).copy(), int(nmat),
                                         None if src is None else np.asarray(src).astype(np.int64)))

    def bank_report(self):
        """One record (instruction, wavefronts, conflicts) per shared-memory instruction executed so far (the
        first ``WarpOptions.bank_log`` of them; ``smem_log_dropped`` counts the rest)."""
        from ..memory.banks import analyze
        return [analyze(rec) for rec in self._smem_log]
