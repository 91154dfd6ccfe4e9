"""numba's cache is checked per source file; jitcache.guard drops the package's cached functions when any of
its sources changed (the fast engine's loops inline code from other files)."""
import os

from emulator.numerics import jitcache


def _touch(path, text=""):
    with open(path, "w") as f:
        f.write(text)


def test_guard_drops_cached_functions_when_the_sources_change(tmp_path):
    root = tmp_path / "pkg"
    (root / "numerics").mkdir(parents=True)
    _touch(root / "loop.py", "@njit(cache=True)\ndef f():\n    pass\n")
    _touch(root / "numerics" / "table.py", "X = 1\n")
    _touch(root / "cli.py", "Y = 1\n")
    d = jitcache._cache_dir(str(root / "loop.py"))
    assert d is not None
    cached = [os.path.join(d, n) for n in ("loop.f-1.py311.nbi", "loop.f-1.py311.1.nbc")]
    other = os.path.join(d, "elsewhere.g-3.py311.nbi")
    for p in cached + [other]:
        _touch(p)
    assert jitcache.guard(str(root)) == [d]                 # no fingerprint yet: dropped
    assert not any(os.path.exists(p) for p in cached) and os.path.exists(other)
    for p in cached:
        _touch(p)
    assert jitcache.guard(str(root)) == []                  # same sources: kept
    assert all(os.path.exists(p) for p in cached)
    _touch(root / "cli.py", "Y = 2\n")                     # nothing jitted reads it: kept
    assert jitcache.guard(str(root)) == []
    _touch(root / "numerics" / "table.py", "X = 2\n")      # a file the cached function may have inlined
    assert jitcache.guard(str(root)) == [d]
    assert not any(os.path.exists(p) for p in cached) and os.path.exists(other)


def test_the_package_is_guarded_before_its_jitted_functions_load():
    import emulator
    import emulator.numerics.fast  # noqa: F401 (a module with jitted functions: it guards the package first)
    assert jitcache._PREPARED
    root = os.path.dirname(os.path.abspath(emulator.__file__))
    d = jitcache._cache_dir(os.path.join(root, "machine", "fastcore", "loop.py"))
    assert d is not None and os.path.exists(os.path.join(d, jitcache.STAMP))
    assert jitcache.guard(root) == []


def test_import_emulator_does_not_load_numba():
    import subprocess
    import sys
    code = "import sys, emulator; print('numba' in sys.modules)"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         env=dict(os.environ, PYTHONPATH=root))
    assert out.stdout.strip() == "False", out.stderr
