"""What a process pays when numba's cache is already filled: numba's caches made only for the functions a launch
loads (``jitcache.LazyCache``), ``import emulator`` without numba, compiles or child processes, and the quick
shutdown (``machine.module.quick_exit``)."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from emulator.numerics import jitcache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code, **env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT, **env), timeout=120)


def _module(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text("from numba import njit\n" + textwrap.dedent(body))
    sys.path.insert(0, str(tmp_path))
    try:
        import importlib
        return importlib.import_module(name), path
    finally:
        sys.path.remove(str(tmp_path))


def _index_files(*dirs):
    return [f for d in dirs if os.path.isdir(d) for _, _, fs in os.walk(d) for f in fs if f.endswith(".nbi")]


def test_a_jitted_function_finds_its_cache_on_first_use_only(tmp_path, monkeypatch):
    import emulator.numerics.fast  # noqa: F401 (prepares the package: the lazy caches are on)
    from numba.core import config
    cache = tmp_path / "cache"
    monkeypatch.setattr(config, "CACHE_DIR", str(cache))
    jitcache.lazy_caches(tmp_path)
    mod, _ = _module(tmp_path, "lazy_one", """
        @njit(cache=True)
        def twice(x):
            return 2 * x
        """)
    assert isinstance(mod.twice._cache, jitcache.LazyCache)
    assert not mod.twice._cache.made and not cache.exists()      # decorating touched no disk
    assert mod.twice(21) == 42
    assert mod.twice._cache.made and _index_files(cache)         # the first compile placed and wrote it


def test_a_function_whose_cache_cannot_be_placed_compiles_without_one(tmp_path, monkeypatch):
    """(numba itself would refuse the import: no locator for the file)"""
    import emulator.numerics.fast  # noqa: F401
    jitcache.lazy_caches(tmp_path)
    mod, path = _module(tmp_path, "lazy_gone", """
        @njit(cache=True)
        def plus_one(x):
            return x + 1
        """)
    os.remove(path)                         # no source file: no locator can place the cache
    monkeypatch.setattr(jitcache, "_WARNED", [])
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        assert mod.plus_one(np.int64(4)) == 5
    assert any("could not be placed" in str(w.message) for w in got)


def test_the_package_functions_get_lazy_caches_and_importing_them_makes_none():
    """A fresh process imports the launch path and the fast engine's loops: none of the package's hundreds of
    jitted functions has its cache made before something compiles or loads it."""
    out = _run("""
        import gc
        from numba.core.dispatcher import Dispatcher
        import emulator.machine.module, emulator.machine.fastcore.engine, emulator.machine.fastcore.loop
        from emulator.numerics.jitcache import LazyCache
        ds = [o for o in gc.get_objects() if isinstance(o, Dispatcher)]
        ours = [d for d in ds if d.py_func.__module__.startswith("emulator.")]
        print(len(ours), sum(isinstance(d._cache, LazyCache) for d in ours),
              sum(isinstance(d._cache, LazyCache) and d._cache.made for d in ours))
        """)
    n, lazy, made = map(int, out.stdout.split())
    assert n > 150 and lazy == n and made == 0, out.stderr


def test_import_emulator_starts_no_compile_no_process_and_writes_no_cache(tmp_path):
    cache = tmp_path / "numba-cache"
    out = _run("""
        import glob, os, sys
        import numpy
        def threads():
            return len(os.listdir("/proc/self/task"))
        def children():
            me = str(os.getpid())
            kids = 0
            for stat in glob.glob("/proc/[0-9]*/stat"):
                try:
                    kids += open(stat).read().rsplit(")", 1)[1].split()[1] == me
                except OSError:
                    pass
            return kids
        before = threads()
        import emulator
        print("numba" in sys.modules, "llvmlite" in sys.modules, threads() - before, children())
        """, NUMBA_CACHE_DIR=str(cache))
    assert out.stdout.split() == ["False", "False", "0", "0"], out.stderr
    assert not cache.exists() or not os.listdir(cache)


@pytest.mark.parametrize("quick", ["1", "0"])
def test_the_quick_exit_still_finalizes_the_garbage_there_is(quick):
    out = _run("""
        import atexit, gc
        atexit.register(lambda: print("frozen", gc.get_freeze_count() > 0))   # (runs after the module's handler)
        import emulator.machine.module

        class Cycle:
            def __del__(self):
                print("finalized")

        gc.disable()
        c = Cycle()
        c.me = c
        del c                               # cyclic garbage the collector has not seen yet
        """, WARPEMU_QUICK_EXIT=quick)
    assert out.returncode == 0, out.stderr
    frozen = ["frozen", "True" if quick == "1" else "False"]
    # the quick exit collects before the other handlers run, the interpreter's own shutdown after them
    assert out.stdout.split() == (["finalized"] + frozen if quick == "1" else frozen + ["finalized"]), out.stdout
