"""Build the corpus of compiler-written PTX: every case's PTX text, launch configuration and inputs.

    python tools/hwcapture/corpus/build.py OUT.npz [--only triton,nvcc,cute]

Triton cases are compiled by Triton itself (``emulator.triton.compile``, no GPU needed) for sm_80 and
sm_90a; nvcc and CuTe cases by ``nvcc -ptx`` (see ``nvcc_cases.py``). ``run_gpu.py`` runs the bundle on
the GPU and adds the outputs; ``pack.py`` turns that into ``tests/data/corpus``.

Bundle keys (``np.savez_compressed``, no pickles): ``<case>__ptx`` (the PTX bytes), ``<case>__config``
(JSON: source, target, kernel, grid, block, shared, args, outputs), ``<case>__in__<arg>`` (input arrays).
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, ROOT)
# The kernels are imported from a path relative to the repository root, so that the file names Triton and
# nvcc record in the PTX debug information (.file, DW_AT_comp_dir) are relative too.
os.chdir(ROOT)
sys.path.insert(0, os.path.relpath(HERE, ROOT))

# Triton signature type -> numpy dtype name of the scalar the host passes
SCALAR = {"i1": "uint8", "u1": "uint8", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
          "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "fp16": "float16", "bf16": "bfloat16",
          "fp32": "float32", "fp64": "float64"}


def raw(a):
    """An array as numpy can store it: ml_dtypes arrays viewed as unsigned integers of their width."""
    a = np.ascontiguousarray(a)
    if type(a.dtype).__module__.startswith("ml_dtypes") or a.dtype.name in ("bfloat16", "float8_e4m3fn",
                                                                             "float8_e5m2"):
        return a.view({1: np.uint8, 2: np.uint16}[a.dtype.itemsize])
    return a


def write_bundle(allc, path, rename=None):
    """Write {name: (ptx, config, inputs)} as a bundle for ``run_gpu.py``: the PTX of a module several cases share
    stored once (``ptx_from``); npz holds numpy dtypes only, so ml_dtypes inputs (bfloat16, float8) are stored as
    unsigned integers (``raw``), their dtype named in the config; ``rename`` maps a case's name to the stored one."""
    res, first = {}, {}
    for name, (ptx, cfg, inputs) in allc.items():
        name = rename(name) if rename is not None else name
        cfg["dtypes"] = {k: v.dtype.name for k, v in inputs.items()}
        if ptx in first:
            cfg["ptx_from"] = first[ptx]
        else:
            first[ptx] = name
            res[f"{name}__ptx"] = np.frombuffer(ptx.encode(), np.uint8)
        res[f"{name}__config"] = np.array(json.dumps(cfg))
        for k, v in inputs.items():
            res[f"{name}__in__{k}"] = raw(v)
    np.savez_compressed(path, **res)
    print(f"{len(allc)} cases -> {path} ({os.path.getsize(path)} bytes)")


def triton_cases(case_list=None, extra=None):
    """Compile Triton case dicts (``triton_kernels.cases()`` unless given) for their targets; ``extra`` is added
    to every config."""
    import triton
    import emulator.triton as et
    if case_list is None:
        from triton_kernels import cases
        case_list = cases()
    out = {}
    for c in case_list:
        for target in c["targets"]:
            name = f"triton_{c['name']}_{target.replace('sm_', 'sm')}"
            args = list(c["args"].values())
            try:
                k = et.compile(c["kernel"], *args, target=target, num_warps=c["num_warps"], **c["constexprs"])
            except Exception as e:  # noqa: BLE001 - a kernel Triton refuses for this target is left out
                print(f"{name}: Triton refused: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                continue
            arglist, inputs = [], {}
            short = dict(zip([p.name for p in c["kernel"].params], c["args"]))   # kernel name -> case's name
            for pname, ty in k.params:
                v = c["args"][short[pname]]
                if isinstance(v, np.ndarray):
                    arglist.append(["array", short[pname]])
                    inputs[short[pname]] = v
                else:
                    arglist.append(["scalar", SCALAR[ty], v])
            scratch = int(getattr(k.metadata, "global_scratch_size", 0) or 0)
            grid = list(c["grid"]) + [1] * (3 - len(c["grid"]))
            cfg = dict(source="triton", tool=f"Triton {triton.__version__}", target=target, kernel=k.name,
                       grid=grid, block=[32 * k.num_warps, 1, 1], shared=int(k.shared), args=arglist,
                       outputs=c["outputs"], scratch=scratch,
                       scratch_align=int(getattr(k.metadata, "global_scratch_align", 1) or 1),
                       **(extra or {}), **c.get("config", {}))
            out[name] = (k.ptx, cfg, inputs)
    return out


def nvcc_cases(kinds):
    from nvcc_cases import cases
    return cases(kinds)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--only", default="triton,nvcc,cute", help="triton, nvcc, cute; cluster: only cuda/cluster.cu; "
                   "regressions: third-party kernels the emulator once got wrong (regressions.py)")
    a = p.parse_args()
    kinds = a.only.split(",")
    allc = {}
    if "triton" in kinds:
        allc.update(triton_cases())
    if "nvcc" in kinds or "cute" in kinds or "cluster" in kinds:
        allc.update(nvcc_cases(kinds))
    if "regressions" in kinds:
        import regressions
        allc.update(regressions.build(triton_cases))
    write_bundle(allc, a.out)


if __name__ == "__main__":
    main()
