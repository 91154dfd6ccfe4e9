"""Cut the full H100 capture (``mma_capture.py run`` output) down to the committed golden vectors.

    python tools/hwcapture/mma_select.py CAPTURE_DIR tests/data/mma [--per-dist N]

Keeps the first few warps (PER_DIST) of every distribution of every variant, and every hand-made tile, in one
compressed file per arithmetic family (``tests/data/mma/mma_<family>.npz``), with the capture's metadata.
"""
import argparse
import os

import numpy as np

FAMILIES = ("tc", "fp8", "int", "f64", "m8n8k4_f16")
# warps kept per distribution (the committed total stays under 3 MB; the tensor-core forms get the most)
PER_DIST = {"tc": 12, "fp8": 6, "int": 6, "f64": 5, "m8n8k4_f16": 4}


def select(src, dst, per_dist=None):
    os.makedirs(dst, exist_ok=True)
    total = 0
    for fam in FAMILIES:
        z = np.load(os.path.join(src, f"mma_{fam}.npz"), allow_pickle=False)
        out = {"meta": z["meta"]}
        j = 0
        while f"{j}.spelling" in z:
            dist = z[f"{j}.dist"]
            keep = []
            for d in dict.fromkeys(dist.tolist()):
                idx = np.nonzero(dist == d)[0]
                keep += idx.tolist() if d == "handmade" else idx[:per_dist or PER_DIST[fam]].tolist()
            keep = np.array(keep)
            for key in ("a", "b", "c", "d", "dist"):
                out[f"{j}.{key}"] = z[f"{j}.{key}"][keep]
            out[f"{j}.spelling"] = z[f"{j}.spelling"]
            j += 1
        path = os.path.join(dst, f"mma_{fam}.npz")
        np.savez_compressed(path, **out)
        total += os.path.getsize(path)
        print(f"{path}: {j} variants, {os.path.getsize(path) / 1e3:.0f} kB")
    print(f"total {total / 1e6:.2f} MB")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--per-dist", type=int, default=None, help="override the per-family counts")
    a = ap.parse_args()
    select(a.src, a.dst, a.per_dist)
