"""A numba cache that cannot be read (truncated, foreign) or written (a full disk) falls back to compiling,
with one warning, instead of stopping the launch."""
import glob
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = textwrap.dedent(f"""
    import sys, warnings
    sys.path.insert(0, {ROOT!r})
    warnings.simplefilter("always")
    if sys.argv[1] == "full":
        import errno, numba.core.caching as c
        def full(self, *a, **k):
            raise OSError(errno.ENOSPC, "No space left on device")
        c.IndexDataCacheFile.save = full
    import numpy as np
    from emulator import Warp
    w = Warp()
    w.smem[:512] = np.arange(512) % 251
    w.write("%r8", (np.arange(32) % 8) * 16 + (np.arange(32) // 8) * 128)
    w.run("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%r0, %r1, %r2, %r3}}, [%r8];")
    print(int(w.read("%r0").astype(np.uint64).sum()))
""")


def _run(cache, mode):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, WARPEMU_BACKGROUND_COMPILE="0")
    return subprocess.run([sys.executable, "-c", PROGRAM, mode], env=env, capture_output=True, text=True,
                          timeout=600)


def test_a_truncated_cache_is_recompiled_with_one_warning(tmp_path):
    first = _run(str(tmp_path), "plain")
    assert first.returncode == 0, first.stderr
    files = glob.glob(os.path.join(str(tmp_path), "**", "*.nbi"), recursive=True)
    assert files, "the first run cached nothing"
    for f in files:
        with open(f, "r+b") as fh:
            fh.truncate(5)
    second = _run(str(tmp_path), "plain")
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert second.stderr.count("could not be read") == 1


def test_a_full_disk_runs_without_the_cache_with_one_warning(tmp_path):
    run = _run(str(tmp_path), "full")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("could not be written") == 1
