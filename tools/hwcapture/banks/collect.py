"""Pair the Nsight Compute CSV of run.sh with the launched patterns and write the test data.

    python tools/hwcapture/banks/collect.py OUTDIR   # OUTDIR holds env.txt and ncu.csv from run.sh

Writes ``tests/data/banks/h100_ncu.json``: the capture environment, then one record per launch with the
instruction, its 32 lane byte offsets, active-lane mask and every counter ncu reported for that kernel.
"""
import csv
import io
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from patterns import KERNELS, PATTERNS  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def main(outdir):
    text = open(os.path.join(outdir, "ncu.csv")).read()
    body = text[text.index('"ID"'):]
    rows = list(csv.DictReader(io.StringIO(body)))
    launches = {}
    for row in rows:
        d = launches.setdefault(int(row["ID"]), {"kernel": row["Kernel Name"].split("(")[0], "counters": {}})
        d["counters"][row["Metric Name"].removesuffix(".sum")] = int(float(row["Metric Value"].replace(",", "")))
    if len(launches) != len(PATTERNS):
        raise SystemExit(f"ncu reported {len(launches)} launches, patterns.txt has {len(PATTERNS)}")
    env = [l.strip() for l in open(os.path.join(outdir, "env.txt")) if l.strip()]
    gpu, driver, cc = [s.strip() for s in env[0].split(",")]
    out = {
        "gpu": gpu, "driver": driver, "compute_capability": cc,
        "nvcc": next(l for l in env if l.startswith("Cuda compilation")),
        "ncu": next(l for l in env if l.startswith("Version")),
        "note": "one launch per record, one warp of 32 threads; counters are whole-kernel sums, so they include "
                "1 _op_misc wavefront per kernel (and 3 per cp.async: ptxas's dummy LDS before LDGSTS) in "
                "l1tex__data_pipe_lsu_wavefronts_mem_shared",
        "metrics": sorted(launches[0]["counters"]),
        "records": [],
    }
    for i, (k, name, offs, mask, *src) in enumerate(PATTERNS):
        got = launches[i]
        if got["kernel"] != k:
            raise SystemExit(f"launch {i}: ncu saw {got['kernel']}, expected {k}")
        op, instr, width, nmat = KERNELS[k]
        rec = {"kernel": k, "pattern": name, "op": op, "instruction": instr, "width": width, "nmat": nmat,
               "mask": int(mask), "addrs": [int(a) for a in offs]}
        if op and op.startswith("cp.async"):  # global source byte offset of each lane
            rec["src"] = [int(a) for a in src[0]] if src else [16 * l for l in range(32)]
        rec["counters"] = [got["counters"][m] for m in out["metrics"]]
        out["records"].append(rec)
    path = os.path.join(ROOT, "tests", "data", "banks", "h100_ncu.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(out['records'])} records to {path}")


if __name__ == "__main__":
    main(sys.argv[1])
