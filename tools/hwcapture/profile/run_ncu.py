"""Profile a few corpus kernels with Nsight Compute, from ptxas -lineinfo cubins of their PTX.

    python3 tools/hwcapture/profile/run_ncu.py OUTDIR CASE...   (orchestrates: ptxas, nvdisasm, ncu, exports)
    python3 tools/hwcapture/profile/run_ncu.py --launch DIR CASE (what ncu runs: one launch from DIR/CASE.cubin)
"""
import glob
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "tools", "hwcapture", "corpus"))

METRICS = ",".join(m + ".sum" for m in (
    "smsp__inst_executed", "smsp__thread_inst_executed",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld", "l1tex__t_sectors_pipe_lsu_mem_global_op_st",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld", "l1tex__t_requests_pipe_lsu_mem_global_op_st"))


def load_case(name):
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "corpus", "*.npz"))):
        with np.load(path, allow_pickle=False) as z:
            if f"{name}__config" not in z.files:
                continue
            cfg = json.loads(str(z[f"{name}__config"]))
            src = cfg.get("ptx_from") or name
            case = {"config": cfg, "ptx": z[f"{src}__ptx"].tobytes(), "in": {}, "out": {}}
            for k in z.files:
                parts = k.split("__")
                if parts[0] == name and parts[1] in ("in", "out"):
                    case[parts[1]][parts[2]] = z[k]
            return case
    raise SystemExit(f"no case {name}")


def launch(d, name):
    import cupy as cp
    from run_gpu import run_case
    case = load_case(name)
    case["ptx"] = open(os.path.join(d, name + ".cubin"), "rb").read()
    out, same = run_case(cp, case)
    ok = all(np.array_equal(out[k].view(np.uint8).reshape(-1), case["out"][k].view(np.uint8).reshape(-1))
             for k in out if k in case["out"])
    print(f"{name}: outputs {'equal' if ok else 'DIFFER from'} the corpus capture; reproducible {same}", flush=True)


def sh(cmd, out=None, timeout=150):
    print("+", " ".join(cmd), flush=True)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print("  timed out", flush=True)
        return None
    if out:
        with open(out, "w") as f:
            f.write(r.stdout)
    print(f"  rc {r.returncode}; stderr: {r.stderr[-600:]}", flush=True)
    if not out:
        print(r.stdout[-1500:], flush=True)
    return r


def main(d, names):
    os.makedirs(d, exist_ok=True)
    sh(["bash", "-c", "nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; ncu --version | tail -1; "
        "ptxas --version | tail -1"], os.path.join(d, "env.txt"))
    for name in names:
        case = load_case(name)
        p = os.path.join(d, name)
        open(p + ".ptx", "wb").write(case["ptx"])
        json.dump(case["config"], open(p + ".json", "w"))
        if sh(["ptxas", "-arch=sm_90a", "-lineinfo", p + ".ptx", "-o", p + ".cubin"]).returncode:
            continue
        sh(["nvdisasm", "-g", "-c", p + ".cubin"], p + ".sass.txt")
        k = case["config"]["kernel"]
        sh(["ncu", "--kernel-name-base", "mangled", "-k", k, "-c", "1", "--section", "SourceCounters",
            "--metrics", METRICS, "--cache-control", "none", "--clock-control", "none", "--import-source", "no",
            "-f", "-o", p, sys.executable, os.path.abspath(__file__), "--launch", d, name], timeout=200)
        rep = p + ".ncu-rep"
        if not os.path.exists(rep):
            continue
        sh(["ncu", "-i", rep, "--page", "source", "--csv", "--print-source", "sass"], p + ".src_sass.csv")
        sh(["ncu", "-i", rep, "--page", "raw", "--csv", "--print-units", "base"], p + ".raw.csv")
        sh(["ncu", "-i", rep, "--page", "source", "--csv", "--print-source", "cuda,sass"], p + ".src_cuda_sass.csv")


if __name__ == "__main__":
    if sys.argv[1] == "--launch":
        launch(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1], sys.argv[2:])
