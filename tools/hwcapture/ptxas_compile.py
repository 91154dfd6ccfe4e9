"""Capture what ptxas does beyond each instruction's semantics, on the GPU from the PTX text
(``tests/ptxas_probes.py`` writes the kernels; ``tests/test_ptxas_compile.py`` replays the result):

* approximate math on constant operands (``emulator/frontend/constfold.py``): for every f32 ``.approx`` form but
  tanh and every division form, one kernel stores the instruction applied to 1,234 (divisions: 1,600) constants,
  each a register that a ``mov`` of an immediate defines: every (sign, exponent) region, zeros, subnormals,
  infinities, NaN payloads, the MUFU range-scaling thresholds;
* mul/add contraction (``emulator/frontend/contract.py``): 11 kernels where a product has add/sub readers and
  other readers (a store, a mul, an fma, a cvt), across a branch and across a label, on 1,024 inputs chosen so
  that the fused and the twice-rounded results differ often (c close to -a*b or to a/b).

    python tools/hwcapture/ptxas_compile.py OUTDIR        # needs a GPU and cupy

Writes OUTDIR/constfold_h100.npz and OUTDIR/contract_h100.npz (the files of tests/data/ptxas_compile). The
folded constants can also be read off the SASS without a GPU (``ptxas -arch=sm_90a`` then ``nvdisasm``); the
H100 is what the tests compare with.
"""
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

from ptxas_probes import CONTRACT_PATTERNS, contract_module, fold_module  # noqa: E402

SPECIAL = [0, 0x80000000, 1, 0x80000001, 0x7FFFFF, 0x807FFFFF, 0x800000, 0x80800000, 0x3F800000, 0xBF800000,
           0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000, 0xFFFFFFFF, 0x7FFFFFFF,
           0x7F7FFFFF, 0xFF7FFFFF, 0x40000000, 0x3F000000, 0x42FE0000, 0x43000000, 0xC2FC0000, 0xC3000000,
           0xC2FE0000, 0x43100000, 0x7E800000, 0x7E800001, 0x00400000, 0x0000FFFF, 0x3E22F983, 0x4B000000]


def fold_inputs(rng, form, n=1200):
    """(1, k) operand bits of a unary form, (2, k) of a division: the specials (every pair of the first 20 for
    divisions), then random bits, half of them with exponents in [90, 140)."""
    if form.startswith("div"):
        sa, sb = np.meshgrid(np.array(SPECIAL[:20], np.uint32), np.array(SPECIAL[:20], np.uint32))
        a = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        b = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        return np.stack([np.concatenate([sa.ravel(), a]), np.concatenate([sb.ravel(), b])])
    x = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    x[::2] = (x[::2] & np.uint32(0x807FFFFF)) | (rng.integers(90, 140, n // 2).astype(np.uint32) << 23)
    return np.concatenate([np.array(SPECIAL, np.uint32), x])[None]


def contract_inputs(rng, n=2048, keep=1024):
    a = (rng.standard_normal(n) * np.exp2(rng.integers(-8, 8, n))).astype(np.float32)
    b = (rng.standard_normal(n) * np.exp2(rng.integers(-8, 8, n))).astype(np.float32)
    p = a.astype(np.float64) * b
    q = a.astype(np.float64) / b
    c = (-p * (1 + rng.standard_normal(n) * 1e-4)).astype(np.float32)
    c[::3] = rng.standard_normal(n)[::3].astype(np.float32)
    d = (-p * (1 + rng.standard_normal(n) * 1e-4)).astype(np.float32)
    d[::5] = np.abs(d[::5])
    c[1::2] = (q * (1 + rng.standard_normal(n) * 1e-4))[1::2].astype(np.float32)
    d[1::2] = (q * (1 + rng.standard_normal(n) * 1e-4))[1::2].astype(np.float32)
    return a[:keep], b[:keep], c[:keep], d[:keep]        # drawn for 2,048 lanes, the first 1,024 kept


def main(outdir):
    import cupy as cp
    from emulator.numerics import mufu as M
    os.makedirs(outdir, exist_ok=True)
    meta = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
            "driver": cp.cuda.runtime.driverGetVersion()}
    rng = np.random.default_rng(7)
    res = {"meta": np.array(json.dumps(meta))}
    for form in M.F32_UNARY + M.F32_DIV:
        if form.startswith("tanh"):
            continue
        ins = fold_inputs(rng, form)
        consts = list(zip(*ins)) if form.startswith("div") else list(ins[0])
        mod = cp.cuda.function.Module()
        mod.load(fold_module(form, consts).encode() + b"\0")
        out = cp.zeros(len(consts), cp.uint32)
        mod.get_function("k")((1,), (1,), (out,))
        res[f"{form}__in"], res[f"{form}__out"] = ins, cp.asnumpy(out)
    np.savez_compressed(os.path.join(outdir, "constfold_h100.npz"), **res)
    ins = contract_inputs(np.random.default_rng(11))
    n = ins[0].size
    mod = cp.cuda.function.Module()
    text = contract_module()
    mod.load(text.encode() + b"\0")
    res = {"ptx": np.frombuffer(text.encode(), np.uint8),
           "meta": np.array(json.dumps(dict(meta, kernels=list(CONTRACT_PATTERNS))))}
    res.update({f"in__{k}": v for k, v in zip("abcd", ins)})
    dev = [cp.asarray(v) for v in ins]
    for name in CONTRACT_PATTERNS:
        out = cp.zeros(2 * n, cp.float32)
        mod.get_function(name)(((n + 127) // 128,), (128,), (*dev, out, np.uint32(n)))
        res[f"out__{name}"] = cp.asnumpy(out)
    np.savez_compressed(os.path.join(outdir, "contract_h100.npz"), **res)


if __name__ == "__main__":
    main(sys.argv[1])
