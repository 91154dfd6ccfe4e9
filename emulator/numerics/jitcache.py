"""Whether numba's cache holds a valid compilation of a jitted function (so calling it costs no compile), and
whether a background process is compiling the jitted kernels now (``machine.fastcore.warmup`` tells,
through ``PROBE``): while it does, the executors that have a numpy path (``numerics.tile_numpy``) take it instead of compiling here."""
from __future__ import annotations


def in_cache(disp) -> bool:
    """True when numba's cache holds a valid compilation of ``disp`` for this machine."""
    try:
        cache = disp._cache
        index = cache._cache_file._load_index()
        codegen = disp.targetctx.codegen()
        return any(cache._index_key(key[0], codegen) == key for key in index)
    except Exception:                      # an unreadable or foreign cache: treat as absent
        return False


PROBE = [None]          # set by machine.fastcore.warmup: () -> whether its background compile is running


def compiling() -> bool:
    """True while the background process compiles the jitted kernels (``machine.fastcore.warmup`` starts
    it when they are neither compiled nor cached, unless WARPEMU_BACKGROUND_COMPILE=0)."""
    probe = PROBE[0]
    return probe is not None and probe()
