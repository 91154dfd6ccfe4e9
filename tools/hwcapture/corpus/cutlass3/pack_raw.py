import json, os, sys
import numpy as np
src, out = sys.argv[1], sys.argv[2]
gpu = open(os.path.join(src, "gpu.txt")).read().strip()
parts = [{}, {}]
for i, d in enumerate(sorted(x for x in os.listdir(src) if x.startswith("c"))):
    p = os.path.join(src, d)
    z = parts[i % 2]
    z[f"{d}__log"] = np.array(open(os.path.join(p, "log.txt")).read())
    if not os.path.exists(os.path.join(p, "meta.json")):
        continue
    meta = json.load(open(os.path.join(p, "meta.json")))
    meta["gpu"] = gpu
    z[f"{d}__meta"] = np.array(json.dumps(meta))
    for b in meta["buffers"]:
        r = {k: np.fromfile(os.path.join(p, f"{b['name']}.{k}"), np.uint8) for k in ("in", "out", "out2")}
        z[f"{d}__{b['name']}__in"] = r["in"]
        if b["output"]:
            z[f"{d}__{b['name']}__out"] = r["out"]
            if not np.array_equal(r["out"], r["out2"]):
                z[f"{d}__{b['name']}__out2"] = r["out2"]
for i, z in enumerate(parts):
    np.savez_compressed(os.path.join(out, f"raw{i}.npz"), **z)
