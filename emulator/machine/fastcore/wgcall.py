"""The CTA loop's wgmma instructions (``wgmmax.wg_step``) as one C-callable function, compiled apart from the
loops (as ``fcall.py`` and ``xcall.py`` are): ``loop.run`` and ``loop.run_cta`` call it through its address
(``wgmmax.call_wg``; the translation puts it in its table-pointer array), so the tile arithmetic it carries adds
nothing to the loops' compile time. Importing this module compiles it (or loads it from numba's cache); the
translation imports it only for kernels with wgmma instructions.
"""
from numba import carray, cfunc, types

from .wgmmax import NCTL, wg_step
from . import table as T

_PI64 = types.CPointer(types.int64)


@cfunc(types.int64(types.int64, types.int64, types.int64, _PI64, _PI64), cache=True, nopython=True)
def wg_c(p, w, em, pctl, pstate):
    return wg_step(p, w, em, carray(pctl, NCTL), carray(pstate, T.NSTATE))


ADDRESS = wg_c.address
