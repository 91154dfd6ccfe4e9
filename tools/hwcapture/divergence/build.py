"""Build the divergence corpus: divergence.cu compiled to PTX by nvcc, each module also with its basic blocks
laid out in other orders (reversed, shuffled), so joins sit before the branches that reach them.

    python tools/hwcapture/divergence/build.py BUNDLE.npz

The bundle has the layout of tools/hwcapture/corpus (``<case>__ptx``, ``__config``, ``__in__<arg>``):
run it on the GPU with ``tools/hwcapture/corpus/run_gpu.py BUNDLE.npz OUT.npz``, then

    python tools/hwcapture/divergence/build.py --pack BUNDLE.npz OUT.npz tests/data/divergence/h100.npz

keeps every case whose two GPU runs agreed, with the GPU's outputs (tests/test_divergence.py replays them);
``fill_shared.py --mark`` then lists the bytes the order probes copy out of shared memory they never wrote.
The Triton case's PTX (softcap_ce.ptx) comes from triton_softcap.py.

    python tools/hwcapture/divergence/build.py --racy BUNDLE.npz
    python tools/hwcapture/divergence/build.py --probes BUNDLE.npz

build the racy order probes of racy.cu the same way (every layout), and the probes of hammock.cu (which side
of a short if/else runs first) and stores.cu (several lanes storing to one address), as nvcc laid them out;
all three are packed into tests/data/divergence/h100_racy.npz.
"""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FLAGS = ["-arch=sm_90a", "-O3"]

_LABEL = re.compile(r"^(\$[\w$]+):")
_END = re.compile(r"^\s*(bra(\.uni)?\s|ret;|exit;|trap;)")


def relayout(ptx, order):
    """The module with each entry's labelled regions put in another order: ``order(n)`` gives a permutation
    of 1..n-1 (region 0, the entry, stays first). A region that fell through gets a ``bra.uni`` to the next."""
    out, i = [], 0
    lines = ptx.split("\n")
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not line.startswith(".visible .entry"):
            continue
        while lines[i] != "{":
            out.append(lines[i])
            i += 1
        out.append(lines[i])
        i += 1
        body = []
        depth = 1
        while True:
            depth += lines[i].count("{") - lines[i].count("}")
            if depth == 0:
                break
            body.append(lines[i])
            i += 1
        regions = [[]]
        for b in body:
            if _LABEL.match(b):
                regions.append([])
            regions[-1].append(b)
        for k in range(len(regions) - 1):
            last = next((x for x in reversed(regions[k]) if x.strip() and not x.strip().startswith("//")), "")
            if not _END.match(last):
                regions[k].append("\tbra.uni \t" + _LABEL.match(regions[k + 1][0]).group(1) + ";")
        perm = order(len(regions))
        for k in [0] + perm:
            out.extend(regions[k])
    return "\n".join(out)


LAYOUTS = {
    "nvcc": None,
    "rev": lambda n: list(range(n - 1, 0, -1)),
    "shuf": lambda n: random.Random(n * 7919).sample(range(1, n), n - 1),
}


def cases(rng):
    i32 = lambda n, lo, hi: rng.integers(lo, hi, n, dtype=np.int64).astype(np.int32)  # noqa: E731
    f32 = lambda n, s: (rng.standard_normal(n) * s).astype(np.float32)  # noqa: E731
    return [
        ("join_before_named_bar", (1, 1, 1), (256, 1, 1), [("in", i32(256, 0, 1 << 20)), ("out", np.zeros(256, np.int32)),
                                                            ("iters", np.int32(5))], ["out"]),
        ("softcap_tanh_reduce", (1, 1, 1), (256, 1, 1), [("x", f32(256, 30.0)), ("y", np.zeros(256, np.float32)),
                                                          ("sum", np.zeros(1, np.float32)), ("cap", np.float32(30.0))],
         ["y", "sum"]),
        ("elect_after_loop", (1, 1, 1), (64, 1, 1), [("in", i32(64, 1, 200)), ("out", np.zeros(64, np.int32)),
                                                      ("who", np.zeros(2, np.int32))], ["out", "who"]),
        ("break_continue", (1, 1, 1), (64, 1, 1), [("in", i32(64, 0, 1 << 30)), ("out", np.zeros(64, np.int32))], ["out"]),
        ("switch_small", (1, 1, 1), (64, 1, 1), [("in", i32(64, -1000, 1000)), ("out", np.zeros(64, np.int32))], ["out"]),
        ("named_bars_after_divergence", (1, 1, 1), (128, 1, 1), [("in", i32(128, 0, 1000)),
                                                                   ("out", np.zeros(128, np.int32))], ["out"]),
        ("libdevice_branches", (1, 1, 1), (128, 1, 1), [("x", np.concatenate([f32(96, 3.0), f32(32, 1e5)])),
                                                         ("y", np.zeros(640, np.float32)), ("red", np.zeros(1, np.float32))],
         ["y", "red"]),
        ("producer_consumer", (1, 1, 1), (96, 1, 1), [("in", i32(64, 0, 1 << 16)), ("out", np.zeros(96, np.int32)),
                                                       ("rounds", np.int32(11))], ["out"]),
        ("order_if_else", (1, 1, 1), (32, 1, 1), [("in", i32(32, 0, 8)), ("out", np.zeros(256, np.int32))], ["out"]),
        ("order_loop_exit", (1, 1, 1), (32, 1, 1), [("in", i32(32, 0, 1 << 11)), ("out", np.zeros(512, np.int32))], ["out"]),
        ("early_return_bar", (1, 1, 1), (128, 1, 1), [("in", i32(128, 0, 1000)), ("out", np.zeros(128, np.int32)),
                                                       ("n", np.int32(77))], ["out"]),
        ("ticket_if_else", (1, 1, 1), (32, 1, 1), [("in", i32(32, 0, 128)), ("out", np.zeros(128, np.int32)),
                                                    ("acc", np.zeros(32, np.int32))], ["out", "acc"]),
        ("ticket_loop", (1, 1, 1), (32, 1, 1), [("in", i32(32, 0, 1 << 14)), ("out", np.zeros(288, np.int32))], ["out"]),
        ("ticket_switch", (1, 1, 1), (32, 1, 1), [("in", i32(32, 0, 128)), ("out", np.zeros(64, np.int32))], ["out"]),
        ("warp_lock", (1, 1, 1), (64, 1, 1), [("counter", np.zeros(1, np.int32)), ("order", np.zeros(64, np.int32))],
         ["counter", "order"]),
    ]


def racy_cases(rng):
    i32 = lambda n, lo, hi: rng.integers(lo, hi, n, dtype=np.int64).astype(np.int32)  # noqa: E731
    one = lambda k, s: (k, (1, 1, 1), (32, 1, 1), [("in", i32(32, 0, 1 << 11)),  # noqa: E731
                                                   ("out", np.zeros(32 * s + 1, np.int32))], ["out"])
    return [one("race_if_else", 8), one("race_loop_exit", 16), one("race_one_side_load", 4),
            one("race_store_first", 4), one("race_nested_short", 4), one("race_loop_body", 16),
            one("race_long_sides", 4), one("race_switch", 4), one("race_lane_ranges", 4),
            ("race_global", (1, 1, 1), (32, 1, 1), [("in", i32(32, 0, 1 << 11)), ("out", np.zeros(128, np.int32)),
                                                     ("gclk", np.zeros(1, np.int32))], ["out", "gclk"]),
            ("race_early_return", (1, 1, 1), (32, 1, 1), [("in", i32(32, 0, 1 << 11)),
                                                           ("out", np.zeros(96, np.int32))], ["out"]),
            ("race_plain", (1, 1, 1), (32, 1, 1), [("in", i32(32, 0, 1 << 11)), ("out", np.zeros(128, np.int32))],
             ["out"])]


def probe_cases(rng):
    u32 = lambda n: rng.integers(0, 1 << 32, n, dtype=np.int64).astype(np.uint32)  # noqa: E731
    kernels = ["hammock_0", "hammock_1", "hammock_2", "hammock_3", "hammock_4", "hammock_6", "hammock_8",
               "hammock_12", "hammock_16", "shape_marks_only", "shape_uneven", "shape_two_marks", "shape_global",
               "shape_one_sided", "shape_nested", "shape_loop", "shape_call_free_div"]
    out = [(k, (2, 1, 1), (32, 1, 1), [("in", u32(64)), ("out", np.zeros(66, np.uint32)), ("gw", u32(64))], ["out"])
           for k in kernels]
    out.append(("same_address_stores", (4, 1, 1), (32, 1, 1), [("in", u32(128)), ("out", np.zeros(256, np.uint32)),
                                                                ("gout", np.zeros(64, np.uint32))], ["out", "gout"]))
    return out


def pack(bundle_path, gpu_path, out):
    bundle, gpu = np.load(bundle_path, allow_pickle=False), np.load(gpu_path, allow_pickle=False)
    meta = json.loads(str(gpu["meta"]))
    res = {"meta": gpu["meta"]}
    for key in bundle.files:
        if not key.endswith("__config"):
            continue
        name = key[:-len("__config")]
        if f"{name}__error" in gpu.files or not bool(gpu[f"{name}__reproducible"]):
            print(f"{name}: left out (failed or not reproducible on the GPU)")
            continue
        cfg = json.loads(str(bundle[key]))
        cfg["gpu"], cfg["driver"] = meta["gpu"], meta["nvidia_smi"]
        res[key] = np.array(json.dumps(cfg))
        for k in bundle.files:
            if k.startswith(name + "__") and not k.endswith("__config"):
                res[k] = bundle[k]
        for o in cfg["outputs"]:
            res[f"{name}__out__{o}"] = gpu[f"{name}__out__{o}"]
    np.savez_compressed(out, **res)


def main():
    if sys.argv[1] == "--pack":
        pack(*sys.argv[2:5])
        return
    mode = sys.argv[1] if sys.argv[1].startswith("--") else ""
    racy = mode in ("--racy", "--probes")
    out = sys.argv[2] if mode else sys.argv[1]
    srcs = {"": ["divergence.cu"], "--racy": ["racy.cu"], "--probes": ["hammock.cu", "stores.cu"]}[mode]
    with tempfile.TemporaryDirectory() as tmp:
        texts = []
        for src in srcs:
            ptx_path = os.path.join(tmp, "d.ptx")
            subprocess.run(["nvcc", *FLAGS, "-ptx", os.path.join(HERE, src), "-o", ptx_path], check=True)
            texts.append(open(ptx_path).read())
    base = texts[0]
    bundle = {}
    if mode == "--probes":
        rng = np.random.default_rng(2222)
        for kernel, grid, block, args, outs in probe_cases(rng):
            src = 1 if kernel.startswith("same_address") else 0
            name = f"div_{kernel}_nvcc"
            cfg = {"kernel": kernel, "grid": list(grid), "block": list(block), "shared": 0, "outputs": outs,
                   "source": "nvcc", "target": "sm_90a", "flags": " ".join(FLAGS), "args": []}
            for a, v in args:
                cfg["args"].append(["array", a])
                bundle[f"{name}__in__{a}"] = v
            first = "div_hammock_0_nvcc" if src == 0 else name
            if name == first:
                bundle[f"{name}__ptx"] = np.frombuffer(texts[src].encode(), np.uint8)
            else:
                cfg["ptx_from"] = first
            bundle[f"{name}__config"] = np.array(json.dumps(cfg))
        np.savez_compressed(out, **bundle)
        print(f"{out}: {sum(k.endswith('__config') for k in bundle)} cases")
        return
    bundle = {}
    for lay, order in LAYOUTS.items():
        text = base if order is None else relayout(base, order)
        rng = np.random.default_rng(22)
        first = None
        for kernel, grid, block, args, outs in (racy_cases if racy else cases)(rng):
            name = f"div_{kernel}_{lay}"
            cfg = {"kernel": kernel, "grid": list(grid), "block": list(block), "shared": 0, "outputs": outs,
                   "source": "nvcc", "target": "sm_90a", "flags": " ".join(FLAGS) + ("" if order is None else
                                                                                      f" (blocks laid out: {lay})"),
                   "args": []}
            for a, v in args:
                if isinstance(v, np.ndarray) and v.ndim:
                    cfg["args"].append(["array", a])
                    bundle[f"{name}__in__{a}"] = v
                else:
                    cfg["args"].append(["scalar", str(v.dtype), v.item()])
            if kernel == "warp_lock":
                cfg["nondeterministic"] = {"order": [[0, 256]], "why": "the order in which the threads win the "
                                           "lock differs from run to run on the GPU"}
            if first is None:
                first = name
                bundle[f"{name}__ptx"] = np.frombuffer(text.encode(), np.uint8)
            else:
                cfg["ptx_from"] = first
            bundle[f"{name}__config"] = np.array(json.dumps(cfg))
        if racy:
            continue
        # the Triton kernel (triton_softcap.py wrote its PTX): shared memory from Triton's metadata
        ttext = open(os.path.join(HERE, "softcap_ce.ptx")).read()
        name = f"div_triton_softcap_ce_{lay}"
        rng = np.random.default_rng(23)
        x = np.concatenate([(rng.standard_normal(1000) * 40).astype(np.float32), np.zeros(24, np.float32)])
        cfg = {"kernel": "softcap_ce", "grid": [1, 1, 1], "block": [128, 1, 1], "shared": 16,
               "outputs": ["y", "loss"], "source": "triton", "target": "sm_90a",
               "flags": "triton 3.6 num_warps=4" + ("" if order is None else f" (blocks laid out: {lay})"),
               "args": [["array", "x"], ["array", "y"], ["array", "loss"], ["scalar", "int32", 1000],
                        ["scalar", "float32", 30.0]]}
        bundle[f"{name}__in__x"] = x
        bundle[f"{name}__in__y"] = np.zeros(1024, np.float32)
        bundle[f"{name}__in__loss"] = np.zeros(1, np.float32)
        bundle[f"{name}__ptx"] = np.frombuffer((ttext if order is None else relayout(ttext, order)).encode(),
                                               np.uint8)
        bundle[f"{name}__config"] = np.array(json.dumps(cfg))
    np.savez_compressed(out, **bundle)
    print(f"{out}: {sum(k.endswith('__config') for k in bundle)} cases")


if __name__ == "__main__":
    main()
