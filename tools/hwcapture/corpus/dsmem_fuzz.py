"""The remote loads, stores and atomics of ``tests/test_cluster_dsmem.py`` on the H100 (tests/data/cluster_dsmem_hw.npz):
its kernel (40 operations through ``.shared::cluster`` and generic addresses, every width, vector and type) with
inputs where no two lanes of a warp share a 16-byte slot (the hardware's order of colliding atomics is its own), in
the corpus format (docs/corpus.md): outputs every CTA's buffer, the global slots and every load's and atomic's
destination registers.

    python tools/hwcapture/corpus/dsmem_fuzz.py build bundle.npz          # the PTX and the inputs
    python tools/hwcapture/corpus/run_gpu.py bundle.npz gpu.npz           # on the GPU machine
    python tools/hwcapture/corpus/dsmem_fuzz.py pack bundle.npz gpu.npz   # -> tests/data/cluster_dsmem_hw.npz
"""
import json
import os
import sys

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "cluster_dsmem_hw.npz")


def cases():
    """{name: (cluster size, ins, vals)}: a few seeds, each lane on its own slot."""
    sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
    import test_cluster_dsmem as T
    out = {}
    for n, seed, density, generic, where in ((2, 1, 0.7, 0.5, 0.3), (4, 2, 0.7, 0.5, 0.3), (4, 3, 1.0, 0.0, 0.0),
                                             (4, 4, 1.0, 1.0, 0.0), (3, 5, 0.5, 0.5, 0.5)):
        ins, vals = T._inputs(n, seed, density, generic, where, 32)
        ins = ins.reshape(-1, 4)
        ins[:, 3] = (np.arange(ins.shape[0]) % 32) | (ins[:, 3] & 0x100)      # a slot a lane
        out[f"dsmem_fuzz_c{n}_s{seed}"] = (n, ins.reshape(-1), vals)
    return out, T


def build(bundle):
    got, T = cases()
    out = {}
    for name, (n, ins, vals) in got.items():
        cfg = {"kernel": "dsm", "grid": [n, 1, 1], "block": [T.NT, 1, 1], "cluster": [n, 1, 1], "shared": 0,
               "source": "ptx", "outputs": ["out", "glob", "regs"],
               "args": [["array", "ins"], ["array", "vals"], ["array", "glob"], ["array", "out"], ["array", "regs"]]}
        out[f"{name}__ptx"] = np.frombuffer(T.KERNEL.encode(), np.uint8)
        out[f"{name}__config"] = np.array(json.dumps(cfg))
        out[f"{name}__in__ins"] = ins
        out[f"{name}__in__vals"] = vals
        out[f"{name}__in__glob"] = np.zeros(16 * T.NT * n, np.uint8)
        out[f"{name}__in__out"] = np.zeros(1024 * n, np.uint8)
        out[f"{name}__in__regs"] = np.zeros(8 * T.NREG * T.NT * n, np.uint8)
    np.savez_compressed(bundle, **out)


def pack(bundle, gpu):
    out = dict(np.load(bundle, allow_pickle=False))
    first = None
    for k in sorted(out):                   # one copy of the PTX: the other cases name the first (ptx_from)
        if k.endswith("__ptx"):
            name = k[:-len("__ptx")]
            if first is None:
                first = name
                continue
            del out[k]
            cfg = json.loads(str(out[f"{name}__config"]))
            cfg["ptx_from"] = first
            out[f"{name}__config"] = np.array(json.dumps(cfg))
    with np.load(gpu, allow_pickle=False) as g:
        for k in g.files:
            if "__out__" in k:
                if not bool(g[k.split("__out__")[0] + "__reproducible"]):
                    sys.exit(f"{k}: the two GPU runs differ")
                out[k] = g[k]
            if "__error" in k:
                sys.exit(f"{k}: {g[k]}")
        out["meta"] = np.array(str(g["meta"]))
    np.savez_compressed(OUT, **out)


if __name__ == "__main__":
    {"build": build, "pack": pack}[sys.argv[1]](*sys.argv[2:])
