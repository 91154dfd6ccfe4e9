"""CUTLASS 3 ``CollectiveBuilder`` GEMMs as corpus cases (``tests/data/corpus/cutlass.npz``).

``cutlass3/gemm.cu`` is one translation unit per kernel (``-DCASE=n``, the table in ``CASES``): warp-specialised,
ping-pong, cooperative, 2x1 and 1x2 clusters with TMA multicast, fp8 (e4m3 x e4m3 with the two-level accumulation,
e5m2 x e4m3 with fast accumulation), stream-K (3 workers over 2 tiles, so CTAs share tiles and fix up partial
sums through the workspace) and a fused epilogue (bias + ReLU) with TMA store. Each host program runs the GEMM the
ordinary CUTLASS way, checks it against a host reference, records the kernel's ``Params`` (the
``__grid_constant__`` argument: device pointers and the driver's tensor maps), its launch and every buffer's device
address and bytes, then loads the PTX nvcc wrote for that same translation unit through the driver and launches
it twice with those exact bytes from freshly reset buffers.

    # on the GPU machine, with OUT set: builds every case in parallel (nvcc -keep keeps the PTX that the
    # binary then loads), runs them, writes OUT/raw0.npz and OUT/raw1.npz
    CUTLASS=/path/to/cutlass cutlass3/run.sh 1 2 3 4 5 6 7 8 9 10
    python cutlass3.py pack raw0.npz raw1.npz [more.npz ...]   # -> tests/data/corpus/cutlass.npz (later files win)

The replay maps every buffer at the address it had on the GPU (``GlobalMemory.map(at=)``, the config's ``at``),
so the recorded ``Params`` run unchanged.
"""
import json
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "corpus", "cutlass.npz")
FLAGS = ["-std=c++17", "--expt-relaxed-constexpr", "-arch=sm_90a", "-O3", "-DNDEBUG"]     # as run.sh builds

# CASE -> what the kernel is (the names the host program records)
CASES = {
    1: "KernelTmaWarpSpecialized, f16 x f16 -> f32, tile 128x128x64, M=N=K=256, alpha 1, beta 0.5",
    2: "KernelTmaWarpSpecializedPingpong, bf16 (A M-major) -> bf16, tile 64x128x64, M=N=K=256, alpha 1, beta 1",
    3: "KernelTmaWarpSpecializedCooperative, f16 -> f16 (C, D column-major), tile 128x128x64, M=N=256, K=512, "
       "alpha 0.75, beta 0.25",
    4: "KernelTmaWarpSpecializedCooperative on 2x1 clusters (TMA multicast of B), f16, tile 128x128x64, M=N=K=256",
    5: "KernelTmaWarpSpecialized on 1x2 clusters (TMA multicast of A), f16 (B N-major), tile 128x128x64, M=N=K=256",
    6: "KernelTmaWarpSpecializedCooperative, fp8 e4m3 x e4m3 -> bf16 (two-level accumulation), tile 128x128x128, "
       "M=N=256, K=512",
    7: "KernelTmaWarpSpecializedPingpongFP8FastAccum, fp8 e5m2 x e4m3 -> f16, tile 64x128x128, M=N=256, K=512",
    8: "KernelTmaWarpSpecializedCooperative with StreamKScheduler (stream-K forced, deterministic reduction, "
       "2 workers of 24 k-blocks over 3 tiles of 16: the two CTAs share the middle tile and fix it up through the "
       "workspace), f16 -> f32, tile 128x128x64, M=384, N=128, K=1024",
    9: "KernelTmaWarpSpecializedCooperative with LinCombPerRowBiasEltAct<ReLu> (fused bias + ReLU, TMA store), "
       "f16, tile 128x128x64, M=N=K=256, alpha 1, beta 0.5",
    10: "KernelTmaWarpSpecializedCooperative with StreamKScheduler in split-K mode (3 splits, deterministic "
        "reduction through the workspace), f16, tile 128x128x64, M=N=256, K=768",
}


def _meta(text, log, ptx):
    """The record of one case. A record whose first fields were cut short (an early version of gemm.cu printed
    them into a 512-byte buffer, shorter than CUTLASS's mangled kernel names) is completed from the run's log
    line and the PTX's entry."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    meta = {"name": re.search(r'"name": "([^"]+)"', text).group(1),
            "params": re.search(r'"params": "([0-9a-f]+)"', text).group(1),
            "buffers": json.loads(text[text.index('"buffers": ') + 11:].strip()[:-1]),
            "kernel": next(e for e in re.findall(r"^\.(?:visible\s+)?entry\s+(\w+)\(", ptx, re.M)
                           if "device_kernel" in e)}
    m = re.search(r"grid (\d+) (\d+) (\d+) block (\d+) cluster (\d+)x(\d+) smem (\d+) ws \d+ sane (\d) .* agree (\d) "
                  r"same_as_cutlass (\d)", log)
    g = [int(x) for x in m.groups()]
    meta.update(grid=g[0:3], block=[g[3], 1, 1], cluster=[g[4], g[5], 1], shared=g[6], sane=bool(g[7]),
                runs_agree=bool(g[8]), same_as_cutlass_run=bool(g[9]))
    return meta


def pack(raws, gpu=None):
    res = {}
    for path in raws:
        with np.load(path, allow_pickle=False) as z:
            raw = {k: z[k] for k in z.files}
        for key in sorted(k for k in raw if k.endswith("__meta")):
            c = key.split("__")[0]
            meta = _meta(str(raw[key]), str(raw[f"{c}__log"]), raw[f"{c}__ptx"].tobytes().decode())
            if not (meta["sane"] and meta["same_as_cutlass_run"] and meta["runs_agree"]):
                print(f"left out case {c}: {meta['name']}: the PTX run is not CUTLASS's own answer", meta)
                continue
            ptx = raw[f"{c}__ptx"].tobytes().decode()
            tool = next((ln[3:].strip() for ln in ptx.splitlines() if ln.startswith("// Cuda compilation")), "nvcc")
            name = f"cutlass_{meta['name']}_sm90a"
            at, dtypes, outputs, nondet = {}, {}, [], {}
            for b in meta["buffers"]:
                dt = b["dtype"]
                store = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}.get(dt, dt)
                res[f"{name}__in__{b['name']}"] = raw[f"{c}__{b['name']}__in"].view(store)
                at[b["name"]] = b["addr"]
                if dt != np.dtype(store).name:
                    dtypes[b["name"]] = dt
                if b["output"]:
                    outputs.append(b["name"])
                    o = raw[f"{c}__{b['name']}__out"]
                    res[f"{name}__out__{b['name']}"] = o.view(store)
                    if f"{c}__{b['name']}__out2" in raw:     # bytes that differed between the two GPU runs
                        d = np.flatnonzero(o != raw[f"{c}__{b['name']}__out2"])
                        nondet[b["name"]] = [[int(d.min()), int(d.max()) + 1]]
            cfg = dict(source="cutlass", file="cutlass", tool=tool, flags=" ".join(FLAGS), target="sm_90a",
                       kernel=meta["kernel"], grid=meta["grid"], block=meta["block"], cluster=meta["cluster"],
                       shared=meta["shared"], args=[["bytes", meta["params"]]], at=at, outputs=outputs,
                       dtypes=dtypes, gpu=str(raw["gpu"]) if "gpu" in raw else gpu,
                       origin=f"CUTLASS 3 CollectiveBuilder GEMM (tools/hwcapture/corpus/cutlass3/gemm.cu CASE="
                              f"{c[1:]}): {CASES[int(c[1:])]}")
            if nondet:
                cfg["nondeterministic"] = dict(nondet, why="differed between two GPU runs")
            res[f"{name}__config"] = np.array(json.dumps(cfg))
            res[f"{name}__ptx"] = np.frombuffer(ptx.encode(), np.uint8)
            print(f"{name}: grid {meta['grid']} cluster {meta['cluster']} shared {meta['shared']} "
                  f"outputs {outputs} nondeterministic {sorted(nondet)}")
    np.savez_compressed(OUT, **res)
    print(f"{len(res)} entries -> {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["pack"]:
        gpu = sys.argv[sys.argv.index("--gpu") + 1] if "--gpu" in sys.argv else None   # for records without it
        pack([a for a in sys.argv[2:] if a.endswith(".npz")], gpu)
    else:
        sys.exit(__doc__)
