"""How the loops call the instruction families compiled apart from them (``families.py``).

Every family is one C-callable function with the same signature (``SIG``, six int64: the lanes, then addresses)::

    int64 family(int64 em, int64 row, int64 imm_row, int64 arena, int64 arena_bytes, int64 scratch)

``em``: the lanes that execute; ``row``/``imm_row``: the instruction's code and immediate rows; ``arena``: the
warp's registers; ``scratch``: the loop's ``uint64[NSCRATCH, 32]`` temporaries, whose last rows (``ctx``) hold
what the family may need besides: the addresses and sizes of the launch's tables (the ``K_*`` slots: the loop
fills those that change from run to run each time it starts, ``loop.fill_ctx``; the translation's tables are
written once per loop buffers, ``engine.fill_tables``); the family makes its arrays over them in place (``u8_1d``
and the others below). It returns 0, or 1 when a lane breaks a rule the reference executor reports (nothing
written: the loop hands the instruction back).

The loop calls a family through its address (``call_family``, slot ``families.SLOT[...]`` of the translation's
pointer array); numba then never links the family's code into the loops, so each family is compiled once, by
itself, and only when a kernel has rows of it.
"""
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

NSCRATCH = 16           # rows of the loops' scratch (uint64[NSCRATCH, 32]): 0..12 temporaries, 13.. the ctx
CTX_ROW = 13
NCTX = (NSCRATCH - CTX_ROW) * 32

# -- the ctx slots (int64 each) -------------------------------------------------------------------------------
(K_STATE, K_INFLIGHT, K_INFLIGHT_N, K_GTAB, K_GTAB_N, K_MPTR, K_MSZ, K_NPTR,
 K_MREGS, K_MREGS_N, K_MMAPS, K_MMAPS_W, K_MPRM, K_MPRM_W, K_MU64, K_MU64_N,
 K_LOG_PC, K_LOG_N, K_LOG_ADDR, K_LOG_W, K_LOG_MASK, K_LOG_SRC, K_LOG_SRC_W,
 K_CPD, K_CPX, K_CPG, K_CPM, K_CPC, K_CP_R, K_P, K_NLOG, K_OPC, K_RUN,
 K_CTA_STATE, K_CTA_CST, K_CTA_NW, K_CTA_WAITING, K_CTA_MBW, K_CTA_ARENAS, K_CTA_AB, K_CTA_YSNAP, K_CTA_YB,
 K_CTA_PCS, K_CTA_EXITED, K_CTA_CODE, K_CTA_NCODE, K_M, K_PCS, K_WAITING, K_COME) = range(50)
K_DSM = NCTX - 1    # the lanes of the last row dsmemx.py planned that reach another CTA's shared memory (dsmemx.py)
K_DSM_ROW = NCTX - 2    # and the address of that row
# K_RUN: the address of the compiled warp loop (``loop.run``), which the CTA loop calls (``call_native``); set by
# the engine (``engine.warp_loop_address``), never by ``loop.fill_ctx``
# K_M, K_PCS, K_WAITING: the row's lanes, the addresses of the warp's PCs and waiting flags, for the rare rows
# compiled apart (``rarecall.rare_c``; with K_P and K_NLOG); set by ``loop.run``
# K_COME: the lanes that will come, for the lane-group pick compiled apart (``pickcall.pick_c``); set by ``loop.run``
# K_CTA_*: the CTA's arrays (addresses and sizes) for the CTA loop's waits compiled apart (``ctaloop.cta_c``); set
# by ``loop.run_cta`` when it starts

SIG = types.int64(*([types.int64] * 6))      # (em, row, imm_row, arena, arena_bytes, scratch): addresses as int64


@intrinsic
def call_family(typingctx, fn, em, prow, pimm, parena, n, pscratch):
    """Call the family function at the address ``fn`` (all arguments int64: the lanes, the addresses of the
    row, its immediates, the arena, the arena's length, the loop's scratch); returns its int64."""
    sig = types.int64(*([types.int64] * 7))

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        f = builder.inttoptr(args[0], ir.FunctionType(i64, [i64] * 6).as_pointer())
        return builder.call(f, list(args[1:]))
    return sig, codegen


@intrinsic
def call_cta(typingctx, fn, op, w, pscratch):
    """Call the function at the address ``fn`` with three int64 (``ctaloop.cta_c``: the operation, the warp, the
    loop's scratch); returns its int64."""
    sig = types.int64(*([types.int64] * 4))

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        f = builder.inttoptr(args[0], ir.FunctionType(i64, [i64] * 3).as_pointer())
        return builder.call(f, list(args[1:]))
    return sig, codegen


@intrinsic
def call_native(typingctx, fn, args):
    """Call the numba-compiled function at the address ``fn`` (int64) with the arguments of the tuple ``args``, in
    numba's own calling convention; it returns nothing (its status is not looked at). The CTA loop calls the warp
    loop this way (``loop.run_cta``): numba then does not link a second copy of the warp loop's code into it, which
    cost LLVM as much again as the warp loop itself. The address must be that of a compilation for exactly these
    argument types (``engine.warp_loop_address`` types the same arrays)."""
    sig = types.none(fn, args)

    def codegen(context, builder, signature, llargs):
        from numba.core import cgutils
        from numba.core.callconv import excinfo_t
        argtys = list(signature.args[1].types)
        cc = context.call_conv
        fnty = cc.get_function_type(types.none, argtys)
        f = builder.inttoptr(llargs[0], fnty.as_pointer())
        retty = context.data_model_manager[types.none].get_return_type()
        ret = cgutils.alloca_once(builder, retty)
        builder.store(cgutils.get_null_value(retty), ret)
        exc = cgutils.alloca_once(builder, ir.PointerType(excinfo_t))
        vals = [builder.extract_value(llargs[1], i) for i in range(len(argtys))]
        builder.call(f, [ret, exc] + list(cc._get_arg_packer(argtys).as_arguments(builder, vals)))
        return context.get_dummy_value()
    return sig, codegen


def _array_at(dtype, ndim):
    """An intrinsic ``(addr, n0, .., n(ndim-1)) -> the C-contiguous array of that shape at addr`` without a
    memory owner: the family functions run without numba's reference-counting runtime (``_nrt=False``, as the
    loops do: no atomic reference counts on every array they touch), where ``numba.carray`` is not allowed."""
    from numba.np.arrayobj import populate_array
    arrty = types.Array(dtype, ndim, "C")

    def codegen(context, builder, signature, args):
        ary = context.make_array(arrty)(context, builder)
        ptr = builder.inttoptr(args[0], context.get_data_type(dtype).as_pointer())
        item = context.get_abi_sizeof(context.get_data_type(dtype))
        shape = list(args[1:])
        strides = []
        stride = context.get_constant(types.intp, item)
        for n in reversed(shape):
            strides.insert(0, stride)
            stride = builder.mul(stride, n)
        populate_array(ary, data=ptr, shape=shape, strides=strides,
                       itemsize=context.get_constant(types.intp, item), meminfo=None)
        return ary._getvalue()

    if ndim == 1:
        @intrinsic
        def at(typingctx, addr, n0):
            return arrty(types.int64, types.intp), codegen
    elif ndim == 2:
        @intrinsic
        def at(typingctx, addr, n0, n1):
            return arrty(types.int64, types.intp, types.intp), codegen
    else:
        @intrinsic
        def at(typingctx, addr, n0, n1, n2):
            return arrty(types.int64, types.intp, types.intp, types.intp), codegen
    return at


u8_1d = _array_at(types.uint8, 1)
u8_2d = _array_at(types.uint8, 2)
b1_2d = _array_at(types.boolean, 2)
i32_1d = _array_at(types.int32, 1)
i64_1d = _array_at(types.int64, 1)
u64_1d = _array_at(types.uint64, 1)
i64_2d = _array_at(types.int64, 2)
u32_2d = _array_at(types.uint32, 2)
u64_2d = _array_at(types.uint64, 2)
i64_3d = _array_at(types.int64, 3)
u64_3d = _array_at(types.uint64, 3)


@intrinsic
def reinterpret(typingctx, arr, dt):
    """``arr.view(dt)`` of a one-dimensional C-contiguous array: the same bytes as elements of ``dt`` (the
    length in bytes a multiple of its size). numba compiles its own ``view`` once per pair of types in every
    process that compiles (a check with exceptions, about half a second each, never cached); this is its
    cast and nothing else."""
    to = dt.instance_type if isinstance(dt, types.NumberClass) else dt.dtype
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C"):
        return None
    retty = types.Array(to, 1, "C")

    def codegen(context, builder, signature, args):
        from numba.core.imputils import impl_ret_borrowed
        from numba.np.arrayobj import populate_array
        src = context.make_array(signature.args[0])(context, builder, args[0])
        size_from = context.get_abi_sizeof(context.get_data_type(arr.dtype))
        size_to = context.get_abi_sizeof(context.get_data_type(to))
        nbytes = builder.mul(src.nitems, context.get_constant(types.intp, size_from))
        out = context.make_array(retty)(context, builder)
        populate_array(out, data=builder.bitcast(src.data, context.get_data_type(to).as_pointer()),
                       shape=[builder.udiv(nbytes, context.get_constant(types.intp, size_to))],
                       strides=[context.get_constant(types.intp, size_to)],
                       itemsize=context.get_constant(types.intp, size_to), meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, retty, out._getvalue())
    return retty(arr, dt), codegen


@intrinsic
def data_ptr(typingctx, arr):
    """The address of an array's data, as int64 (``arr.ctypes.data`` without the ctypes object numba builds
    for every array type, which cost a second of compile in the loop's ctx fill)."""
    sig = types.int64(arr)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.ptrtoint(ary.data, ir.IntType(64))
    return sig, codegen


def compiled_address(dispatcher, args, cache, what):
    """The address of the jitted function ``dispatcher`` compiled for the types of ``args`` (compiled or loaded
    from numba's cache now), kept in ``cache`` by those types; ``what`` names it in the error."""
    from numba import typeof
    sig = tuple(typeof(a) for a in args)
    got = cache.get(sig)
    if got is None:
        if sig not in dispatcher.overloads:
            dispatcher.compile(sig)
        cres = dispatcher.overloads[sig]
        got = cache[sig] = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
        if not got:
            raise AssertionError(f"the fast engine's {what} has no address")
    return got
