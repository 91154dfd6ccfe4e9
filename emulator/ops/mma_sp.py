"""mma.sp / mma.sp::ordered_metadata: sparse A, look-up of a variant, register-level execution, the executor.

``get_mma_sp(opcode, selector, arch)`` returns an :class:`MmaSpOp` whose ``execute(a, b, c, e)`` maps raw
register bits (``(n_a, 32)``, ``(n_b, 32)``, ``(n_c, 32)`` and the metadata ``(32,)``) to D's raw bits.  The
variants, fragments and metadata tables are the data of ``isa.mma_sp``.  Arithmetic: each row of D is the dense
``m16n8k(K/2)`` form of the same types (``emulator.ops.mma``, its numerics proven on H100 captures) applied to the
compressed A and the rows of B that row's metadata picks; the H100 captures in tests/data/sparse show the sparse
tensor core does exactly that (tests/test_mma_sp.py).  ``reference.mma_sp_tiles`` is the readable rule.

Equal and decreasing index pairs (PTX: undefined, or for plain ``mma.sp`` allowed) run: the H100 multiplies
the rows of B they name, in either order (tests/data/sparse/mma_sp_experiments_h100.npz).  Refused
(``OperandError`` naming the lane, the nibble and the rule): tf32 nibbles other than 0x4/0xE (undefined; the
H100 gives something else, not modelled).  Selectors PTX leaves undefined (2 and 3 for ``m16n8k32`` .f16 ->
.f32, which ptxas accepts) are refused too: the H100 stops such a kernel with an illegal-instruction fault.
"""
from __future__ import annotations

import numpy as np

from isa.fragments import pack, unpack
from isa.mma import VARIANTS as DENSE
from isa import mma_sp as _SP
from isa.mma_sp import SP_KINDS, metadata_nibbles, positions, valid_nibble
from .common import require_full_warp, vec_regs
from .mma import _arch_key, compile_mma, get_mma
from .registry import executor
from ..errors import OperandError, UnsupportedError, did_you_mean, expect_str, fail
from ..frontend.ptx import Imm


def canonical_spelling(opcode: str):
    """The table's spelling of an mma.sp opcode (modifiers in any order ptxas accepts), or None."""
    parts = opcode.strip().split(".")
    if len(parts) < 2 or parts[0] != "mma":
        return None
    sp = [p for p in parts[1:] if p in SP_KINDS]
    if len(sp) != 1:
        return None
    rest = [p for p in parts[1:] if p not in SP_KINDS]
    flags = {"sync", "aligned"}
    if not flags <= set(rest):
        return None
    rest = [p for p in rest if p not in flags]
    sat = "satfinite" in rest
    rest = [p for p in rest if p != "satfinite"]
    shape = [p for p in rest if p.startswith("m16n8k")]
    layouts = [p for p in rest if p in ("row", "col")]
    types = [p for p in rest if p not in shape and p not in layouts]
    if len(shape) != 1 or layouts != ["row", "col"] or len(types) != 4:
        return None
    return (f"mma.{sp[0]}.sync.aligned.{shape[0]}.row.col{'.satfinite' if sat else ''}."
            f"{'.'.join(types)}")


class MmaSpOp:
    """One mma.sp variant with its sparsity selector, bound to an architecture."""

    def __init__(self, variant, sel, arch):
        v = self.variant = variant
        self.sel, self.arch = sel, arch
        self.spelling = v.spelling
        self.dense = get_mma(v.dense_spelling, arch)
        self.dv = DENSE[v.dense_spelling]
        self.n_a, self.n_b, self.n_c, self.n_d = (v.n_regs(op) for op in "ABCD")
        self.d_bits = self.dense.d_bits

    def __repr__(self):
        return f"MmaSpOp({self.spelling!r}, selector={self.sel}, arch={self.arch!r})"

    # -- metadata ---------------------------------------------------------------------------------
    def positions(self, e, text=None):
        """Metadata registers (32,) -> logical k of each compressed column, int (16, K/2); refuses the
        metadata the emulator does not run (see the module docstring)."""
        v = self.variant
        nib, lanes = metadata_nibbles(v, self.sel, e)
        ok = valid_nibble(v, nib)
        if not ok.all():
            m, c = map(int, np.argwhere(~ok)[0])
            x = int(nib[m, c])
            lane = int(lanes[m, c])
            nibble = int(v.meta_owner(self.sel)[m, c, 1])
            rule = "a .tf32 metadata index must be 0b0100 or 0b1110 (PTX: anything else is undefined)"
            fail(OperandError, text or self.spelling,
                 f"metadata nibble {nibble} (row {m}, chunk {c}) is 0b{x:04b}: {rule}", lane=lane)
        return positions(v, nib)

    # -- execution --------------------------------------------------------------------------------
    def execute(self, a, b, c, e, text=None):
        """Raw register bits (n_a, 32), (n_b, 32), (n_c, 32) and metadata (32,) -> D's raw bits (n_d, 32)."""
        v, dv = self.variant, self.dv
        pos = self.positions(np.asarray(e, np.uint32), text)               # (16, K/2)
        A = unpack(v, "A", np.asarray(a))                                  # (16, K/2) compressed
        B = unpack(v, "B", np.asarray(b))                                  # (K, 8)
        Bg = B[pos]                                                        # (16 rows, K/2, 8): row m's B
        ra = pack(dv, "A", A)
        rb = pack(dv, "B", Bg)                                             # (16, n_b', 32)
        rc = np.asarray(c)
        d = self.dense.execute_batch(np.broadcast_to(ra, (16,) + ra.shape), rb,
                                     np.broadcast_to(rc, (16,) + rc.shape))
        D = unpack(dv, "D", d)                                             # (16, 16, 8): row m of batch m
        return pack(dv, "D", D[np.arange(16), np.arange(16)][None])[0].astype(d.dtype)


_CACHE: dict = {}


def get_mma_sp(opcode: str, sel: int = 0, arch: str = "sm_90") -> MmaSpOp:
    expect_str(opcode, "mma.sp: instr")
    key = (opcode, sel, arch)
    op = _CACHE.get(key)
    if op is not None:
        return op
    spelling = canonical_spelling(opcode)
    v = _SP.VARIANTS.get(spelling)
    if v is None:
        fail(UnsupportedError, opcode, "unsupported mma.sp variant; " +
             did_you_mean(spelling or opcode, _SP.VARIANTS, "docs/supported.md"))
    if _arch_key(arch) != "sm_90":
        fail(UnsupportedError, opcode, f"mma.sp is modelled on sm_90/sm_90a only (H100 captures), not {arch}")
    if not isinstance(sel, (int, np.integer)) or sel not in v.selectors:
        fail(OperandError, opcode, f"sparsity selector {sel!r}: this form takes "
                                   f"{', '.join(map(str, v.selectors))}")
    if sel not in v.defined_selectors:
        fail(UnsupportedError, opcode, f"sparsity selector {sel}: ptxas accepts it, but PTX leaves it undefined "
                                       f"for this shape (defined: {', '.join(map(str, v.defined_selectors))})")
    op = _CACHE[key] = MmaSpOp(v, int(sel), _arch_key(arch))
    return op


def is_sparse(opcode):
    return any(m in SP_KINDS for m in opcode.split(".")[1:])


@executor("mma")
def compile_mma_any(instr, env):
    """The 'mma' executor: the sparse forms here, the dense ones in ``ops.mma``."""
    return compile_mma_sp(instr, env) if is_sparse(instr.opcode) else compile_mma(instr, env)


def compile_mma_sp(instr, env):
    ops = instr.operands
    if len(ops) != 6:
        raise OperandError(f"{instr.opcode}: takes 6 operands (D, A, B, C, metadata, selector), found {len(ops)}")
    sel = ops[5]
    if not isinstance(sel, Imm) or sel.kind != "int":
        raise OperandError(f"{instr.opcode}: the sparsity selector must be an integer constant, found {sel}")
    op = get_mma_sp(instr.opcode, int(sel.value), env.arch)
    groups = []
    for opnd, n, what in zip(ops[:4], (op.n_d, op.n_a, op.n_b, op.n_c), "DABC"):
        names = vec_regs(env, opnd, instr, n, f"{what} operand")
        for name in names:
            if env.reg_width(name) != 32:
                raise OperandError(f"{instr.opcode}: {what} register {name} is {env.reg_width(name)}-bit; "
                                   f"mma.sp operands are 32-bit registers")
        groups.append(names)
    e_const = None
    if isinstance(ops[4], Imm):
        if ops[4].kind != "int":
            raise OperandError(f"{instr.opcode}: a constant metadata operand must be an integer, found {ops[4]}")
        e_const = np.full(32, int(ops[4].value) & 0xFFFFFFFF, np.uint32)
        op.positions(e_const, instr.text)              # constant metadata: checked once, here
        e_names = None
    else:
        e_names = vec_regs(env, ops[4], instr, 1, "metadata operand")
        if env.reg_width(e_names[0]) != 32:
            raise OperandError(f"{instr.opcode}: the metadata operand {e_names[0]} must be a 32-bit register")
    d_names, a_names, b_names, c_names = groups
    text = instr.text
    bufs = [np.empty((len(n), 32), np.uint32) for n in (a_names, b_names, c_names)]
    srcs = list(zip((a_names, b_names, c_names), bufs))

    def run(warp, mask):
        require_full_warp(instr, mask)
        get = warp.get_reg
        for names, buf in srcs:
            for i, n in enumerate(names):
                buf[i] = get(n, text)
        e = e_const if e_names is None else np.asarray(get(e_names[0], text), np.uint32)
        d = op.execute(*bufs, e, text=text)
        regs = warp.regs
        for i, n in enumerate(d_names):
            if n != "_":
                regs[n] = d[i].astype(np.uint32)
    return run
