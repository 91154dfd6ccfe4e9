"""wgmma.mma_async / fence / commit_group / wait_group: look-up, operand compilation, execution.

``get_wgmma(opcode)`` returns a :class:`WgmmaOp`; ``WgmmaOp.compute(a_tile, b_tile, c_tile, ...)`` is the
tile-level arithmetic (``emulator.numerics.wgmma``) and ``WgmmaOp.read_b`` / ``read_a`` the descriptor
reads (``desc``).  The executor gathers one warp's registers, reads shared memory through the descriptors,
computes the warp's 16 rows of D and leaves the instruction in flight (``state``).
"""
from __future__ import annotations

import numpy as np

from isa.wgmma import VARIANTS, K_OF
from isa import wgmma_sp as SP
from ..registry import executor
from ..common import format_lanes, reg_name, vec_regs
from ...errors import AsyncHazardError, OperandError, UnsupportedError, WarpSyncError, expect_str, fail
from ...frontend.ptx import Imm, Not, Vec
from ...numerics import wgmma as num
from . import desc as D
from . import state as S

_TYPES = ("f16", "bf16", "tf32", "f32", "e4m3", "e5m2", "s8", "u8", "s32", "b1")
ARCHS = ("sm_90a", "sm_90")     # sm_90 without 'a' is accepted by the emulator; ptxas wants sm_90a


def canonical_spelling(opcode: str):
    expect_str(opcode, "wgmma: instr")
    parts = opcode.strip().split(".")
    if parts[:2] != ["wgmma", "mma_async"]:
        return None
    shape, types, flags, other = None, [], set(), []
    for p in parts[2:]:
        if p in ("sync", "aligned", "satfinite", "and", "popc", "sp"):
            flags.add(p)
        elif p in _TYPES:
            types.append(p)
        elif p.startswith("m64n") and shape is None:
            shape = p
        else:
            other.append(p)
    if other or shape is None or len(types) != 3 or not {"sync", "aligned"} <= flags:
        return None
    sat = ".satfinite" if "satfinite" in flags else ""
    tail = ".and.popc" if {"and", "popc"} <= flags else ""
    sp = ".sp" if "sp" in flags else ""
    return f"wgmma.mma_async{sp}.sync.aligned.{shape}{sat}.{'.'.join(types)}{tail}"


class WgmmaOp:
    """One wgmma.mma_async variant: maps between registers and tiles, and the arithmetic."""

    def __init__(self, variant):
        v = self.variant = variant
        self.spelling = v.spelling
        self.n, self.k = v.n, v.k
        self.k_b = v.k              # K of B (the sparse forms read twice A's K)
        self.sparse = None          # isa.wgmma_sp.WgmmaSpVariant of a .sp form
        self.n_a, self.n_d = v.n_a, v.n_d
        self.wa, self.wb, self.wd = v.elem_bits("A"), v.elem_bits("B"), v.elem_bits("D")
        self._reads = {}         # (descriptor, operand, trans, rows, shared size) -> (addresses, bytes read)
        # per-warp maps (warp 0's threads; rows relative to the warp's 16): flat index into (16, N)/(16, K)
        fd = v.fragment("D")[:, :32]
        self.d_idx = fd[..., 0] * v.n + fd[..., 1]                     # (n_d, 32, epr)
        fa = v.fragment("A")[:, :32]
        self.a_idx = fa[..., 0] * v.k + fa[..., 1]                     # (4, 32, epr)

    def __repr__(self):
        return f"WgmmaOp({self.spelling!r})"

    # -- registers <-> tiles -----------------------------------------------------------------------
    @staticmethod
    def _unpack(regs, idx, w, rows, cols):
        """(n_regs, 32) uint32 -> (rows, cols) uint64 element bits."""
        epr = idx.shape[-1]
        r = regs.astype(np.uint64)[..., None] >> (np.arange(epr, dtype=np.uint64) * np.uint64(w))
        out = np.zeros(rows * cols, np.uint64)
        out[idx.reshape(-1)] = (r & np.uint64((1 << w) - 1)).reshape(-1)
        return out.reshape(rows, cols)

    @staticmethod
    def _pack(tile, idx, w):
        epr = idx.shape[-1]
        e = tile.reshape(-1)[idx] & np.uint64((1 << w) - 1)
        return np.bitwise_or.reduce(e << (np.arange(epr, dtype=np.uint64) * np.uint64(w)), axis=-1).astype(np.uint32)

    def c_tile(self, regs):
        return self._unpack(regs, self.d_idx, self.wd, 16, self.n)

    def d_regs(self, tile):
        return self._pack(tile, self.d_idx, self.wd)

    def a_tile(self, regs):
        return self._unpack(regs, self.a_idx, self.wa, 16, self.k)

    # -- shared memory -----------------------------------------------------------------------------
    def read(self, smem, desc_bits, which, trans, instr, rows):
        """(rows, K) raw bits of A (rows = 64) or B^T (rows = N), and the byte indices read. The addresses a
        descriptor selects (checked once) are kept: pipelines cycle through a few descriptors."""
        w = self.wa if which == "A" else self.wb
        k = self.k if which == "A" else self.k_b
        key = (int(desc_bits), which, bool(trans), rows, smem.size)
        hit = self._reads.get(key)
        if hit is not None:
            addr, idx = hit
            return D.gather_operand(smem, addr, k, w), idx
        d = D.Descriptor.decode(desc_bits)
        if self.sparse is not None and which == "B" and not trans and d.swizzle == 32 and k * w > 8 * 32 \
                and d.lbo != 16:
            # a sparse form's K-major B is 64 bytes of K, wider than the 32-byte swizzle: the H100 read its second
            # 32 bytes LBO bytes on, but every capture had LBO = 16, so another LBO is not known to mean that
            fail(UnsupportedError, instr, f"B descriptor ({d}): a K-major B under the 32-byte swizzle spans two "
                 f"swizzle widths of K; only LBO = 16 bytes is measured for the second one, not {d.lbo}")
        tile = D.read_operand(smem, d, rows, k, w, bool(trans), instr, which)
        addr = D.element_addresses(d, rows, k, w, bool(trans))
        eb = max(1, w // 8)
        idx = np.unique((addr[..., None] + np.arange(eb)).reshape(-1))
        if len(self._reads) >= 1024:
            self._reads.clear()
        self._reads[key] = (addr, idx)
        return tile, idx

    # -- arithmetic --------------------------------------------------------------------------------
    def compute(self, A, B, C, scale_d=True, scale_a=1, scale_b=1):
        """D tile from A (M, K), B (K, N), C (M, N) raw bits."""
        v = self.variant
        if not scale_d:
            C = np.zeros_like(C)
        if v.is_float:
            A = num.negate(A, v.atype, scale_a)
            B = num.negate(B, v.btype, scale_b)
        return num.wgmma_tile(v.atype, v.btype, v.dtype, A, B, C, v.satfinite)


class WgmmaSpOp(WgmmaOp):
    """One wgmma.mma_async.sp variant: the dense m64nNk(K/2) op for A, C and D, B read K rows deep, and the
    metadata (``isa.wgmma_sp``)."""

    def __init__(self, sv):
        super().__init__(sv.dense)
        self.sparse = sv
        self.spelling = sv.spelling
        self.k_b = sv.k

    def __repr__(self):
        return f"WgmmaSpOp({self.spelling!r})"

    def positions(self, e, sel, text, warp_id=0):
        """One warp's sp-meta registers (32,) -> the row of B each compressed element of its 16 rows multiplies,
        int (16, K/2).  Refuses the tf32 nibbles PTX leaves undefined."""
        sv = self.sparse
        nib, lanes = SP.metadata_nibbles(sv, sel, e)
        if sv.atype == "tf32":
            bad = (nib != SP.TF32_NIBBLES[0]) & (nib != SP.TF32_NIBBLES[1])
            if bad.any():
                m, c = map(int, np.argwhere(bad)[0])
                fail(OperandError, text, f"sp-meta nibble {int(sv.meta_owner(sel)[m, c, 1])} (row "
                     f"{16 * (warp_id % 4) + m}, chunk {c}, selector {sel}) is 0b{int(nib[m, c]):04b}: a .tf32 "
                     f"metadata index must be 0b0100 or 0b1110 (PTX: anything else is undefined)",
                     lane=int(lanes[m, c]))
        return SP.positions(sv, nib)

    def compute_sparse(self, A, B, C, pos, scale_d=True, scale_a=1, scale_b=1):
        """D tile (16, N) from the compressed A (16, K/2), the whole B (K, N), C (16, N) raw bits and ``pos``:
        row m is the dense step over A's row and the rows ``pos[m]`` of B (as ``reference.mma_sp_tiles``)."""
        v = self.variant
        if v.dtype == "s32":
            Bg = np.asarray(B, np.uint64)[pos]                               # (16, K/2, N)
            Cz = C if scale_d else np.zeros_like(C)
            a = num._signed(A, 8) if v.atype == "s8" else np.asarray(A, np.int64)
            b = num._signed(Bg, 8) if v.btype == "s8" else Bg.astype(np.int64)
            s = num._signed(Cz, 32) + np.einsum("mq,mqn->mn", a, b)
            if v.satfinite:
                s = np.clip(s, -2**31, 2**31 - 1)
            return (s & 0xFFFFFFFF).astype(np.uint64)
        out = np.zeros(np.shape(C), np.uint64)
        for m in range(out.shape[0]):
            out[m] = self.compute(A[m:m + 1], B[pos[m]], C[m:m + 1], scale_d, scale_a, scale_b)[0]
        return out


_CACHE: dict = {}


def get_wgmma(opcode: str) -> WgmmaOp:
    op = _CACHE.get(opcode)
    if op is None:
        sp = canonical_spelling(opcode)
        # (the sparse table is built on first use: a dense form never asks for it)
        sv = SP.VARIANTS.get(sp) if isinstance(sp, str) and "sp" in sp.split(".") else None
        if sv is not None:
            op = _CACHE[opcode] = WgmmaSpOp(sv)
            return op
        v = VARIANTS.get(sp)
        if v is None:
            shapes = sorted({f"k{k}" for k in K_OF.values()})
            if "sp" in str(opcode).split("."):
                fail(UnsupportedError, opcode, f"unsupported wgmma.mma_async.sp variant; supported: m64nNkK with "
                     f"k32 f16/bf16, k16 tf32, k64 e4m3/e5m2/s8/u8 as in isa/wgmma_sp.py ({len(SP.VARIANTS)} "
                     f"spellings), e.g. wgmma.mma_async.sp.sync.aligned.m64n128k32.f32.f16.f16")
            fail(UnsupportedError, opcode, f"unsupported wgmma.mma_async variant; supported: m64nNkK with "
                 f"{', '.join(shapes)} as in isa/wgmma.py ({len(VARIANTS)} spellings), e.g. "
                 f"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16")
        op = _CACHE[opcode] = WgmmaOp(v)
    return op


# ------------------------------------------------------------------------------------------------
# executors
def _imm_int(op, instr, what, allowed):
    if not (isinstance(op, Imm) and op.kind == "int"):
        fail(OperandError, instr.opcode, f"{what} must be an immediate, found {op}")
    val = op.value
    if val not in allowed:
        fail(OperandError, instr.opcode, f"{what} must be one of {', '.join(map(str, allowed))}, not {val}")
    return val


def _uniform(vals, lanes_ok, instr, what):
    v = vals[lanes_ok]
    if (v != v[0]).any():
        bad = np.flatnonzero(v != v[0])
        fail(OperandError, instr, f"{what} must be the same in every lane; lanes {format_lanes(bad)} differ")
    return int(v[0])


def _warpgroup_check(warp, text, mask):
    if not mask.all():
        fail(WarpSyncError, text, f".sync.aligned: every lane of the warpgroup must execute it; lanes "
             f"{format_lanes(np.flatnonzero(~mask))} of warp {warp.warp_id} are not executing it")
    cta = warp._cta
    g = warp.warp_id // 4
    whole = cta.__dict__.setdefault("_wgmma_whole", set())     # warpgroups found whole (threads never change)
    if g in whole:
        return g
    for w in range(4 * g, 4 * g + 4):
        if w >= len(cta.warps) or not cta.warps[w].present.all():
            fail(WarpSyncError, text, f"warpgroup {g} needs warps {4 * g}-{4 * g + 3} with 32 threads each; warp {w} "
                 f"is absent or partial (launch a multiple of 128 threads)")
    whole.add(g)
    return g


@executor("wgmma")
def compile_wgmma(instr, env):
    parts = instr.opcode.split(".")
    kind = parts[1] if len(parts) > 1 else ""
    text = instr.text or instr.opcode
    if kind in ("fence", "commit_group", "wait_group"):
        if not {"sync", "aligned"} <= set(parts[2:]) or set(parts[2:]) - {"sync", "aligned"}:
            fail(UnsupportedError, instr.opcode, f"spelled wgmma.{kind}.sync.aligned")
        return _compile_control(instr, env, kind, text)
    if kind != "mma_async":
        fail(UnsupportedError, instr.opcode, "supported: wgmma.mma_async[.sp], wgmma.fence, wgmma.commit_group, "
             "wgmma.wait_group")
    return _compile_mma(instr, env, text)


def _compile_control(instr, env, kind, text):
    if kind == "wait_group":
        if len(instr.operands) != 1 or not isinstance(instr.operands[0], Imm):
            fail(OperandError, instr.opcode, "takes one immediate operand N")
        keep = int(instr.operands[0].value)
    elif instr.operands:
        fail(OperandError, instr.opcode, "takes no operands")
    wg_regs = env.__dict__.setdefault("_wgmma_regs", set()) if hasattr(env, "__dict__") else set()

    def run(warp, mask):
        _warpgroup_check(warp, text, mask) if getattr(warp, "_cta", None) is not None else \
            S.cta_state(warp, text)
        cst, ws = S.warp_state(warp, text)
        if kind == "fence":
            names = list(wg_regs)
            rows = S.rows(warp, names)
            ws.expected = S.Expected()
            if rows is not None:
                ws.expected.set_rows(names, rows)
            else:
                ws.expected.update((n, S.raw_get(warp, n, text).copy()) for n in names)
        elif kind == "commit_group":
            S.commit(warp, ws)
        else:
            S.wait(warp, cst, ws, keep, text, mask)
    run.wgmma = dict(kind=kind, keep=keep if kind == "wait_group" else 0, wg_regs=wg_regs, text=text)
    return run


def _compile_mma(instr, env, text):
    op = get_wgmma(instr.opcode)
    v = op.variant
    ops = instr.operands
    ss = not isinstance(ops[1], Vec) if len(ops) > 1 else True
    form = "ss" if ss else "rs"
    n_imm = v.n_imm(form)
    sv = op.sparse
    extra = 2 if sv is not None else 0
    if len(ops) != 4 + extra + n_imm:
        fail(OperandError, instr.opcode, f"takes {4 + extra + n_imm} operands (d, {'a-desc' if ss else 'a'}, b-desc, "
             f"{'sp-meta, sp-sel, ' if extra else ''}scale-d"
             f"{', imm-scale-a, imm-scale-b' if v.is_float else ''}{', imm-trans-a' if ss and v.can_transpose else ''}"
             f"{', imm-trans-b' if v.can_transpose else ''}), found {len(ops)}")
    d_names = vec_regs(env, ops[0], instr, op.n_d, "accumulator d")
    for n in d_names:
        if env.reg_width(n) != 32:
            fail(OperandError, instr.opcode, f"accumulator register {n} is {env.reg_width(n)}-bit; needs 32-bit")
    if ss:
        a_desc = reg_name(env, ops[1], instr)
        if env.reg_width(a_desc) != 64:
            fail(OperandError, instr.opcode, f"a-desc {a_desc} must be a 64-bit register")
        a_names = []
    else:
        a_names = vec_regs(env, ops[1], instr, 4, "A fragment")
        a_desc = None
    b_desc = reg_name(env, ops[2], instr)
    if env.reg_width(b_desc) != 64:
        fail(OperandError, instr.opcode, f"b-desc {b_desc} must be a 64-bit register")
    e_name = sel = None
    if sv is not None:
        if isinstance(ops[3], Imm):
            fail(OperandError, instr.opcode, f"sp-meta must be a 32-bit register (ptxas takes no immediate), "
                 f"found {ops[3]}")
        e_name = vec_regs(env, ops[3], instr, 1, "sp-meta")[0]
        if env.reg_width(e_name) != 32:
            fail(OperandError, instr.opcode, f"sp-meta register {e_name} is {env.reg_width(e_name)}-bit; "
                 f"needs 32-bit")
        sel = _imm_int(ops[4], instr, "sp-sel", sv.selectors)
    sd = ops[3 + extra]
    sd_neg = isinstance(sd, Not)
    if sd_neg:
        sd = sd.item
    if isinstance(sd, Imm):
        sd_const = bool(sd.value)
        sd_name = None
    else:
        sd_name, sd_const = reg_name(env, sd, instr), None
    imms = ops[4 + extra:]
    scale_a = scale_b = 1
    trans_a = trans_b = 0
    if v.is_float:
        scale_a = _imm_signed(imms[0], instr, "imm-scale-a")
        scale_b = _imm_signed(imms[1], instr, "imm-scale-b")
        if v.can_transpose:
            if ss:
                trans_a = _imm_int(imms[2], instr, "imm-trans-a", (0, 1))
            trans_b = _imm_int(imms[-1], instr, "imm-trans-b", (0, 1))
    regs_used = set(d_names) | set(a_names)
    if hasattr(env, "__dict__"):
        env.__dict__.setdefault("_wgmma_regs", set()).update(regs_used)
    shape_key = (v.n, v.dtype)
    unions = {}                     # the bytes both descriptors read, per pair of cached address sets

    def run(warp, mask):
        g = _warpgroup_check(warp, text, mask) if getattr(warp, "_cta", None) is not None else \
            S.cta_state(warp, text)
        cst, ws = S.warp_state(warp, text)
        full = mask
        # scale-d
        if sd_name is None:
            scd = sd_const
        else:
            p = S.raw_get(warp, sd_name, text)
            scd = bool(_uniform(p != 0 if p.dtype != np.bool_ else p, full, text, f"scale-d {sd_name}"))
        if sd_neg:
            scd = not scd
        bd = _uniform(S.raw_get(warp, b_desc, text), full, text, f"b-desc {b_desc}")
        ad = _uniform(S.raw_get(warp, a_desc, text), full, text, f"a-desc {a_desc}") if ss else None
        # the warpgroup agrees on the instruction and its descriptors
        log = cst.logs.setdefault(g, [])
        entry = (getattr(warp, "cur_pc", None), text, (ad, bd))
        if ws.issued < len(log):
            pc0, text0, descs0 = log[ws.issued]
            if pc0 != entry[0]:
                fail(WarpSyncError, text, f"warp {warp.warp_id} of warpgroup {g} executes this as its wgmma "
                     f"number {ws.issued + 1}, but another warp of the warpgroup executed '{text0}' there "
                     f"(.aligned: all four warps execute the same wgmma.mma_async)")
            if descs0 != entry[2]:
                fail(OperandError, text, f"warp {warp.warp_id}: descriptors {_hex(entry[2])} differ from the "
                     f"ones the other warps of warpgroup {g} used ({_hex(descs0)}); they must be the same")
        else:
            log.append(entry)
        ws.issued += 1
        # the fence rule: ptxas inserts the missing fence itself (WARPGROUP.ARRIVE, C7519) unless strict
        if ws.expected is None:
            if S.strict(warp) or getattr(warp, "cur_pc", None) is None:
                fail(AsyncHazardError, text, f"warp {warp.warp_id}: no wgmma.fence before the first "
                     f"wgmma.mma_async (the fence orders earlier register accesses before the asynchronous read)")
            _fence_note(warp, "no wgmma.fence comes before it")
            ws.expected = S.Expected()
        checked = a_names + (d_names if scd else [])
        for n in S.changed_since_fence(warp, ws.expected, checked, text):     # the first register only
            if S.strict(warp) or getattr(warp, "cur_pc", None) is None:
                fail(AsyncHazardError, text, f"warp {warp.warp_id}: register {n} was written after the last "
                     f"wgmma.fence; a wgmma.fence must separate that write from this wgmma.mma_async")
            _fence_note(warp, f"register {n} was written after the last wgmma.fence")
            break
        if ws.last_shape is not None and ws.in_flight() and ws.last_shape != shape_key and \
                any(n in ws.reg_count for n in d_names):
            fail(AsyncHazardError, text, "accumulates onto registers of an in-flight wgmma.mma_async of another "
                 "shape or type")
        ws.last_shape = shape_key
        number = ws.issued - 1
        pos = None
        if sv is not None:          # the metadata as it is at issue
            e = np.asarray(S.raw_get(warp, e_name, text), np.uint32)
            pos = op.positions(e, sel, text, warp.warp_id)
        S.issue(warp, cst, ws, record(warp, ws, scd, ad, bd, pos, full), g, number)

    def record(warp, ws, scd, ad, bd, pos, full):
        """The warp's share of the instruction in flight (``state.issue``), as issued with scale-d ``scd``,
        descriptors ``ad``/``bd`` and the sparse positions ``pos`` (the fast engine's CTA loop builds the same
        records when it hands its wgmma state over: ``machine.fastcore.wgmmax``)."""

        def operands(issuer):
            """The warp's share of the instruction, once the whole warpgroup has issued it (``issuer``: the warp
            whose issue completed it): its 16 rows of A, B^T (K, N), its accumulator tile, as the shared operands
            and the registers are then, and the shared bytes read."""
            wi = warp.warp_id % 4
            smem = warp.smem
            B, b_idx = op.read(smem, bd, "B", trans_b, text, v.n)            # (N, K)
            if ss:
                A64, a_idx = op.read(smem, ad, "A", trans_a, text, 64)
                A = A64[16 * wi:16 * wi + 16]
                idx = union(a_idx, b_idx)
            else:
                A = op.a_tile(S.get_rows(warp, a_names, text))
                idx = b_idx
            if issuer is warp and warp.san is not None and warp._async is not None:
                # asynccheck: operands written without the fence (the same bytes for the four warps: checked once)
                warp._async.check_async_read(text, idx, "wgmma.mma_async", (warp, int(np.flatnonzero(full)[0])))
            C = op.c_tile(S.get_rows(warp, d_names, text))
            return A, np.ascontiguousarray(B.T), C, idx

        def finish(Dt):
            """Write the warp's 16 rows of D."""
            dregs = op.d_regs(Dt)
            S.set_rows(warp, d_names, dregs, full)
            ws.expected.set_rows(d_names, dregs.copy())

        def compute(issuer):
            """The warp's 16 rows of D (see ``operands``); returns the shared bytes read."""
            A, Bt, C, idx = operands(issuer)
            finish(op.compute(A, Bt, C, scd, scale_a, scale_b) if pos is None else
                   op.compute_sparse(A, Bt, C, pos, scd, scale_a, scale_b))
            return idx

        # the rows of D of a warp depend only on its own rows of A and C and the common B: the warpgroup's four
        # shares of one instruction compute as one 64-row tile (state.issue), element for element the same
        batch = ((op, scd, scale_a, scale_b), operands, finish) if pos is None else None   # .sp: per warp
        return dict(regs=set(d_names) | set(a_names), text=text, run=compute, batch=batch,
                    line=S.current(warp)[0])

    def union(a_idx, b_idx):
        key = (id(a_idx), id(b_idx))
        hit = unions.get(key)
        if hit is None or hit[0] is not a_idx or hit[1] is not b_idx:
            if len(unions) >= 1024:
                unions.clear()
            hit = unions[key] = (a_idx, b_idx, np.union1d(a_idx, b_idx))
        return hit[2]

    def read_bytes(smem, ad, bd):
        """The shared byte indices the instruction reads with descriptors ``ad`` (None: A from registers), ``bd``."""
        _, b_idx = op.read(smem, bd, "B", trans_b, text, v.n)
        if ss:
            return union(op.read(smem, ad, "A", trans_a, text, 64)[1], b_idx)
        return b_idx

    # what the fast engine's CTA loop needs to run the instruction itself (machine.fastcore.wgmmax)
    run.wgmma = dict(kind="mma", op=op, d_names=d_names, a_names=a_names, a_desc=a_desc, b_desc=b_desc,
                     sd_name=sd_name, sd_const=sd_const, sd_neg=sd_neg, scale_a=scale_a, scale_b=scale_b,
                     trans_a=trans_a, trans_b=trans_b, ss=ss, sparse=sv is not None, shape=shape_key, text=text,
                     record=record, read_bytes=read_bytes)
    return run


def _fence_note(warp, why):
    line, text = S.current(warp)
    S.note(warp, f"line {line}: {text}: {why}; as ptxas compiles it (C7519: warpgroup.arrive is injected), a "
                 f"fence is inserted before this wgmma.mma_async, which reads the registers' current values")


def _imm_signed(op, instr, what):
    if isinstance(op, Imm) and op.kind == "int" and op.value in (1, -1):
        return op.value
    fail(OperandError, instr.opcode, f"{what} must be the immediate 1 or -1, found {op}")


def _hex(descs):
    return ", ".join("-" if d is None else f"0x{d:016x}" for d in descs)


__all__ = ["get_wgmma", "WgmmaOp", "canonical_spelling"]
