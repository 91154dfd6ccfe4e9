"""The fast engine's wgmma tile (``fastcore.wgcall.wg_c`` on ``wgmmax``'s arrays) piece by piece: CPU microseconds
per instruction of the descriptor addresses, the shared-memory gather, C's unpacking from the four warps'
registers, B's transposition, the tile's arithmetic (operand decode, the binary64 panels, the fix-ups), D's
packing, the read counts, each piece called in a jitted loop of its own, on random finite operands (K-major,
128-byte swizzle, as CUTLASS and ThunderKittens lay them out).

    python benchmarks/bench_wgmma_parts.py [-k SUBSTRING] [--reps 2000] [--runs 3]
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FORMS = {
    "bf16 m64n128k16": "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
    "f16 m64n256k16": "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16",
    "e4m3 m64n128k32": "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3",
}


def _desc(start, sbo):
    """A K-major descriptor with the 128-byte swizzle (LBO unused: one swizzle atom covers K)."""
    return (start >> 4) | (1 << 16) | ((sbo >> 4) << 32) | (1 << 62)


def _jitted():
    from numba import njit
    from emulator.machine.fastcore import wgmmax as X

    @njit
    def addresses(reps, bd, ad, N, K, eb, baddr, aaddr, size):
        ok = True
        for _ in range(reps):
            X._addresses(bd, N, K, eb, False, baddr)
            ok &= X._in_bounds(baddr, eb, size)
            X._addresses(ad, np.int64(64), K, eb, False, aaddr)
            ok &= X._in_bounds(aaddr, eb, size)
        return ok

    @njit
    def gather(reps, smem, baddr, aaddr, eb, Bn, A):
        for _ in range(reps):
            X._read(smem, baddr, eb, Bn)
            X._read(smem, aaddr, eb, A)

    @njit
    def unpack(reps, a32s, slots, nd, maps, N, C, d32):
        for _ in range(reps):
            for j in range(4):
                if d32:
                    X._unpack_d32(a32s[j], slots, nd, C, 16 * j, N)
                else:
                    X._unpack(a32s[j], slots, nd, maps, np.int64(0), np.int64(1), np.int64(32), C, 16 * j, N)

    @njit
    def transpose(reps, Bn, Bt):
        N, K = Bn.shape
        for _ in range(reps):
            for n_ in range(N):
                for k in range(K):
                    Bt[k, n_] = Bn[n_, k] ^ X.U0

    @njit
    def tile(reps, fn, row, A, Bt, C, D, K, N, fix):
        for _ in range(reps):
            X.call_tile(fn, row, A, Bt, C, D, K, N, fix)

    @njit
    def pack(reps, a32s, slots, nd, maps, N, D, exp, known, ks, d32):
        for _ in range(reps):
            for j in range(4):
                if d32:
                    X._pack_d32(a32s[j], slots, nd, D, 16 * j, N, exp[j], known[j], ks)
                else:
                    X._pack(a32s[j], slots, nd, maps, np.int64(0), np.int64(1), np.int64(32), D, 16 * j, N, exp[j],
                            known[j], ks)

    @njit
    def counts(reps, reads, stamp, baddr, aaddr, eb):
        sv = np.int64(0)
        for _ in range(reps):
            sv += 1
            X._count(reads, stamp, sv, baddr, eb, np.int64(1), False)
            X._count(reads, stamp, sv, aaddr, eb, np.int64(1), False)
        return sv

    return dict(addresses=addresses, gather=gather, unpack=unpack, transpose=transpose, tile=tile, pack=pack,
                counts=counts)


def form(spelling, rng):
    """The arrays of one instruction: shared memory with A at 0 and B after it, C in four warps' registers."""
    import isa.wgmma as W
    from emulator.machine.fastcore import wgmmax as X
    from emulator.numerics import gemm_fast
    from emulator.numerics import wgmma as num
    from emulator.numerics.params import FORMATS, RZ
    from emulator.ops.wgmma.op import WgmmaOp
    v = W.VARIANTS[spelling]
    op = WgmmaOp(v)
    N, K, eb = v.n, v.k, v.elem_bits("A") // 8
    size = 1 << 16
    smem = np.zeros(size, np.uint8)
    if eb == 2:
        x = rng.standard_normal(size // 2).astype(np.float32)
        bits = (x.view(np.uint32) >> 16).astype(np.uint16) if v.atype == "bf16" else \
            x.astype(np.float16).view(np.uint16)
        smem[:] = bits.view(np.uint8)
    else:
        smem[:] = (rng.integers(0, 0x78, size) | (rng.integers(0, 2, size) << 7)).astype(np.uint8)
    ad, bd = _desc(0, 1024), _desc(16384, 1024)
    baddr = np.empty((N, K), np.int64)
    aaddr = np.empty((64, K), np.int64)
    nd = op.n_d
    a32s = np.zeros((4, 64 + 32 * nd), np.uint32)
    c = rng.standard_normal((4, 32 * nd)).astype(np.float32).view(np.uint32)
    a32s[:, 64:] = c
    slots = 64 + 32 * np.arange(nd, dtype=np.int64)
    maps = op.d_idx.reshape(-1).astype(np.int64)
    row = np.zeros(X.NIF, np.int64)
    p = num.wgmma_params(v.atype, v.dtype)
    row[X.I_FA], row[X.I_FB] = FORMATS[v.atype].code, FORMATS[v.btype].code
    row[X.I_FC] = row[X.I_FD] = FORMATS[v.dtype].code
    row[X.I_L], row[X.I_F], row[X.I_EZ], row[X.I_MODE] = p.L, p.F, p.e_zero, p.rounding
    row[X.I_CUT] = int(v.atype in num.FP8)
    row[X.I_F32] = int(p.rounding == RZ)
    keep = []
    va, ea = gemm_fast._f32_table(num.NATIVE.get(v.atype, v.atype))
    vb, eb_ = gemm_fast._f32_table(num.NATIVE.get(v.btype, v.btype))
    va, ea, vb, eb_ = (np.ascontiguousarray(t) for t in (va, ea, vb, eb_))
    keep += [va, ea, vb, eb_]
    row[X.I_VALA], row[X.I_EXPA], row[X.I_NVA] = va.ctypes.data, ea.ctypes.data, va.size
    row[X.I_VALB], row[X.I_EXPB], row[X.I_NVB] = vb.ctypes.data, eb_.ctypes.data, vb.size
    d32 = X.d32_layout(op.d_idx, N) and "--maps" not in sys.argv
    return dict(d32=d32, v=v, N=N, K=K, eb=eb, smem=smem, ad=ad, bd=bd, baddr=baddr, aaddr=aaddr, nd=nd, a32s=a32s,
                slots=slots, maps=maps, row=row, keep=keep, size=size)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="")
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--maps", action="store_true", help="move C and D through the fragment maps (the general path)")
    args = ap.parse_args()
    from emulator.machine.fastcore import families, wgmmax as X
    J = _jitted()
    rng = np.random.default_rng(0)
    for name, spelling in FORMS.items():
        if args.k not in name:
            continue
        f = form(spelling, rng)
        N, K, eb = f["N"], f["K"], np.int64(f["eb"])
        A = np.empty((64, K), np.uint64)
        Bn = np.empty((N, K), np.uint64)
        Bt = np.empty((K, N), np.uint64)
        C = np.zeros((64, N), np.uint64)
        D = np.empty((64, N), np.uint64)
        exp = np.zeros((4, f["nd"], 32), np.uint32)
        known = np.zeros((4, f["nd"]), np.uint8)
        ks = np.arange(f["nd"], dtype=np.int64)
        reads = np.zeros(f["size"], np.int32)
        stamp = np.zeros(f["size"], np.int64)
        fn = families._compile(X.tile_of(f["row"])).address
        fix = np.int64(families._compile("wg_fix").address)
        parts = [
            ("addresses", lambda r: J["addresses"](r, f["bd"], f["ad"], np.int64(N), np.int64(K), eb, f["baddr"],
                                                   f["aaddr"], f["size"])),
            ("gather", lambda r: J["gather"](r, f["smem"], f["baddr"], f["aaddr"], eb, Bn, A)),
            ("unpack C", lambda r: J["unpack"](r, f["a32s"], f["slots"], np.int64(f["nd"]), f["maps"], np.int64(N),
                                               C, f["d32"])),
            ("transpose B", lambda r: J["transpose"](r, Bn, Bt)),
            ("tile", lambda r: J["tile"](r, fn, f["row"], A, Bt, C, D, np.int64(K), np.int64(N), fix)),
            ("pack D", lambda r: J["pack"](r, f["a32s"], f["slots"], np.int64(f["nd"]), f["maps"], np.int64(N), D,
                                           exp, known, ks, f["d32"])),
            ("read counts", lambda r: J["counts"](r, reads, stamp, f["baddr"], f["aaddr"], eb)),
        ]
        total = 0.0
        print(f"{name}:")
        for pname, run in parts:
            run(2)
            best = None
            for _ in range(args.runs):
                t = time.process_time()
                run(args.reps)
                dt = (time.process_time() - t) / args.reps * 1e6
                best = dt if best is None else min(best, dt)
            total += best
            print(f"  {pname:<14}{best:9.2f} us")
        print(f"  {'sum':<14}{total:9.2f} us")


if __name__ == "__main__":
    main()
