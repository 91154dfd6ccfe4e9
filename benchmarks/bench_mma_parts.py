"""The fast engine's mma.sync row (``numerics.tc_row``) piece by piece: CPU nanoseconds per instruction of the
fragment gather, the decode, the tile's arithmetic, the encode and the write-back, on random (finite, tame)
fragments, each piece called in a jitted loop of its own (the row as the families run it: ``row``).

    python benchmarks/bench_mma_parts.py [-k SUBSTRING] [--reps 20000] [--runs 3]
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FORMS = {
    "f16->f32 sm_80": ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "sm_80"),
    "bf16->f32 sm_80": ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "sm_80"),
    "f16->f16 sm_80": ("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", "sm_80"),
    "tf32 m16n8k8 sm_80": ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "sm_80"),
    "e4m3 m16n8k32 sm_90": ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "sm_90"),
}


def _jitted():
    from numba import njit
    from emulator.numerics import tc_row as R

    @njit
    def gather(reps, a32, regs, idx, na, nb, nc, maps, prm, codes):
        for _ in range(reps):
            R.gather(a32, regs, idx, na, nb, nc, maps, prm, codes)

    @njit
    def decode(reps, prm, codes, vals, exps):
        M, N, K = prm[0], prm[1], prm[2]
        mk, kn, mn = M * K, K * N, M * N
        bad = False
        for _ in range(reps):
            bad |= R.decode(codes, 0, mk, prm[3], vals, exps)
            bad |= R.decode(codes, mk, kn, prm[4], vals, exps)
            if prm[19] != 1:
                bad |= R.decode(codes, mk + kn, mn, prm[5], vals, exps)
        return bad

    @njit
    def tile(reps, prm, vals, exps, v0, e0):
        M, N, K = prm[0], prm[1], prm[2]
        mk, kn, mn = M * K, K * N, M * N
        ok = True
        for _ in range(reps):
            vals[mk + kn:mk + kn + mn] = v0          # the tile writes D over C: start from the same C each time
            exps[mk + kn:mk + kn + mn] = e0
            ok &= R.tile(M, N, K, prm[15], vals, exps, 0, mk, mk + kn, prm[16], prm[17], prm[6], prm[18])
        return ok

    @njit
    def copy_c(reps, prm, vals, exps, v0, e0):
        M, N, K = prm[0], prm[1], prm[2]
        mk, kn, mn = M * K, K * N, M * N
        for _ in range(reps):
            vals[mk + kn:mk + kn + mn] = v0
            exps[mk + kn:mk + kn + mn] = e0

    @njit
    def encode(reps, prm, codes, vals):
        M, N, K = prm[0], prm[1], prm[2]
        o, mn = M * K + K * N, M * N
        for _ in range(reps):
            R.encode(vals, o, mn, codes, o + mn, prm[6])

    @njit
    def store(reps, a32, regs, idx, nd, maps, prm, codes):
        for _ in range(reps):
            R.store(a32, regs, idx, nd, maps, prm, codes)

    @njit
    def row(reps, a32, regs, idx, nd, na, nb, nc, maps, prm, codes):
        vals = R.stack_f64(1024)
        exps = R.stack_i64(1024)
        bad = 0
        for _ in range(reps):
            bad |= R.compute(a32, regs, idx, na, nb, nc, maps, prm, codes, vals, exps)
            if prm[19] == 1:
                R.add_c(codes, prm[0] * prm[2] + prm[2] * prm[1], prm[0] * prm[1], prm[6])
            R.store(a32, regs, idx, nd, maps, prm, codes)
        return bad
    return dict(gather=gather, decode=decode, tile=tile, copy_c=copy_c, encode=encode, store=store, row=row)


def setup(spelling, arch, seed=1):
    """An arena with A, B, C of random tame values (exponents near 1), D apart; the offsets as the row has them."""
    from emulator.ops.mma import get_mma
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from test_mma_row import _arena, _regs
    op = get_mma(spelling, arch)
    v = op.variant
    rng = np.random.default_rng(seed)
    a, b, c = (_regs(rng, t, n, False, 0.0) for t, n in ((v.atype, op.n_a), (v.btype, op.n_b), (v.ctype, op.n_c)))
    arena, offs = _arena(op, a, b, c)
    return op, arena, offs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="")
    ap.add_argument("--reps", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args(argv)
    J = _jitted()
    idx = (1 << 40) - 1
    parts = ("gather", "decode", "tile", "encode", "store", "row")
    print(f"{'form':22s}" + "".join(f"{p:>9s}" for p in parts) + "   (CPU ns an instruction, best of runs)")
    for name, (spelling, arch) in FORMS.items():
        if a.k not in name:
            continue
        op, arena, offs = setup(spelling, arch)
        prm, maps = op._prm, op._maps
        M, N, K = prm[0], prm[1], prm[2]
        mk, kn, mn = M * K, K * N, M * N
        codes = np.zeros(4096, np.uint64)
        vals = np.zeros(1024)
        exps = np.zeros(1024, np.int64)
        args = dict(
            gather=lambda r: J["gather"](r, arena, offs, idx, op.n_a, op.n_b, op.n_c, maps, prm, codes),
            decode=lambda r: J["decode"](r, prm, codes, vals, exps),
            tile=lambda r: J["tile"](r, prm, vals, exps, v0, e0),
            copy_c=lambda r: J["copy_c"](r, prm, vals, exps, v0, e0),
            encode=lambda r: J["encode"](r, prm, codes, vals),
            store=lambda r: J["store"](r, arena, offs, idx, op.n_d, maps, prm, codes),
            row=lambda r: J["row"](r, arena.copy(), offs, idx, op.n_d, op.n_a, op.n_b, op.n_c, maps, prm, codes),
        )
        args["gather"](1)
        assert not args["decode"](1)
        v0 = vals[mk + kn:mk + kn + mn].copy()
        e0 = exps[mk + kn:mk + kn + mn].copy()
        best = {}
        for p in ("gather", "decode", "tile", "copy_c", "encode", "store", "row"):
            args[p](1)
            for _ in range(a.runs):
                t = time.process_time()
                args[p](a.reps)
                t = (time.process_time() - t) / a.reps * 1e9
                best[p] = min(best.get(p, t), t)
        best["tile"] -= best.pop("copy_c")
        print(f"{name:22s}" + "".join(f"{best[p]:9.0f}" for p in parts))


if __name__ == "__main__":
    main()
