"""Compiler-generated kernels with atomics (Triton's ``tl.atomic_add`` on bf16 and ``tl.atomic_cas`` on fp16,
nvcc's ``atomicAdd``/``atomicCAS`` on ``__nv_bfloat16``, ``__nv_bfloat162`` and ``unsigned short``), run as
compiled on the GPU (``capture``) and in the emulator (tests/test_atomics_diff.py), same PTX, same buffers.

Each program: (name, PTX file in programs/, kernel, grid, block, arguments). An argument is an int, or
``(role, values)`` for a buffer (``in``: read only, ``io``: read and written, ``out``: written; its values
are the initial contents, a numpy array); every buffer comes back after the launch.
"""
from __future__ import annotations

import os

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def _bf16_pairs():
    """x, y: the issue's three sums (1 + 0.25, 2 + 1, -1 + -1), then signed zeros, infinities, NaN payloads,
    subnormals, overflow and cancellation, then the scalar capture's crossed bf16 edges."""
    x = [0x3F80, 0x4000, 0xBF80, 0x0000, 0x8000, 0x8000, 0x7F80, 0x7F80, 0xFF80, 0x7FC1, 0xFFA5, 0x7F81,
         0x0001, 0x807F, 0x0080, 0x7F7F, 0xFF7F, 0x3F80, 0x3F81, 0x4B80]
    y = [0x3E80, 0x3F80, 0xBF80, 0x8000, 0x8000, 0x0000, 0xFF80, 0x3F80, 0xFF80, 0x3F80, 0x7FC3, 0x0000,
         0x0001, 0x807F, 0x8080, 0x7F7F, 0xFF7F, 0xBF80, 0x3380, 0x3F80]
    rng = np.random.default_rng(23)
    rest = 128 - len(x)
    core = np.array([0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80,
                     0x7FC0, 0x7F81, 0xFFC5, 0x3FC0, 0x4040], np.uint16)
    xs = np.concatenate([np.array(x, np.uint16), core[np.arange(rest) % 16]])
    ys = np.concatenate([np.array(y, np.uint16), core[(np.arange(rest) // 16 + rng.integers(0, 16, rest)) % 16]])
    return xs, ys


def _cas16():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 1 << 16, 128).astype(np.uint16)
    x[:8] = [0x0000, 0x8000, 0x7E00, 0x7C01, 0xFC00, 0x3C00, 0xFFFF, 0x0001]
    c = rng.integers(0, 1 << 16, 128).astype(np.uint16)
    c[0::2] = x[0::2]
    c[1] = 0x0000           # -0 vs +0: cas compares bits
    c[3] = 0x7C02           # one NaN vs another
    v = rng.integers(0, 1 << 16, 128).astype(np.uint16)
    return x, c, v


def programs():
    xs, ys = _bf16_pairs()
    x, c, v = _cas16()
    x2 = np.stack([xs, np.roll(xs, 5)], 1).reshape(-1).view(np.uint32)
    y2 = np.stack([ys, np.roll(ys, 11)], 1).reshape(-1).view(np.uint32)
    z16 = np.zeros(128, np.uint16)
    return [
        ("triton_add_bf16", "triton_atomic_add_bf16.ptx", "k", 1, 128, [("io", xs), ("in", ys), 0, 0]),
        ("triton_cas_f16", "triton_atomic_cas_f16.ptx", "kc", 1, 128, [("io", x), ("in", c), ("in", v), 0, 0]),
        ("nvcc_add_bf16", "nvcc_atomics_sm90a.ptx", "add_bf16", 1, 128, [("io", xs), ("in", ys), ("out", z16), 128]),
        ("nvcc_add_bf16_contended", "nvcc_atomics_sm90a.ptx", "add_bf16_one", 1, 128,
         [("io", xs[:4].copy()), ("in", ys), 128]),
        ("nvcc_add_bf16x2", "nvcc_atomics_sm90a.ptx", "add_bf162", 1, 64,
         [("io", x2[:64].copy()), ("in", y2[:64].copy()), ("out", np.zeros(64, np.uint32)), 64]),
        ("nvcc_cas_u16", "nvcc_atomics_sm90a.ptx", "cas_u16", 1, 128,
         [("io", x), ("in", c), ("in", v), ("out", z16), 128]),
    ]


def ptx(fname):
    return open(os.path.join(HERE, fname)).read()


def capture(cp, store, runs):
    """Run every program ``runs`` times; [{name, file, kernel, grid, block, args, runs: [[array names]]}]."""
    out = []
    for name, fname, kern, grid, block, args in programs():
        mod = cp.cuda.function.Module()
        mod.load(ptx(fname).encode())
        fn = mod.get_function(kern)
        rec = {"name": name, "file": fname, "ptx": ptx(fname), "kernel": kern, "grid": grid, "block": block,
               "args": [], "runs": []}
        for a in args:
            rec["args"].append(a if isinstance(a, int) else
                               [a[0], str(a[1].dtype), store.put(a[1].view(np.uint8).reshape(len(a[1]), -1))])
        for _ in range(runs):
            dev = [cp.asarray(a[1]) if not isinstance(a, int) else (np.uint64(0) if a == 0 else np.int32(a))
                   for a in args]
            fn((grid,), (block,), tuple(dev))
            cp.cuda.runtime.deviceSynchronize()
            rec["runs"].append([store.put(cp.asnumpy(d).view(np.uint8).reshape(len(d), -1))
                                for d, a in zip(dev, args) if not isinstance(a, int)])
        out.append(rec)
    return out
