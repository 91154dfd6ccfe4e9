"""Pack a WMMA capture (``capture.py``) into the committed test data.

    python tools/hwcapture/wmma/pack.py /tmp/wmma_in.npz /tmp/raw.npz tests/data/wmma/sm90_wmma.npz

Keeps, per load/store case, the registers (loads) or memory (stores) the GPU produced (the inputs are the iota
digits ``capture.py`` describes, rebuilt by the tests); per mma form, the input registers and D of every warp;
the register-level mma.sync / movmatrix forms and the .b128 moves.  Of the mma data sets only the first
``WARPS`` are kept (they cover every input distribution: narrow and wide exponents, with and without special
values), to keep the file small.  ``meta`` (JSON) lists the cases.
"""
import json
import sys

import numpy as np

WARPS = 4


def main(inp, raw, out):
    z = np.load(inp, allow_pickle=False)
    r = np.load(raw, allow_pickle=False)
    meta = json.loads(str(z["meta"]))
    arrays = {}
    for m in meta:
        n = m["name"]
        cut = (lambda a: a[:WARPS]) if n.startswith(("x", "e")) else (lambda a: a)
        for k in r.files:
            if k.startswith(n + "_"):
                arrays[k] = cut(r[k])
        if n.startswith(("x", "e", "q")):
            for k in z.files:
                if k.startswith(n + "_"):
                    arrays[k] = cut(z[k])
    info = json.loads(str(r["info"]))
    np.savez_compressed(out, meta=np.array(json.dumps(meta)), info=np.array(json.dumps(info)), **arrays)
    print(f"{len(meta)} cases, {len(arrays)} arrays -> {out}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
