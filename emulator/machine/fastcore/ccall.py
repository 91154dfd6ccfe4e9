"""How the loops call the instruction families compiled apart from them (``families.py``).

Every family is one C-callable function with the same signature (``SIG``, the one ``xcall.x_c`` has)::

    int64 family(int64 em, int64 *row, uint64 *imm_row, uint8 *arena, int64 arena_bytes, uint64 *scratch)

``em``: the lanes that execute; ``row``/``imm_row``: the instruction's code and immediate rows; ``arena``: the
warp's registers; ``scratch``: the loop's ``uint64[NSCRATCH, 32]`` temporaries, whose last rows (``ctx``) hold
what the family may need besides: the addresses and sizes of the launch's tables (the ``K_*`` slots, which the
loop fills each time it starts, ``loop.fill_ctx``). It returns 0, or 1 when a lane breaks a rule the reference
executor reports (nothing written: the loop hands the instruction back).

The loop calls a family through its address (``call_family``, slot ``families.SLOT[...]`` of the translation's
pointer array); numba then never links the family's code into the loops, so each family is compiled once, by
itself, and only when a kernel has rows of it.
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

NSCRATCH = 16           # rows of the loops' scratch (uint64[NSCRATCH, 32]): 0..12 temporaries, 13.. the ctx
CTX_ROW = 13
NCTX = (NSCRATCH - CTX_ROW) * 32

# -- the ctx slots (int64 each) -------------------------------------------------------------------------------
(K_STATE, K_INFLIGHT, K_INFLIGHT_N, K_GTAB, K_GTAB_N, K_MPTR, K_MSZ, K_NPTR,
 K_MREGS, K_MREGS_N, K_MMAPS, K_MMAPS_W, K_MPRM, K_MPRM_W, K_L1, K_L1_N, K_L256, K_L256_N, K_L64K, K_L64K_N,
 K_MLUTIDX, K_MBUF, K_MU64, K_MU64_N, K_MI64, K_MI64_N, K_MFLAGS, K_MFLAGS_N,
 K_LOG_PC, K_LOG_N, K_LOG_ADDR, K_LOG_W, K_LOG_MASK, K_LOG_SRC, K_LOG_SRC_W,
 K_CPD, K_CPX, K_CPG, K_CPM, K_CPC, K_CP_R, K_P, K_NLOG, K_OPC) = range(44)

_P64 = types.CPointer(types.uint64)
_PI64 = types.CPointer(types.int64)
_P8 = types.CPointer(types.uint8)
SIG = types.int64(types.int64, _PI64, _P64, _P8, types.int64, _P64)


@intrinsic
def call_family(typingctx, fn, em, prow, pimm, parena, n, pscratch):
    """Call the family function at the address ``fn`` (all arguments int64: the lanes, the addresses of the
    row, its immediates, the arena, the arena's length, the loop's scratch); returns its int64."""
    sig = types.int64(*([types.int64] * 7))

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        p64, p8 = i64.as_pointer(), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(i64, [i64, p64, p64, p8, i64, p64])
        f = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(f, [args[1], builder.inttoptr(args[2], p64), builder.inttoptr(args[3], p64),
                                builder.inttoptr(args[4], p8), args[5], builder.inttoptr(args[6], p64)])
    return sig, codegen


@intrinsic
def data_ptr(typingctx, arr):
    """The address of an array's data, as int64 (``arr.ctypes.data`` without the ctypes object numba builds
    for every array type, which cost a second of compile in the loop's ctx fill)."""
    sig = types.int64(arr)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.ptrtoint(ary.data, ir.IntType(64))
    return sig, codegen


def _pointer_of(nbits, numba_type):
    @intrinsic
    def as_pointer(typingctx, addr):
        """The raw address ``addr`` (int64) as a typed pointer (for ``numba.carray``)."""
        sig = types.CPointer(numba_type)(types.int64)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], ir.IntType(nbits).as_pointer())
        return sig, codegen
    return as_pointer


p_i64 = _pointer_of(64, types.int64)
p_u64 = _pointer_of(64, types.uint64)
p_u32 = _pointer_of(32, types.uint32)
p_i32 = _pointer_of(32, types.int32)
p_u8 = _pointer_of(8, types.uint8)

U0 = np.uint64(0)
