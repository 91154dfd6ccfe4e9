"""Turn run_ncu.py's Nsight Compute exports into tests/data/profile/h100_ncu.json.

    python tools/hwcapture/profile/collect.py OUTDIR

For each case: the kernel-wide counters (``--page raw``) and, per source line (``--page source --print-source
cuda,sass``: ncu's own attribution, inlined code credited to its call sites too), the warp-instructions
executed, thread instructions, shared wavefronts (ideal and excessive) and global sectors.
"""
import csv
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
COLUMNS = {"Instructions Executed": "instructions", "Thread Instructions Executed": "threads",
           "Predicated-On Thread Instructions Executed": "predicated_on", "L1 Wavefronts Shared": "smem_wavefronts",
           "L1 Wavefronts Shared Ideal": "smem_wavefronts_ideal",
           "L1 Wavefronts Shared Excessive": "smem_wavefronts_excessive",
           "L2 Theoretical Sectors Global": "global_sectors", "L1 Tag Requests Global": "global_requests"}


def _int(v):
    return int(v.replace(",", "")) if v not in ("", "-") else 0


def lines(path):
    rows, hdr, fp = {}, None, None
    for r in csv.reader(open(path)):
        if not r:
            continue
        if r[0] == "File Path":
            fp = r[1]
        elif r[0] == "Line No":
            hdr = r
        elif hdr and r[0] and r[0] not in ("Kernel Name", "Function Name"):
            rows[f"{os.path.basename(fp)}:{r[0]}"] = {v: _int(r[hdr.index(k)]) for k, v in COLUMNS.items()}
    return rows


def raw(path):
    rows = list(csv.reader(open(path)))
    hdr, vals = rows[0], rows[-1]
    return {h[:-4]: _int(v) for h, v in zip(hdr, vals)
            if h.endswith(".sum") and h.startswith(("l1tex__data", "l1tex__t_", "smsp__inst_executed",
                                                    "smsp__thread_inst_executed"))}


def main(outdir):
    env = open(os.path.join(outdir, "env.txt")).read().split("\n")
    data = {"gpu": env[0], "ncu": env[1], "ptxas": env[2],
            "how": "tools/hwcapture/profile/run_ncu.py: ptxas -arch=sm_90a -lineinfo on the case's PTX, the cubin "
                   "launched with the corpus inputs under ncu --section SourceCounters", "cases": {}}
    for p in sorted(glob.glob(os.path.join(outdir, "*.src_cuda_sass.csv"))):
        name = os.path.basename(p)[:-len(".src_cuda_sass.csv")]
        data["cases"][name] = {"totals": raw(os.path.join(outdir, name + ".raw.csv")), "lines": lines(p)}
    out = os.path.join(ROOT, "tests", "data", "profile", "h100_ncu.json")
    with open(out, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    print(f"wrote {out}: {len(data['cases'])} cases")


if __name__ == "__main__":
    main(sys.argv[1])
