"""Which output bytes of the order probes (div_order_*) come from shared memory that the kernel never wrote.

On the GPU (cupy), from the corpus's PTX: a kernel fills every SM's shared memory with a pattern, then each
probe runs; the slots it never writes read back the pattern instead of the bytes of the capture:

    python tools/hwcapture/divergence/fill_shared.py --gpu tests/data/divergence/h100.npz OUT.json

On the emulator: the same probes with shared memory starting out as two patterns; the bytes that change are
written into the cases' configs as ``nondeterministic`` (skipped by the comparison, with the reason):

    python tools/hwcapture/divergence/fill_shared.py --mark tests/data/divergence/h100.npz
"""
import json
import os
import sys

import numpy as np

KERNELS = ("order_if_else", "order_loop_exit")
PATTERNS = (0x5A5A5A5A, 0x13579BDF)
WHY = ("slots the kernel never writes: it copies them out of shared memory nothing wrote, which holds what earlier "
       "kernels left there (on the H100 they read back a pattern written into every SM's shared memory just before)")
FILL = r'''extern "C" __global__ void fill(unsigned v) { extern __shared__ unsigned s[];
  for (int i = threadIdx.x; i < 12288; i += blockDim.x) s[i] = v; __syncthreads(); if (s[threadIdx.x] != v) s[0] = 0; }'''


def gpu(path, out):
    import cupy as cp
    fill = cp.RawKernel(FILL, "fill")
    z = np.load(path, allow_pickle=False)
    res = {}
    for kern in KERNELS:
        for lay in ("nvcc", "rev", "shuf"):
            name = f"div_{kern}_{lay}"
            src = json.loads(str(z[f"{name}__config"])).get("ptx_from", name)
            mod = cp.cuda.function.Module()
            mod.load(z[f"{src}__ptx"].tobytes() + b"\0")
            fn = mod.get_function(kern)
            for pat in PATTERNS:
                inp = cp.asarray(z[f"{name}__in__in"])
                o = cp.zeros(z[f"{name}__out__out"].size, cp.int32)
                fill((132 * 8,), (256,), (np.uint32(pat),), shared_mem=48 * 1024)
                cp.cuda.runtime.deviceSynchronize()
                fn((1, 1, 1), (32, 1, 1), (inp, o))
                cp.cuda.runtime.deviceSynchronize()
                res[f"{name}_{pat:08x}"] = cp.asnumpy(o).tolist()
    json.dump(res, open(out, "w"))


def filled(case, pattern):
    """A case's outputs on the emulator with shared memory starting out as ``pattern`` (a repeated word)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
    import corpus_lib
    from emulator.machine import cta as cta_mod
    orig = cta_mod.CTA.__init__

    def init(self, *a, **k):
        orig(self, *a, **k)
        self.smem[:] = np.frombuffer(np.uint32(pattern).tobytes(), np.uint8)[np.arange(self.smem.size) % 4]
    cta_mod.CTA.__init__ = init
    try:
        return corpus_lib.replay(case)[0]
    finally:
        cta_mod.CTA.__init__ = orig


def mark(path):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests"))
    import corpus_lib
    cases = corpus_lib.load_npz(path)
    z = dict(np.load(path, allow_pickle=False))
    for kern in KERNELS:
        for lay in ("nvcc", "rev", "shuf"):
            name = f"div_{kern}_{lay}"
            a, b = (filled(cases[name], p)["out"].view(np.uint8) for p in PATTERNS)
            ranges = []
            for x in np.flatnonzero(a != b).tolist():
                if ranges and ranges[-1][1] == x:
                    ranges[-1][1] = x + 1
                else:
                    ranges.append([x, x + 1])
            cfg = json.loads(str(z[f"{name}__config"]))
            cfg["nondeterministic"] = {"out": ranges, "why": WHY}
            z[f"{name}__config"] = np.array(json.dumps(cfg))
            print(f"{name}: {sum(h - lo for lo, h in ranges)} bytes from unwritten shared memory")
    np.savez_compressed(path, **z)


if __name__ == "__main__":
    if sys.argv[1] == "--gpu":
        gpu(sys.argv[2], sys.argv[3])
    else:
        mark(sys.argv[2])
