"""Pack the records of run.sh (one folder per case) into two compressed npz files under OUT (no pickles)."""
import json
import os
import sys

import numpy as np

src, out = sys.argv[1], sys.argv[2]
gpu = open(os.path.join(src, "gpu.txt")).read().strip()
parts = [{"gpu": np.array(gpu)}, {"gpu": np.array(gpu)}]
for i, d in enumerate(sorted(x for x in os.listdir(src) if x.startswith("c"))):
    p = os.path.join(src, d)
    z = parts[i % 2]
    for f in ("log", "build"):
        if os.path.exists(os.path.join(p, f + ".txt")):
            z[f"{d}__{f}"] = np.array(open(os.path.join(p, f + ".txt"), errors="replace").read())
    if os.path.exists(os.path.join(p, "kernel.ptx")):
        z[f"{d}__ptx"] = np.fromfile(os.path.join(p, "kernel.ptx"), np.uint8)
    if not os.path.exists(os.path.join(p, "meta.json")):
        continue
    text = open(os.path.join(p, "meta.json")).read()
    z[f"{d}__meta"] = np.array(text)
    meta = {"buffers": json.loads(text[text.index('"buffers": ') + 11:].strip()[:-1])}
    for b in meta["buffers"]:
        r = {k: np.fromfile(os.path.join(p, f"{b['name']}.{k}"), np.uint8) for k in ("in", "out", "out2")}
        z[f"{d}__{b['name']}__in"] = r["in"]
        if b["output"]:
            z[f"{d}__{b['name']}__out"] = r["out"]
            if not np.array_equal(r["out"], r["out2"]):
                z[f"{d}__{b['name']}__out2"] = r["out2"]
for i, z in enumerate(parts):
    np.savez_compressed(os.path.join(out, f"raw{i}.npz"), **z)
