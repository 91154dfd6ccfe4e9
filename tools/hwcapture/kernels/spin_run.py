"""Run the spin-wait kernels of tests/data/kernels/spin.ptx on the GPU from that PTX text; write their outputs.

    python tools/hwcapture/kernels/spin_run.py OUT.json        # needs a GPU and cupy

``spin_forever`` is left out (it never ends on the GPU either). tests/test_robust.py compares the emulator's
outputs with these.
"""
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CASES = [("spin_lanes", 32, False), ("spin_warps", 64, True), ("spin_nanosleep", 64, True), ("spin_acquire", 64, True)]


def main(out):
    import cupy as cp
    mod = cp.cuda.function.Module()
    mod.load(open(os.path.join(ROOT, "tests", "data", "kernels", "spin.ptx"), "rb").read())
    res = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "kernels": {}}
    for name, block, flag in CASES:
        runs = []
        for _ in range(3):
            o = cp.zeros(block, cp.int32)
            args = (o, cp.zeros(1, cp.int32)) if flag else (o,)
            mod.get_function(name)((1,), (block,), args)
            cp.cuda.runtime.deviceSynchronize()
            runs.append(cp.asnumpy(o).tolist())
        assert all(r == runs[0] for r in runs), name
        res["kernels"][name] = runs[0]
        print(name, "finished", flush=True)
    json.dump(res, open(out, "w"))


if __name__ == "__main__":
    main(sys.argv[1])
