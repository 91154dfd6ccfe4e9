"""Merge the control-flow bundle (``build.py``) with the GPU's outputs (``run_gpu.py``) into
``tests/data/ctrlflow.npz`` (the corpus format, docs/corpus.md).

    python tools/hwcapture/ctrlflow/pack.py BUNDLE.npz GPU.npz [GPU2.npz ...]

Each GPU file may hold part of the cases (a later file wins); a case is kept when its two GPU runs agreed.
Byte ranges whose value PTX leaves undefined are listed in the config (``nondeterministic``, with why) and not
compared.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "..", "..", "tests", "data", "ctrlflow.npz"))

UNDEFINED = {
    # lanes that skip a guarded call read its .param return value although no call wrote it
    "ptx_call_proto_guard": {"out": [[4 * k, 4 * k + 4] for k in range(1, 64, 2)],
                             "why": "the odd lanes skip the guarded call and read a .param return value no call "
                                    "wrote: undefined in PTX (the H100 gave 0: ptxas keeps call parameters in "
                                    "registers)"},
}


def main():
    bundle_path, gpu_paths = sys.argv[1], sys.argv[2:]
    with np.load(bundle_path, allow_pickle=False) as z:
        bundle = {k: z[k] for k in z.files}
    outs, meta = {}, None
    for g in gpu_paths:
        with np.load(g, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            for k in z.files:
                if k.endswith("__reproducible") and bool(z[k]):
                    name = k.split("__")[0]
                    outs[name] = {kk.split("__")[2]: z[kk] for kk in z.files if kk.startswith(name + "__out__")}
    res = {}
    for name in sorted({k.split("__")[0] for k in bundle}):
        if name not in outs:
            print(f"left out {name}: no reproducible GPU result")
            continue
        cfg = json.loads(str(bundle[f"{name}__config"]))
        cfg["gpu"] = meta["gpu"]
        cfg["driver"] = meta.get("nvidia_smi", "")
        if name in UNDEFINED:
            cfg["nondeterministic"] = UNDEFINED[name]
        for k, v in bundle.items():
            if k.split("__")[0] == name and not k.endswith("__config"):
                res[k] = v
        res[f"{name}__config"] = np.array(json.dumps(cfg))
        for k, v in outs[name].items():
            res[f"{name}__out__{k}"] = v
    for k in list(res):                       # a module shared by several cases stays with its first user
        if k.endswith("__config"):
            src = json.loads(str(res[k])).get("ptx_from")
            if src and f"{src}__ptx" not in res:
                raise SystemExit(f"{k}: its module {src} was left out")
    np.savez_compressed(OUT, **res)
    print(f"{OUT}: {len([k for k in res if k.endswith('__config')])} cases, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
