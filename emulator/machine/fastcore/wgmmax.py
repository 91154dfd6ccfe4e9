"""wgmma.mma_async, wgmma.fence, wgmma.commit_group and wgmma.wait_group in the fast engine's CTA loop.

The reference (``ops.wgmma``: ``op`` the executors, ``state`` the records in flight) defines every rule; this
module runs the same steps on arrays, for CTAs that the CTA loop (``loop.run_cta``) runs whole:

* ``wgmma.fence`` keeps the values of every register a wgmma of the kernel uses (``WarpWgmma.expected``);
* ``wgmma.mma_async`` checks what the executor checks (all 32 lanes, a whole warpgroup, uniform scale-d and
  descriptors, the same instruction and descriptors as the warpgroup's other warps at that issue number, the
  fence rule, no other shape onto registers in flight), records the issue and, when the warp is the last of
  its warpgroup to issue it, computes the warpgroup's 64-row tile: A and B through the descriptors (the
  address rules of ``ops.wgmma.desc``), C and A-from-registers from the four warps' arenas, the arithmetic of
  ``numerics.wgmma`` (the tensor-core kernels of ``numerics.gemm_fast``: decode, one block, the inf/NaN
  fix-ups; integer forms exact), D into the four arenas; the shared bytes read are counted (``smem_reads``,
  the reference's own array, which the loop's stores check through ``memx``);
* ``wgmma.commit_group`` and ``wgmma.wait_group N`` move records into groups and retire them; a wait whose
  records the warpgroup has not computed yet stalls the warp (its lanes wait, as ``CTA._park`` does) until
  they are.

Anything these functions do not decide themselves goes back (return 1, nothing changed): a missing fence or a
register written after it (the notes and errors of ptxas's injected fence), a partial warp or warpgroup,
non-uniform operands, an agreement failure, a descriptor outside shared memory, a full record table. The CTA
loop then hands its wgmma state to the reference (``WgTable.export``: ``ops.wgmma.state`` records built by the
executor's own record factory, stalls included) and the Python scheduler runs the rest of the CTA: one state,
owned by one engine at a time. A non-wgmma instruction that touches a register of an in-flight wgmma (the rows
marked ``WG``) goes the same way, so ptxas's injected wait (its note, its stall, or the strict error) is the
reference's.

Arrays (per CTA of ``nw`` warps): ``rec`` int64[nw, R, NRF] (a warp's live records in issue order), ``cnt``
int64[nw, NCF], ``exp`` uint32[nw, NWR, 32] / ``known`` uint8[nw, NWR] (the fence's values), ``log``
int64[ngroups, LR, 3] (pc and descriptors of each issue number, a ring), ``loglen``, ``wgok``; the
instruction table ``ins`` int64[npc, NIF] with the register slots ``regs`` and fragment maps ``maps``; all
reached through ``ctl`` (raw pointers), which ``wgcall.wg_c`` takes.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.extending import intrinsic

from ...numerics import gemm_fast, jitcache
from . import table as T
from ...numerics.jitcache import INNER

jitcache.prepare()

# -- ctl: the table's arrays, as raw pointers ---------------------------------------------------------------
(K_NW, K_ARENAS, K_ABYTES, K_SMEM, K_SMSIZE, K_READS, K_NREAD, K_STAMP, K_STAMPV, K_REC, K_R, K_CNT, K_EXP,
 K_KNOWN, K_NWR, K_LOG, K_LR, K_LOGLEN, K_WGOK, K_INS, K_REGS, K_WGR, K_MAPS, K_NPC, K_NMAPS, K_NMMA,
 K_SEQ, K_PTRS, K_WANT) = range(29)
NCTL = 29
# K_WANT: set when a tile needed the inf/NaN fix-ups while "wg_fix" was not bound (``WgTable.bind_fix``)
# K_PTRS: the translation's pointer array (``Translation.mufu_ptr``), where the tile functions' addresses are
# -- a record ---------------------------------------------------------------------------------------------
R_PC, R_AD, R_BD, R_SCD, R_NUM, R_GRP, R_DONE, R_HELD = range(8)
NRF = 8
# -- a warp's counters --------------------------------------------------------------------------------------
N_REC, N_ISSUED, N_COMMIT, N_FIRST, N_FENCED, N_LASTPC, N_STALL, N_STALLLIM, N_USED, N_STALLSEQ = range(10)
NCF = 10
# -- the instruction table ------------------------------------------------------------------------------------
(I_KIND, I_KEEP, I_N, I_K, I_WA, I_WB, I_WD, I_ND, I_NA, I_EPRD, I_EPRA, I_FA, I_FB, I_FC, I_FD, I_L, I_F, I_EZ,
 I_MODE, I_INT, I_ASG, I_BSG, I_SAT, I_CUT, I_NEGA, I_NEGB, I_TA, I_TB, I_SS, I_SDC, I_SDSLOT, I_SDNEG, I_ADESC,
 I_BDESC, I_LUTA, I_LUTAN, I_LUTB, I_LUTBN, I_REGROW, I_DMAP, I_AMAP, I_SHAPE, I_F32, I_VALA, I_EXPA, I_NVA,
 I_VALB, I_EXPB, I_NVB, I_TILE, I_D32, I_FIX) = range(52)
NIF = 52
# I_FIX: the pointer-array slot of "wg_fix" (the inf/NaN fix-ups, bound when a tile first needs them)
# I_D32: 1 when D is 32-bit in the layout of ``d32_layout`` (the fragments move without the map)
# I_TILE: the pointer-array slot of the function that computes the form's tile (``TILE_OF``, families.APART)
W_FENCE, W_COMMIT, W_WAIT, W_MMA = 1, 2, 3, 4
KINDS = {"fence": W_FENCE, "commit_group": W_COMMIT, "wait_group": W_WAIT, "mma": W_MMA}
# -- the register table: D slots, A slots, then their indices among the kernel's wgmma registers -------------
RD, RA, RDK, RAK, NREGCOL = 0, 128, 132, 260, 264
RECORDS = 32                 # records a warp may hold in flight (more: the reference takes over)
LOG_RING = 64                # issue numbers the warps of a warpgroup may be apart

FULL = np.int64(0xFFFFFFFF)
KEEP13 = np.uint64(~((1 << (23 - 13)) - 1) & 0xFFFFFFFF)    # numerics.wgmma.FP8_CUT_MASK's complement
U0 = np.uint64(0)
SWZ = (0, 128, 64, 32)


@intrinsic
def call_wg(typingctx, fn, p, w, em, pctl, pstate):
    """Call the compiled ``wgcall.wg_c`` at the address ``fn`` (all int64: the pc, the warp, its lanes, the
    addresses of the CTA's ``ctl`` and of the loop's state vector); returns its int64."""
    sig = types.int64(*([types.int64] * 6))

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        p64 = i64.as_pointer()
        fnty = ir.FunctionType(i64, [i64, i64, i64, p64, p64])
        f = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(f, [args[1], args[2], args[3], builder.inttoptr(args[4], p64),
                                builder.inttoptr(args[5], p64)])
    return sig, codegen


def _ptr_intrinsic(ty):
    @intrinsic
    def ptr(typingctx, addr):
        sig = types.CPointer(ty)(types.int64)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], ir.PointerType(context.get_value_type(ty)))
        return sig, codegen
    return ptr


@intrinsic
def _pvoid(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())
    return types.voidptr(types.int64), codegen


_pi64, _pu64, _pu32, _pu8, _pi32, _pf64, _pi16, _pu16 = (_ptr_intrinsic(t) for t in (
    types.int64, types.uint64, types.uint32, types.uint8, types.int32, types.float64, types.int16, types.uint16))


# ---------------------------------------------------------------------------------------------------------
# descriptors (ops.wgmma.desc, element by element)
@njit(cache=True)
def _addresses(desc, rows, K, eb, mn_major, out):
    """out[x, k]: the byte address of element (x, k) of ``eb``-byte elements, as ``desc.element_addresses``
    computes it (K-major or MN-major, every swizzle and base offset; the divisions by powers of two as shifts,
    every index being non-negative); tests/test_fastcore_wgmma.py compares the two."""
    start = (desc & 0x3FFF) << 4
    lbo = ((desc >> 16) & 0x3FFF) << 4
    sbo = ((desc >> 32) & 0x3FFF) << 4
    bo = (desc >> 49) & 7
    sw = (desc >> 62) & 3
    W = 0 if sw == 0 else (128 if sw == 1 else (64 if sw == 2 else 32))
    lw = 4 if W == 0 else (7 if W == 128 else (6 if W == 64 else 5))      # log2 of the row width
    row = 16 if W == 0 else W
    msk = row - 1
    swm = W // 16 - 1
    for x in range(rows):
        for k in range(K):
            if not mn_major:
                b = k * eb
                a = start + (x >> 3) * sbo + (x & 7) * row + (b >> lw) * lbo + (b & msk)
            else:
                xb = x * eb
                if W == 0:
                    a = start + (xb >> 4) * sbo + (k >> 3) * lbo + (k & 7) * 16 + (xb & 15)
                else:
                    a = start + (xb >> lw) * lbo + (k >> 3) * sbo + (k & 7) * W + (xb & msk)
            if W != 0:
                a ^= (((a >> 7) - bo) & swm) << 4
            out[x, k] = a


@njit(cache=True, **INNER)
def _in_bounds(addr, eb, size):
    """Whether every byte the operand reads lies inside shared memory (``desc.read_operand``'s check)."""
    lo = np.int64(1) << 62
    hi = -lo
    for x in range(addr.shape[0]):
        for k in range(addr.shape[1]):
            a = addr[x, k]
            lo = min(lo, a)
            hi = max(hi, a)
    return lo >= 0 and hi + eb <= size


@intrinsic
def _add16(typingctx, reads, a, delta):
    """reads[a:a + 16] += delta (an int32 array; the caller checks the bounds), as one vector addition."""
    def codegen(context, builder, signature, args):
        v16 = ir.VectorType(ir.IntType(32), 16)
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        ptr = builder.bitcast(builder.gep(data, [args[1]]), v16.as_pointer())
        d = builder.trunc(args[2], ir.IntType(32))
        dv = builder.insert_element(ir.Constant(v16, ir.Undefined), d, ir.Constant(ir.IntType(32), 0))
        dv = builder.shuffle_vector(dv, ir.Constant(v16, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), 16),
                                                                                     [0] * 16))
        builder.store(builder.add(builder.load(ptr, align=4), dv), ptr, align=4)
        return context.get_dummy_value()
    return types.void(reads, types.int64, types.int64), codegen


@njit(cache=True, **INNER)
def _read(smem, addr, eb, out):
    """(rows, K) element bits (little-endian, ``eb`` bytes each) into ``out``. An element's address is a
    multiple of its size (``_addresses``: 16-byte aligned rows, the swizzle moves 16-byte chunks), so the 16-,
    32- and 64-bit elements are read whole."""
    base = smem.ctypes.data
    n = smem.shape[0]
    if eb == 2:
        s16 = carray(_pu16(base), n // 2)
        for x in range(addr.shape[0]):
            for k in range(addr.shape[1]):
                out[x, k] = np.uint64(s16[addr[x, k] >> 1])
        return
    if eb == 1:
        for x in range(addr.shape[0]):
            for k in range(addr.shape[1]):
                out[x, k] = np.uint64(smem[addr[x, k]])
        return
    if eb == 4:
        s32 = carray(_pu32(base), n // 4)
        for x in range(addr.shape[0]):
            for k in range(addr.shape[1]):
                out[x, k] = np.uint64(s32[addr[x, k] >> 2])
        return
    for x in range(addr.shape[0]):
        for k in range(addr.shape[1]):
            a = addr[x, k]
            v = U0
            for j in range(eb):
                v |= np.uint64(smem[a + j]) << np.uint64(8 * j)
            out[x, k] = v


@njit(cache=True, **INNER)
def _count(reads, stamp, sv, addr, eb, delta, mn_major):
    """Add ``delta`` to the read count of every byte the operand reads, once per byte for stamp ``sv`` (the
    union of A's and B's bytes, as ``np.union1d``). An operand's bytes are whole aligned 16-byte chunks (each
    row of a core matrix, or of a swizzle atom, is one; the swizzle permutes chunks; every K and N is a
    multiple of 16 bytes): each chunk is counted at the element that starts it (every 16 / eb along K, or along
    the rows of an MN-major operand), in one vector addition, its stamp kept per chunk (``stamp[a >> 4]``: a
    sixteenth of the bytes' array, which stays in cache); tests/test_fastcore_wgmma.py checks the chunks against
    the bytes."""
    step = max(16 // eb, 1)
    sx = step if mn_major else 1
    sk = 1 if mn_major else step
    for x in range(0, addr.shape[0], sx):
        for k in range(0, addr.shape[1], sk):
            a = addr[x, k]
            if (a & 15) == 0 and stamp[a >> 4] != sv:
                stamp[a >> 4] = sv
                _add16(reads, a, delta)


# ---------------------------------------------------------------------------------------------------------
# fragments (WgmmaOp._unpack / _pack over one warp's registers)
@njit(cache=True, **INNER)
def _unpack(a32, slots, nreg, maps, moff, epr, w, out, row0, cols):
    """Registers ``slots[:nreg]`` of a warp (its arena's 32-bit view) into rows row0.. of ``out``."""
    flat = out.reshape(out.size)                 # (a map's f is row * cols + column: rows row0.. at row0 * cols)
    o = row0 * cols
    j = moff
    mask = (np.uint64(1) << np.uint64(w)) - np.uint64(1)
    if epr == 1:
        for r in range(nreg):
            base = slots[r]
            for lane in range(32):
                flat[o + maps[j]] = np.uint64(a32[base + lane]) & mask
                j += 1
        return
    for r in range(nreg):
        base = slots[r]
        for lane in range(32):
            v = np.uint64(a32[base + lane])
            for e in range(epr):
                flat[o + maps[j]] = (v >> np.uint64(e * w)) & mask
                j += 1


@njit(cache=True, **INNER)
def _pack(a32, slots, nreg, maps, moff, epr, w, tile, row0, cols, exp_w, known_w, ks):
    """Rows row0.. of ``tile`` into the D registers of a warp, and into its fence values (the executor's
    ``ws.expected.set_rows``)."""
    flat = tile.reshape(tile.size)
    o = row0 * cols
    mask = (np.uint64(1) << np.uint64(w)) - np.uint64(1)
    j = moff
    for r in range(nreg):
        base = slots[r]
        k = ks[r]
        if epr == 1:
            for lane in range(32):
                word = np.uint32(flat[o + maps[j]] & mask)
                j += 1
                a32[base + lane] = word
                exp_w[k, lane] = word
        else:
            for lane in range(32):
                word = U0
                for e in range(epr):
                    word |= (flat[o + maps[j]] & mask) << np.uint64(e * w)
                    j += 1
                a32[base + lane] = np.uint32(word)
                exp_w[k, lane] = np.uint32(word)
        known_w[k] = 1


def d32_layout(d_idx, n) -> bool:
    """Whether ``d_idx`` (WgmmaOp.d_idx: register, lane, element -> row * n + column of a warp's 16 rows) is the
    32-bit accumulator's layout ``_unpack_d32`` and ``_pack_d32`` assume: register i of lane 4 g + t holds row
    g + 8 ((i >> 1) & 1), column 8 (i >> 2) + 2 t + (i & 1) (PTX's wgmma D fragment, the m16n8 C layout)."""
    if d_idx.ndim != 3 or d_idx.shape[1:] != (32, 1):
        return False
    i = np.arange(d_idx.shape[0])[:, None]
    lane = np.arange(32)[None, :]
    want = (lane // 4 + 8 * ((i >> 1) & 1)) * n + 8 * (i >> 2) + 2 * (lane % 4) + (i & 1)
    return bool(np.array_equal(d_idx[..., 0], want))


@njit(cache=True, **INNER)
def _unpack_d32(a32, slots, nreg, out, row0, cols):
    """``_unpack`` of a 32-bit accumulator in the layout ``d32_layout`` checks (no map: each register's eight
    groups of four lanes are two columns apart in one row)."""
    flat = out.reshape(out.size)
    for i in range(nreg):
        base = slots[i]
        o0 = (row0 + 8 * ((i >> 1) & 1)) * cols + 8 * (i >> 2) + (i & 1)
        for g in range(8):
            o = o0 + g * cols
            b = base + 4 * g
            flat[o] = np.uint64(a32[b])
            flat[o + 2] = np.uint64(a32[b + 1])
            flat[o + 4] = np.uint64(a32[b + 2])
            flat[o + 6] = np.uint64(a32[b + 3])


@njit(cache=True, **INNER)
def _pack_d32(a32, slots, nreg, tile, row0, cols, exp_w, known_w, ks):
    """``_pack`` of a 32-bit accumulator in the layout ``d32_layout`` checks."""
    flat = tile.reshape(tile.size)
    for i in range(nreg):
        base = slots[i]
        k = ks[i]
        o0 = (row0 + 8 * ((i >> 1) & 1)) * cols + 8 * (i >> 2) + (i & 1)
        for g in range(8):
            o = o0 + g * cols
            for t in range(4):
                word = np.uint32(flat[o + 2 * t] & np.uint64(0xFFFFFFFF))
                a32[base + 4 * g + t] = word
                exp_w[k, 4 * g + t] = word
        known_w[k] = 1


# ---------------------------------------------------------------------------------------------------------
# The tile arithmetic, one function per form, each compiled apart from ``wg_step`` (wgcall.py: families.APART
# "wg_int", "wg_dec", "wg_f32_<L>") and only for kernels with that form: ``_mma`` calls it through its address.
# Each takes the instruction's row and D's array; A (64, K), B^T (K, N), C (64, N) raw bits (A, B already
# negated, C already zeroed): ``numerics.wgmma.wgmma_tile``.
@njit(cache=True, inline="always")
def tile_int(ins, A, Bt, C, out, fix):
    """The s32 forms: exact sums, saturated on request."""
    M, K = A.shape
    N = Bt.shape[1]
    for m in range(M):
        for n in range(N):
            c = np.int64(C[m, n] & np.uint64(0xFFFFFFFF))
            if c >= 2 ** 31:
                c -= 2 ** 32
            s = c
            for k in range(K):
                a = np.int64(A[m, k])
                b = np.int64(Bt[k, n])
                if ins[I_ASG] == 1 and a >= 128:
                    a -= 256
                if ins[I_BSG] == 1 and b >= 128:
                    b -= 256
                s += a * b
            if ins[I_SAT] == 1:
                s = min(max(s, -2 ** 31), 2 ** 31 - 1)
            out[m, n] = np.uint64(s & 0xFFFFFFFF)
    return 0


@njit(cache=True, inline="always")
def _fix_and_cut(ins, A, Bt, C, out, spa, spb, redo, fix):
    """The inf/NaN and overflow fix-ups of the elements the block left (``gemm_fast._fixups``, compiled apart:
    the function at the address ``fix``, ``wgcall.wg_fix``), then fp8's cut to 13 fraction bits
    (``numerics.wgmma.fp8_f32_cut``). Returns 1 (nothing cut) when the tile needs the fix-ups and ``fix`` is 0
    (not bound yet: the instruction goes back to the reference, which binds it)."""
    M, N = out.shape
    need = False
    for m in range(M):
        need = need or spa[m]
    for n in range(N):
        need = need or spb[n]
    for m in range(M):
        for n in range(N):
            need = need or redo[m, n]
    if need:
        if fix == 0:
            return 1
        call_fix(fix, ins, A, Bt, C, out, spa, spb, redo, np.int64(A.shape[1]), np.int64(N))
    if ins[I_CUT] == 1:
        for m in range(M):
            for n in range(N):
                d = out[m, n]
                if (d & np.uint64(0x7F800000)) != np.uint64(0x7F800000):
                    out[m, n] = d & KEEP13
    return 0


@njit(cache=True, inline="always")
def fix_tile(ins, A, Bt, C, out, spa, spb, redo):
    """``wgcall.wg_fix``'s body: the scalar chain of every element of a flagged row, column or element."""
    gemm_fast._fixups(A, Bt, C, spa, spb, redo, ins[I_FA], ins[I_FB], ins[I_FC], ins[I_FD], ins[I_L], ins[I_F],
                      ins[I_EZ], ins[I_MODE], out)
    return 0


@njit(cache=True, inline="always")
def tile_dec(ins, A, Bt, C, out, fix):
    """The float forms ``gemm_fast.tc_gemm`` decodes (every accumulator but f32 rounded toward zero): decode,
    one block, the fix-ups."""
    M, K = A.shape
    N = Bt.shape[1]
    luta = carray(_pi64(ins[I_LUTA]), (ins[I_LUTAN], 4))
    lutb = carray(_pi64(ins[I_LUTB]), (ins[I_LUTBN], 4))
    aS = np.empty((M, K), np.int64)
    aq = np.empty((M, K), np.int64)
    at = np.empty((M, K), np.int64)
    bS = np.empty((K, N), np.int64)
    bq = np.empty((K, N), np.int64)
    bt = np.empty((K, N), np.int64)
    spa = np.zeros(M, np.bool_)
    spb = np.zeros(N, np.bool_)
    redo = np.zeros((M, N), np.bool_)
    gemm_fast._decode_matrix(A, ins[I_FA], aS, aq, at, spa, True, luta)
    gemm_fast._decode_matrix(Bt, ins[I_FB], bS, bq, bt, spb, False, lutb)
    gemm_fast._block(0, M, 0, N, aS, aq, at, bS, bq, bt, C, ins[I_FC], ins[I_FD], ins[I_L], ins[I_F], ins[I_EZ],
                     ins[I_MODE], out, redo)
    return _fix_and_cut(ins, A, Bt, C, out, spa, spb, redo, fix)


@njit(cache=True, inline="always")
def _f32_operands(ins, A, Bt):
    """``gemm_fast._f32_run``'s operands: A's values and exponents, B's panels, the special rows and columns."""
    M, K = A.shape
    N = Bt.shape[1]
    W = gemm_fast._W
    P = (N + W - 1) // W
    av = np.empty((M, K), np.float64)
    at = np.empty((M, K), np.int16)
    bvp = np.empty((P, K * W), np.float64)
    btp = np.empty((P, K * W), np.int16)
    spa = np.zeros(M, np.bool_)
    spb = np.zeros(N, np.bool_)
    vala = carray(_pf64(ins[I_VALA]), ins[I_NVA])
    expa = carray(_pi16(ins[I_EXPA]), ins[I_NVA])
    valb = carray(_pf64(ins[I_VALB]), ins[I_NVB])
    expb = carray(_pi16(ins[I_EXPB]), ins[I_NVB])
    gemm_fast._f32_a(A, ins[I_FA], vala, expa, av, at, spa)
    gemm_fast._f32_b(Bt, ins[I_FB], valb, expb, bvp, btp, spb)
    return av, at, bvp, btp, spa, spb


# gemm_fast.tc_gemm's binary64 path (f32 accumulators rounded toward zero), one function per L (the kernel of
# ``gemm_fast._GEMM_F32``): a kernel compiles only the L of its forms (f16/bf16 16, fp8 32, tf32 8)
@njit(cache=True, inline="always")
def tile_f32_16(ins, A, Bt, C, out, fix):
    av, at, bvp, btp, spa, spb = _f32_operands(ins, A, Bt)
    redo = np.zeros(out.shape, np.bool_)
    ntasks = ((A.shape[0] + gemm_fast._FBR - 1) // gemm_fast._FBR) * bvp.shape[0]
    gemm_fast._gemm_f32_16(0, ntasks, av, at, bvp, btp, C, ins[I_F], ins[I_EZ], out, redo)
    return _fix_and_cut(ins, A, Bt, C, out, spa, spb, redo, fix)


@njit(cache=True, inline="always")
def tile_f32_32(ins, A, Bt, C, out, fix):
    av, at, bvp, btp, spa, spb = _f32_operands(ins, A, Bt)
    redo = np.zeros(out.shape, np.bool_)
    ntasks = ((A.shape[0] + gemm_fast._FBR - 1) // gemm_fast._FBR) * bvp.shape[0]
    gemm_fast._gemm_f32_32(0, ntasks, av, at, bvp, btp, C, ins[I_F], ins[I_EZ], out, redo)
    return _fix_and_cut(ins, A, Bt, C, out, spa, spb, redo, fix)


@njit(cache=True, inline="always")
def tile_f32_8(ins, A, Bt, C, out, fix):
    av, at, bvp, btp, spa, spb = _f32_operands(ins, A, Bt)
    redo = np.zeros(out.shape, np.bool_)
    ntasks = ((A.shape[0] + gemm_fast._FBR - 1) // gemm_fast._FBR) * bvp.shape[0]
    gemm_fast._gemm_f32_8(0, ntasks, av, at, bvp, btp, C, ins[I_F], ins[I_EZ], out, redo)
    return _fix_and_cut(ins, A, Bt, C, out, spa, spb, redo, fix)


@njit(cache=True, inline="always")
def tile_f32_4(ins, A, Bt, C, out, fix):
    av, at, bvp, btp, spa, spb = _f32_operands(ins, A, Bt)
    redo = np.zeros(out.shape, np.bool_)
    ntasks = ((A.shape[0] + gemm_fast._FBR - 1) // gemm_fast._FBR) * bvp.shape[0]
    gemm_fast._gemm_f32_4(0, ntasks, av, at, bvp, btp, C, ins[I_F], ins[I_EZ], out, redo)
    return _fix_and_cut(ins, A, Bt, C, out, spa, spb, redo, fix)


def tile_of(r) -> str:
    """The name (families.APART) of the function that computes the tile of the instruction row ``r``."""
    if r[I_INT] == 1:
        return "wg_int"
    if r[I_F32] == 1:
        return f"wg_f32_{int(r[I_L])}"
    return "wg_dec"


def _call_codegen(context, builder, signature, llargs):
    """Call the C function at the address llargs[0] (int64 arguments, int64 result) on the other arguments: the
    arrays as their data addresses (they are the intrinsic's own arguments, so that they stay alive until the call
    returns)."""
    i64 = ir.IntType(64)
    f = builder.inttoptr(llargs[0], ir.FunctionType(i64, [i64] * (len(llargs) - 1)).as_pointer())
    vals = [builder.ptrtoint(context.make_array(ty)(context, builder, v).data, i64)
            if isinstance(ty, types.Array) else v for ty, v in zip(signature.args[1:], llargs[1:])]
    return builder.call(f, vals)


@intrinsic
def call_tile(typingctx, fn, row, A, Bt, C, D, K, N, fix):
    """Call the tile function at the address ``fn`` (wgcall.py's entries, which take int64s: the addresses of the
    instruction's row, A, B^T, C and D, then K, N and the address of the fix-ups ``wg_fix`` or 0); returns its
    int64 (0, or 1: the fix-ups are needed and not bound)."""
    return types.int64(fn, row, A, Bt, C, D, K, N, fix), _call_codegen


@intrinsic
def call_fix(typingctx, fn, row, A, Bt, C, D, spa, spb, redo, K, N):
    """Call ``wgcall.wg_fix`` at the address ``fn``: the fix-ups of D given its special rows, columns, elements."""
    return types.int64(fn, row, A, Bt, C, D, spa, spb, redo, K, N), _call_codegen


@njit(cache=True, inline="always")
def tile_arrays(prow, pa, pbt, pc, pout, K, N):
    """The arrays a tile function reads and writes, at the addresses ``call_tile`` passes."""
    return (carray(_pi64(prow), NIF), carray(_pu64(pa), (64, K)), carray(_pu64(pbt), (K, N)),
            carray(_pu64(pc), (64, N)), carray(_pu64(pout), (64, N)))


@njit(cache=True, inline="always")
def fix_arrays(pspa, pspb, predo, K, N):
    """The special rows, columns and elements ``call_fix`` passes."""
    return (carray(_pvoid(pspa), 64, np.bool_), carray(_pvoid(pspb), N, np.bool_),
            carray(_pvoid(predo), (64, N), np.bool_))


# ---------------------------------------------------------------------------------------------------------
@njit(cache=True, **INNER)
def _reads(row, ad, bd, reads, stamp, sv, delta):
    K = row[I_K]
    addr = np.empty((max(row[I_N], 64), K), np.int64)
    _addresses(bd, row[I_N], K, row[I_WB] // 8, row[I_TB] == 1, addr[:row[I_N]])
    _count(reads, stamp, sv, addr[:row[I_N]], row[I_WB] // 8, delta, row[I_TB] == 1)
    if row[I_SS] == 1:
        _addresses(ad, np.int64(64), K, row[I_WA] // 8, row[I_TA] == 1, addr[:64])
        _count(reads, stamp, sv, addr[:64], row[I_WA] // 8, delta, row[I_TA] == 1)


@njit(cache=True, **INNER)
def _uniform64(a64, e, out):
    """Whether register ``e`` (a 64-bit slot) holds one value in all 32 lanes (into out[0])."""
    i = e & T.INDEX_MASK
    v = a64[i]
    for lane in range(1, 32):
        if a64[i + lane] != v:
            return False
    out[0] = np.int64(v)
    return True


# ---------------------------------------------------------------------------------------------------------
# the Python side: the tables of a translation, the arrays of a CTA, the hand-over to the reference
def translate_row(t, env, pc, fn, row):
    """Encode the wgmma instruction at ``pc`` (its executor ``fn``: ``fn.wgmma``, what ``ops.wgmma.op``
    compiled) into ``row`` (opcode ``T.WGMMA``, X: W_FENCE .. W_MMA); False when the CTA loop leaves it to the
    executor (a guard, a sparse or .b1 form, sinks, a scale-d that is not a predicate)."""
    info = getattr(fn, "wgmma", None)
    if info is None or fn is None:
        return False
    wp = t.__dict__.setdefault("_wgp", {"pcs": {}, "names": {}})
    names = wp["names"]
    for n in sorted(getattr(env, "_wgmma_regs", ())):
        if n not in names:
            if env.reg_width(n) != 32:
                return False
            names[n] = t._slot(n, 32) & T.INDEX_MASK
    kind = info["kind"]
    if kind == "mma":
        op = info["op"]
        v = op.variant
        if info["sparse"] or v.atype == "b1" or "_" in info["d_names"] or "_" in info["a_names"] or \
                len(info["d_names"]) > RA - RD:
            return False
        slots = {}
        for n in list(info["d_names"]) + list(info["a_names"]):
            if n not in names:
                return False
            slots[n] = names[n]
        for d in (info["a_desc"], info["b_desc"]):
            if d is not None:
                if env.reg_width(d) != 64:
                    return False
                slots[d] = t._slot(d, 64)
        if info["sd_name"] is not None:
            if env.reg_width(info["sd_name"]) != 1:
                return False
            slots[info["sd_name"]] = t._slot(info["sd_name"], 1)
        info = dict(info, slots=slots)
    wp["pcs"][pc] = info
    row[T.OP] = T.WGMMA
    row[T.X] = KINDS[kind]
    return True


class WgProgram:
    """A translation's wgmma instructions as the CTA loop reads them: ``ins`` (per pc), ``regs`` (per
    mma.async: register slots, and their indices among the kernel's wgmma registers ``names``), ``maps``
    (fragment maps), the decode tables (kept here, read through their pointers)."""

    def __init__(self, t):
        from ...numerics import wgmma as num
        from ...numerics.params import FORMATS, RZ
        from .families import APART_SLOT
        wp = t._wgp
        self.infos = wp["pcs"]
        self.names = list(wp["names"])
        self.wgr = np.array([wp["names"][n] for n in self.names] or [0], np.int64)
        k_of = {n: i for i, n in enumerate(self.names)}
        npc = len(t.code)
        self.ins = np.zeros((npc, NIF), np.int64)
        mmas = [pc for pc, i in sorted(self.infos.items()) if i["kind"] == "mma"]
        self.tiles = set()          # the tile functions of its forms (families.APART: the translation binds them)
        self.tr = t                 # (its pointer array holds their addresses: ctl K_PTRS)
        self.regs = np.zeros((max(len(mmas), 1), NREGCOL), np.int64)
        maps, keep = [], []
        off = 0
        shapes = {}
        for pc, info in sorted(self.infos.items()):
            r = self.ins[pc]
            r[I_KIND] = KINDS[info["kind"]]
            if info["kind"] == "wait_group":
                r[I_KEEP] = info["keep"]
            if info["kind"] != "mma":
                continue
            op = info["op"]
            v = op.variant
            j = mmas.index(pc)
            r[I_REGROW] = j
            regs = self.regs[j]
            sl = info["slots"]
            for i, n in enumerate(info["d_names"]):
                regs[RD + i], regs[RDK + i] = sl[n], k_of[n]
            for i, n in enumerate(info["a_names"]):
                regs[RA + i], regs[RAK + i] = sl[n], k_of[n]
            r[I_N], r[I_K], r[I_WA], r[I_WB], r[I_WD] = v.n, op.k, op.wa, op.wb, op.wd
            r[I_ND], r[I_NA] = len(info["d_names"]), len(info["a_names"])
            r[I_EPRD], r[I_EPRA] = op.d_idx.shape[-1], op.a_idx.shape[-1]
            r[I_DMAP] = off
            r[I_D32] = int(d32_layout(op.d_idx, v.n))
            maps.append(op.d_idx.reshape(-1).astype(np.int64))
            off += op.d_idx.size
            r[I_AMAP] = off
            if not info["ss"]:
                maps.append(op.a_idx.reshape(-1).astype(np.int64))
                off += op.a_idx.size
            if v.dtype == "s32":
                r[I_INT] = 1
                r[I_ASG], r[I_BSG] = int(v.atype == "s8"), int(v.btype == "s8")
                r[I_SAT] = int(bool(v.satfinite))
                luta = lutb = np.zeros((1, 4), np.int64)
            else:
                p = num.wgmma_params(v.atype, v.dtype)
                r[I_FA], r[I_FB] = FORMATS[v.atype].code, FORMATS[v.btype].code
                r[I_FC] = r[I_FD] = FORMATS[v.dtype].code
                r[I_L], r[I_F], r[I_EZ], r[I_MODE] = p.L, p.F, p.e_zero, p.rounding
                r[I_CUT] = int(v.dtype == "f32" and v.atype in num.FP8)
                r[I_NEGA] = num.SIGN[v.atype] if info["scale_a"] == -1 else 0
                r[I_NEGB] = num.SIGN[v.btype] if info["scale_b"] == -1 else 0
                luta = np.ascontiguousarray(gemm_fast.lut(num.NATIVE.get(v.atype, v.atype)), np.int64)
                lutb = np.ascontiguousarray(gemm_fast.lut(num.NATIVE.get(v.btype, v.btype)), np.int64)
                # tc_gemm's choice: f32 accumulators rounded toward zero take the binary64 kernels
                r[I_F32] = int(r[I_FC] == 3 and r[I_FD] == 3 and p.rounding == RZ and p.L in (4, 8, 16, 32))
                va, ea = gemm_fast._f32_table(num.NATIVE.get(v.atype, v.atype))
                vb, eb_ = gemm_fast._f32_table(num.NATIVE.get(v.btype, v.btype))
                va, ea, vb, eb_ = (np.ascontiguousarray(x) for x in (va, ea, vb, eb_))
                if va.dtype != np.float64 or ea.dtype != np.int16 or vb.dtype != np.float64 or eb_.dtype != np.int16:
                    raise AssertionError("gemm_fast._f32_table: values float64, exponents int16")
                keep += [va, ea, vb, eb_]
                r[I_VALA], r[I_EXPA], r[I_NVA] = va.ctypes.data, ea.ctypes.data, va.size
                r[I_VALB], r[I_EXPB], r[I_NVB] = vb.ctypes.data, eb_.ctypes.data, vb.size
            keep += [luta, lutb]
            r[I_LUTA], r[I_LUTAN] = luta.ctypes.data, luta.shape[0]
            r[I_LUTB], r[I_LUTBN] = lutb.ctypes.data, lutb.shape[0]
            r[I_TA], r[I_TB], r[I_SS] = info["trans_a"], info["trans_b"], int(info["ss"])
            if info["sd_name"] is None:
                r[I_SDC] = int(bool(info["sd_const"]))
            else:
                r[I_SDC], r[I_SDSLOT] = -1, sl[info["sd_name"]]
            r[I_SDNEG] = int(bool(info["sd_neg"]))
            r[I_ADESC] = sl[info["a_desc"]] if info["ss"] else -1
            r[I_BDESC] = sl[info["b_desc"]]
            r[I_SHAPE] = shapes.setdefault(info["shape"], len(shapes))
            name = tile_of(r)
            self.tiles.add(name)
            r[I_TILE] = APART_SLOT[name]
            r[I_FIX] = APART_SLOT["wg_fix"]
        self.maps = np.concatenate(maps) if maps else np.zeros(1, np.int64)
        self._keep = keep


class _View:
    """``cta.wgmma`` while the CTA loop owns the state: the reference's shared-store check
    (``ops.wgmma.state.check_smem_write``) reads the same read counts; no warp has reference records."""

    def __init__(self, table):
        self.table = table
        self.smem_reads = table.reads
        self.warps, self.logs, self.slots = {}, {}, {}

    @property
    def n_reading(self):
        return int(self.table.ctl[K_NREAD])


_WG_CALLS = {}
# instructions whose executors read every source before they write (``WgTable.injected_wait``)
_PLAIN = frozenset({"mov", "cvt", "add", "sub", "mul", "fma", "min", "max", "neg", "abs", "st"})


class _Operands:
    """An instruction's operands for ``ops.wgmma.state.operand_regs`` (a subset of them)."""

    def __init__(self, operands):
        self.operands = operands


def _call_wg(fn, p, w, em, pctl, pstate):
    """wgcall.wg_c at the address ``fn``, called from Python (ctypes)."""
    f = _WG_CALLS.get(fn)
    if f is None:
        import ctypes
        i64 = ctypes.c_int64
        f = _WG_CALLS[fn] = ctypes.CFUNCTYPE(i64, i64, i64, i64, ctypes.c_void_p, ctypes.c_void_p)(fn)
    return f(p, w, em, pctl, pstate)


def _u64(x):
    return int(x) & 0xFFFFFFFFFFFFFFFF


class WgTable:
    """The wgmma state of one CTA run by the CTA loop (see the module's docstring)."""
    NREAD = K_NREAD

    def __init__(self, wp, cta, arenas, pool=None):
        """``pool``: a dict the launch keeps, whose arrays (records, counters, read counts, stamps, the control
        row) the CTAs of the launch reuse (the CTAs run one after another; a CTA that ends with reads held, or
        whose state went to the reference, leaves its arrays to itself)."""
        nw = cta.nwarps
        self.wp, self.nw = wp, nw
        size = cta.smem.size
        ng = nw // 4 + 1
        got = pool.pop((size, nw), None) if pool is not None else None
        if got is None:
            self.rec = np.zeros((nw, RECORDS, NRF), np.int64)
            self.cnt = np.zeros((nw, NCF), np.int64)
            self.cnt[:, N_LASTPC] = -1
            nwr = max(len(wp.names), 1)
            self.exp = np.zeros((nw, nwr, 32), np.uint32)
            self.known = np.zeros((nw, nwr), np.uint8)
            self.log = np.zeros((ng, LOG_RING, 3), np.int64)
            self.loglen = np.zeros(ng, np.int64)
            self.wgok = np.zeros(ng, np.int64)
            self.reads, self.stamp = np.zeros(max(size, 1), np.int32), np.zeros(size // 16 + 1, np.int64)
            c = self.ctl = np.zeros(NCTL, np.int64)
            c[K_NW], c[K_SMSIZE] = nw, size
            c[K_READS], c[K_STAMP] = self.reads.ctypes.data, self.stamp.ctypes.data
            c[K_REC], c[K_R], c[K_CNT] = self.rec.ctypes.data, RECORDS, self.cnt.ctypes.data
            c[K_EXP], c[K_KNOWN], c[K_NWR] = self.exp.ctypes.data, self.known.ctypes.data, len(wp.names)
            c[K_LOG], c[K_LR], c[K_LOGLEN] = self.log.ctypes.data, LOG_RING, self.loglen.ctypes.data
            c[K_WGOK], c[K_INS], c[K_REGS] = self.wgok.ctypes.data, wp.ins.ctypes.data, wp.regs.ctypes.data
            c[K_WGR], c[K_MAPS], c[K_NPC] = wp.wgr.ctypes.data, wp.maps.ctypes.data, wp.ins.shape[0]
            c[K_NMAPS], c[K_NMMA] = wp.maps.size, wp.regs.shape[0]
            c[K_PTRS] = wp.tr.mufu_ptr.ctypes.data
            self._ctl0 = c.copy()           # the control row as a CTA starts (a reused table goes back to it)
        else:
            # a finished CTA's arrays: every record retired, the read counts all zero; the stamps only grow, so a
            # reused stamp array needs no clearing
            (self.rec, self.cnt, self.exp, self.known, self.log, self.loglen, self.wgok, self.reads, self.stamp,
             self.ctl, self._ctl0, stampv) = got
            self.rec.fill(0)
            self.cnt.fill(0)
            self.cnt[:, N_LASTPC] = -1
            self.exp.fill(0)
            self.known.fill(0)
            self.log.fill(0)
            self.loglen.fill(0)
            self.ctl[:] = self._ctl0
            self.ctl[K_STAMPV] = stampv
        full = [cta.nthreads >= 32 * (w + 1) for w in range(nw)]      # (warps whose 32 lanes are all threads)
        self.wgok[:] = [int(all(4 * g + j < nw and full[4 * g + j] for j in range(4))) for g in range(ng)]
        self.pool = pool
        self.arenas = arenas
        c = self.ctl
        c[K_ARENAS], c[K_ABYTES] = arenas.ctypes.data, arenas.shape[1]
        c[K_SMEM] = cta.smem.ctypes.data
        self.exported = False
        self.view = _View(self)
        cta.wgmma = self.view

    def used(self):
        return bool(self.cnt[:, N_USED].any())

    def bind_fix(self, wait):
        """After the CTA loop handed a wgmma back: when its tile needed the inf/NaN fix-ups (``wgcall.wg_fix``)
        and they were not bound, bind them now (loaded from numba's cache, or compiled: ``warmup.family``) and
        return True (the instruction went back with nothing changed: the loop runs it again). False when there
        was nothing to bind, or it cannot be now (another process compiles it; the next launch binds it)."""
        if not self.ctl[K_WANT]:
            return False
        self.ctl[K_WANT] = 0
        return self.wp.tr.bind_one("wg_fix", wait)

    def holds(self, w):
        return bool(self.cnt[w, N_REC])

    def injected_wait(self, cta, k, pc, lanes, pstate, fn):
        """Warp ``k`` (lanes ``lanes``, a bit mask) stopped at the non-wgmma instruction ``pc`` while its wgmma hold
        registers (a row marked ``WG``). As ``ops.wgmma.state.must_wait`` and the executors' register guard decide
        it, on these arrays (``fn``: wgcall.wg_c's address, ``pstate``: the loop's state vector's):

        * the instruction touches none of them: [] (the executor runs it, with nothing to wait for);
        * it touches one the warpgroup has not computed yet: "stall" (the warp's records join a group, its lanes
          wait as at a wait_group and the instruction issues again when they are woken);
        * else, when the register it touches first is known without running it (one register, ``_PLAIN``
          instructions): "done", the wait made (the launch's note, every group retired; the loop then runs it);
        * else the names it touches: the executor runs it with ``arm``'s guard, which makes ptxas's injected
          wait (the launch's note, every group retired) at its first touch.

        None: the reference decides (a partial warp, the PTX manual's strict rule)."""
        from ...ops.wgmma import state as S
        op = cta.prog.code[pc]
        if op.kind != "op" or lanes != FULL or S.strict(cta.warps[k]):
            return None
        held = {}
        for r in range(int(self.cnt[k, N_REC])):
            rpc = int(self.rec[k, r, R_PC])
            info = self.wp.infos[rpc]
            for n in list(info["d_names"]) + list(info["a_names"]):
                held.setdefault(n, cta.prog.code[rpc].instr.line)
        touched = S.operand_regs(op.instr) & held.keys()
        if not touched:
            return []
        if all(self.rec[k, r, R_DONE] for r in range(int(self.cnt[k, N_REC]))):
            if len(touched) == 1 and op.instr.base in _PLAIN:
                # one register, read (a source, an address) or else written: the guard's first touch is known
                # without the executor, so the loop makes the wait and runs the instruction itself
                (name,) = touched
                ops = op.instr.operands if op.instr.base == "st" else op.instr.operands[1:]
                verb = "reads" if name in S.operand_regs(_Operands(ops)) else "writes"
                text = " ".join((op.instr.text or op.instr.opcode).split())
                at = f" (line {held[name]})" if held[name] else ""
                S.note(cta.warps[k], S.injected_wait_note(op.instr.line, text, verb, name, at))
                if _call_wg(fn, -3, k, FULL, self.ctl.ctypes.data, pstate) != 0:
                    raise AssertionError("wgcall.wg_c: an injected wait with every record computed stalled")
                return "done"
            return {n: held[n] for n in held}
        if _call_wg(fn, -3, k, FULL, self.ctl.ctypes.data, pstate) != 2:
            raise AssertionError("wgcall.wg_c: an injected wait with records not computed did not stall")
        return "stall"

    def arm(self, warp, held, pstate, fn):
        """Install on ``warp`` the reference's register guard for the names ``held`` ({name: the line of the wgmma
        holding it}, ``injected_wait``): the first read or write of one records the note and retires every
        wgmma of the warp (wg_c, p = -3). Returns the function that removes it."""
        from ...ops.wgmma import state as S
        cls = type(warp)

        def hit(name, verb):
            disarm()
            line, text = S.current(warp)
            at = f" (line {held[name]})" if held[name] else ""
            S.note(warp, S.injected_wait_note(line, text, verb, name, at))
            if _call_wg(fn, -3, warp.warp_id, FULL, self.ctl.ctypes.data, pstate) != 0:
                raise AssertionError("wgcall.wg_c: an injected wait with every record computed stalled")

        def get_reg(name, instr="read"):
            if name in held:
                hit(name, "reads")
            return cls.get_reg(warp, name, instr)

        def set_reg(name, values, mask):
            if name in held:
                hit(name, "writes")
            return cls.set_reg(warp, name, values, mask)

        def disarm():
            if warp.__dict__.get("get_reg") is get_reg:
                del warp.get_reg, warp.set_reg
        warp.get_reg, warp.set_reg = get_reg, set_reg
        return disarm

    def end_check(self, cta):
        """At the CTA's end: when a warp of a warpgroup issued fewer wgmma.mma_async than the others, the
        reference's check (``check_cta_end``, run by the scheduler) names it. Otherwise the read counts (all
        zero once every instruction retired) go back to the launch's pool."""
        issued = self.cnt[:, N_ISSUED].tolist()
        for g, ll in enumerate(self.loglen.tolist()):
            if ll and any(issued[w] != ll if w < self.nw else True for w in range(4 * g, 4 * g + 4)):
                self.export(cta)
                return
        if self.pool is not None and not self.ctl[K_NREAD] and not self.exported:
            self.pool[(int(self.ctl[K_SMSIZE]), self.nw)] = (
                self.rec, self.cnt, self.exp, self.known, self.log, self.loglen, self.wgok, self.reads, self.stamp,
                self.ctl, self._ctl0, int(self.ctl[K_STAMPV]))
            self.view.smem_reads = np.zeros(1, np.int32)

    def export(self, cta):
        """Hand the state to the reference: ``cta.wgmma`` becomes the ``ops.wgmma.state`` records these arrays
        describe (built by the executors' own record factory), stalled waits become the scheduler's stalls."""
        if self.exported:
            return
        self.exported = True
        from ...ops.wgmma import state as S
        wp, code = self.wp, cta.prog.code
        cst = S.CtaWgmma.__new__(S.CtaWgmma)
        cst.smem_reads = self.reads
        cst.n_reading = int(self.ctl[K_NREAD])
        cst.logs, cst.warps, cst.slots = {}, {}, {}
        full = np.ones(32, np.bool_)

        def descs(pc, ad, bd):
            return (_u64(ad) if wp.infos[pc]["ss"] else None, _u64(bd))
        for g in range(len(self.loglen)):
            ll = int(self.loglen[g])
            if not ll:
                continue
            lo = min(int(self.cnt[w, N_ISSUED]) for w in range(4 * g, min(4 * g + 4, self.nw)))
            log = [(None, "", (None, None))] * ll
            for num in range(max(lo, ll - LOG_RING), ll):
                pc, ad, bd = (int(x) for x in self.log[g, num % LOG_RING])
                log[num] = (pc, wp.infos[pc]["text"], descs(pc, ad, bd))
            cst.logs[g] = log
        reads = {}
        recs = {}
        for w in range(self.nw):
            cnt = self.cnt[w]
            if not cnt[N_USED]:
                continue
            warp = cta.warps[w]
            ws = cst.warps[w] = S.WarpWgmma()
            ws.issued = int(cnt[N_ISSUED])
            if cnt[N_FENCED]:
                ws.expected = S.Expected()
                for k, n in enumerate(wp.names):
                    if self.known[w, k]:
                        ws.expected[n] = self.exp[w, k].copy()
            if cnt[N_LASTPC] >= 0:
                ws.last_shape = wp.infos[int(cnt[N_LASTPC])]["shape"]
            ws.groups = [[] for _ in range(int(cnt[N_COMMIT] - cnt[N_FIRST]))]
            for r in range(int(cnt[N_REC])):
                pc, ad, bd, scd, num, grp, done, held = (int(x) for x in self.rec[w, r])
                info = wp.infos[pc]
                a_d, b_d = descs(pc, ad, bd)
                rec = info["record"](warp, ws, bool(scd), a_d, b_d, None, full)
                rec.update(line=code[pc].instr.line, done=bool(done), warp=w, number=num)
                g = w // 4
                if done:
                    rec.pop("run")
                    rec.pop("batch")
                    if (g, num) not in reads:
                        reads[(g, num)] = {"idx": info["read_bytes"](warp.smem, a_d, b_d), "held": bool(held)}
                    rec["smem"] = reads[(g, num)]
                else:
                    cst.slots.setdefault((g, num), []).append(rec)
                for n in rec["regs"]:
                    ws.reg_count[n] = ws.reg_count.get(n, 0) + 1
                (ws.pending if grp < 0 else ws.groups[grp - int(cnt[N_FIRST])]).append(rec)
                recs[(w, r)] = rec
            if ws.reg_count:
                S._install_guard(warp, ws)
        stalls = []
        for w in range(self.nw):
            cnt = self.cnt[w]
            if cnt[N_STALL]:
                warp = cta.warps[w]
                lanes = ((int(cnt[N_STALL]) >> np.arange(32)) & 1).astype(np.bool_)
                todo = [recs[(w, r)] for r in range(int(cnt[N_REC]))
                        if 0 <= self.rec[w, r, R_GRP] < cnt[N_STALLLIM] and not self.rec[w, r, R_DONE]]
                pc = int(warp.pc[np.flatnonzero(lanes)[0]])
                # (a wgmma.wait_group, or the instruction before which ptxas injects its wait: injected_wait)
                text = wp.infos[pc]["text"] if pc in wp.infos else \
                    " ".join((code[pc].instr.text or code[pc].instr.opcode).split())
                reason = S.WgmmaWait(text, todo, w, cst)
                stalls.append((int(cnt[N_STALLSEQ]), [warp, lanes, reason]))
                warp._last_yield = reason
                cnt[N_STALL] = 0
        cta.stalls.extend(s for _, s in sorted(stalls, key=lambda x: x[0]))
        cta.wgmma = cst
