"""Translate a compiled :class:`~emulator.machine.program.Program` once into the compact numeric form of
``table.py`` (QEMU-TCG style: translate once, run many).

Only exact, fully understood spellings are translated; anything else (an unknown qualifier, a rounding
mode other than the default, a symbol operand, a special register that changes while the kernel runs)
stays ``SLOW`` and runs through the reference executor, which is the definition. The tests compare both
engines bit for bit on every opcode translated here.
"""
from __future__ import annotations

import numpy as np

from isa.types import TYPES
from ...frontend.ptx import Imm, Mem, Not, Paren, Pair, Reg, Sym, TensorAddr, Vec
from isa.types import SPECIAL_REGISTERS
from ...ops.common import imm_bits
from ..convergence import LOOP_DEPTH, MASK_IMM, MASK_REG, convergence
from . import fmath
from . import table as T

INT_TYPES = {"u16", "u32", "u64", "s16", "s32", "s64"}
BIT_TYPES = {"b16", "b32", "b64"}
CMP_INT_TYPES = INT_TYPES | BIT_TYPES | {"u8", "s8", "b8"}
CVT_INT = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"}
LDST_TYPES = {"b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
              "f16", "f16x2", "bf16", "bf16x2", "f32", "f64"}
SPACE = {None: T.GENERIC, "shared": T.SHARED, "shared::cta": T.SHARED, "global": T.GLOBAL, "param": T.PARAM,
         "local": T.LOCAL, "shared::cluster": T.SHARED_CLUSTER}
# special registers whose value is fixed for the whole launch (they get an arena slot filled at warp setup)
CONST_SPECIALS = {f"%{r}.{c}" for r in ("tid", "ntid", "ctaid", "nctaid") for c in "xyz"} | {
    "%laneid", "%warpid", "%nwarpid", "%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt",
    "%lanemask_ge", "%dynamic_smem_size", "%total_smem_size", "%cluster_ctarank", "%cluster_nctarank"} | {
    f"%{r}.{c}" for r in ("cluster_ctaid", "cluster_nctaid", "clusterid", "nclusterid") for c in "xyz"}
NOPS = {"membar", "fence"}
# calls the CTA loop hands back without leaving it: builtins with no frame (machine.program.BUILTINS)
_BUILTIN_CALLS = ("vprintf", "__assertfail")


class _Slow(Exception):
    """This instruction stays with the reference executor."""


def _width(ptype):
    return TYPES[ptype][0]


def _signed(ptype):
    return int(TYPES[ptype][1] == "s")


def _classify(mods, groups):
    """{group: value} when every qualifier belongs to exactly one group (at most once each), else _Slow."""
    out = {}
    for m in mods:
        for g, vals in groups.items():
            if m in vals:
                if g in out:
                    raise _Slow
                out[g] = m
                break
        else:
            raise _Slow
    return out


class Translation:
    """The numeric program: ``code`` (int64[n, NFIELDS]), ``imm`` (uint64[n, NIMM]) and the register map."""

    def __init__(self, prog):
        self.prog = prog
        self.slots: dict[str, tuple] = {}      # register name -> (class, byte offset in the arena)
        self.specials: dict[str, tuple] = {}   # constant special register -> (class, byte offset)
        self.arena_bytes = 0
        self.local_base = None                 # byte offset in the arena of each lane's .local depot (``local_slot``)
        self.var_slots: dict[str, tuple] = {}  # module variable -> (arena byte offset, the program's symbol entry)
        n = len(prog.code)
        self.code = np.zeros((n, T.NFIELDS), np.int64)
        self.code[:, T.GUARD:T.NFIELDS] = -1
        self.code[:, T.GNEG] = 0
        self.code[:, T.CNEG] = 0
        self.code[:, T.FLT] = 0
        self.imm = np.zeros((n, T.NIMM), np.uint64)
        self.fast = np.zeros(n, np.bool_)
        # kernels whose shared memory the async proxy reads (TMA stores, bulk copies out, wgmma): the loop's shared
        # stores mark their bytes for the fence.proxy.async check (memx.py)
        # (and bulk copies from shared memory into another CTA's: cp.async.bulk.shared::cluster.shared::cta)
        self.bulk_readers = bulk_readers = any(op.kind == "op" and (
            op.instr.base == "cp" and "bulk" in op.instr.mods and _source_shared(op.instr.mods)) for op in prog.code)
        self.any_bulk = any(op.kind == "op" and "bulk" in op.instr.mods for op in prog.code)
        self.async_readers = bulk_readers or any(op.kind == "op" and op.instr.base == "wgmma" for op in prog.code)
        # generic addresses may name another CTA's shared memory (dsmemx.py): a generic mapa, a cvta of the window
        self.cluster_generic = any(op.kind == "op" and (
            op.instr.base == "mapa" and "shared::cluster" not in op.instr.mods or
            op.instr.base == "cvta" and "shared::cluster" in op.instr.mods) for op in prog.code)
        self._mma = []           # (MmaOp, [D, A, B, C] register operands) per translated mma
        self._mufu = set()       # indices (fmath.TABLES) of the MUFU tables the translated rows read
        self._xcall = False      # a row calls xcall.py (XROW, ATOM)
        self._mma_keep = []      # the tables K_MMAX rows point to (kept alive with the translation)
        self._hopx = False       # a row calls hopcall.py (HOPX)
        self.bulkx = False       # a row calls bulkcall.py (BULKX): the engine gives the loop a staging area
        for pc, op in enumerate(prog.code):
            self._translate(pc, op)
        cv = convergence(prog)
        self.code[:, T.PDIN] = cv.pdin
        self.code[:, T.PDOUT] = cv.pdout
        self.code[:, T.SYNCPT] = cv.sync
        for pc, m in enumerate(cv.mmask):         # the membermask: an immediate, or a register the loop reads
            if cv.sync[pc] == MASK_IMM:
                self.code[pc, T.MMASK] = m
            elif cv.sync[pc] == MASK_REG:
                self.code[pc, T.MMASK] = self._slot(m, 32)
        self.code[:, T.TAIL] = cv.tail
        self.code[:, T.RANK] = cv.rank
        self.code[:, T.LID:T.LID + LOOP_DEPTH] = cv.lid
        self.code[:, T.LIN:T.LIN + LOOP_DEPTH] = cv.lin
        self.code[:, T.LOUT:T.LOUT + LOOP_DEPTH] = cv.lout
        self._mma_tables()
        self.wg = None           # wgmmax.WgProgram: the wgmma instructions, when the CTA loop runs them all
        wg_pcs = [pc for pc, op in enumerate(prog.code) if op.kind == "op" and op.instr.base == "wgmma"]
        if wg_pcs and all(self.code[pc, T.OP] == T.WGMMA for pc in wg_pcs):
            from .wgmmax import WgProgram
            self.wg = WgProgram(self)
        else:
            self.code[wg_pcs, T.OP] = T.SLOW       # all or none: one engine owns a CTA's wgmma state
            self.fast[wg_pcs] = False
        self._mufu_tables()
        self.coverage = float(self.fast.mean()) if n else 1.0
        # the CTA loop (run_cta) runs the whole CTA when every barrier is translated and no function is called
        # (per-lane call stacks stay with the Python scheduler) but the builtins, which push no frame: vprintf
        # (the scheduler's executor prints and steps on) and __assertfail (it raises; CuTe's and nvcc's device
        # asserts sit in kernels that never fail them); it parks mbarrier waits and arrives at counted
        # barriers itself, and hands the CTA to the Python scheduler for what it does not decide (ctaloop.py)
        # (wgmma too, when the loop runs every wgmma instruction of the kernel: wgmmax.py; bulk copies too: those
        # the loop stages (bulkx.py) and those the executors issue join the async unit whenever the loop returns,
        # and the async unit moves where the Python scheduler moves it, at a round's end when nobody moved on:
        # engine.FastCTA.run)
        self.cta_ok = all(
            (op.kind != "bar" or self.fast[pc]) and
            (op.kind != "call" or op.call.callee in _BUILTIN_CALLS) and
            (op.kind != "op" or op.instr.base != "wgmma" or self.wg is not None)
            for pc, op in enumerate(prog.code))
        self._cta_waits(prog)

    def _cta_waits(self, prog):
        """What the CTA loop's waits need (ctaloop.py): ``cta_waits``, the kernel parks warps at mbarriers or
        arrives at barriers with a thread count or a register-numbered barrier (a sanitised launch keeps such CTAs
        on the Python scheduler, which its sanitizer follows); ``param_writes``, a row or a call may write the
        threads' .param bytes (a yield's state then includes them: the loop's try_wait stalls go back)."""
        code = self.code
        bars = [pc for pc, op in enumerate(prog.code) if op.kind == "bar"]
        self.cta_waits = any(op.kind == "op" and op.instr.base == "mbarrier" for op in prog.code) or any(
            code[pc, T.X] < 0 or code[pc, T.B] != -1 for pc in bars if code[pc, T.OP] == T.BAR)
        self.param_writes = any(op.kind == "call" for op in prog.code) or bool(
            ((code[:, T.OP] == T.ST) & (code[:, T.X] == T.PARAM)).any()) or any(
            op.kind == "op" and op.instr.base == "st" and not self.fast[pc] and
            any(m.startswith("param") for m in op.instr.mods) for pc, op in enumerate(prog.code))
        from .asyncx import K_CL_WAIT, K_MB_WAIT
        hop = code[:, T.OP] == T.HOPX
        # (try_wait and barrier.cluster.wait park lanes in the CTA loop: their yields keep snapshots, ctaloop.py)
        self.mb_waits = bool((hop & (((code[:, T.X] == K_MB_WAIT) & (code[:, T.Z] == 1)) |
                                     (code[:, T.X] == K_CL_WAIT))).any())

    def _guard(self, op, env, row):
        """The row's guard (GUARD, GNEG) from the instruction's predicate; a guard that is not a 1-bit predicate
        sends the row back to the executors."""
        if op.guard is not None:
            if env is None or env.reg_width(op.guard[0]) != 1:
                raise _Slow
            row[T.GUARD] = self._slot(op.guard[0], 1)
            row[T.GNEG] = int(op.guard[1])

    def _brx(self, op, env, row, imm):
        """brx.idx: each taken lane jumps to the index-th target (machine.cta.CTA._brx_targets)."""
        n = len(op.targets)
        if not 0 < n <= 8 or len(op.instr.operands) != 2:
            raise _Slow
        self._guard(op, env, row)
        row[T.A] = self._src(env, op.instr.operands[0], "u32", imm, 0)
        row[T.X] = n
        row[T.V0:T.V0 + n] = op.targets
        row[T.OP] = T.BRX

    def _bar(self, op, env, row, imm):
        bid_r, cnt_r, red, kind, aligned = op.fn
        ops = op.instr.operands
        # a thread count (named barriers of warp-specialised kernels): the loop stops at it as at any barrier and
        # the Python scheduler arrives with the count (machine.cta.CTA._arrive); the CTA loop, which counts every
        # thread, is not used for such kernels (cta_ok)
        # so is a barrier number in a register (CUTLASS's NamedBarrier): X -1, the scheduler reads it
        if red is not None or kind not in ("sync", "arrive") or len(ops) != 1 + (cnt_r is not None) or \
                not (isinstance(ops[0], Reg) or isinstance(ops[0], Imm) and isinstance(ops[0].value, int) and
                     0 <= ops[0].value <= 15):
            raise _Slow
        self._guard(op, env, row)
        row[T.X] = ops[0].value if isinstance(ops[0], Imm) else -1
        # the CTA loop reads the barrier number (A, when X is -1) and the thread count (B, -1: none) as u32
        # (machine.cta.CTA._arrive); a warp run alone stops and the scheduler reads them
        row[T.A] = -1 if isinstance(ops[0], Imm) else _x_operand(self, env, ops[0], "u32", imm, 0)
        row[T.B] = -1 if cnt_r is None else _x_operand(self, env, ops[1], "u32", imm, 1)
        row[T.Y] = int(kind == "arrive")
        row[T.Z] = int(bool(aligned))
        row[T.OP] = T.BAR

    def _mma_tables(self):
        """Per translated mma: its registers, fragment maps, parameters and the rows' scratch for its codes."""
        k = max(len(self._mma), 1)
        self.mma_regs = np.full((k, 16), -1, np.int64)
        self.mma_maps = np.zeros((k, max([op._maps.size for op, _ in self._mma] + [1])), np.int64)
        self.mma_prm = np.zeros((k, max([op._prm.size for op, _ in self._mma] + [1])), np.int64)
        for i, (op, regs) in enumerate(self._mma):
            self.mma_regs[i, :len(regs)] = regs
            self.mma_maps[i, :op._maps.size] = op._maps
            self.mma_prm[i, :op._prm.size] = op._prm
        from ...numerics import gemm_fast
        assert all(op._kern is gemm_fast.tc_batch for op, _ in self._mma)
        # the codes of A, B, C and D of the largest (numerics.tc_row: compute, store)
        self.mma_u64 = np.zeros(max([op._prm[0] * op._prm[2] + op._prm[2] * op._prm[1] + 2 * op._prm[0] * op._prm[1]
                                     for op, _ in self._mma] + [1]), np.uint64)

    def _mufu_tables(self):
        """Raw pointers (and lengths) of the measured MUFU tables the MUFU rows read (numerics.mufu.tables,
        unpacked here; the translation keeps them alive); 0 for the others, which no row reads. After them, the
        addresses of xcall.py's two functions (loop.XSLOT, ASLOT), those of the instruction families the rows
        use (families.SLOT, filled by ``bind_families``), wgcall.py's (loop.WSLOT), hopcall.py's (loop.HSLOT) and
        bulkcall.py's (loop.BSLOT)."""
        from ...numerics import mufu
        from . import families
        self.mufu_ptr = np.zeros(families.NPTRS, np.int64)
        self.mufu_size = np.zeros(families.NPTRS, np.int64)
        self._mufu_keep = []
        ops = set(np.unique(self.code[:, T.OP]).tolist())
        self.families = sorted({families.OF_OPCODE[op] for op in ops if op in families.OF_OPCODE},
                               key=families.NAMES.index)
        # the functions compiled apart the rows call (families.APART; filled by ``bind_families`` too):
        # xcall.x_c, xcall.atom_c (loop.XSLOT, ASLOT), wgcall.wg_c (loop.WSLOT), hopcall.hop_c (loop.HSLOT),
        # bulkcall.bulk_c (loop.BSLOT)
        self.apart = [name for name, used in (("xrow", T.XROW in ops), ("atom", T.ATOM in ops),
                                              ("hopper", self._hopx), ("wgmma", self.wg is not None),
                                              ("bulk", bool(self.bulkx))) if used]
        if ops & {T.ATOM, T.WGMMA, T.STMATRIX, T.HOPX, T.BULKX}:
            self.apart.insert(0, "rare")        # the warp loop's glue for those rows (rarecall.rare_c)
        if any(name in self.apart for name in families.WAITS_WITH):
            self.apart.append("ctawait")        # the CTA loop's mbarrier stalls and yields (ctaloop.cta_c)
        bars = self.code[self.code[:, T.OP] == T.BAR]
        if ((bars[:, T.X] < 0) | (bars[:, T.B] != -1)).any():
            self.apart.append("ctabar")         # counted or register-numbered barriers (ctaloop.bar_c)
        if self._hopx:
            from .asyncx import K_CL_ARRIVE
            if ((self.code[:, T.OP] == T.HOPX) & (self.code[:, T.X] >= K_CL_ARRIVE)).any():
                self.apart.append("cluster")    # barrier.cluster, getctarank (clusterx.cl_c)
        if self.bulkx:
            from . import bulkx
            from .bulkx import B_TLOAD
            if ((self.code[:, T.OP] == T.BULKX) & (self.code[:, T.X] == B_TLOAD) & (self.code[:, T.V0 + 5] != -1)).any():
                self.apart.append("bulk_mc")    # multicast TMA loads (bulkcall.mc_c, which bulk_c calls)
            if ((self.code[:, T.OP] == T.BULKX) & (self.code[:, T.X] == bulkx.B_SCOPY)).any():
                self.apart.append("bulk_s2s")   # cp.async.bulk.shared::cluster.shared::cta (bulkcall.sc_c)
        if T.BRX in ops:
            self.apart.append("brx")            # brx.idx (loop.brx_c)
        if self.async_readers:
            self.apart.append("memx")           # shared stores beside the async proxy (memx.memx_c)
        if self._dsmem():                       # loads, stores, atomics that may reach another CTA (dsmemx.py), in
            self.apart.append("dsmem")          # memplan.plan_c's and xcall.atom_c's slots
            if "atom" in self.apart:
                self.apart[self.apart.index("atom")] = "dsmem_atom"
        elif self._slow_ldst() or T.ATOM in ops:
            self.apart.append("memplan")        # the loads and stores ldst.plan leaves, the atomics' addresses
        if self.wg is not None:                 # wgmma's tile functions, one per form (wgcall.py)
            self.apart += sorted(self.wg.tiles, key=families.WG_TILES.index)
            if self.wg.tiles - {"wg_int"} and families.cached("wg_fix"):
                self.apart.append("wg_fix")     # the float tiles' fix-ups when nothing compiles (else on first need)
        for k in sorted(self._mufu):
            tab = mufu.tables()[fmath.TABLES[k]]
            if tab.dtype != np.uint32 or not tab.flags.c_contiguous:
                raise AssertionError("a MUFU table that is not contiguous uint32")
            self._mufu_keep.append(tab)
            self.mufu_ptr[k] = tab.ctypes.data
            self.mufu_size[k] = tab.size

    def _dsmem(self):
        """Whether a load, store or atomic may reach another CTA's shared memory (dsmemx.py): a .shared::cluster
        one, or a generic one in a kernel whose generic addresses may be in the cluster's window."""
        code = self.code
        rows = code[(code[:, T.OP] == T.LD) | (code[:, T.OP] == T.ST) | (code[:, T.OP] == T.ATOM)]
        return bool((rows[:, T.X] == T.SHARED_CLUSTER).any() or
                    self.cluster_generic and (rows[:, T.X] == T.GENERIC).any())

    def _slow_ldst(self):
        """Whether a load or store may leave ``ldst.plan`` (memplan.py): a .local row, an address in a register
        of another width. The rest (generic lanes on both sides of the shared window, lanes in several
        allocations) go back to the reference executor while ``plan_c`` is not bound."""
        code = self.code
        rows = code[(code[:, T.OP] == T.LD) | (code[:, T.OP] == T.ST)]
        base = rows[:, T.A]
        cls = base >> T.CLASS_SHIFT
        return bool(((rows[:, T.X] == T.LOCAL) | ((base != -1) & (cls != T.R32) & (cls != T.R64))).any())

    def bind_families(self, wait=True):
        """Fill the address slots of the instruction families the rows use (families.py): compiled or loaded
        now (``wait``), or, while another process compiles them, left 0 until a later launch (the loop hands
        those rows back to the reference executors meanwhile). Returns whether every slot is filled."""
        from . import families, warmup
        done = True
        for name in self.families + self.apart:
            k = families.SLOT[name] if name in families.SLOT else families.APART_SLOT[name]
            if self.mufu_ptr[k] == 0:
                self.mufu_ptr[k] = warmup.family(name, wait)
                done = done and self.mufu_ptr[k] != 0
        return done

    def bind_one(self, name, wait=True):
        """Bind one function compiled apart (families.APART) now, as ``bind_families`` does, for a row that asked
        for it as it ran (wgmmax's inf/NaN fix-ups, ``WgTable.bind_fix``); whether its slot is filled (when not, a
        later launch binds it)."""
        from . import families, warmup
        k = families.APART_SLOT[name]
        if name not in self.apart:
            self.apart.append(name)
        if self.mufu_ptr[k] == 0:
            self.mufu_ptr[k] = warmup.family(name, wait)
            if self.mufu_ptr[k] == 0:
                self._families_bound = False
        return bool(self.mufu_ptr[k])

    # -- registers ---------------------------------------------------------------------------------
    def _slot(self, name, width, special=False):
        table = self.specials if special else self.slots
        s = table.get(name)
        if s is None:
            cls = T.CLASS_OF_WIDTH.get(width)
            if cls is None:
                raise _Slow
            nbytes = 32 * T.CLASS_BYTES[cls]
            s = table[name] = (cls, self.arena_bytes)
            self.arena_bytes += -(-nbytes // 8) * 8
        cls, off = s
        return cls << T.CLASS_SHIFT | off // T.CLASS_BYTES[cls]

    def local_slot(self):
        """The operand of a hidden 64-bit register: per lane, the global address of its .local depot
        (``KernelWarp.local_bases``, written into the arena by ``engine.FastWarp``); made on first use."""
        if self.local_base is None:
            self.local_base = self.arena_bytes
            self.arena_bytes += 32 * 8
        return T.R64 << T.CLASS_SHIFT | self.local_base // 8

    def var_slot(self, env, name):
        """The operand of a hidden 64-bit register holding the address of a .global/.const module variable in every
        lane (``KernelWarp.symbols``: the launch's, written into the arena by ``engine.FastWarp``), or _Slow."""
        got = self.var_slots.get(name)
        if got is None:
            sym = env.symbols.get(name)
            if name not in self.prog.module.info.variables or sym is None or sym[0] not in ("global", "const"):
                raise _Slow
            got = self.var_slots[name] = (self.arena_bytes, sym)
            self.arena_bytes += 32 * 8
        return T.R64 << T.CLASS_SHIFT | got[0] // 8

    def _reg(self, env, op):
        if isinstance(op, Reg):
            name = op.name
        elif isinstance(op, Sym) and env.is_register(op.name):
            name = op.name
        else:
            raise _Slow
        return name

    def _src(self, env, op, ptype, row_imm, k):
        """Encode a source operand (register, constant special register or immediate)."""
        if isinstance(op, Imm):
            row_imm[k] = imm_bits(op, ptype, None) if not isinstance(imm_bits(op, ptype, None), bool) \
                else int(imm_bits(op, ptype, None))
            return -2 - k
        name = self._reg(env, op)
        if name.startswith("%") and name in CONST_SPECIALS:
            return self._slot(name, 32, special=True)
        if name == "%is_explicit_cluster" and ptype == "pred":
            return self._slot(name, 32, special=True)       # (0 or 1 in a 32-bit slot, read as a predicate)
        if name == "_" or name.startswith(("%clock", "%globaltimer", "%envreg", "%pm", "%smid", "%nsmid",
                                           "%gridid")) or name in SPECIAL_REGISTERS:
            raise _Slow              # the other special registers (%is_explicit_cluster, ...) stay with the reference
        return self._slot(name, env.reg_width(name))

    def _dst(self, env, op):
        name = self._reg(env, op)
        if name == "_":
            return -1
        if name in CONST_SPECIALS:
            raise _Slow
        return self._slot(name, env.reg_width(name))

    def _pred_src(self, env, op, row, row_imm, k):
        neg = 0
        if isinstance(op, Not):
            neg, op = 1, op.item
        if isinstance(op, Imm):
            raise _Slow
        row[T.CNEG] = neg
        return self._src(env, op, "pred", row_imm, k)

    # -- instructions --------------------------------------------------------------------------------
    def _translate(self, pc, op):
        row = self.code[pc]
        imm = self.imm[pc]
        env = getattr(op, "env", None)
        try:
            if op.kind in ("ret", "exit"):
                self._guard(op, env, row)
                row[T.OP] = T.EXIT
            elif op.kind == "bra":
                if op.guard is not None:
                    row[T.GUARD] = self._slot(op.guard[0], env.reg_width(op.guard[0]) if env else 1)
                    row[T.GNEG] = int(op.guard[1])
                    if env is not None and env.reg_width(op.guard[0]) != 1:
                        raise _Slow
                row[T.X] = op.target
                row[T.OP] = T.BRA
            elif op.kind == "brx" and env is not None:
                self._brx(op, env, row, imm)
            elif op.kind == "bar" and env is not None:
                self._bar(op, env, row, imm)
            elif op.kind == "op" and env is not None:
                instr = op.instr
                if instr.guard is not None:
                    g = instr.guard[0].name
                    if env.reg_width(g) != 1:
                        raise _Slow
                    row[T.GUARD] = self._slot(g, 1)
                    row[T.GNEG] = int(instr.guard[1])
                self._cur = (pc, op)
                fn = _RULES.get(instr.base)
                if getattr(instr, "contract", None) is not None:
                    fn = r_contract_any     # fused by ptxas (frontend/contract.py): one FFMA (HFMA2)
                if fn is None:
                    raise _Slow
                fn(self, env, instr, row, imm)
                held = getattr(env, "_wgmma_regs", None)
                if held and row[T.OP] != T.WGMMA and any(n in held for n in _names(instr.operands)):
                    row[T.WG] = 1       # the executor checks it while a wgmma.mma_async holds the register
            else:
                raise _Slow
        except _Slow:
            row[:] = -1
            row[T.OP] = T.SLOW
            row[T.GNEG] = row[T.CNEG] = row[T.FLT] = 0
            imm[:] = 0
            return
        self.fast[pc] = True


# -- rules, one per base opcode ----------------------------------------------------------------------------

def _names(operands):
    """Every register (or symbol) name an instruction's operands mention."""
    for o in operands:
        if isinstance(o, (Reg, Sym)):
            yield o.name
        elif isinstance(o, (Vec, Pair, Paren)):
            yield from _names(o.items)
        elif isinstance(o, Not):
            yield from _names((o.item,))
        elif isinstance(o, Mem):
            yield from _names((o.base,))


def _ops(instr, n):
    if len(instr.operands) != n or any(isinstance(o, (Vec, Pair)) for o in instr.operands[1:]):
        raise _Slow
    return instr.operands


def _set_type(row, ptype):
    row[T.W] = _width(ptype)
    row[T.SGN] = _signed(ptype)


def _float_mods(instr, allowed_rnd=("rn",)):
    q = _classify(instr.mods, {"type": {"f32"}, "rnd": set(allowed_rnd)})
    if q.get("type") != "f32":
        raise _Slow
    return q


def r_mov_pack(t, env, instr, row, imm, ptype):
    """mov.bW {%d0, ..}, %a (unpack) into 2, 4 or 8 registers of W/n bits each (``ops.memops._mov_pack``), the
    forms scalarx's K_UNPACK does not take; immediates, other widths and b128 stay with the executor."""
    if len(instr.operands) != 2 or _TYPES_KIND.get(ptype) is None:
        raise _Slow
    d, a = instr.operands
    if isinstance(d, Vec) == isinstance(a, Vec):
        raise _Slow
    vec = a if isinstance(a, Vec) else d
    w = _width(ptype)
    n = len(vec.items)
    if n not in (2, 4, 8) or w // n not in (8, 16, 32) or w % n:
        raise _Slow
    ew = w // n
    for it in vec.items:
        if isinstance(it, (Imm, Vec, Pair, Not)):
            raise _Slow
        name = t._reg(env, it)
        if name != "_" and (name in CONST_SPECIALS or name.startswith("%") and name in SPECIAL_REGISTERS or
                            env.reg_width(name) != ew):
            raise _Slow
    one = d if isinstance(a, Vec) else a
    if isinstance(one, (Imm, Pair, Not)) or t._reg(env, one) in ("_",) or t._reg(env, one) in SPECIAL_REGISTERS \
            or t._reg(env, one) in CONST_SPECIALS or env.reg_width(t._reg(env, one)) != w:
        raise _Slow
    if isinstance(a, Vec):
        raise _Slow                     # a pack r_mov_x (scalarx K_PACK) does not take: the executor
    row[T.A] = t._src(env, a, "b%d" % w, imm, 0)
    for i, it in enumerate(d.items):
        row[T.V0 + i] = t._dst(env, it)
    row[T.OP] = T.MOV_UNPACK
    row[T.W], row[T.SGN] = w, 0
    row[T.Y], row[T.Z] = n, ew


_TYPES_KIND = {p: TYPES[p][1] for p in TYPES if TYPES[p][1] in ("b", "u", "s", "f") and p != "b128"}


def r_mov(t, env, instr, row, imm):
    q = _classify(instr.mods, {"type": set(TYPES) - {"b128"}})
    ptype = q.get("type")
    if ptype is None:
        raise _Slow
    if len(instr.operands) == 2 and any(isinstance(o, Vec) for o in instr.operands):
        return r_mov_pack(t, env, instr, row, imm, ptype)     # the forms scalarx's K_PACK/K_UNPACK leave
    d, a = _ops(instr, 2)
    if isinstance(d, Vec):
        raise _Slow
    _set_type(row, ptype)
    row[T.D] = t._dst(env, d)
    if isinstance(a, Sym) and not env.is_register(a.name) and a.name in t.prog.module.info.variables and \
            env.symbols.get(a.name, ("",))[0] != "shared":
        row[T.A] = t.var_slot(env, a.name)                # mov.u64 %rd, global_var: the launch's address
    elif isinstance(a, Sym) and not env.is_register(a.name):
        space, base = _static_symbol(t, env, a.name)      # mov.u32 %r, smem_var: its shared address; mov.b64
                                                          # %rd, param: its offset in the .param space (CUTLASS
                                                          # and DeepGEMM take the address of their tensor maps);
                                                          # a .local variable's offset; a function's address
        imm[0] = base & ((1 << _width(ptype)) - 1)
        row[T.A] = -2
    else:
        row[T.A] = t._src(env, a, ptype, imm, 0)
    row[T.OP] = T.MOV


def r_addsub(t, env, instr, row, imm):
    d, a, b = _ops(instr, 3)
    if "f32" in instr.mods:
        _float_mods(instr)
        ptype, opc = "f32", {"add": T.FADD32, "sub": T.FSUB32}[instr.base]
    else:
        q = _classify(instr.mods, {"type": INT_TYPES})
        ptype = q.get("type")
        if ptype is None:
            raise _Slow
        opc = {"add": T.ADD, "sub": T.SUB}[instr.base]
    _set_type(row, ptype)
    row[T.D], row[T.A], row[T.B] = t._dst(env, d), t._src(env, a, ptype, imm, 0), t._src(env, b, ptype, imm, 1)
    row[T.OP] = opc


def _wide(ptype):
    return TYPES[ptype][1] + str(2 * _width(ptype))


def r_mul(t, env, instr, row, imm):
    if "f32" in instr.mods:
        d, a, b = _ops(instr, 3)
        _float_mods(instr)
        _set_type(row, "f32")
        row[T.D], row[T.A], row[T.B] = t._dst(env, d), t._src(env, a, "f32", imm, 0), t._src(env, b, "f32", imm, 1)
        row[T.OP] = T.FMUL32
        return
    q = _classify(instr.mods, {"type": INT_TYPES, "mode": {"lo", "hi", "wide"}})
    ptype, mode = q.get("type"), q.get("mode", "lo")
    if ptype is None or (mode == "wide" and _width(ptype) == 64):
        raise _Slow
    d, a, b = _ops(instr, 3)
    _set_type(row, ptype)
    row[T.D], row[T.A], row[T.B] = t._dst(env, d), t._src(env, a, ptype, imm, 0), t._src(env, b, ptype, imm, 1)
    row[T.OP] = {"lo": T.MUL_LO, "hi": T.MUL_HI, "wide": T.MUL_WIDE}[mode]


def r_mad(t, env, instr, row, imm):
    if "f32" in instr.mods:
        d, a, b, c = _ops(instr, 4)
        q = _float_mods(instr)
        if instr.base == "mad" and "rnd" not in q:
            raise _Slow
        _set_type(row, "f32")
        row[T.D] = t._dst(env, d)
        row[T.A], row[T.B], row[T.C] = (t._src(env, x, "f32", imm, k) for k, x in enumerate((a, b, c)))
        row[T.OP] = T.FFMA32
        return
    if instr.base != "mad":
        raise _Slow
    q = _classify(instr.mods, {"type": INT_TYPES, "mode": {"lo", "hi", "wide"}})
    ptype, mode = q.get("type"), q.get("mode", "lo")
    if ptype is None or (mode == "wide" and _width(ptype) == 64):
        raise _Slow
    d, a, b, c = _ops(instr, 4)
    ctype = _wide(ptype) if mode == "wide" else ptype
    _set_type(row, ptype)
    row[T.D] = t._dst(env, d)
    row[T.A], row[T.B] = t._src(env, a, ptype, imm, 0), t._src(env, b, ptype, imm, 1)
    row[T.C] = t._src(env, c, ctype, imm, 2)
    row[T.OP] = {"lo": T.MAD_LO, "hi": T.MAD_HI, "wide": T.MAD_WIDE}[mode]


def r_shift(t, env, instr, row, imm):
    q = _classify(instr.mods, {"type": INT_TYPES | BIT_TYPES})
    ptype = q.get("type")
    if ptype is None:
        raise _Slow
    d, a, b = _ops(instr, 3)
    _set_type(row, ptype)
    row[T.D], row[T.A], row[T.B] = t._dst(env, d), t._src(env, a, ptype, imm, 0), t._src(env, b, "u32", imm, 1)
    row[T.OP] = T.SHL if instr.base == "shl" else T.SHR


def r_logic(t, env, instr, row, imm):
    q = _classify(instr.mods, {"type": BIT_TYPES | {"pred"}})
    ptype = q.get("type")
    if ptype is None:
        raise _Slow
    _set_type(row, ptype)
    if instr.base == "not":
        d, a = _ops(instr, 2)
        row[T.D], row[T.A] = t._dst(env, d), t._src(env, a, ptype, imm, 0)
        row[T.OP] = T.NOT
        return
    d, a, b = _ops(instr, 3)
    row[T.D], row[T.A], row[T.B] = t._dst(env, d), t._src(env, a, ptype, imm, 0), t._src(env, b, ptype, imm, 1)
    row[T.OP] = {"and": T.AND, "or": T.OR, "xor": T.XOR}[instr.base]


def r_minmax(t, env, instr, row, imm):
    q = _classify(instr.mods, {"type": INT_TYPES})
    ptype = q.get("type")
    if ptype is None:
        raise _Slow
    d, a, b = _ops(instr, 3)
    _set_type(row, ptype)
    row[T.D], row[T.A], row[T.B] = t._dst(env, d), t._src(env, a, ptype, imm, 0), t._src(env, b, ptype, imm, 1)
    row[T.OP] = T.MIN if instr.base == "min" else T.MAX


def r_negabs(t, env, instr, row, imm):
    q = _classify(instr.mods, {"type": {"s16", "s32", "s64"}})
    ptype = q.get("type")
    if ptype is None:
        raise _Slow
    d, a = _ops(instr, 2)
    _set_type(row, ptype)
    row[T.D], row[T.A] = t._dst(env, d), t._src(env, a, ptype, imm, 0)
    row[T.OP] = T.NEG if instr.base == "neg" else T.ABS


def r_setp(t, env, instr, row, imm):
    q = _classify(instr.mods, {"cmp": set(T.CMPS), "bool": {"and", "or", "xor"},
                               "type": CMP_INT_TYPES | {"f32", "f64"}})
    ptype, cmp = q.get("type"), q.get("cmp")
    if ptype is None or cmp is None:
        raise _Slow
    ops = instr.operands
    if len(ops) != (4 if "bool" in q else 3):
        raise _Slow
    target = ops[0]
    dests = target.items if isinstance(target, Pair) else (target,)
    if len(dests) > 2 or any(isinstance(o, (Vec, Pair)) for o in ops[1:3]):
        raise _Slow
    for dd in dests:
        n = t._reg(env, dd)
        if n != "_" and env.reg_width(n) != 1:
            raise _Slow
    _set_type(row, ptype)
    row[T.FLT] = {"f32": 1, "f64": 2}.get(ptype, 0)
    row[T.X] = T.CMP[cmp]
    row[T.Y] = T.BOOLS[q.get("bool")]
    row[T.D] = t._dst(env, dests[0])
    row[T.Z] = t._dst(env, dests[1]) if len(dests) > 1 else -1
    row[T.A], row[T.B] = t._src(env, ops[1], ptype, imm, 0), t._src(env, ops[2], ptype, imm, 1)
    if "bool" in q:
        row[T.C] = t._pred_src(env, ops[3], row, imm, 2)
    row[T.OP] = T.SETP


def r_selp(t, env, instr, row, imm):
    q = _classify(instr.mods, {"type": (CMP_INT_TYPES | {"f32", "f64", "f16", "bf16", "f16x2", "bf16x2"})
                               - {"b8", "u8", "s8"}})
    ptype = q.get("type")
    if ptype is None:
        raise _Slow
    d, a, b, c = _ops(instr, 4)
    _set_type(row, ptype)
    row[T.D], row[T.A], row[T.B] = t._dst(env, d), t._src(env, a, ptype, imm, 0), t._src(env, b, ptype, imm, 1)
    row[T.C] = t._pred_src(env, c, row, imm, 2)
    row[T.OP] = T.SELP


def r_cvt(t, env, instr, row, imm):
    if "tf32" in instr.mods:
        if sorted(instr.mods) not in (["f32", "rna", "tf32"], ["f32", "rna", "satfinite", "tf32"]) \
                or instr.mods.index("tf32") > instr.mods.index("f32"):
            raise _Slow
        d, a = _ops(instr, 2)
        _set_type(row, "b32")
        row[T.X] = int("satfinite" in instr.mods)
        row[T.D], row[T.A] = t._dst(env, d), t._src(env, a, "b32", imm, 0)
        row[T.OP] = T.TF32_RNA
        return
    types = [m for m in instr.mods if m in CVT_INT]
    if len(types) != 2 or len(instr.mods) != 2:
        raise _Slow
    dtype, atype = types
    d, a = _ops(instr, 2)
    _set_type(row, atype)
    row[T.X] = _width(dtype)
    row[T.Y] = _signed(dtype)
    row[T.D], row[T.A] = t._dst(env, d), t._src(env, a, atype, imm, 0)
    row[T.OP] = T.CVT_II


def r_prmt(t, env, instr, row, imm):
    if list(instr.mods) != ["b32"]:
        raise _Slow                 # the .f4e/.b4e/.rc8/.ecl/.ecr/.rc16 modes: the executor
    d, a, b, c = _ops(instr, 4)
    _set_type(row, "b32")
    row[T.D], row[T.A] = t._dst(env, d), t._src(env, a, "b32", imm, 0)
    row[T.B], row[T.C] = t._src(env, b, "b32", imm, 1), t._src(env, c, "b32", imm, 2)
    row[T.OP] = T.PRMT


def _ldst_mods(instr):
    from isa.datamove import LD_ST
    hints = set(LD_ST["hints"])
    # one group per kind of hint, as the reference (ops.memops): ld.global.acquire.gpu carries two
    q = _classify(instr.mods, {"space": set(s for s in SPACE if s), "vec": {"v2", "v4", "v8"},
                               "type": LDST_TYPES, "nc": {"nc"},
                               "cache": hints & {"ca", "cg", "cs", "lu", "cv", "wb", "wt"},
                               "sem": hints & {"weak", "volatile", "relaxed", "acquire", "release", "mmio"},
                               "scope": hints & {"cta", "gpu", "sys", "cluster"},
                               "L1": {h for h in hints if h.startswith("L1::")},
                               "L2": {h for h in hints if h.startswith("L2::evict") or h == "L2::cache_hint"},
                               "prefetch": hints & {"L2::64B", "L2::128B", "L2::256B"}})
    ptype = q.get("type")
    if ptype is None:
        raise _Slow
    n = {None: 1, "v2": 2, "v4": 4, "v8": 8}[q.get("vec")]
    ew = _width(ptype) // 8
    if ew * n > 16:
        raise _Slow
    return SPACE[q.get("space")], ptype, n, ew


def _address(t, env, op, row, imm, space):
    """[reg+off] / [imm] / [param_symbol+off]: base operand in A, offset in immediate slot 3 (ld.param [%rd+off]:
    the register holds an offset into the thread's .param bytes, as the executor reads it)."""
    if not isinstance(op, Mem):
        raise _Slow
    if not -(1 << 63) <= op.offset < 1 << 64:
        raise _Slow                             # the reference refuses it
    imm[T.IMM_OFFSET] = np.uint64(op.offset & ((1 << 64) - 1))
    base = op.base
    if base is None:
        row[T.A] = -1
        return
    if isinstance(base, Sym) and not env.is_register(base.name) and space in (T.GLOBAL, T.GENERIC) and \
            base.name in t.prog.module.info.variables and env.symbols.get(base.name, ("",))[0] != "shared":
        if not 0 <= op.offset < 1 << 32:
            raise _Slow                         # (the executor's rules for other offsets)
        row[T.A] = t.var_slot(env, base.name)   # [global_var+off]: the launch's address, the offset in slot 3
        return
    if isinstance(base, Sym) and not env.is_register(base.name):
        sym = _static_symbol(t, env, base.name)
        if (space, sym[0]) not in ((T.PARAM, "param"), (T.SHARED, "shared"), (T.GENERIC, "shared"),
                                   (T.LOCAL, "local"), (T.SHARED_CLUSTER, "shared")):
            raise _Slow
        row[T.A] = -1
        imm[T.IMM_OFFSET] = np.int64(op.offset + sym[1]).view(np.uint64)
        return
    name = t._reg(env, base)                    # .param through a register: an offset in the .param space
    if env.reg_width(name) not in (32, 64):
        raise _Slow
    row[T.A] = t._src(env, base, "b%d" % env.reg_width(name), imm, 0)


def _source_shared(mods):
    """Whether a bulk copy reads shared memory (its second state space, the source, is shared)."""
    spaces = [m for m in mods if m in ("global", "shared", "shared::cta", "shared::cluster")]
    return len(spaces) >= 2 and spaces[1].startswith("shared")


def _static_symbol(t, env, name):
    """(space, address) of a .param, .shared or .local symbol or a function whose address is the same in every warp
    (a .local symbol's: its offset in each thread's depot, as ``mov`` gives it)."""
    sym = env.symbols.get(name)
    if sym is None or name in t.prog.module.info.variables and sym[0] != "shared":
        raise _Slow
    space, base = sym
    if space == "shared" and callable(base):
        base = t.prog.shared_static           # extern .shared: the dynamic window starts after the static
    if space not in ("shared", "param", "local", "func") or not isinstance(base, int):
        raise _Slow
    return space, base


def _vec(op, n):
    if n == 1:
        if isinstance(op, Vec):
            if len(op.items) != 1:
                raise _Slow
            return [op.items[0]]
        return [op]
    if not isinstance(op, Vec) or len(op.items) != n:
        raise _Slow
    return list(op.items)


def _policy(t, env, instr):
    """The two operands of an ld/st; with .L2::cache_hint a third, the 64-bit cache policy, which only steers
    the L2 (ops.memops reads it and nothing else): a register or an immediate."""
    ops = instr.operands
    if len(ops) != (3 if "L2::cache_hint" in instr.mods else 2):
        raise _Slow
    if len(ops) == 3:
        if isinstance(ops[2], (Vec, Pair, Not, Mem)):
            raise _Slow
        if not isinstance(ops[2], Imm):
            t._src(env, ops[2], "b64", np.zeros(T.NIMM, np.uint64), 0)
    return ops[0], ops[1]


def _local(t, row, space):
    """An ld/st.local row: the lanes' depots (B) and the depot's size (C; ``KernelWarp._local_addrs``)."""
    if space == T.LOCAL:
        if not t.prog.layout.local:
            raise _Slow                         # no .local memory: the executor raises
        row[T.B], row[T.C] = t.local_slot(), t.prog.layout.local


def r_ld(t, env, instr, row, imm):
    space, ptype, n, ew = _ldst_mods(instr)
    d, a = _policy(t, env, instr)
    _address(t, env, a, row, imm, space)
    _set_type(row, ptype)
    row[T.X], row[T.Y], row[T.Z] = space, n, ew
    _local(t, row, space)
    for i, r in enumerate(_vec(d, n)):
        row[T.V0 + i] = t._dst(env, r)
    row[T.OP] = T.LD


def r_st(t, env, instr, row, imm):
    space, ptype, n, ew = _ldst_mods(instr)
    a, s = _policy(t, env, instr)
    _address(t, env, a, row, imm, space)
    _set_type(row, ptype)
    row[T.X], row[T.Y], row[T.Z] = space, n, ew
    _local(t, row, space)
    vals = _vec(s, n)
    k = 0
    for i, r in enumerate(vals):
        if isinstance(r, Imm):
            if k == T.IMM_OFFSET:
                raise _Slow    # an immediate takes a slot of its own: slots 0-2 (3 holds the address offset)
            row[T.V0 + i] = t._src(env, r, ptype, imm, k)
            k += 1
        else:
            row[T.V0 + i] = t._src(env, r, ptype, imm, 0)
    row[T.OP] = T.ST


def r_nop(t, env, instr, row, imm):
    if instr.operands or (instr.base == "fence" and instr.mods[:1] in (("proxy",), ("mbarrier_init",)) and not (
            instr.mods[1:2] and instr.mods[1].startswith("async") and not t.any_bulk)):
        raise _Slow            # proxy fences clear the CTA's unfenced-write marks (ops.mbarrier), which only a bulk
    row[T.OP] = T.NOP          # copy or TMA store out of shared memory reads (and the sanitizer, whose rows go back)


def r_shfl(t, env, instr, row, imm):
    q = _classify(instr.mods, {"sync": {"sync"}, "mode": {"up", "down", "bfly", "idx"}, "type": {"b32"}})
    if len(q) != 3 or len(instr.operands) != 5:
        raise _Slow
    d_op = instr.operands[0]
    d_reg, p_reg = d_op.items if isinstance(d_op, Pair) else (d_op, None)
    if any(isinstance(o, (Vec, Pair, Not)) for o in instr.operands[1:]):
        raise _Slow
    _set_type(row, "b32")
    row[T.D] = t._dst(env, d_reg)
    row[T.Z] = t._dst(env, p_reg) if p_reg is not None else -1
    row[T.A], row[T.B], row[T.C] = (t._src(env, o, "b32", imm, k) for k, o in enumerate(instr.operands[1:4]))
    row[T.V0] = t._src(env, instr.operands[4], "b32", imm, 3)
    row[T.X] = ("up", "down", "bfly", "idx").index(q["mode"])
    row[T.OP] = T.SHFL


def r_bfe(t, env, instr, row, imm):
    q = _classify(instr.mods, {"type": {"u32", "u64", "s32", "s64"}})
    ptype = q.get("type")
    if ptype is None:
        raise _Slow
    d, a, b, c = _ops(instr, 4)
    from ...ops.intx import bfe_folds_to_ones
    if bfe_folds_to_ones(instr, ptype):
        raise _Slow         # ptxas folds this immediate bit field its own way (ops/intx.py): the executor has the rule
    _set_type(row, ptype)
    row[T.D], row[T.A] = t._dst(env, d), t._src(env, a, ptype, imm, 0)
    row[T.B], row[T.C] = t._src(env, b, "u32", imm, 1), t._src(env, c, "u32", imm, 2)
    row[T.OP] = T.BFE


def r_mma(t, env, instr, row, imm):
    from ...numerics import gemm_fast
    from ...ops.mma import get_mma
    if any(m in ("sp", "sp::ordered_metadata") for m in instr.opcode.split(".")[1:]):
        raise _Slow                 # mma.sp: the executor (ops/mma_sp.py)
    op = get_mma(instr.opcode, env.arch)
    if op._kern is not gemm_fast.tc_batch:
        return _mma_x(t, env, instr, row, op)
    if len(instr.operands) != 4 or instr.guard is not None:
        raise _Slow
    regs = [-1] * 16
    for g, (opnd, n) in enumerate(zip(instr.operands, (op.n_d, op.n_a, op.n_b, op.n_c))):
        items = opnd.items if isinstance(opnd, Vec) else (opnd,)
        if len(items) != n or n > 4:
            raise _Slow
        for i, it in enumerate(items):
            name = t._reg(env, it)
            if name == "_" and g == 0:
                continue
            if env.reg_width(name) != 32:
                raise _Slow
            regs[4 * g + i] = t._dst(env, it) if g == 0 else t._src(env, it, "b32", imm, 0)
            if regs[4 * g + i] < 0:
                raise _Slow
    row[T.X] = len(t._mma)
    row[T.V0:T.V0 + 4] = (op.n_d, op.n_a, op.n_b, op.n_c)
    t._mma.append((op, regs))
    # the mma family decodes through the lookup tables (8- and 16-bit formats) with C the first accumulator;
    # the other forms (tf32; sm_90's fp8, whose C is added last: prm[19] == 1) are mma_ext's (families.py)
    lean = all(lut.shape[0] > 1 for lut in op._extra) and int(op._prm[19]) != 1
    row[T.OP] = T.MMA if lean else T.MMA_X


def _mma_x(t, env, instr, row, op):
    """mma.sync of the f64 and integer families (.satfinite too) and .b1 with AND: a K_MMAX row, whose tile runs
    in mmatile.mma_c through the executor's own kernel (numerics.fast.f64_batch / int_batch)."""
    from ...numerics import fast
    from ...ops import mma as M
    from . import mmatile, scalarx
    kind = {id(fast.f64_batch): 0, id(M._int_batch): 1}.get(id(op._kern))
    if kind is None or len(instr.operands) != 4:
        raise _Slow
    width = 64 if kind == 0 else 32
    regs = [-1] * 20
    k = 0
    for g, (opnd, n) in enumerate(zip(instr.operands, (op.n_d, op.n_a, op.n_b, op.n_c))):
        items = opnd.items if isinstance(opnd, Vec) else (opnd,)
        if len(items) != n:
            raise _Slow
        for it in items:
            if isinstance(it, (Imm, Vec, Pair, Not)):
                raise _Slow
            name = t._reg(env, it)
            if name == "_" and g == 0:
                k += 1
                continue
            if name == "_" or name.startswith("%") and (name in CONST_SPECIALS or name in SPECIAL_REGISTERS) or \
                    env.reg_width(name) != width:
                raise _Slow
            regs[k] = t._dst(env, it) if g == 0 else t._slot(name, width)
            k += 1
    tab = np.array([kind, op.n_a, op.n_b, op.n_c, op.n_d] + regs + [op._maps.size] + op._maps.tolist() +
                   [op._prm.size] + op._prm.tolist(), np.int64)
    if scalarx.MMA_MAPS != 25 or scalarx.MMA_REGS != 5:
        raise AssertionError("the K_MMAX table layout")
    t._mma_keep.append(tab)
    row[T.A] = row[T.B] = row[T.C] = row[T.D] = -1
    row[T.V0:T.V0 + 8] = -1
    row[T.V0], row[T.V0 + 1], row[T.V0 + 2] = tab.ctypes.data, tab.size, mmatile.ADDRESS
    row[T.X], row[T.Y], row[T.Z] = scalarx.K_MMAX, kind, 0
    _set_type(row, "b32")
    t._xcall = True
    row[T.OP] = T.XROW


def r_ldmatrix(t, env, instr, row, imm):
    """ldmatrix and stmatrix (``ops.datamove``): every shape, with or without .trans."""
    from ...ops.datamove import _matrix_op
    spec = _matrix_op(instr)
    store = spec.op == "stmatrix"
    if spec.op not in ("ldmatrix", "stmatrix") or len(instr.operands) != 2 or instr.guard is not None:
        raise _Slow
    d, a = instr.operands[::-1] if store else instr.operands
    items = d.items if isinstance(d, Vec) else (d,)
    if len(items) != spec.nmat:
        raise _Slow
    _address(t, env, a, row, imm, T.SHARED)
    for i, it in enumerate(items):
        if env.reg_width(t._reg(env, it)) != 32:
            raise _Slow
        row[T.V0 + i] = t._src(env, it, "b32", imm, 0) if store else t._dst(env, it)
        if row[T.V0 + i] < 0:
            raise _Slow
    row[T.Y], row[T.Z] = spec.nmat, int(spec.trans)
    row[T.OP] = T.STMATRIX if store else T.LDMATRIX


def r_wgmma(t, env, instr, row, imm):
    """wgmma.fence/commit_group/wait_group/mma_async: the CTA loop's (wgmmax.py)."""
    from .wgmmax import translate_row
    pc, op = t._cur
    if instr.guard is not None or not translate_row(t, env, pc, getattr(op, "fn", None), row):
        raise _Slow


def r_cvta(t, env, instr, row, imm):
    """cvta{.to}.{global,shared{::cta,::cluster},const,param,local}.{u32,u64}: global addresses are generic
    addresses, the shared window starts at generic address 0 (the cluster's: memory.dsmem) and .const is global
    memory (``KernelWarp.cvta``), so the conversion
    is a move; the kernel parameters' generic window starts at PARAM_BASE, an add (a subtract for .to) of it; a
    thread's .local depot is a global allocation, an add (subtract) of its address (``Translation.local_slot``)."""
    q = _classify(instr.mods, {"to": {"to"}, "space": {"global", "shared", "shared::cta", "const", "param",
                                                       "local", "shared::cluster"}, "type": {"u32", "u64"}})
    if "space" not in q or "type" not in q:
        raise _Slow
    d, a = _ops(instr, 2)
    if isinstance(d, Vec):
        raise _Slow
    _set_type(row, q["type"])
    row[T.D], row[T.A] = t._dst(env, d), t._src(env, a, q["type"], imm, 0)
    row[T.OP] = T.MOV
    if q["space"] == "param":
        from ..kernel_warp import PARAM_BASE
        imm[1] = PARAM_BASE & ((1 << _width(q["type"])) - 1)
        row[T.B] = -2 - 1
        row[T.OP] = T.SUB if "to" in q else T.ADD
    elif q["space"] == "local":               # each lane's depot: its generic window starts at its global address
        if not t.prog.layout.local:
            raise _Slow
        row[T.B] = t.local_slot()
        row[T.OP] = T.SUB if "to" in q else T.ADD


def _cp_address(t, env, op, imm, k, shared):
    """[reg+off] / [imm] / [shared symbol+off] of cp.async: the base operand (-1: none), the offset in slot k."""
    if not isinstance(op, Mem) or not -(1 << 63) <= op.offset < 1 << 64:
        raise _Slow
    base = op.base
    imm[k] = np.uint64(op.offset & ((1 << 64) - 1))
    if base is None:
        return -1
    if isinstance(base, Sym) and not env.is_register(base.name):
        space, addr = _static_symbol(t, env, base.name)
        if not shared or space != "shared":
            raise _Slow
        imm[k] = np.int64(op.offset + addr).view(np.uint64)
        return -1
    name = t._reg(env, base)
    width = env.reg_width(name)
    if width not in (32, 64):
        raise _Slow
    return t._src(env, base, "b%d" % width, imm, k)


def r_cp(t, env, instr, row, imm):
    """cp.async.{ca,cg}.shared.global (every cp-size, src-size as a register or a constant, the prefetch and
    cache-policy qualifiers, whose operand the reference ignores too), commit_group, wait_group N, wait_all.
    The ignore-src predicate form stays with the reference; bulk copies: r_bulk."""
    from ...errors import EmulatorError
    from ...ops.datamove import _cp_async_op
    mods = instr.mods
    ops = instr.operands
    if "bulk" in mods:
        return r_bulk(t, env, instr, row, imm)
    if mods in (("async", "commit_group"), ("async", "wait_all")):
        if ops:
            raise _Slow
        row[T.OP] = T.CP_COMMIT if mods[1] == "commit_group" else T.CP_WAIT
        row[T.X], row[T.Y] = 0, int(mods[1] == "wait_all")
        return
    if mods == ("async", "wait_group"):
        if len(ops) != 1 or not isinstance(ops[0], Imm) or ops[0].kind != "int" or \
                not 0 <= ops[0].value <= 0xFFFFFFFF:
            raise _Slow
        row[T.OP] = T.CP_WAIT
        row[T.X], row[T.Y] = ops[0].value, 0
        return
    if len(mods) < 2 or mods[0] != "async" or mods[1] not in ("ca", "cg"):
        raise _Slow
    try:
        spec, has_policy = _cp_async_op(instr)
    except EmulatorError:
        raise _Slow from None
    if len(ops) not in (3 + has_policy, 4 + has_policy) or not isinstance(ops[2], Imm) or ops[2].kind != "int" \
            or ops[2].value not in spec.cp_sizes:
        raise _Slow
    cp = ops[2].value
    row[T.A] = _cp_address(t, env, ops[0], imm, 0, True)
    row[T.B] = _cp_address(t, env, ops[1], imm, 1, False)
    row[T.C] = -1
    if len(ops) == 4 + has_policy:
        n = ops[3]
        if isinstance(n, Imm):
            if n.kind != "int" or not 0 <= n.value <= cp:
                raise _Slow
            imm[2] = n.value
            row[T.C] = -2 - 2
        else:
            name = t._reg(env, n)
            if name == "_" or env.reg_width(name) != 32:
                raise _Slow                     # a predicate is ignore-src
            row[T.C] = t._src(env, n, "u32", imm, 2)
    row[T.X], row[T.Y] = cp, int(spec.cache == "cg")
    row[T.OP] = T.CPASYNC


def r_bulk(t, env, instr, row, imm):
    """cp.async.bulk.tensor.{1..5}d tiled loads into this CTA's shared memory on an mbarrier
    (.shared::cluster.global{.tile}.mbarrier::complete_tx::bytes{.L2::cache_hint}) and tiled stores
    (.global.shared::cta{.tile}.bulk_group{.L2::cache_hint}) and reductions (cp.reduce.async.bulk.tensor, the same
    with .<op>), as ops.bulk._tensor compiles them (bulkx.py), and the tensor prefetches (nothing to do).
    Multicast, im2col, the non-tensor forms and the async-groups stay with the executor."""
    from . import asyncx, bulkx
    mods = instr.mods
    ops = list(instr.operands)
    from ...ops.bulk import RED_OPS
    red = None
    if mods[:1] == ("reduce",):
        red = [m for m in mods if m in RED_OPS]
        if len(red) != 1:
            raise _Slow
        mods = mods[1:]
    if red is None and mods[2:3] in (("commit_group",), ("wait_group",)):
        # the bulk async-groups (ops.bulk._groups: the same operand rules), run by the CTA loop on its staged copies
        if mods == ("async", "bulk", "commit_group") and not ops:
            row[T.Y] = 0
        elif mods in (("async", "bulk", "wait_group"), ("async", "bulk", "wait_group", "read")) and len(ops) == 1 \
                and isinstance(ops[0], Imm) and ops[0].kind == "int" and 0 <= ops[0].value < 1 << 62:
            row[T.Y] = ops[0].value
        else:
            raise _Slow
        row[T.X] = bulkx.B_COMMIT if mods[2] == "commit_group" else bulkx.B_WAIT
        row[T.OP] = T.BULKX
        t.bulkx = True
        return
    if red is None and mods == ("async", "bulk", "shared::cluster", "shared::cta", "mbarrier::complete_tx::bytes"):
        return _bulk_s2s(t, env, ops, row, imm)
    if mods[:2] != ("async", "bulk") or "tensor" not in mods:
        raise _Slow
    dim = [m for m in mods if len(m) == 2 and m[1] == "d" and m[0] in "12345"]
    if len(dim) != 1:
        raise _Slow
    rank = int(dim[0][0])
    if "prefetch" in mods:
        if any(m.startswith("im2col") for m in mods):
            raise _Slow                        # (the executor refuses it)
        return _hopx(t, row, asyncx.K_NOP)     # ops.bulk._prefetch: the operands were checked when it compiled
    load = {"shared::cluster", "global", "mbarrier::complete_tx::bytes"}
    store = {"global", "shared::cta", "bulk_group"}
    rest = set(mods) - {"async", "bulk", "tensor", dim[0], "tile", "L2::cache_hint"} - set(red or ())
    spaces = [m for m in mods if m in ("shared::cluster", "shared::cta", "shared", "global")]
    # .multicast::cluster: the ctaMask operand (b16) after the mbarrier (row V0 + 5; bulkx.py, clusterx.py)
    mcast = "multicast::cluster" in rest
    if mcast:
        rest = rest - {"multicast::cluster"}
    if red is None and rest == load and spaces == ["shared::cluster", "global"] and \
            len(ops) in ((4, 5) if mcast else (3, 4)):
        kind, tref, other = bulkx.B_TLOAD, ops[1], ops[0]
        if not isinstance(ops[2], Mem) or (mcast and isinstance(ops[3], (Vec, Pair, Not, Mem))):
            raise _Slow
        _address(t, env, ops[2], row, imm, T.SHARED)             # the mbarrier: B, immediate 1
        row[T.B] = row[T.A]
        imm[1] = imm[T.IMM_OFFSET]
    elif rest == store and spaces == ["global", "shared::cta"] and len(ops) in (2, 3):
        kind, tref, other = (bulkx.B_TSTORE if red is None else bulkx.B_TRED), ops[0], ops[1]
        row[T.Z] = RED_OPS.index(red[0]) if red else 0
    else:
        raise _Slow
    if not isinstance(tref, TensorAddr) or not isinstance(other, Mem) or len(tref.coords.items) != rank:
        raise _Slow
    _address(t, env, other, row, imm, T.SHARED)                  # the shared box: C, immediate 2
    row[T.C] = row[T.A]
    imm[2] = imm[T.IMM_OFFSET]
    row[T.V0:T.V0 + 8] = -1
    if mcast:
        if isinstance(ops[3], Imm):
            raise _Slow
        row[T.V0 + 5] = t._src(env, ops[3], "b16", imm, 0)
    free = 0                                                     # immediate slot 0: one constant coordinate
    for k, c in enumerate(tref.coords.items):
        if isinstance(c, Imm):
            if free or c.kind != "int" or not 0 <= c.value < 1 << 31:
                raise _Slow
            free = 1
            row[T.V0 + k] = t._src(env, c, "s32", imm, 0)
        elif isinstance(c, (Vec, Pair, Not, Mem)) or env.reg_width(t._reg(env, c)) != 32:
            raise _Slow
        else:
            row[T.V0 + k] = t._src(env, c, "s32", imm, 0)
    _address(t, env, tref.addr, row, imm, T.GENERIC)             # the tensor map: A, immediate 3
    if row[T.A] == -1 and tref.addr.base is not None:
        raise _Slow                                              # (a symbol: the executor's symbol address)
    row[T.X] = kind
    row[T.Y] = rank
    row[T.OP] = T.BULKX
    t.bulkx = True


def _bulk_s2s(t, env, ops, row, imm):
    """cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar] (ops.bulk._bulk):
    this CTA's shared bytes into a CTA of the cluster, on that CTA's mbarrier (bulkx.B_SCOPY: A the destination,
    C the source, B the mbarrier, offsets in immediates 3, 2, 1; V0 the size, read as .u32)."""
    from . import bulkx
    if len(ops) != 4 or not all(isinstance(o, Mem) for o in (ops[0], ops[1], ops[3])) or \
            isinstance(ops[2], (Vec, Pair, Not, Mem)):
        raise _Slow
    _address(t, env, ops[3], row, imm, T.SHARED)                 # the mbarrier: B, immediate 1
    row[T.B] = row[T.A]
    imm[1] = imm[T.IMM_OFFSET]
    _address(t, env, ops[1], row, imm, T.SHARED)                 # the source: C, immediate 2
    row[T.C] = row[T.A]
    imm[2] = imm[T.IMM_OFFSET]
    _address(t, env, ops[0], row, imm, T.SHARED)                 # the destination: A, immediate 3
    row[T.V0:T.V0 + 8] = -1
    row[T.V0] = t._src(env, ops[2], "u32", imm, 0)
    row[T.X], row[T.Y] = bulkx.B_SCOPY, 0
    row[T.OP] = T.BULKX
    t.bulkx = True


_RULES = {
    "mov": r_mov, "add": r_addsub, "sub": r_addsub, "mul": r_mul, "mad": r_mad, "fma": r_mad,
    "shl": r_shift, "shr": r_shift, "and": r_logic, "or": r_logic, "xor": r_logic, "not": r_logic,
    "min": r_minmax, "max": r_minmax, "neg": r_negabs, "abs": r_negabs, "setp": r_setp, "selp": r_selp,
    "cvt": r_cvt, "ld": r_ld, "ldu": r_ld, "st": r_st, "membar": r_nop, "fence": r_nop, "shfl": r_shfl,
    "mma": r_mma, "ldmatrix": r_ldmatrix, "stmatrix": r_ldmatrix, "wgmma": r_wgmma, "bfe": r_bfe, "prmt": r_prmt, "cp": r_cp, "cvta": r_cvta,
}


# -- MUFU forms, f32 min/max/neg/abs/copysign, .ftz and contracted f32 arithmetic, float conversions (fmath.py)

def _f32_srcs(t, env, row, imm, srcs, width=32):
    """Source operands into A, B, C: registers of ``width`` bits (or constant special registers), or 0fXXXXXXXX
    immediates (other literals follow the executor's rules)."""
    for k, (f, o) in enumerate(zip((T.A, T.B, T.C), srcs)):
        if isinstance(o, (Vec, Pair, Not)):
            raise _Slow
        if isinstance(o, Imm):
            if o.kind != "f32" or width != 32:
                raise _Slow
        elif t._reg(env, o) == "_" or (t._reg(env, o) not in CONST_SPECIALS and env.reg_width(t._reg(env, o)) != width):
            raise _Slow
        row[f] = t._src(env, o, "b%d" % width, imm, k)


def _f32_dst(t, env, row, d, width=32):
    if isinstance(d, (Vec, Pair, Not, Imm)) or t._reg(env, d) == "_" or env.reg_width(t._reg(env, d)) != width:
        raise _Slow
    row[T.D] = t._dst(env, d)
    if row[T.D] < 0:
        raise _Slow


def _f32_operands(t, env, instr, n, row, imm):
    """d, a (, b) of an f32 instruction: 32-bit registers or 32-bit immediates, as the executors read b32."""
    ops = instr.operands
    if len(ops) != n + 1:
        raise _Slow
    _f32_dst(t, env, row, ops[0])
    _f32_srcs(t, env, row, imm, ops[1:])
    _set_type(row, "b32")


def r_mufu(t, env, instr, row, imm):
    from isa.mufu import MUFU_SPELLINGS, canonical
    from isa.targets import TARGETS
    from ...numerics.mufu import F32_DIV, F32_UNARY
    form = canonical(instr.base, instr.mods)
    if form not in MUFU_SPELLINGS or TARGETS.get(getattr(env, "arch", None) or "sm_90", 90) < MUFU_SPELLINGS[form]:
        raise _Slow                          # not a MUFU form, or not on this target: the executor says so
    if form in F32_UNARY:
        code = fmath.UNARY[instr.base]
        _f32_operands(t, env, instr, 1, row, imm)
        row[T.X], row[T.Y] = code, int(".ftz." in form)
        t._mufu.update(fmath.NEEDS[code])
        row[T.OP] = T.MUFU_X if code in fmath.UNARY_X else T.MUFU_R if code in fmath.UNARY_R else T.MUFU
    elif form in F32_DIV:
        _f32_operands(t, env, instr, 2, row, imm)
        row[T.X], row[T.Y] = int(form.startswith("div.full")), int(".ftz." in form)
        t._mufu.add(fmath.T_RCP)
        row[T.OP] = T.MUFU_DIV
    else:
        raise _Slow


def r_fminmax(t, env, instr, row, imm):
    if "f32" not in instr.mods:
        return r_minmax(t, env, instr, row, imm)
    q = _classify(instr.mods, {"type": {"f32"}, "ftz": {"ftz"}, "nan": {"NaN"}})
    _f32_operands(t, env, instr, 2, row, imm)
    row[T.X], row[T.Y], row[T.Z] = int(instr.base == "min"), int("ftz" in q), int("nan" in q)
    row[T.OP] = T.FMINMAX


def r_copysign(t, env, instr, row, imm):
    if tuple(instr.mods) != ("f32",):
        raise _Slow
    _f32_operands(t, env, instr, 2, row, imm)
    row[T.X] = 2
    row[T.OP] = T.FNEGABS


def r_fnegabs(t, env, instr, row, imm):
    if "f32" not in instr.mods:
        return r_negabs(t, env, instr, row, imm)
    q = _classify(instr.mods, {"type": {"f32"}, "ftz": {"ftz"}})
    _f32_operands(t, env, instr, 1, row, imm)
    row[T.X], row[T.Y] = int(instr.base == "neg"), int("ftz" in q)
    row[T.OP] = T.FNEGABS


def r_divlike(t, env, instr, row, imm):
    if "approx" in instr.mods or "full" in instr.mods:
        return r_mufu(t, env, instr, row, imm)
    raise _Slow


def _farith(fallback):
    """add/sub/mul/fma/mad .rn{.ftz}.f32 with .ftz: FARITH; anything else: the rule ``fallback``."""
    def rule(t, env, instr, row, imm):
        if "ftz" not in instr.mods or "f32" not in instr.mods:
            return fallback(t, env, instr, row, imm)
        q = _classify(instr.mods, {"type": {"f32"}, "rnd": {"rn"}, "ftz": {"ftz"}})
        fma = instr.base in ("fma", "mad")
        if fma and "rnd" not in q:
            raise _Slow
        _f32_operands(t, env, instr, 3 if fma else 2, row, imm)
        row[T.X] = fmath.F_FMA if fma else {"add": fmath.F_ADD, "sub": fmath.F_SUB, "mul": fmath.F_MUL}[instr.base]
        row[T.Y], row[T.Z] = 1, 0
        row[T.OP] = T.FARITH
    return rule


def r_contract(t, env, instr, row, imm):
    """An add/sub.f32 ptxas fused with the mul producing one of its sources (frontend/contract.py): the
    product's factors are read when the add runs, as ``ops.falu._compile_contracted`` reads them."""
    from isa.mufu import canonical
    from ...numerics.mufu import F32_DIV
    info = instr.contract
    prod = info.producer
    if instr.base not in ("add", "sub") or prod.base not in ("mul", "div") or "f32" not in instr.mods or \
            len(instr.operands) != 3 or len(prod.operands) != 3:
        raise _Slow
    q = _classify(instr.mods, {"type": {"f32"}, "ftz": {"ftz"}})
    _f32_dst(t, env, row, instr.operands[0])
    _f32_srcs(t, env, row, imm, [prod.operands[1], prod.operands[2], instr.operands[2 - info.index]])
    _set_type(row, "b32")
    row[T.Y] = int("ftz" in q)
    row[T.Z] = int(info.negate_product) | 2 * int(info.negate_other)
    if prod.base == "mul":
        row[T.X] = fmath.F_FMA
        row[T.OP] = T.FARITH
        return
    form = canonical("div", prod.mods)               # the last FMUL of ptxas's division, fused (MUFU.RCP inside)
    if form not in F32_DIV or (".ftz." in form) != ("ftz" in q):
        raise _Slow
    row[T.X] = int(form.startswith("div.full"))
    t._mufu.add(fmath.T_RCP)
    row[T.OP] = T.MUFU_DIVFMA


_CVT_KINDS = {("f32", "s32"): fmath.CV_S32_F32, ("f32", "u32"): fmath.CV_U32_F32, ("f32", "f16"): fmath.CV_F16_F32,
              ("f32", "bf16"): fmath.CV_BF16_F32, ("f16", "f32"): fmath.CV_F32_F16, ("bf16", "f32"): fmath.CV_F32_BF16,
              ("f16x2", "f32"): fmath.CV_PACK_F16, ("bf16x2", "f32"): fmath.CV_PACK_BF16,
              ("f32", "f32"): fmath.CV_FRNDI}
_CVT_BITS = {"f32": 32, "s32": 32, "u32": 32, "f16": 16, "bf16": 16, "f16x2": 32, "bf16x2": 32}


def r_fcvt(t, env, instr, row, imm):
    """The conversions FCVT holds, in the spellings the executor gives exactly these semantics."""
    types = [m for m in instr.mods if m in _CVT_BITS]
    if len(types) != 2 or tuple(types) not in _CVT_KINDS:
        return r_cvt(t, env, instr, row, imm)
    dtype, atype = types
    kind = _CVT_KINDS[dtype, atype]
    rest = sorted(m for m in instr.mods if m not in types)
    allowed = {fmath.CV_S32_F32: [["rn"]], fmath.CV_U32_F32: [["rn"]], fmath.CV_F32_F16: [["rn"]],
               fmath.CV_F32_BF16: [["rn"]], fmath.CV_PACK_F16: [["rn"]], fmath.CV_PACK_BF16: [["rn"]],
               fmath.CV_F16_F32: [[], ["rn"], ["ftz"], ["ftz", "rn"]], fmath.CV_BF16_F32: [[]],
               fmath.CV_FRNDI: [[r] for r in ("rni", "rzi", "rmi", "rpi")] +
               [["ftz", r] for r in ("rni", "rzi", "rmi", "rpi")]}[kind]
    if rest not in allowed:
        raise _Slow
    ops = instr.operands
    nsrc = 2 if kind in (fmath.CV_PACK_F16, fmath.CV_PACK_BF16) else 1
    if len(ops) != nsrc + 1 or any(isinstance(o, Imm) for o in ops):
        raise _Slow
    _f32_dst(t, env, row, ops[0], _CVT_BITS[dtype])
    _f32_srcs(t, env, row, imm, ops[1:], _CVT_BITS[atype])
    _set_type(row, "b%d" % _CVT_BITS[atype])
    row[T.X] = kind
    row[T.Y] = ("rni", "rzi", "rmi", "rpi").index(rest[-1]) if kind == fmath.CV_FRNDI else 0
    row[T.Z] = int("ftz" in rest)
    row[T.V0] = _CVT_BITS[dtype]
    row[T.OP] = T.FCVT


_RULES.update({"ex2": r_mufu, "lg2": r_mufu, "rsqrt": r_mufu, "sin": r_mufu, "cos": r_mufu, "tanh": r_mufu,
               "rcp": r_divlike, "sqrt": r_divlike, "div": r_divlike,
               "min": r_fminmax, "max": r_fminmax, "neg": r_fnegabs, "abs": r_fnegabs, "copysign": r_copysign,
               "add": _farith(r_addsub), "sub": _farith(r_addsub), "mul": _farith(r_mul), "fma": _farith(r_mad),
               "mad": _farith(r_mad), "cvt": r_fcvt})


# -- integer, bit and warp-collective rows (XROW, scalarx.py) and atomics (ATOM, atomics.py) --------------------

def _x_operand(t, env, op, ptype, imm, k):
    """A source of an XROW: register (any width: read as ``ptype``, as ops.common.src) or immediate."""
    if isinstance(op, (Vec, Pair, Not, Mem)):
        raise _Slow
    if not isinstance(op, Imm) and t._reg(env, op) == "_":
        raise _Slow
    return t._src(env, op, ptype, imm, k)


def _xrow(t, env, instr, row, imm, kind, srcs, dtype, y=0, z=0, dst2=None):
    """Fill an XROW: ``srcs`` [(operand, type)] for A, B, C and the fourth source, ``dtype`` the destination's
    type (operand 0), ``dst2`` a second destination (register name)."""
    d = instr.operands[0]
    if isinstance(d, (Vec, Pair, Not, Imm, Mem)):
        raise _Slow
    row[T.D] = t._dst(env, d)
    fields = (T.A, T.B, T.C, T.V0)
    row[T.A] = row[T.B] = row[T.C] = -1
    row[T.V0:T.V0 + 8] = -1
    row[T.V0 + 4] = 0
    for k, (op, ptype) in enumerate(srcs):
        row[fields[k]] = _x_operand(t, env, op, ptype, imm, k)
        if k == 0:
            _set_type(row, ptype)
        else:
            row[T.V0 + k] = _width(ptype)
            row[T.V0 + 4] |= _signed(ptype) << (k - 1)
    if not srcs:
        _set_type(row, "b32")
    row[T.V0 + 5] = _width(dtype)
    row[T.V0 + 6] = _signed(dtype)
    row[T.V0 + 7] = t._slot(dst2, env.reg_width(dst2) if dst2 != CF else 32) if dst2 is not None else -1
    row[T.X], row[T.Y], row[T.Z] = kind, y, z
    t._xcall = True
    row[T.OP] = T.XROW


CF = "%cc.cf"        # ops.carry: the carry flag, a hidden 32-bit register


def _types(instr, allowed, extra=None):
    groups = {"type": allowed}
    groups.update(extra or {})
    q = _classify(instr.mods, groups)
    if "type" not in q:
        raise _Slow
    return q


def r_lop3(t, env, instr, row, imm):
    from . import scalarx
    ops = instr.operands
    if list(instr.mods) != ["b32"] or len(ops) != 5 or not isinstance(ops[4], Imm) or ops[4].kind != "int" or \
            not 0 <= ops[4].value <= 255:
        raise _Slow
    _xrow(t, env, instr, row, imm, scalarx.K_LOP3, [(o, "b32") for o in ops[1:4]], "b32", y=ops[4].value)


def r_bits(t, env, instr, row, imm):
    from . import scalarx
    base = instr.base
    if base == "bfind":
        q = _types(instr, {"u32", "u64", "s32", "s64"}, {"shiftamt": {"shiftamt"}})
    else:
        q = _types(instr, {"b32", "b64"})
    if len(instr.operands) != 2:
        raise _Slow
    ptype = q["type"]
    kind = {"popc": scalarx.K_POPC, "clz": scalarx.K_CLZ, "brev": scalarx.K_BREV, "bfind": scalarx.K_BFIND}[base]
    _xrow(t, env, instr, row, imm, kind, [(instr.operands[1], ptype)], ptype if base == "brev" else "u32",
          y=int("shiftamt" in q))


def r_bfi(t, env, instr, row, imm):
    from . import scalarx
    ptype = _types(instr, {"b32", "b64"})["type"]
    ops = instr.operands
    if len(ops) != 5:
        raise _Slow
    _xrow(t, env, instr, row, imm, scalarx.K_BFI, [(ops[1], ptype), (ops[2], ptype), (ops[3], "u32"),
                                                    (ops[4], "u32")], ptype)


def r_prmt_x(t, env, instr, row, imm):
    from . import scalarx
    if list(instr.mods) == ["b32"]:
        return r_prmt(t, env, instr, row, imm)
    q = _types(instr, {"b32"}, {"mode": set(scalarx.PRMT_MODES)})
    ops = instr.operands
    if "mode" not in q or len(ops) != 4:
        raise _Slow
    _xrow(t, env, instr, row, imm, scalarx.K_PRMT, [(o, "b32") for o in ops[1:4]], "b32",
          y=scalarx.PRMT_MODES.index(q["mode"]))


def r_shf(t, env, instr, row, imm):
    from . import scalarx
    q = _types(instr, {"b32"}, {"dir": {"l", "r"}, "mode": {"wrap", "clamp"}})
    ops = instr.operands
    if "dir" not in q or "mode" not in q or len(ops) != 4:
        raise _Slow
    _xrow(t, env, instr, row, imm, scalarx.K_SHF, [(ops[1], "b32"), (ops[2], "b32"), (ops[3], "u32")], "b32",
          y=int(q["dir"] == "l"), z=int(q["mode"] == "clamp"))


def r_intdiv(t, env, instr, row, imm):
    from . import scalarx
    if not any(m in INT_TYPES for m in instr.mods):
        return r_divlike(t, env, instr, row, imm)
    ptype = _types(instr, INT_TYPES)["type"]
    ops = instr.operands
    if len(ops) != 3:
        raise _Slow
    _xrow(t, env, instr, row, imm, scalarx.K_DIV if instr.base == "div" else scalarx.K_REM,
          [(ops[1], ptype), (ops[2], ptype)], ptype)


def r_bmsk_szext(t, env, instr, row, imm):
    from . import scalarx
    ops = instr.operands
    if len(ops) != 3:
        raise _Slow
    if instr.base == "bmsk":
        q = _types(instr, {"b32"}, {"mode": {"clamp", "wrap"}})
        srcs, kind = [(ops[1], "u32"), (ops[2], "u32")], scalarx.K_BMSK
    else:
        q = _types(instr, {"u32", "s32"}, {"mode": {"clamp", "wrap"}})
        srcs, kind = [(ops[1], "b32"), (ops[2], "u32")], scalarx.K_SZEXT
    if "mode" not in q:
        raise _Slow
    _xrow(t, env, instr, row, imm, kind, srcs, "b32", y=int(q["mode"] == "clamp"), z=int(q["type"] == "s32"))


def r_carry(t, env, instr, row, imm):
    """add.cc, addc, sub.cc, subc, mad.cc, madc (ops.carry): the carry flag lives in the hidden register %cc.cf."""
    from . import scalarx
    base = instr.base
    q = _types(instr, {"u32", "s32", "u64", "s64"}, {"cc": {"cc"}, "mode": {"lo", "hi"}})
    mad = base in ("mad", "madc")
    ops = instr.operands
    if mad != ("mode" in q) or len(ops) != (4 if mad else 3):
        raise _Slow
    ptype = "u" + q["type"][1:]
    cin = base in ("addc", "subc", "madc")
    flags = (scalarx.CY_IN * cin | scalarx.CY_SUB * (base in ("sub", "subc")) | scalarx.CY_MAD * mad |
             scalarx.CY_HI * (q.get("mode") == "hi") | scalarx.CY_SIGNED * (q["type"][0] == "s"))
    srcs = [(o, ptype) for o in ops[1:]]
    _xrow(t, env, instr, row, imm, scalarx.K_CARRY, srcs, ptype, y=flags,
          dst2=CF if "cc" in q else None)
    if cin:
        row[T.V0] = t._slot(CF, 32)
        row[T.V0 + 3] = 32


def _carry_or(rule):
    def r(t, env, instr, row, imm):
        if "cc" in instr.mods:
            return r_carry(t, env, instr, row, imm)
        return rule(t, env, instr, row, imm)
    return r


def _membermask(t, env, row, imm, op):
    row[T.V0] = _x_operand(t, env, op, "b32", imm, 3)
    row[T.V0 + 3] = 32


def r_vote(t, env, instr, row, imm):
    from . import scalarx
    q = _classify(instr.mods, {"sync": {"sync"}, "mode": {"all", "any", "uni", "ballot"}, "type": {"pred", "b32"}})
    ops = instr.operands
    if len(q) != 3 or (q["mode"] == "ballot") != (q["type"] == "b32") or len(ops) != 3 or isinstance(ops[1], Imm):
        raise _Slow
    _xrow(t, env, instr, row, imm, scalarx.K_VOTE, [(ops[1], "pred")], q["type"],
          y=("all", "any", "uni", "ballot").index(q["mode"]))
    _membermask(t, env, row, imm, ops[2])


def r_activemask(t, env, instr, row, imm):
    from . import scalarx
    if list(instr.mods) != ["b32"] or len(instr.operands) != 1:
        raise _Slow
    _xrow(t, env, instr, row, imm, scalarx.K_ACTIVEMASK, [], "b32")


def r_match(t, env, instr, row, imm):
    from . import scalarx
    q = _classify(instr.mods, {"sync": {"sync"}, "mode": {"any", "all"}, "type": {"b32", "b64"}})
    ops = instr.operands
    if len(q) != 3 or len(ops) != 3:
        raise _Slow
    d_op = ops[0]
    d_reg, p_reg = d_op.items if isinstance(d_op, Pair) else (d_op, None)
    p_name = None
    if p_reg is not None:
        p_name = t._reg(env, p_reg)
        if p_name == "_" or env.reg_width(p_name) != 1:
            raise _Slow
    instr_d = type("I", (), {"operands": (d_reg,) + tuple(ops[1:])})()
    _xrow(t, env, instr_d, row, imm, scalarx.K_MATCH, [(ops[1], q["type"])], "b32", y=int(q["mode"] == "all"),
          dst2=p_name)
    _membermask(t, env, row, imm, ops[2])


def r_redux(t, env, instr, row, imm):
    from . import scalarx
    q = _classify(instr.mods, {"sync": {"sync"}, "op": set(scalarx.REDUX_OPS), "type": {"u32", "s32", "b32"}})
    ops = instr.operands
    if len(q) != 3 or len(ops) != 3 or (q["type"] == "b32") != (q["op"] in ("and", "or", "xor")):
        raise _Slow
    _xrow(t, env, instr, row, imm, scalarx.K_REDUX, [(ops[1], q["type"])], q["type"],
          y=scalarx.REDUX_OPS.index(q["op"]))
    _membermask(t, env, row, imm, ops[2])


_ATOM_TYPES = {"b16": 0, "b32": 0, "b64": 0, "u32": 0, "u64": 0, "s32": 1, "s64": 1, "f32": 2, "f64": 2}


def r_atom(t, env, instr, row, imm):
    """atom/red on global memory or the cluster's shared memory (explicit or generic addresses; another CTA's:
    dsmemx.py): the integer forms and the f32/f64 adds. The executor has checked the form (ops.atomics); vector,
    half-precision and .b128 forms and red.async stay with it."""
    from ...ops.atomics import _check_form, _classify as _atom_classify
    from ...errors import EmulatorError
    from . import atomics
    if instr.mods[:1] == ("async",):
        raise _Slow
    try:
        op, ptype, vec, noftz, space = _check_form(instr, _atom_classify(instr))
    except EmulatorError:
        raise _Slow from None
    if vec or ptype not in _ATOM_TYPES or space not in (None, "global", "shared", "shared::cta", "shared::cluster"):
        raise _Slow
    if ptype[0] == "f" and op != "add":
        raise _Slow
    red = instr.base == "red"
    ops = instr.operands
    hint = "L2::cache_hint" in instr.mods
    k = 0 if red else 1
    if len(ops) != k + 2 + (op == "cas") + hint:
        raise _Slow
    _address(t, env, ops[k], row, imm, SPACE[space])
    w = _width(ptype)
    raw = "b%d" % w
    row[T.B] = _x_operand(t, env, ops[k + 1], raw, imm, 0)
    row[T.C] = _x_operand(t, env, ops[k + 2], raw, imm, 1) if op == "cas" else -1
    if red:
        row[T.D] = -1
    else:
        if isinstance(ops[0], (Vec, Pair, Not, Imm, Mem)):
            raise _Slow
        row[T.D] = t._dst(env, ops[0])
    row[T.W], row[T.SGN] = w, 0
    row[T.X], row[T.Y], row[T.Z] = SPACE[space], 1, w // 8
    row[T.V0] = atomics.OPS.index(op)
    row[T.V0 + 1] = {0: atomics.T_UINT, 1: atomics.T_SINT}.get(_ATOM_TYPES[ptype],
                                                               atomics.T_F32 if ptype == "f32" else atomics.T_F64)
    t._xcall = True
    row[T.OP] = T.ATOM


_RULES.update({"lop3": r_lop3, "popc": r_bits, "clz": r_bits, "brev": r_bits, "bfind": r_bits, "bfi": r_bfi,
               "prmt": r_prmt_x, "shf": r_shf, "div": r_intdiv, "rem": r_intdiv, "bmsk": r_bmsk_szext,
               "szext": r_bmsk_szext, "addc": r_carry, "subc": r_carry, "madc": r_carry,
               "add": _carry_or(_RULES["add"]), "sub": _carry_or(_RULES["sub"]), "mad": _carry_or(_RULES["mad"]),
               "vote": r_vote, "activemask": r_activemask, "match": r_match, "redux": r_redux,
               "atom": r_atom, "red": r_atom})


def r_mov_x(t, env, instr, row, imm):
    """mov with a vector operand: pack ({a, b} or {a, b, c, d} into one register) or unpack (into two)."""
    from . import scalarx
    ops = instr.operands
    if len(ops) != 2 or not (isinstance(ops[0], Vec) or isinstance(ops[1], Vec)):
        return r_mov(t, env, instr, row, imm)
    q = _classify(instr.mods, {"type": {"b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64",
                                        "f16", "f32", "f64", "bf16", "f16x2", "bf16x2"}})
    if "type" not in q:
        raise _Slow
    w = _width(q["type"])
    d, a = ops
    if isinstance(a, Vec) and not isinstance(d, Vec):
        k = len(a.items)
        if k not in (2, 4) or w // k not in (16, 32):
            return r_mov(t, env, instr, row, imm)
        ew = w // k
        instr_d = type("I", (), {"operands": (d,)})()
        _xrow(t, env, instr_d, row, imm, scalarx.K_PACK, [(it, "b%d" % ew) for it in a.items], "b%d" % w,
              y=ew, z=k)
        return
    if isinstance(d, Vec) and not isinstance(a, Vec) and len(d.items) == 2 and w // 2 in (16, 32):
        ew = w // 2
        lo, hi = d.items
        names = []
        for it in (lo, hi):
            if not isinstance(it, (Reg, Sym)):
                return r_mov(t, env, instr, row, imm)
            n = t._reg(env, it)
            if n != "_" and (n in CONST_SPECIALS or env.reg_width(n) not in (16, 32, 64)):
                return r_mov(t, env, instr, row, imm)
            names.append(n)
        instr_d = type("I", (), {"operands": (lo,)})()
        _xrow(t, env, instr_d, row, imm, scalarx.K_UNPACK, [(a, "b%d" % w)], "b%d" % ew, y=ew,
              dst2=None if names[1] == "_" else names[1])
        return
    return r_mov(t, env, instr, row, imm)         # other unpacks: in the loop (MOV_UNPACK)


_HALVES = {"f16": 0, "bf16": 1, "f16x2": 0, "bf16x2": 1}


def _half_or(rule):
    """add/sub/mul/fma{.rn}.{f16,bf16,f16x2,bf16x2}: a K_HALF row; anything else: ``rule``."""
    def r(t, env, instr, row, imm):
        from . import scalarx
        ptype = next((m for m in instr.mods if m in _HALVES), None)
        if ptype is None:
            return rule(t, env, instr, row, imm)
        q = _classify(instr.mods, {"type": set(_HALVES), "rnd": {"rn"}})
        fma = instr.base == "fma"
        ops = instr.operands
        if len(ops) != (4 if fma else 3) or (fma and "rnd" not in q):
            raise _Slow
        raw = "b%d" % _width(ptype)
        _xrow(t, env, instr, row, imm, scalarx.K_HALF, [(o, raw) for o in ops[1:]], raw,
              y=scalarx.HALF_OPS.index(instr.base), z=_HALVES[ptype])
    return r


_FMT = {"f16": 0, "bf16": 1, "f32": 2, "f64": 3}


def r_cvt_x(t, env, instr, row, imm):
    """The conversions between f16, bf16, f32 and f64 (to nearest, no .ftz/.sat) and the fp8 widenings; the
    others as before (``r_fcvt``)."""
    from . import scalarx
    mods = list(instr.mods)
    ops = instr.operands
    if _cvt_more(t, env, instr, row, imm):
        return
    if len(ops) == 2 and not any(isinstance(o, (Vec, Pair, Imm)) for o in ops):
        if mods in (["rn", "f16x2", "e4m3x2"], ["rn", "relu", "f16x2", "e4m3x2"], ["rn", "f16x2", "e5m2x2"],
                    ["rn", "relu", "f16x2", "e5m2x2"]):
            _xrow(t, env, instr, row, imm, scalarx.K_FP8, [(ops[1], "b16")], "b32", y=int("e5m2x2" in mods),
                  z=int("relu" in mods))
            return
        types = [m for m in mods if m in _FMT]
        rest = [m for m in mods if m not in _FMT]
        if len(types) == 2 and types[0] != types[1] and rest in ([], ["rn"]) and \
                (tuple(types) not in _CVT_KINDS or "rn" not in rest):
            dtype, atype = types
            if not rest and tuple(types) in (("f32", "f16"), ("f32", "bf16")):
                saved = row.copy(), imm.copy(), t._xcall
                try:                            # the exact widenings: an FCVT row (fmath.f32_of_half) when the
                    return r_fcvt(t, env, instr, row, imm)      # registers are of the formats' widths
                except _Slow:
                    row[:], imm[:], t._xcall = saved
            _xrow(t, env, instr, row, imm, scalarx.K_CVTF, [(ops[1], "b%d" % _width(atype))],
                  "b%d" % _width(dtype), y=_FMT[atype], z=_FMT[dtype])
            return
    saved = row.copy(), imm.copy(), t._xcall
    try:
        return r_fcvt(t, env, instr, row, imm)
    except _Slow:
        row[:], imm[:], t._xcall = saved
    _cvt_float(t, env, instr, row, imm)


def _cvt_float(t, env, instr, row, imm):
    """The float -> float cvt forms the rows above leave (directed roundings, .ftz, .sat, .relu, .satfinite,
    integer roundings of .f64/.f16/.bf16): a K_CVTF2 row, ops.cvt's float -> float paths."""
    from . import scalarx
    mods = list(instr.mods)
    ops = instr.operands
    types = [m for m in mods if m in _FMT or m in _CVT_INTS]
    if len(types) == 2 and types[0] in _FMT and types[1] in _CVT_INTS:          # integer -> float: K_I2F
        q = _classify([m for m in mods if m not in types], {"rnd": set(scalarx.MODES), "ftz": {"ftz"},
                                                            "sat": {"sat"}})
        if "rnd" not in q or len(ops) != 2 or any(isinstance(o, (Vec, Pair, Imm)) for o in ops):
            raise _Slow
        dtype, atype = types
        _xrow(t, env, instr, row, imm, scalarx.K_I2F, [(ops[1], atype)], "b%d" % _width(dtype),
              y=4 * _FMT[dtype] + 16 * scalarx.MODES.index(q["rnd"]) + scalarx.CVT_FTZ * ("ftz" in q) +
              scalarx.CVT_SAT * ("sat" in q))
        return
    q = _classify([m for m in mods if m not in types], {"rnd": set(scalarx.MODES) | set(scalarx.IRND),
                                                       "ftz": {"ftz"}, "sat": {"sat"}, "relu": {"relu"},
                                                       "satfinite": {"satfinite"}})
    if len(types) != 2 or any(m not in _FMT for m in types) or len(ops) != 2 or \
            any(isinstance(o, (Vec, Pair, Imm)) for o in ops):
        raise _Slow
    dtype, atype = types
    rnd = q.get("rnd")
    irnd = rnd in scalarx.IRND
    if (irnd and dtype != atype) or (("relu" in q or "satfinite" in q) and (dtype not in ("f16", "bf16") or irnd)):
        raise _Slow                             # the executor's errors
    mode = (scalarx.IRND.index(rnd) if irnd else scalarx.MODES.index(rnd)) if rnd else 0
    y = (_FMT[atype] + 4 * _FMT[dtype] + 16 * mode + scalarx.CVT_FTZ * ("ftz" in q) + scalarx.CVT_SAT * ("sat" in q)
         + scalarx.CVT_RELU * ("relu" in q) + scalarx.CVT_SATFINITE * ("satfinite" in q) +
         scalarx.CVT_RND * (rnd is not None) + scalarx.CVT_IRND * irnd)
    _xrow(t, env, instr, row, imm, scalarx.K_CVTF2, [(ops[1], "b%d" % _width(atype))], "b%d" % _width(dtype), y=y)


_FP8_PAIRS = {"e4m3x2": 0, "e5m2x2": 1}
_CVT_INTS = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"}


def _cvt_more(t, env, instr, row, imm):
    """cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.{f32,f16x2} (K_TOFP8) and cvt.{rni,rzi,rmi,rpi}{.ftz}{.sat}.int.float
    (K_F2I), in the spellings ops.cvt and ops.cvt_narrow give these semantics; True when the row is filled."""
    from . import scalarx
    mods = list(instr.mods)
    ops = instr.operands
    if len(set(mods)) != len(mods) or any(isinstance(o, (Vec, Pair, Imm)) for o in ops):
        return False
    fp8 = [m for m in mods if m in _FP8_PAIRS]
    if len(fp8) == 1 and mods[-2:] in ([fp8[0], "f32"], [fp8[0], "f16x2"]) and \
            set(mods[:-2]) in ({"rn", "satfinite"}, {"rn", "satfinite", "relu"}):
        f16 = mods[-1] == "f16x2"
        if len(ops) != (2 if f16 else 3):
            return False
        _xrow(t, env, instr, row, imm, scalarx.K_TOFP8, [(o, "b32") for o in ops[1:]], "b16",
              y=_FP8_PAIRS[fp8[0]] + 2 * f16, z=int("relu" in mods))
        return True
    types = [m for m in mods if m in _CVT_INTS or m in _FMT]
    rest = [m for m in mods if m not in types]
    irnd = [m for m in rest if m in scalarx.IRND]
    if len(types) == 2 and types[0] in _CVT_INTS and types[1] in _FMT and len(irnd) == 1 and \
            set(rest) - set(irnd) <= {"ftz", "sat"} and len(ops) == 2:
        dtype, atype = types
        _xrow(t, env, instr, row, imm, scalarx.K_F2I, [(ops[1], "b%d" % _width(atype))], dtype,
              y=_FMT[atype] + 4 * scalarx.IRND.index(irnd[0]) + 16 * int("ftz" in rest),
              z=_width(dtype) + 256 * _signed(dtype))
        return True
    return False


def _hmisc_or(rule):
    """min/max{.ftz}{.NaN}{.xorsign.abs} and neg/abs{.ftz} of .f16/.bf16/.f16x2/.bf16x2 (ops.falu): a K_HMISC row;
    anything else: ``rule``."""
    def r(t, env, instr, row, imm):
        from . import scalarx
        ptype = next((m for m in instr.mods if m in _HALVES), None)
        if ptype is None and "f32" in instr.mods and "xorsign" in instr.mods:
            ptype = "f32"                          # min/max.xorsign.abs.f32: the loop's FMINMAX has no .xorsign
        if ptype is None:
            return rule(t, env, instr, row, imm)
        rest = [m for m in instr.mods if m != ptype]
        minmax = instr.base in ("min", "max")
        allowed = {"ftz", "NaN", "xorsign", "abs"} if minmax else {"ftz"}
        ops = instr.operands
        if len(set(rest)) != len(rest) or not set(rest) <= allowed or ("xorsign" in rest) != ("abs" in rest) or \
                len(ops) != (3 if minmax else 2) or any(isinstance(o, Imm) for o in ops):
            raise _Slow
        raw = "b%d" % _width(ptype)
        _xrow(t, env, instr, row, imm, scalarx.K_HMISC, [(o, raw) for o in ops[1:]], raw,
              y=scalarx.HMISC_OPS.index(instr.base) + 4 * ("NaN" in rest) + 8 * ("xorsign" in rest) +
              16 * ("ftz" in rest), z=_HALVES.get(ptype, 2))
    return r


_RULES.update({"mov": r_mov_x, "add": _half_or(_RULES["add"]), "sub": _half_or(_RULES["sub"]),
               "mul": _half_or(_RULES["mul"]), "fma": _half_or(_RULES["fma"]), "cvt": r_cvt_x})


def _f64_or(rule):
    """add/sub/mul/fma/div/rcp/sqrt/neg/abs/min/max .f64 (ops.falu): a K_F64 row; anything else: ``rule``."""
    def r(t, env, instr, row, imm):
        from . import scalarx
        if "f64" not in instr.mods or "approx" in instr.mods:
            return rule(t, env, instr, row, imm)
        q = _classify(instr.mods, {"type": {"f64"}, "rnd": set(scalarx.MODES), "ftz": {"ftz"}})
        base = "fma" if instr.base == "mad" else instr.base
        mode = q.get("rnd", "rn")
        n = {"fma": 3, "rcp": 1, "sqrt": 1, "neg": 1, "abs": 1}.get(base, 2)
        ops = instr.operands
        if len(ops) != n + 1 or (base in ("fma", "div", "rcp", "sqrt") and "rnd" not in q) or \
                (mode != "rn" and base not in ("add", "sub", "mul", "div", "rcp", "sqrt")) or \
                ("ftz" in q and base in ("neg", "abs", "min", "max")):
            raise _Slow
        if base in ("neg", "abs", "min", "max") and "rnd" in q or base in ("min", "max") and \
                any(isinstance(o, Imm) for o in ops):
            raise _Slow                  # (an immediate of min/max goes to the second slot: ops.falu._f64_slots)
        srcs = list(ops[1:])
        if any(isinstance(o, Imm) for o in srcs[:1]) and n > 1:
            raise _Slow                  # ptxas moves an immediate a into the second slot (ops.falu._f64_slots)
        _xrow(t, env, instr, row, imm, scalarx.K_F64, [(o, "b64") for o in srcs], "b64",
              y=scalarx.F64_OPS.index(base), z=scalarx.MODES.index(mode))
        if base == "sub" and isinstance(ops[2], Imm):           # a + (-imm): ptxas flips the constant's sign
            imm[1] = np.uint64(int(imm[1]) ^ (1 << 63))
            row[T.Y] = scalarx.F64_OPS.index("add")
    return r


_RULES.update({b: _f64_or(_RULES[b]) for b in ("add", "sub", "mul", "fma", "mad", "div", "rcp", "sqrt", "neg",
                                               "abs", "min", "max")})
_RULES.update({b: _hmisc_or(_RULES[b]) for b in ("min", "max", "neg", "abs")})


def _f32_or(rule):
    """add/sub/mul/fma/mad/div/rcp/sqrt .f32 in a form ``rule`` does not hold (a directed rounding, .rn of
    div/rcp/sqrt, .sat): a K_F32 row (ops.falu); the forms ``rule`` holds stay as they were."""
    def r(t, env, instr, row, imm):
        if "f32" not in instr.mods or any(m in ("approx", "full") for m in instr.mods):
            return rule(t, env, instr, row, imm)
        saved = row.copy(), imm.copy(), t._xcall
        try:
            return rule(t, env, instr, row, imm)
        except _Slow:
            row[:], imm[:], t._xcall = saved
        from . import scalarx
        q = _classify(instr.mods, {"type": {"f32"}, "rnd": set(scalarx.MODES), "ftz": {"ftz"}, "sat": {"sat"}})
        base = "fma" if instr.base == "mad" else instr.base
        n = {"fma": 3, "rcp": 1, "sqrt": 1}.get(base, 2)
        ops = instr.operands
        if q.get("type") != "f32" or len(ops) != n + 1 or (base in ("fma", "div", "rcp", "sqrt") and "rnd" not in q) \
                or ("sat" in q and base in ("div", "rcp", "sqrt")):
            raise _Slow
        _xrow(t, env, instr, row, imm, scalarx.K_F32, [(o, "f32") for o in ops[1:]], "f32",
              y=scalarx.F32_OPS.index(base) + 8 * scalarx.MODES.index(q.get("rnd", "rn")) + 32 * ("ftz" in q) +
              64 * ("sat" in q))
    return r


_RULES.update({b: _f32_or(_RULES[b]) for b in ("add", "sub", "mul", "fma", "mad", "div", "rcp", "sqrt")})


def r_dp(t, env, instr, row, imm):
    """dp4a.atype.btype, dp2a.{lo,hi}.atype.btype (ops.simd): a K_DP row."""
    from . import scalarx
    mods = list(instr.mods)
    half = [m for m in mods if m in ("lo", "hi")]
    types = [m for m in mods if m in ("u32", "s32")]
    ops = instr.operands
    if len(types) != 2 or len(mods) != 2 + len(half) or len(half) != (instr.base == "dp2a") or len(ops) != 4:
        raise _Slow
    mode = 0 if not half else (1 if half[0] == "lo" else 2)
    _xrow(t, env, instr, row, imm, scalarx.K_DP, [(o, "u32") for o in ops[1:]], "u32",
          y=int(types[0] == "s32") + 2 * int(types[1] == "s32") + 4 * mode)


def r_sad(t, env, instr, row, imm):
    """sad.type d, a, b, c (ops.intx): a K_SAD row."""
    from . import scalarx
    ptype = _types(instr, INT_TYPES)["type"]
    ops = instr.operands
    if len(ops) != 4:
        raise _Slow
    _xrow(t, env, instr, row, imm, scalarx.K_SAD, [(o, ptype) for o in ops[1:]], ptype)


def r_createpolicy(t, env, instr, row, imm):
    """createpolicy.fractional (ops.memops): the policy is a constant of the instruction, a move."""
    from ...errors import EmulatorError
    from ...ops.memops import createpolicy_value
    try:
        bits = createpolicy_value(instr)
    except EmulatorError:
        raise _Slow from None
    d = instr.operands[0]
    if isinstance(d, (Vec, Pair, Not, Imm, Mem)):
        raise _Slow
    _set_type(row, "b64")
    row[T.D] = t._dst(env, d)
    imm[0] = np.uint64(bits)
    row[T.A] = -2
    row[T.OP] = T.MOV


def r_video(t, env, instr, row, imm):
    """vadd/vsub/vavrg/vabsdiff/vmin/vmax/vset 2 and 4 with their selectors, merge or accumulate (ops.simd): a
    K_VIDEO row; the executor has checked the form."""
    from types import SimpleNamespace
    from . import scalarx
    from ...errors import EmulatorError
    from ...ops.simd import _T as VT, _video_operand
    base = instr.base
    op, n = base[1:-1], int(base[-1])
    types = [m for m in instr.mods if m in VT]
    rest = [m for m in instr.mods if m not in VT]
    is_set = op == "set"
    cmps = [m for m in rest if m in scalarx.VIDEO_OPS[6:]] if is_set else []
    flags = [m for m in rest if m not in cmps]
    if len(types) != (2 if is_set else 3) or len(cmps) != int(is_set) or len(set(flags)) != len(flags) or \
            any(f not in (("add",) if is_set else ("add", "sat")) for f in flags) or len(instr.operands) != 4 or \
            ("add" in flags and "sat" in flags):
        raise _Slow
    every = "".join(str(i) for i in reversed(range(n)))
    try:
        d_op, mask = _video_operand(env, instr.operands[0], instr, n, "d", ("h" if n == 2 else "b") + every)
        a_op, asel = _video_operand(env, instr.operands[1], instr, n, "a", "h10" if n == 2 else "b3210")
        b_op, bsel = _video_operand(env, instr.operands[2], instr, n, "b", "h32" if n == 2 else "b7654")
        c_op, csel = _video_operand(env, instr.operands[3], instr, n, "c", "h10" if n == 2 else "b3210")
    except EmulatorError:
        raise _Slow from None
    if csel != list(reversed(range(n))):
        raise _Slow
    k = scalarx.VIDEO_OPS.index(cmps[0] if is_set else op)
    y = k + 16 * (n == 4) + 32 * VT[types[-2]] + 64 * VT[types[-1]] + 128 * (not is_set and VT[types[0]]) + \
        256 * ("add" in flags) + 512 * ("sat" in flags) + 1024 * sum(1 << i for i in mask)
    z = sum(asel[n - 1 - i] << (3 * i) for i in range(n)) + sum(bsel[n - 1 - i] << (12 + 3 * i) for i in range(n))
    _xrow(t, env, SimpleNamespace(operands=[d_op]), row, imm, scalarx.K_VIDEO,
          [(a_op, "u32"), (b_op, "u32"), (c_op, "u32")], "u32", y=y, z=z)


_RULES.update({"dp4a": r_dp, "dp2a": r_dp, "sad": r_sad, "createpolicy": r_createpolicy})
_RULES.update({b: r_video for b in ("vadd2", "vadd4", "vsub2", "vsub4", "vavrg2", "vavrg4", "vabsdiff2", "vabsdiff4",
                                    "vmin2", "vmin4", "vmax2", "vmax4", "vset2", "vset4")})


def r_contract_any(t, env, instr, row, imm):
    """A contracted add/sub (frontend/contract.py): .f32 as ``r_contract``; .f16/.bf16/.f16x2/.bf16x2 with a
    ``mul`` producer as one K_HALF fma (ops.falu._compile_contracted: a*b + c, one rounding)."""
    from . import scalarx
    ptype = next((m for m in instr.mods if m in _HALVES), None)
    if ptype is None:
        return r_contract(t, env, instr, row, imm)
    info = instr.contract
    prod = info.producer
    allowed = {"type": {ptype}, "rnd": {"rn"}}
    _classify(instr.mods, allowed)
    _classify(prod.mods, allowed)
    if instr.base not in ("add", "sub") or prod.base != "mul" or len(instr.operands) != 3 or \
            len(prod.operands) != 3 or ptype not in prod.mods:
        raise _Slow
    raw = "b%d" % _width(ptype)
    instr_d = type("I", (), {"operands": (instr.operands[0],)})()
    srcs = [prod.operands[1], prod.operands[2], instr.operands[2 - info.index]]
    _xrow(t, env, instr_d, row, imm, scalarx.K_HALF, [(o, raw) for o in srcs], raw,
          y=3 | 16 * int(info.negate_product) | 32 * int(info.negate_other), z=_HALVES[ptype])


# -- Hopper's register and shared-memory rewrites (HOPX, asyncx.py) ------------------------------------------------

def _hopx(t, row, kind):
    row[T.X] = kind
    if kind != 0:
        t._hopx = True
    row[T.OP] = T.HOPX


def r_hop_nop(t, env, instr, row, imm):
    """setmaxnreg, griddepcontrol, prefetch{u} (prefetch.tensormap too): nothing to do (ops.warpops.compile_nop
    has checked the operands)."""
    from . import asyncx
    _hopx(t, row, asyncx.K_NOP)


def r_fence_hop(t, env, instr, row, imm):
    """fence.proxy.async (the generic-proxy marks cleared), fence.proxy.tensormap/alias and fence.mbarrier_init
    (nothing to do, as ops.mbarrier.compile_fence); the other fences as before (r_nop)."""
    from . import asyncx
    mods = instr.mods
    if mods[:1] == ("mbarrier_init",):
        return _hopx(t, row, asyncx.K_NOP)
    if mods[:1] != ("proxy",):
        return r_nop(t, env, instr, row, imm)
    kind = mods[1] if len(mods) > 1 else ""
    if kind.startswith("async") and not instr.operands:
        return _hopx(t, row, asyncx.K_FENCE_ASYNC)
    if kind.startswith("tensormap") or kind == "alias":
        return _hopx(t, row, asyncx.K_NOP)
    raise _Slow


def r_elect(t, env, instr, row, imm):
    """elect.sync d|p, membermask (ops.warpops.compile_elect)."""
    from . import asyncx
    ops = instr.operands
    if list(instr.mods) != ["sync"] or len(ops) != 2 or isinstance(ops[1], (Vec, Pair, Not, Mem)):
        raise _Slow
    d, p = ops[0].items if isinstance(ops[0], Pair) else (ops[0], None)
    if isinstance(d, (Vec, Pair, Not, Imm, Mem)) or (p is not None and isinstance(p, (Vec, Pair, Not, Imm, Mem))):
        raise _Slow
    row[T.D] = t._dst(env, d)
    if row[T.D] >= 0 and env.reg_width(t._reg(env, d)) == 1:
        raise _Slow
    row[T.V0:T.V0 + 8] = -1
    row[T.V0 + 7] = -1
    if p is not None:
        row[T.V0 + 7] = t._dst(env, p)
        if row[T.V0 + 7] >= 0 and env.reg_width(t._reg(env, p)) != 1:
            raise _Slow
    row[T.A] = _x_operand(t, env, ops[1], "b32", imm, 0)
    _set_type(row, "b32")
    _hopx(t, row, asyncx.K_ELECT)


def r_mapa(t, env, instr, row, imm):
    """mapa{.shared::cluster}.u32/.u64 d, a, rank (ops.cluster.compile_mapa): the rank and size of the cluster
    come from %cluster_ctarank / %cluster_nctarank (constant special registers)."""
    from . import asyncx
    q = _classify(instr.mods, {"space": {"shared::cluster"}, "type": {"u32", "u64"}})
    ops = instr.operands
    if "type" not in q or len(ops) != 3 or any(isinstance(o, (Vec, Pair, Not, Mem)) for o in ops):
        raise _Slow
    ptype = q["type"]
    d = ops[0]
    if isinstance(d, Imm):
        raise _Slow
    row[T.D] = t._dst(env, d)
    if row[T.D] >= 0 and env.reg_width(t._reg(env, d)) == 1:
        raise _Slow
    row[T.A] = _x_operand(t, env, ops[1], ptype, imm, 0)
    row[T.B] = _x_operand(t, env, ops[2], "u32", imm, 1)
    row[T.C] = t._slot("%cluster_ctarank", 32, special=True)
    row[T.V0:T.V0 + 8] = -1
    row[T.V0] = t._slot("%cluster_nctarank", 32, special=True)
    _set_type(row, ptype)
    row[T.Y] = int("space" not in q)           # 1: generic (the address must lie in a shared window)
    _hopx(t, row, asyncx.K_MAPA)


def r_tensormap(t, env, instr, row, imm):
    """tensormap.replace.tile.<field>.shared::cta.b1024.bW [addr], {ordinal,} value on a tensor map in this CTA's
    shared memory (ops.mbarrier.compile_tensormap); .elemtype with a constant type (its encoding looked up here);
    global and param tensor maps, and tensormap.cp_fenceproxy stay with the executor."""
    from . import asyncx
    mods = instr.mods
    if mods and mods[0] == "cp_fenceproxy":
        return _tensormap_copy(t, env, instr, row, imm)
    if not mods or mods[0] != "replace" or not any(m in ("shared", "shared::cta") for m in mods):
        raise _Slow
    field = next((m for m in mods if m in asyncx.FIELDS), None)
    if field is None:
        raise _Slow
    ops = instr.operands
    vtype = "b64" if field in ("global_address", "global_stride") else "b32"
    if field in ("box_dim", "global_dim", "global_stride", "element_stride"):
        if len(ops) != 3 or not isinstance(ops[1], Imm) or not isinstance(ops[1].value, int):
            raise _Slow
        row[T.Z] = ops[1].value
    elif len(ops) != 2:
        raise _Slow
    if isinstance(ops[-1], (Vec, Pair, Not, Mem)):
        raise _Slow
    _address(t, env, ops[0], row, imm, T.SHARED)
    if field == "elemtype":             # a constant CUtensorMapDataType: its encoding now (else the executor)
        from ...memory.tensormap import DTYPES
        v = ops[-1].value if isinstance(ops[-1], Imm) else None
        if not isinstance(v, int) or v not in DTYPES:
            raise _Slow
        _, _, code, tf32, _ = DTYPES[v]
        imm[1] = code | tf32 << 8
        row[T.B] = -2 - 1
    else:
        row[T.B] = _x_operand(t, env, ops[-1], vtype, imm, 1)
    _set_type(row, vtype)
    row[T.Y] = asyncx.FIELDS[field]
    _hopx(t, row, asyncx.K_TMREPLACE)


def _tensormap_copy(t, env, instr, row, imm):
    """tensormap.cp_fenceproxy.global.shared::cta... [dst], [src], size: the 128 bytes of a shared tensor map into
    global memory (ops.mbarrier.compile_tensormap)."""
    from . import asyncx
    ops = instr.operands
    if len(ops) != 3 or not isinstance(ops[0], Mem) or not isinstance(ops[1], Mem):
        raise _Slow
    _address(t, env, ops[1], row, imm, T.SHARED)        # the source: base in C, offset in immediate 2
    row[T.C] = row[T.A]
    imm[2] = imm[T.IMM_OFFSET]
    _address(t, env, ops[0], row, imm, T.GLOBAL)
    _hopx(t, row, asyncx.K_TMCOPY)


_RULES.update({"setmaxnreg": r_hop_nop, "griddepcontrol": r_hop_nop, "prefetch": r_hop_nop, "prefetchu": r_hop_nop,
               "fence": r_fence_hop, "elect": r_elect, "mapa": r_mapa, "tensormap": r_tensormap})


def r_mbarrier(t, env, instr, row, imm):
    """mbarrier.arrive{.expect_tx}{, count} / arrive_drop, expect_tx, complete_tx, test_wait/try_wait{.parity} on
    an address of this CTA's shared memory (ops.mbarrier.compile_mbarrier: the same qualifiers and operands);
    init and inval (in the CTA loop only; a warp run alone hands them back), pending_count stays with the executor,
    and so does every lane whose barrier lives in another
    CTA of the cluster (hopcall.py hands the row back)."""
    from . import asyncx
    from ...ops.mbarrier import _mods
    q = _mods(instr)
    op = q["op"]
    ops = list(instr.operands)
    if any(isinstance(o, (Vec, Pair, Not)) for o in ops):
        raise _Slow
    row[T.D] = row[T.B] = -1
    if op in ("arrive", "arrive_drop"):
        if ops and not isinstance(ops[0], Mem):
            d = ops.pop(0)
            if isinstance(d, Imm):
                raise _Slow
            row[T.D] = t._dst(env, d)
        if not ops or not isinstance(ops[0], Mem) or len(ops) > 2:
            raise _Slow
        _address(t, env, ops[0], row, imm, T.SHARED)
        y = asyncx.MB_DROP * (op == "arrive_drop")
        if len(ops) == 2:
            if isinstance(ops[1], Mem):
                raise _Slow
            row[T.B] = _x_operand(t, env, ops[1], "u32", imm, 1)
            y |= asyncx.MB_EXPECT if "tx" in q else asyncx.MB_COUNT
        elif "tx" in q:
            raise _Slow
        row[T.Y] = y
        return _hopx(t, row, asyncx.K_MB_ARRIVE)
    if op in ("init", "inval"):                # (run in the CTA loop only: hopcall._init_inval)
        if len(ops) != (2 if op == "init" else 1) or not isinstance(ops[0], Mem) or \
                (op == "init" and isinstance(ops[1], Mem)):
            raise _Slow
        _address(t, env, ops[0], row, imm, T.SHARED)
        if op == "init":
            row[T.B] = _x_operand(t, env, ops[1], "u32", imm, 1)
        return _hopx(t, row, asyncx.K_MB_INIT if op == "init" else asyncx.K_MB_INVAL)
    if op in ("expect_tx", "complete_tx"):
        if len(ops) != 2 or not isinstance(ops[0], Mem) or isinstance(ops[1], Mem):
            raise _Slow
        _address(t, env, ops[0], row, imm, T.SHARED)
        row[T.B] = _x_operand(t, env, ops[1], "u32", imm, 1)
        row[T.Y] = int(op == "complete_tx")
        return _hopx(t, row, asyncx.K_MB_TX)
    if op in ("test_wait", "try_wait"):
        if len(ops) not in (3, 4) or not isinstance(ops[1], Mem) or isinstance(ops[0], (Imm, Mem)) or \
                isinstance(ops[2], Mem):
            raise _Slow
        row[T.D] = t._dst(env, ops[0])
        if row[T.D] >= 0 and env.reg_width(t._reg(env, ops[0])) != 1:
            raise _Slow
        _address(t, env, ops[1], row, imm, T.SHARED)
        parity = "parity" in q
        row[T.B] = _x_operand(t, env, ops[2], "b32" if parity else "b64", imm, 1)
        row[T.Y] = int(parity)
        row[T.Z] = int(op == "try_wait")
        return _hopx(t, row, asyncx.K_MB_WAIT)
    raise _Slow


_RULES["mbarrier"] = r_mbarrier


def r_warp_sync(t, env, instr, row, imm):
    """bar.warp.sync membermask (machine.program._compile_warp_sync): the membermask rule, nothing else."""
    from . import asyncx
    if list(instr.mods) != ["warp", "sync"] or len(instr.operands) != 1 or \
            isinstance(instr.operands[0], (Vec, Pair, Not, Mem)):
        raise _Slow
    row[T.A] = _x_operand(t, env, instr.operands[0], "b32", imm, 0)
    _set_type(row, "b32")
    _hopx(t, row, asyncx.K_WARPSYNC)


_RULES["bar"] = r_warp_sync


def r_barrier_cluster(t, env, instr, row, imm):
    """barrier.cluster.arrive{.release|.relaxed}{.aligned} / barrier.cluster.wait{.acquire}{.aligned}
    (ops.cluster.compile_barrier_cluster: the same qualifiers), in the CTA loop of a cluster's CTAs (clusterx.py);
    Y: clusterx.PAR_CLUSTER (the stall record of a wait), Z: 1 = .aligned."""
    from . import asyncx
    from .clusterx import PAR_CLUSTER
    mods = instr.mods
    kind = next((m for m in mods if m in ("arrive", "wait")), None)
    if "cluster" not in mods or kind is None or instr.operands or \
            any(m not in {"cluster", "arrive", "wait", "release", "relaxed", "acquire", "aligned"} for m in mods) or \
            (kind == "arrive" and "acquire" in mods) or (kind == "wait" and {"release", "relaxed"} & set(mods)):
        raise _Slow
    row[T.Y] = PAR_CLUSTER
    row[T.Z] = int("aligned" in mods)
    _hopx(t, row, asyncx.K_CL_ARRIVE if kind == "arrive" else asyncx.K_CL_WAIT)


def r_getctarank(t, env, instr, row, imm):
    """getctarank{.shared::cluster}.u32/.u64 d, a (ops.cluster.compile_getctarank), in the CTA loop of a cluster's
    CTAs (clusterx.py)."""
    from . import asyncx
    q = _classify(instr.mods, {"space": {"shared::cluster"}, "type": {"u32", "u64"}})
    ops = instr.operands
    if "type" not in q or len(ops) != 2 or any(isinstance(o, (Vec, Pair, Not, Mem, Imm)) for o in ops[:1]) or \
            isinstance(ops[1], (Vec, Pair, Not, Mem)):
        raise _Slow
    row[T.D] = t._dst(env, ops[0])
    if row[T.D] >= 0 and env.reg_width(t._reg(env, ops[0])) != 32:
        raise _Slow
    row[T.A] = _x_operand(t, env, ops[1], q["type"], imm, 0)
    row[T.B] = t._slot("%cluster_ctarank", 32, special=True)     # (a CTA without a cluster table, clusterx.py)
    row[T.C] = t._slot("%cluster_nctarank", 32, special=True)
    _set_type(row, q["type"])
    _hopx(t, row, asyncx.K_CTARANK)


def r_isspacep_shared(t, env, instr, row, imm):
    """isspacep.shared{::cta} p, a (ops.memops.compile_isspacep): whether the generic address is in the CTA's own
    shared window [0, size), which is ``setp.lo.u64 p, a, %total_smem_size`` (the launch's shared-memory size, as
    ``CTA`` allocates it; a lone warp's is its memory's size). The other spaces stay with the executor."""
    ops = instr.operands
    if list(instr.mods) not in (["shared"], ["shared::cta"]) or len(ops) != 2 or \
            any(isinstance(o, (Vec, Pair, Not, Mem, Imm)) for o in ops):
        raise _Slow
    name, dname = t._reg(env, ops[1]), t._reg(env, ops[0])
    if "_" in (name, dname) or name.startswith("%") and name in SPECIAL_REGISTERS or env.reg_width(name) != 64 or \
            env.reg_width(dname) != 1:
        raise _Slow
    _set_type(row, "u64")
    row[T.X] = T.CMP["lo"]
    row[T.Y] = T.BOOLS[None]
    row[T.D] = t._dst(env, ops[0])
    row[T.Z] = -1
    row[T.A] = t._src(env, ops[1], "u64", imm, 0)
    row[T.B] = t._slot("%total_smem_size", 32, special=True)
    row[T.OP] = T.SETP


_RULES.update({"barrier": r_barrier_cluster, "getctarank": r_getctarank, "isspacep": r_isspacep_shared})
