"""CUTLASS's CuTe Hopper tutorials as corpus cases: with TMA on a 2-CTA cluster
(``examples/cute/tutorial/hopper/wgmma_tma_sm90.cu``) and with cp.async into 128-byte-swizzled shared memory and a
3-stage pipeline (``wgmma_sm90.cu``). Each is its PTX as nvcc writes it from the CUTLASS checkout, and its kernel
arguments as the tutorial's own host code builds them: for the TMA tutorial the descriptors the driver encodes, so
``cute/cute_tutorial_tma.cu`` records them on the GPU machine; the cp.async tutorial's arguments hold no driver-made
bytes and ``cute/cute_tutorial_cpasync.cu`` records them on any machine.

    nvcc -std=c++17 -arch=sm_90a -I$CUTLASS/include -I$CUTLASS/tools/util/include \\
         -I$CUTLASS/examples/cute/tutorial/hopper cute/cute_tutorial_tma.cu -o dump      # once, any machine
    ./dump > cute/tutorial_launches.txt                                                    # on the GPU machine
    python cute_tutorial.py cute/tutorial_launches.txt TUTORIAL.ptx BUNDLE.npz             # a bundle for run_gpu.py

    nvcc ... cute/cute_tutorial_cpasync.cu -o dump_cpasync && ./dump_cpasync > cute/tutorial_cpasync_launches.txt

A launch line holds the kernel, grid, block, cluster and dynamic shared memory, then every argument as
``size:hex``. An 8-byte argument equal to a recorded allocation (``ptr A|B|C``) becomes that array; an argument that
starts with such an address (a CuTe TMA atom: the 128-byte descriptor, then the tensor's strides) becomes a
``tensormap`` argument, whose address the replay writes at launch; everything else is passed as the recorded bytes.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np

FLAGS = ["-arch=sm_90a"]           # with -std=c++17, as every CuTe case
TUTORIAL = "examples/cute/tutorial/hopper/wgmma_tma_sm90.cu"
TUTORIAL_CPASYNC = "examples/cute/tutorial/hopper/wgmma_sm90.cu"


def compile_ptx(cutlass_root, tutorial=TUTORIAL):
    """The tutorial's PTX, compiled from the checkout (relative file names, as the corpus keeps them)."""
    cmd = ["nvcc", "-ptx", "-std=c++17", *FLAGS, "-Iinclude", "-Itools/util/include", tutorial, "-o", "-"]
    out = subprocess.run(cmd, cwd=cutlass_root, check=True, capture_output=True, text=True).stdout
    return out


def parse_dump(text):
    ptrs, launches = {}, []
    for ln in text.splitlines():
        f = ln.split()
        if not f:
            continue
        if f[0] == "ptr":
            ptrs[int(f[2], 16)] = f[1]
        elif f[0] == "launch":
            i = f.index("args")
            kv = f[2:i]
            d = {kv[j]: kv[j + 1:j + 4] for j in range(0, len(kv), 4) if kv[j] in ("grid", "block", "cluster")}
            launches.append(dict(kernel=f[1], grid=[int(x) for x in d["grid"]], block=[int(x) for x in d["block"]],
                                 cluster=[int(x) for x in d["cluster"]], shared=int(kv[kv.index("smem") + 1]),
                                 args=[(int(a.split(":")[0]), a.split(":")[1]) for a in f[i + 1:]],
                                 ptrs=dict(ptrs)))
            ptrs = {}
    return launches


def _entries(ptx):
    return re.findall(r"^\.(?:visible\s+)?entry\s+(\w+)\(", ptx, re.M)


def cases(dump_text, ptx, rng, tutorial=TUTORIAL):
    """{case: (ptx, config, inputs)}: the tutorial's NT and TN launches (in that order in the dump)."""
    entries = [e for e in _entries(ptx) if "gemm_device" in e]
    tag = "wgmma_tma" if tutorial == TUTORIAL else "wgmma_cpasync"
    version = next((ln[3:].strip() for ln in ptx.splitlines() if ln.startswith("// Cuda compilation")), "nvcc")
    out = {}
    for k, (launch, variant) in enumerate(zip(parse_dump(dump_text), ("nt", "tn"))):
        kernel = launch["kernel"] if launch["kernel"] in entries else entries[k]
        names = launch["ptrs"]
        args, inputs = [], {}
        for size, hexs in launch["args"]:
            raw = bytes.fromhex(hexs)
            first = int.from_bytes(raw[:8], "little") if size >= 8 else None
            if size == 8 and first in names:
                args.append(["array", names[first]])
            elif size >= 128 and first in names:
                args.append(["tensormap", names[first], hexs, 0])
            else:
                args.append(["bytes", hexs])
        shape = [int.from_bytes(bytes.fromhex(launch["args"][0][1])[4 * i:4 * i + 4], "little") for i in range(3)]
        m, n, kk = shape
        inputs["A"] = rng.standard_normal(m * kk).astype(np.float16)
        inputs["B"] = rng.standard_normal(n * kk).astype(np.float16)
        inputs["C"] = rng.standard_normal(m * n).astype(np.float16)
        cfg = dict(source="cute", tool=version, flags=" ".join(FLAGS), target="sm_90a", kernel=kernel,
                   grid=launch["grid"], block=launch["block"], cluster=launch["cluster"], shared=launch["shared"],
                   args=args, outputs=["C"], origin=f"CUTLASS {tutorial}, gemm_{variant} (M={m}, N={n}, K={kk}, "
                   f"alpha 1, beta 0.5)", dtypes={k_: "float16" for k_ in inputs})
        out[f"cute_tutorial_{tag}_{variant}_sm90a"] = (ptx, cfg, inputs)
    return out


def main():
    dump, ptx_path, bundle = sys.argv[1:4]
    res, first = {}, None
    for name, (ptx, cfg, inputs) in cases(open(dump).read(), open(ptx_path).read(),
                                          np.random.default_rng(92)).items():
        if first is None:
            first = name
            res[f"{name}__ptx"] = np.frombuffer(ptx.encode(), np.uint8)
        else:
            cfg["ptx_from"] = first
        res[f"{name}__config"] = np.array(json.dumps(cfg))
        for k, v in inputs.items():
            res[f"{name}__in__{k}"] = v
    np.savez_compressed(bundle, **res)
    print(f"{len(res)} entries -> {bundle} ({os.path.getsize(bundle)} bytes)")


if __name__ == "__main__":
    main()
