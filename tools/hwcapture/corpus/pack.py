"""Merge a bundle (``build.py``) with the GPU's outputs (``run_gpu.py``) into ``tests/data/corpus``.

    python tools/hwcapture/corpus/pack.py BUNDLE.npz GPU.npz [BUNDLE2.npz GPU2.npz ...]

Writes one file per source (``triton.npz``, ``nvcc.npz``, ``cute.npz``; a config's ``file`` names another, e.g.
``regressions.npz``), compressed, no pickles. Cases the GPU
failed to run, or ran with different results twice, are left out and listed. Cases already in the committed
files stay unless the new bundles replace them.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "corpus")


def _read(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def main():
    args = sys.argv[1:]
    files = {}
    for f in sorted(os.listdir(OUT)) if os.path.isdir(OUT) else []:
        if f.endswith(".npz"):
            files[f[:-4]] = _read(os.path.join(OUT, f))
    touched = set()              # only the files that get cases are written again
    for bundle_path, gpu_path in zip(args[::2], args[1::2]):
        bundle, gpu = _read(bundle_path), _read(gpu_path)
        meta = json.loads(str(gpu.pop("meta")))
        names = sorted({k.split("__")[0] for k in bundle})
        moved = {}
        for name in names:
            cfg = json.loads(str(bundle[f"{name}__config"]))
            if f"{name}__error" in gpu:
                print(f"left out {name}: the GPU failed: {gpu[f'{name}__error']}")
                continue
            if not bool(gpu.get(f"{name}__reproducible", False)):
                print(f"left out {name}: two GPU runs differed")
                continue
            src = cfg.get("ptx_from")
            if src and f"{src}__error" in gpu or src and not bool(gpu.get(f"{src}__reproducible", False)):
                # the case that holds the module was left out: the first user left holds it instead
                owner = moved.setdefault(src, name)
                if owner == name:
                    del cfg["ptx_from"]
                    bundle[f"{name}__ptx"] = bundle[f"{src}__ptx"]
                else:
                    cfg["ptx_from"] = owner
            cfg["gpu"] = meta["gpu"]
            cfg["driver"] = meta.get("nvidia_smi", "")
            dest = files.setdefault(cfg.get("file", cfg["source"]), {})
            touched.add(cfg.get("file", cfg["source"]))
            for k in [k for k in dest if k.split("__")[0] == name]:
                del dest[k]
            for k, v in bundle.items():
                if k.split("__")[0] == name and not k.endswith("__config"):
                    dest[k] = v
            dest[f"{name}__config"] = np.array(json.dumps(cfg))
            for k, v in gpu.items():
                if k.startswith(name + "__out__"):
                    dest[k] = v.view({1: np.uint8, 2: np.uint16}[v.dtype.itemsize]) \
                        if v.dtype.kind == "V" or v.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2") else v
    # a case whose module lives in another case (ptx_from) needs that case: keep modules with their users
    os.makedirs(OUT, exist_ok=True)
    for src, data in files.items():
        if src not in touched:
            continue
        have = {k.split("__")[0] for k in data if k.endswith("__ptx")}
        for k in list(data):
            if k.endswith("__config"):
                cfg = json.loads(str(data[k]))
                if cfg.get("ptx_from") and cfg["ptx_from"] not in have:
                    raise SystemExit(f"{k}: its module {cfg['ptx_from']} is not in {src}.npz")
        np.savez_compressed(os.path.join(OUT, f"{src}.npz"), **data)
        n = len([k for k in data if k.endswith("__config")])
        print(f"{src}.npz: {n} cases, {os.path.getsize(os.path.join(OUT, src + '.npz'))} bytes")


if __name__ == "__main__":
    main()
