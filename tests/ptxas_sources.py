"""The compiler-written PTX that tools/ptxas_verdicts mutates and tests/test_validation.py replays.

``sources()`` -> {name: text}: every corpus case that carries its own PTX (tests/data/corpus/*.npz, Triton,
nvcc and CuTe output; only the ``__ptx`` entries are read) and every tests/data/kernels/*.ptx, named
``kernels/<file>``. Debug builds (``-G``, ``-lineinfo``) are left out: they repeat their release builds.
"""
from __future__ import annotations

import functools
import glob
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.lru_cache(maxsize=1)
def sources() -> dict:
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "corpus", "*.npz"))):
        with np.load(path, allow_pickle=False) as z:
            for key in z.files:
                name, kind, *_ = key.split("__")
                if kind == "ptx" and not name.endswith(("_G", "_lineinfo")):
                    out[name] = z[key].tobytes().decode()
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "kernels", "*.ptx"))):
        with open(path) as f:
            out["kernels/" + os.path.basename(path)] = f.read()
    return out
