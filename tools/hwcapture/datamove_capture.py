"""Capture ldmatrix / stmatrix / cp.async behaviour on a real GPU, for bit-exact replay in the tests.

Run on a machine with an sm_90 GPU and nvcc:

    python3 tools/hwcapture/datamove_capture.py --out tests/data/datamove/datamove_sm90.npz

It builds ``datamove.cu`` with nvcc, generates the inputs here (seeded), runs every variant (one warp per
case, each case with its own 512-byte shared image), and writes one compressed .npz holding inputs, outputs
and a JSON description of the GPU, driver and CUDA version (key ``meta``). Inputs are of three kinds:
``iota`` (every 16-bit element holds its own index, so a misplaced element names itself), ``random``
(random bytes, N/20 cases) and, for ldmatrix, one ``contiguous`` case (lane l addresses row l).

Use ``--cases N`` for the number of random-address iota cases per variant .
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BUF = 512                   # bytes of shared memory per case: 32 rows of 16 bytes
LDMATRIX = [f"ldmatrix_x{n}{t}" for t in ("", "_trans") for n in (1, 2, 4)]
STMATRIX = [f"stmatrix_x{n}{t}" for t in ("", "_trans") for n in (1, 2, 4)]
CP_ASYNC = ["cp_async_ca_4", "cp_async_ca_8", "cp_async_ca_16", "cp_async_cg_16", "cp_async_cg_16_ignore_src",
            "cp_async_ca_16_full"]
VARIANTS = LDMATRIX + STMATRIX + CP_ASYNC

# The PTX each variant runs (the same text the replay feeds to Warp.run).
PTX = {
    **{f"ldmatrix_x{n}{t}": f"ldmatrix.sync.aligned.m8n8.x{n}{t.replace('_', '.')}.shared.b16 "
                            f"{{{', '.join(f'%r{j}' for j in range(n))}}}, [%r8];"
       for t in ("", "_trans") for n in (1, 2, 4)},
    **{f"stmatrix_x{n}{t}": f"stmatrix.sync.aligned.m8n8.x{n}{t.replace('_', '.')}.shared.b16 "
                            f"[%r8], {{{', '.join(f'%r{j}' for j in range(n))}}};"
       for t in ("", "_trans") for n in (1, 2, 4)},
    "cp_async_ca_4": "cp.async.ca.shared.global [%r8], [%rd1], 4, %r9;",
    "cp_async_ca_8": "cp.async.ca.shared.global [%r8], [%rd1], 8, %r9;",
    "cp_async_ca_16": "cp.async.ca.shared.global [%r8], [%rd1], 16, %r9;",
    "cp_async_cg_16": "cp.async.cg.shared.global.L2::128B [%r8], [%rd1], 16, %r9;",
    "cp_async_cg_16_ignore_src": "cp.async.cg.shared.global [%r8], [%rd1], 16, %p1;",   # %p1 = size != 0
    "cp_async_ca_16_full": "cp.async.ca.shared.global.L2::64B [%r8], [%rd1], 16;",
}
CP_TAIL = "cp.async.commit_group; cp.async.wait_group 0;"


def _iota_image(n, rng=None):
    """n images whose 16-bit elements hold their own index (identical images compress to almost nothing)."""
    base = np.arange(BUF // 2, dtype=np.uint16).view(np.uint8)
    return np.tile(base, (n, 1))


def make_inputs(variant, n_iota, seed):
    rng = np.random.default_rng([seed, VARIANTS.index(variant)])
    n_rand = max(1, n_iota // 20)
    kind = np.array(["iota"] * n_iota + ["random"] * n_rand + (["contiguous"] if variant in LDMATRIX else []))
    n = kind.size
    smem = np.concatenate([_iota_image(n_iota, rng), rng.integers(0, 256, (n - n_iota, BUF), dtype=np.uint8)])
    d = {"kind": kind, "smem": smem}
    if variant in LDMATRIX:
        d["addr"] = (rng.integers(0, BUF // 16, (n, 32)) * 16).astype(np.uint32)   # rows may repeat
        if kind[-1] == "contiguous":
            smem[-1] = _iota_image(1, rng)[0]
            d["addr"][-1] = np.arange(32, dtype=np.uint32) * 16
    elif variant in STMATRIX:
        d["addr"] = (np.argsort(rng.random((n, 32)), axis=1) * 16).astype(np.uint32)   # distinct rows
        regs = np.empty((n, 4, 32), np.uint32)
        j = np.arange(4)[:, None]
        lane = np.arange(32)[None, :]
        ids = (j << 8) | (lane << 1)                                     # (matrix j, lane, half) names itself
        regs[:n_iota] = (ids | ((ids | 1) << 16)).astype(np.uint32)
        regs[n_iota:] = rng.integers(0, 2**32, (n - n_iota, 4, 32), dtype=np.uint32)
        smem[:n_iota] = 0xEE
        d["regs"] = regs
    else:
        cp = 4 if variant.endswith("_4") else 8 if variant.endswith("_8") else 16
        slots = np.argsort(rng.random((n, BUF // cp)), axis=1)[:, :32]   # distinct destinations
        d["addr"] = (slots * cp).astype(np.uint32)
        d["gsrc"] = np.concatenate([_iota_image(n_iota, rng) ^ np.uint8(0x5A),
                                    rng.integers(0, 256, (n - n_iota, BUF), dtype=np.uint8)])
        d["gaddr"] = (rng.integers(0, BUF // cp, (n, 32)) * cp).astype(np.uint32)
        if variant.endswith("ignore_src"):
            d["size"] = rng.integers(0, 2, (n, 32)).astype(np.uint32)
        elif variant.endswith("full"):
            d["size"] = np.full((n, 32), cp, np.uint32)
        else:
            d["size"] = rng.integers(0, cp + 1, (n, 32)).astype(np.uint32)
    return d


def _sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:       # noqa: BLE001 - recorded, not fatal
        return f"unavailable: {e}"


def gpu_meta():
    return {
        "gpu": _sh("nvidia-smi --query-gpu=name --format=csv,noheader"),
        "driver": _sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader"),
        "compute_capability": _sh("nvidia-smi --query-gpu=compute_cap --format=csv,noheader"),
        "nvcc": _sh("nvcc --version | tail -n 2 | head -n 1"),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output .npz")
    ap.add_argument("--cases", type=int, default=1000, help="random-address iota cases per variant")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--binary", help="a prebuilt datamove executable (default: build it with nvcc)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        exe = args.binary
        if not exe:
            exe = os.path.join(tmp, "datamove")
            subprocess.run(["nvcc", "-arch=sm_90a", "-O2", "-o", exe, os.path.join(HERE, "datamove.cu")], check=True)
        arrays = {}
        for v in VARIANTS:
            d = make_inputs(v, args.cases, args.seed)
            n = d["kind"].size
            for k in ("smem", "addr", "regs", "gsrc", "gaddr", "size"):
                if k in d:
                    np.ascontiguousarray(d[k]).tofile(os.path.join(tmp, f"{v}.{k}.bin"))
            subprocess.run([exe, v, str(n), str(BUF), tmp, tmp], check=True)
            raw = np.fromfile(os.path.join(tmp, f"{v}.out.bin"), np.uint8)
            if v in LDMATRIX:
                nmat = int(v.split("_x")[1][0])
                d["out"] = raw.view(np.uint32).reshape(n, 4, 32)[:, :nmat]
            else:
                d["out"] = raw.reshape(n, BUF)
            if v in STMATRIX:
                nmat = int(v.split("_x")[1][0])
                d["regs"] = d["regs"][:, :nmat]
            for k, a in d.items():
                arrays[f"{v}/{k}"] = a
            print(f"{v}: {n} cases", flush=True)
    meta = dict(gpu_meta(), seed=args.seed, buf_bytes=BUF, ptx=PTX, cp_tail=CP_TAIL)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    np.savez_compressed(args.out, **arrays)
    print(json.dumps(meta, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
