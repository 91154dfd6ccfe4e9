"""Loading the committed H100 mma.sync captures (tests/data/mma)."""
import json
import os

import numpy as np

DATA = os.path.join(os.path.dirname(__file__), "data", "mma")
FAMILIES = ("tc", "fp8", "int", "f64", "m8n8k4_f16")


def meta():
    with open(os.path.join(DATA, "meta.json")) as f:
        return json.load(f)


def load(family):
    """{spelling: dict(a, b, c, d, dist)} of one family's capture file (raw register bits per lane)."""
    out = {}
    with np.load(os.path.join(DATA, f"mma_{family}.npz"), allow_pickle=False) as z:
        j = 0
        while f"{j}.spelling" in z:
            out[str(z[f"{j}.spelling"])] = {k: z[f"{j}.{k}"] for k in ("a", "b", "c", "d", "dist")}
            j += 1
    return out


def all_captures():
    caps = {}
    for fam in FAMILIES:
        caps.update(load(fam))
    return caps
