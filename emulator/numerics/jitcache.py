"""Whether numba's cache holds a valid compilation of a jitted function (so calling it costs no compile)."""
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
