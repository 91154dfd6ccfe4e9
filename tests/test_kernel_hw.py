"""Whole nvcc kernels against an H100: the emulator's outputs equal the GPU's bit for bit.

``tests/data/kernels/h100_kernels.npz`` holds, per case, the launch configuration, every array before and
after the GPU ran the committed ``.ptx`` (captured by ``tools/hwcapture/kernels/capture.py``), the printf
output and the final value of module variables. Each test replays one case from that file alone.
"""
import io
import json
import os

import numpy as np
import pytest

from emulator import GlobalMemory, load_ptx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPTURE = os.path.join(ROOT, "tests", "data", "kernels", "h100_kernels.npz")


def _load():
    with np.load(CAPTURE, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    cases = {}
    for key, a in arrays.items():
        name, kind, *rest = key.split("__")
        cases.setdefault(name, {}).setdefault(kind, {} if rest else None)
        if rest:
            cases[name][kind][rest[0]] = a
        else:
            cases[name][kind] = a
    return meta, cases


META, CASES = _load()
_MODULES = {}


def _module(path):
    if path not in _MODULES:
        with open(os.path.join(ROOT, path)) as f:
            _MODULES[path] = load_ptx(f.read())
    return _MODULES[path]


def replay(name):
    case = CASES[name]
    cfg = json.loads(str(case["config"]))
    module = _module(cfg["ptx"])
    g = GlobalMemory()
    args, addrs = [], {}
    for kind, val in cfg["args"]:
        if kind == "array":
            arr = case["before"][val]
            addrs[val] = (g.upload(arr), arr)
            args.append(addrs[val][0])
        else:
            args.append(val)
    out = io.StringIO()
    module.launch(cfg["kernel"], cfg["grid"], cfg["block"], args, gmem=g, out=out, shared_bytes=cfg["shared"])
    after = {k: g.download(a, arr.nbytes).view(arr.dtype).reshape(arr.shape) for k, (a, arr) in addrs.items()}
    glob = {n: g.download(module.global_address(n, g), 8).view(np.uint64) for n in cfg["globals"]}
    return case, after, glob, out.getvalue()


def test_capture_metadata():
    assert "H100" in META["gpu"] and META["cc"] == "9.0"
    assert META["driver"] and META["runtime"]
    assert set(CASES) == {"ptx_mma_shared_iota", "ptx_mma_shared_normal", "ptx_mma_global_iota",
                          "ptx_mma_global_normal", "gemm_tiled", "warp_ops", "float_ops", "float_ops_ftz",
                          "cta_sync", "reduce_sum", "transpose", "switch_int64"}
    for name, case in CASES.items():
        assert "error" not in case, name
        assert bool(case["reproducible"]), f"{name}: the GPU's three runs differed"


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_matches_h100(name):
    case, after, glob, printed = replay(name)
    for k, want in case["after"].items():
        got = after[k]
        bad = np.flatnonzero(got.view(np.uint8) != want.view(np.uint8))
        assert not bad.size, f"{name}: array {k} differs from the H100 at byte offsets {bad[:10].tolist()}"
    for k, want in (case.get("global") or {}).items():
        assert glob[k].tobytes() == want.tobytes(), f"{name}: module variable {k}"
    gpu_lines = sorted(str(case["printf"]).splitlines())
    assert sorted(printed.splitlines()) == gpu_lines


def test_demo_kernels_agree_with_each_other_and_numpy():
    from emulator.cli.run import run_demo
    a, b, d_shared = run_demo("ptx_mma_shared")
    _, _, d_global = run_demo("ptx_mma_global")
    assert d_shared.view(np.uint16).tolist() == d_global.view(np.uint16).tolist()
    want = CASES["ptx_mma_shared_iota"]["after"]["c"].reshape(16, 8)
    assert d_shared.view(np.uint16).tolist() == want.view(np.uint16).tolist()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(d_shared.astype(np.float64) - ref).max() <= 2 * float(np.spacing(np.float16(ref.max())))
