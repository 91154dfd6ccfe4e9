"""Pack capture results for the repository: drop CTAs beyond a per-form cap (the tests replay the CTAs that
are kept) and store the arrays LZMA-compressed in an .npz (numpy reads it; no pickles).

    python tools/hwcapture/wgmma/pack.py RESULT.npz OUT.npz [--cap-random 24 --cap-n64 3 --cap-desc24 6]
"""
import io
import json
import os
import sys
import zipfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wgmma_gen as gen  # noqa: E402


def cap_of(f):
    if f["phase"] == "risky":
        return 32
    if f["desc"] == "random" and f["n_cta"] >= 20:
        return 24
    if f["desc"] == "random":
        return 6
    if f["n_cta"] == 5 and f["op_form"] == "ss" and f["scale_a"] == 1 and f["scale_b"] == 1:
        return 3
    return f["n_cta"]


def write_npz(path, arrays):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_LZMA) as zf:
        for k, a in arrays.items():
            b = io.BytesIO()
            np.save(b, a, allow_pickle=False)
            zf.writestr(k + ".npy", b.getvalue())


def main(src, dst):
    z = np.load(src, allow_pickle=False)
    fl = gen.forms()
    out = {"meta": z["meta"]}
    for i, f in enumerate(fl):
        if f"d{i}" in z.files:
            c = cap_of(f)
            out[f"d{i}"] = z[f"d{i}"][:c]
            out[f"base{i}"] = z[f"base{i}"][:c]
    meta = json.loads(str(z["meta"]))
    meta["kept"] = "tools/hwcapture/wgmma/pack.py cap_of"
    out["meta"] = np.array(json.dumps(meta))
    write_npz(dst, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
