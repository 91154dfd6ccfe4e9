"""The CTA loop's wgmma instructions (``wgmmax.wg_step``) as one C-callable function, compiled apart from the
loops (as ``fcall.py`` and ``xcall.py`` are): ``loop.run`` and ``loop.run_cta`` call it through its address
(``wgmmax.call_wg``; the translation puts it in its table-pointer array), so the tile arithmetic it carries adds
nothing to the loops' compile time. ``families.py`` compiles it (or loads it from numba's cache) as it does the
instruction families ("wgmma"): only for kernels with wgmma instructions, under the compile lock, and with
``engine="auto"`` never while another process compiles (the CTA then runs on the Python scheduler meanwhile).

The tile arithmetic is compiled apart again, one function per form (``wgmmax.tile_of``: "wg_int", "wg_dec",
"wg_f32_16", "wg_f32_32", "wg_f32_8", "wg_f32_4"), which ``wg_c`` calls through its address
(``wgmmax.call_tile``): an f16 or bf16 wgmma with f32 accumulators compiles neither the decode path nor the
fp8, tf32 and integer kernels.
"""
from numba import carray, types

from .wgmmax import (NCTL, tile_arrays, tile_dec, tile_f32_4, tile_f32_8, tile_f32_16, tile_f32_32, tile_int,
                     wg_step)
from . import table as T

_PI64 = types.CPointer(types.int64)


# compiled by families.py: cfunc(SIG, cache=True) (numerics/jitcache.guard finds the modules whose cached functions
# it drops when the sources change by that text, so it must stay in this file)
SIG = types.int64(types.int64, types.int64, types.int64, _PI64, _PI64)
# the tile functions: (row, A, B^T, C, D addresses, K, N), cfunc(TILE_SIG, cache=True) each
TILE_SIG = types.int64(*([types.int64] * 7))


def wg_c(p, w, em, pctl, pstate):
    return wg_step(p, w, em, carray(pctl, NCTL), carray(pstate, T.NSTATE))


def wg_int(prow, pa, pbt, pc, pout, K, N):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_int(row, A, Bt, C, out)


def wg_dec(prow, pa, pbt, pc, pout, K, N):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_dec(row, A, Bt, C, out)


def wg_f32_16(prow, pa, pbt, pc, pout, K, N):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_f32_16(row, A, Bt, C, out)


def wg_f32_32(prow, pa, pbt, pc, pout, K, N):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_f32_32(row, A, Bt, C, out)


def wg_f32_8(prow, pa, pbt, pc, pout, K, N):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_f32_8(row, A, Bt, C, out)


def wg_f32_4(prow, pa, pbt, pc, pout, K, N):
    row, A, Bt, C, out = tile_arrays(prow, pa, pbt, pc, pout, K, N)
    return tile_f32_4(row, A, Bt, C, out)
