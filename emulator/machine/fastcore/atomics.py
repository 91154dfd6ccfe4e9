"""The fast engine's atom/red rows (table.ATOM): the integer forms of 16, 32 and 64 bits (add, min, max, and,
or, xor, exch, cas, inc, dec) and the float adds of .f32 and .f64, on global memory and this CTA's shared
memory, as ``ops.atomics`` and ``numerics.atomics`` define them.

The loop plans the addresses (``loop._mem_plan``: alignment, bounds, cp.async destinations in flight; a lane
that breaks a rule hands the row back, and the executor raises) and passes the raw host address of every
active lane; ``atom_rows`` then applies the updates in ascending lane order, which is the reference's order
(updates of one cell apply lane after lane; different cells are independent). A float add follows the rule of
the place it lands: ``unit`` (global memory: f32 flushes subnormal operands and results, f64 passes b's NaN
through, else the old value's) or ``loop`` (shared memory: f32 keeps subnormals, f64 quiets the NaN, the old
value's first). Vector, half-precision, .b128 and shared::cluster forms stay with the executor.

Compiled apart from the loops (``xcall.py``): the loops call ``atom_c`` through its address (``call_atom``).
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .raw import _peek, _poke
from ...numerics.fast import f2i, i2f

OPS = ("add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec")
(A_ADD, A_MIN, A_MAX, A_AND, A_OR, A_XOR, A_EXCH, A_CAS, A_INC, A_DEC) = range(10)
T_UINT, T_SINT, T_F32, T_F64 = range(4)           # the element's kind
LANES = 32
U0 = np.uint64(0)
U1 = np.uint64(1)
F64_DEFAULT_NAN = np.uint64(0xFFF8000000000000)    # numerics.atomics.F64_DEFAULT_NAN (inf - inf)


@intrinsic
def _f32_of(typingctx, bits):
    sig = types.float32(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.trunc(args[0], ir.IntType(32)), ir.FloatType())
    return sig, codegen


@intrinsic
def _bits_of32(typingctx, x):
    sig = types.uint64(types.float32)

    def codegen(context, builder, signature, args):
        return builder.zext(builder.bitcast(args[0], ir.IntType(32)), ir.IntType(64))
    return sig, codegen


@njit(cache=True, inline="always")
def _flush32(x):
    """A subnormal f32 (raw bits) becomes the zero of its sign."""
    if (x & np.uint64(0x7F800000)) == U0:
        return x & np.uint64(0x80000000)
    return x


@njit(cache=True)
def _add_f32(old, b, unit):
    """numerics.atomics float_add for f32: round to nearest even, the canonical NaN; ``unit``: .ftz."""
    if unit:
        old, b = _flush32(old), _flush32(b)
    r = _bits_of32(_f32_of(old) + _f32_of(b))
    if (r & np.uint64(0x7FFFFFFF)) > np.uint64(0x7F800000):
        return np.uint64(0x7FFFFFFF)
    if unit:
        r = _flush32(r)
    return r


@njit(cache=True, inline="always")
def _nan64(x):
    return (x & np.uint64(0x7FFFFFFFFFFFFFFF)) > np.uint64(0x7FF0000000000000)


@njit(cache=True)
def _add_f64(old, b, unit):
    """numerics.atomics float_add for f64 (no .ftz): ``unit`` passes b's NaN unchanged (else the old value's),
    the shared-memory loop quiets the old value's NaN first, then b's; a NaN made of numbers is 0xFFF8..."""
    r = np.uint64(f2i(i2f(np.int64(old)) + i2f(np.int64(b))))
    na, nb = _nan64(old), _nan64(b)
    if na or nb or _nan64(r):
        if unit:
            return b if nb else (old if na else F64_DEFAULT_NAN)
        q = np.uint64(0x8000000000000)
        return (old | q) if na else ((b | q) if nb else F64_DEFAULT_NAN)
    return r


@njit(cache=True, inline="always")
def _sext(v, w):
    if w >= 64:
        return np.int64(v)
    m = U1 << np.uint64(w - 1)
    return np.int64(((v & ((U1 << np.uint64(w)) - U1)) ^ m) - m)


@njit(cache=True)
def atom_rows(op, kind, ew, em, shared, ptrs, xb, xc, xr):
    """Apply one atom/red row: lane after lane (ascending), the update of the element of ``ew`` bytes at the raw
    address ``ptrs[lane]`` by ``xb`` (and ``xc`` for cas); the old values in ``xr``. ``shared``: the lanes on
    this CTA's shared memory."""
    w = 8 * ew
    mk = (np.uint64(0xFFFFFFFFFFFFFFFF)) >> np.uint64(64 - w)
    for lane in range(LANES):
        if not (em >> lane) & 1:
            continue
        p = np.int64(ptrs[lane])
        old = _peek(p, ew)
        b = xb[lane] & mk
        if kind == T_F32:
            new = _add_f32(old, b, not (shared >> lane) & 1)
        elif kind == T_F64:
            new = _add_f64(old, b, not (shared >> lane) & 1)
        elif op == A_ADD:
            new = (old + b) & mk
        elif op == A_AND:
            new = old & b
        elif op == A_OR:
            new = old | b
        elif op == A_XOR:
            new = old ^ b
        elif op == A_EXCH:
            new = b
        elif op == A_CAS:
            new = (xc[lane] & mk) if old == b else old
        elif op == A_INC:
            new = U0 if old >= b else (old + U1) & mk
        elif op == A_DEC:
            new = b if (old == U0 or old > b) else old - U1
        else:
            if kind == T_SINT:
                lt = _sext(old, w) < _sext(b, w)
            else:
                lt = old < b
            new = old if lt == (op == A_MIN) else b
        _poke(p, ew, new)
        xr[lane] = old
    return 0


@intrinsic
def call_atom(typingctx, fn, em, shared, prow, pimm, parena, n, pscratch):
    """Call the compiled ``xcall.atom_c`` at the address ``fn`` (all arguments int64: the lanes, the lanes on
    shared memory, the addresses of the row, its immediates, the arena, the arena's length, the loop's scratch,
    whose row 7 holds the lanes' raw addresses)."""
    sig = types.int64(*([types.int64] * 8))

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        p64, p8 = i64.as_pointer(), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(i64, [i64, i64, p64, p64, p8, i64, p64])
        f = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(f, [args[1], args[2], builder.inttoptr(args[3], p64), builder.inttoptr(args[4], p64),
                                builder.inttoptr(args[5], p8), args[6], builder.inttoptr(args[7], p64)])
    return sig, codegen
