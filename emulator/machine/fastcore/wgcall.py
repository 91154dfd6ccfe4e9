"""The CTA loop's wgmma instructions (``wgmmax.wg_step``) as one C-callable function, compiled apart from the
loops (as ``fcall.py`` and ``xcall.py`` are): ``loop.run`` and ``loop.run_cta`` call it through its address
(``wgmmax.call_wg``; the translation puts it in its table-pointer array), so the tile arithmetic it carries adds
nothing to the loops' compile time. ``families.py`` compiles it (or loads it from numba's cache) as it does the
instruction families ("wgmma"): only for kernels with wgmma instructions, under the compile lock, and with
``engine="auto"`` never while another process compiles (the CTA then runs on the Python scheduler meanwhile).
"""
from numba import carray, types

from .wgmmax import NCTL, wg_step
from . import table as T

_PI64 = types.CPointer(types.int64)


# compiled by families.py: cfunc(SIG, cache=True) (numerics/jitcache.guard finds the modules whose cached functions
# it drops when the sources change by that text, so it must stay in this file)
SIG = types.int64(types.int64, types.int64, types.int64, _PI64, _PI64)


def wg_c(p, w, em, pctl, pstate):
    return wg_step(p, w, em, carray(pctl, NCTL), carray(pstate, T.NSTATE))

