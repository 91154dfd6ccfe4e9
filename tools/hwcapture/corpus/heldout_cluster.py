"""A held-out thread-block-cluster kernel (tests/data/cluster_heldout.npz): the distributed-shared-memory histogram
of the CUDA C++ Programming Guide (section "Distributed Shared Memory", ``clusterHist_kernel``: ``cluster.sync()``,
``cluster.map_shared_rank`` and ``atomicAdd`` on another CTA's shared memory), compiled from a public copy of its
source with ``nvcc -ptx -arch=sm_90a`` (CUDA 13.0, no other flags), in the corpus format (docs/corpus.md).

    python tools/hwcapture/corpus/heldout_cluster.py build HIST.cu bundle.npz     # the PTX and the inputs
    python tools/hwcapture/corpus/run_gpu.py bundle.npz gpu.npz                   # on the GPU machine
    python tools/hwcapture/corpus/heldout_cluster.py pack bundle.npz gpu.npz      # -> tests/data/cluster_heldout.npz

Two launches: clusters of 2 CTAs (2 clusters, 128 threads, 64 bins, 3001 inputs) and of 4 (2 clusters, 96 threads,
100 bins, 2500 inputs); inputs below 0 and past the last bin are clamped by the kernel.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "cluster_heldout.npz")
KERNEL = "_Z18clusterHist_kernelPiiiPKim"


def build(cu, bundle):
    with tempfile.TemporaryDirectory() as tmp:
        ptx = os.path.join(tmp, "hist.ptx")
        subprocess.run(["nvcc", "-ptx", "-arch=sm_90a", cu, "-o", ptx], check=True)
        text = open(ptx, "rb").read()
    rng = np.random.default_rng(26)
    out = {}
    for cs, n, nb, blk in ((2, 3001, 64, 128), (4, 2500, 100, 96)):
        name = f"cuda_guide_cluster_hist_c{cs}_sm90a"
        bpb = (nb + cs - 1) // cs
        cfg = {"kernel": KERNEL, "grid": [2 * cs, 1, 1], "block": [blk, 1, 1], "cluster": [cs, 1, 1],
               "shared": bpb * 4, "source": "nvcc", "outputs": ["bins"],
               "args": [["array", "bins"], ["scalar", "int32", nb], ["scalar", "int32", bpb], ["array", "input"],
                        ["scalar", "uint64", n]]}
        out[f"{name}__ptx"] = np.frombuffer(text, np.uint8)
        out[f"{name}__config"] = np.array(json.dumps(cfg))
        out[f"{name}__in__input"] = rng.integers(-6, nb + 6, n).astype(np.int32)
        out[f"{name}__in__bins"] = np.zeros(bpb * cs, np.int32)
    np.savez_compressed(bundle, **out)


def pack(bundle, gpu):
    out = dict(np.load(bundle, allow_pickle=False))
    with np.load(gpu, allow_pickle=False) as g:
        for k in g.files:
            if "__out__" in k:
                if not bool(g[k.split("__out__")[0] + "__reproducible"]):
                    sys.exit(f"{k}: the two GPU runs differ")
                out[k] = g[k]
        out["meta"] = np.array(str(g["meta"]))
    np.savez_compressed(OUT, **out)


if __name__ == "__main__":
    {"build": build, "pack": pack}[sys.argv[1]](*sys.argv[2:])
