"""The corpus of compiler-written PTX (tests/data/corpus): loading a case and replaying it on the emulator.

Each case is PTX text exactly as Triton or nvcc wrote it, the launch configuration, the input arrays, and the
output arrays an H100 produced from that same text (``tools/hwcapture/corpus``). ``replay`` runs the case
on the emulator from those bytes alone; the tests compare every output byte.

``CANNOT_RUN`` lists the cases the emulator does not run yet, each with the reason; a test fails as soon as
one of them runs and matches the H100, so the list stays true.
"""
from __future__ import annotations

import glob
import io
import json
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "corpus")


# case -> why it cannot run yet: "refused: line L, column C: <construct>" (the first instruction the emulator
# refuses, as its error names it) or "differs: <outputs>" (it runs, but not bit for bit like the H100)
_ADDRS = ("raw shared-memory addresses: the H100's shared window starts at 0x400 and a CTA's addresses carry its "
          "cluster rank in bits 24-31; the emulator's start at 0 (emulator/memory/dsmem.py, docs/tma.md)")
CANNOT_RUN: dict[str, str] = {
    "nvcc_cluster_addr_probe_sm90a": f"differs: out (147 bytes) -- {_ADDRS}",
}


def _files():
    return sorted(glob.glob(os.path.join(DATA, "*.npz")))


def load_all(only=None):
    """{case: {"ptx": str, "config": dict, "in": {arg: array}, "out": {arg: array}}} of every committed case
    (``only``: the file names to read, e.g. ``["cutlass.npz"]``)."""
    cases = {}
    for path in _files():
        if only is None or os.path.basename(path) in only:
            _read(path, cases, os.path.basename(path))
    for c in cases.values():
        resolve(c, cases)
    return cases


def load_npz(path):
    """The cases of one file in the corpus format (e.g. tests/data/ctrlflow.npz), resolved like load_all's."""
    cases = _read(path, {})
    for c in cases.values():
        resolve(c, cases)
    return cases


def _read(path, cases, file=None):
    """Add the cases of ``path`` (keys ``<case>__<kind>[__<arg>]``; other keys are skipped) to ``cases``."""
    with np.load(path, allow_pickle=False) as z:
        for key in z.files:
            if "__" not in key:
                continue
            name, kind, *rest = key.split("__")
            c = cases.setdefault(name, {"in": {}, "out": {}, **({"file": file} if file else {})})
            a = z[key]
            if kind == "ptx":
                c["ptx"] = a.tobytes().decode()
            elif kind == "config":
                c["config"] = json.loads(str(a))
            else:
                c[kind][rest[0]] = a
    return cases


def resolve(case, cases):
    """Fill in a case's PTX when it shares its module with another case, and type its arrays."""
    if "ptx" not in case and case["config"].get("ptx_from"):
        case["ptx"] = cases[case["config"]["ptx_from"]]["ptx"]
    return typed(case)


def typed(case):
    """View raw-stored arrays (bfloat16, float8) as the dtype the config names."""
    import ml_dtypes
    for kind in ("in", "out"):
        for k, a in case[kind].items():
            name = case["config"].get("dtypes", {}).get(k)
            if name and name != a.dtype.name:
                case[kind][k] = a.view(getattr(ml_dtypes, name))
    return case


# cluster kernels whose registers depend on the order the CTAs of a cluster run in (the two engines interleave them
# differently; the outputs do not depend on it): engine comparisons leave their registers out
ORDER_DEPENDENT = {"nvcc_cluster_dsmem_sm90a": "every CTA's atom.add on one counter: the old values it returns"}


def in_clusters(case):
    """Whether a case launches clusters of more than one CTA (its config's ``cluster``, or the kernel's
    ``.reqnctapercluster``)."""
    import re
    cfg = case["config"]
    dims = list(cfg.get("cluster") or [])
    ptx = case["ptx"]
    i = ptx.find(".entry " + cfg["kernel"] + "(")
    m = re.search(r"\.reqnctapercluster\s+([\d\s,]+)", ptx[i:ptx.find("{", i)]) if i >= 0 else None
    if m:
        dims += [int(x) for x in m.group(1).replace(",", " ").split()]
    return int(np.prod(dims or [1])) > 1


def launch_args(case, g):
    """Place a case's inputs in ``g`` (a GlobalMemory); returns (the launch arguments, {array: (address,
    array)})."""
    cfg = case["config"]
    addrs, args = {}, []
    for name, at in cfg.get("at", {}).items():   # arrays at the device addresses they had on the GPU
        arr = np.array(case["in"][name], copy=True, order="C")
        addrs[name] = (g.map(arr, at=at), arr)
    for a in cfg["args"]:          # every array first: a tensor map names the array it describes
        if a[0] in ("array", "tensormap") and a[1] not in addrs:
            arr = case["in"][a[1]]
            addrs[a[1]] = (g.upload(arr), arr)
    for a in cfg["args"]:
        if a[0] == "array":
            args.append(addrs[a[1]][0])
        elif a[0] == "bytes":
            args.append(bytes.fromhex(a[1]))
        elif a[0] == "tensormap":     # the recorded bytes with the array's address at the offset
            raw = bytearray.fromhex(a[2])
            off = a[3] if len(a) > 3 else 0
            raw[off:off + 8] = addrs[a[1]][0].to_bytes(8, "little")
            args.append(bytes(raw))
        else:
            args.append(np.array(a[2]).astype(a[1]).item() if a[1] != "bfloat16" else a[2])
    if cfg["source"] == "triton":  # Triton's trailing global-scratch and profile-scratch pointers
        nprog = int(np.prod(cfg["grid"]))
        args.append(g.alloc(cfg["scratch"] * nprog) if cfg.get("scratch") else 0)
        args.append(0)
    return args, addrs


def replay(case, arch=None, **launch):
    """Run a case on the emulator (``launch``: extra ``Module.launch`` arguments, e.g. a schedule); returns
    ({output name: array}, LaunchResult, printf text). A config's ``at`` ({array: address}) places those arrays
    at the device addresses they had on the GPU, so recorded argument bytes that hold pointers need no patching."""
    from emulator import GlobalMemory, load_ptx
    cfg = case["config"]
    module = load_ptx(case["ptx"], arch=arch)
    g = GlobalMemory()
    args, addrs = launch_args(case, g)
    out = io.StringIO()
    res = module.launch(cfg["kernel"], cfg["grid"], cfg["block"], args, gmem=g, out=out,
                        shared_bytes=cfg.get("shared", 0), **({"cluster": tuple(cfg["cluster"])}
                                                               if cfg.get("cluster") else {}), **launch)
    got = {k: g.download(addrs[k][0], addrs[k][1].nbytes).view(addrs[k][1].dtype).reshape(addrs[k][1].shape)
           for k in cfg["outputs"]}
    return got, res, out.getvalue()


def mismatches(case, got):
    """[(output, first differing byte offsets)] against the H100's outputs; bytes the config lists as
    nondeterministic on the GPU (``nondeterministic``: output -> byte ranges, with the reason) are skipped."""
    bad = []
    skip = case["config"].get("nondeterministic", {})
    for k, want in case["out"].items():
        diff = got[k].view(np.uint8).reshape(-1) != want.view(np.uint8).reshape(-1)
        for lo, hi in skip.get(k, []):
            diff[lo:hi] = False
        d = np.flatnonzero(diff)
        if d.size:
            bad.append((k, d[:8].tolist(), int(d.size)))
    return bad
