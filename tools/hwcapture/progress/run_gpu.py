"""Run the forward-progress kernels (progress.ptx, loaded as text through the driver) on the GPU; writes
an .npz per call: per kernel and trial, what each lane saw and how many times it polled."""
import sys
import time

import numpy as np
import cupy as cp

BLOCKS, LIMIT = 8, 1 << 22


def main(ptx_path, out_path, names):
    ptx = open(ptx_path, "rb").read()
    mod = cp.cuda.function.Module()
    mod.load(ptx + b"\0")
    res = {"ptx": np.frombuffer(ptx, np.uint8)}
    for name in names:
        fn = mod.get_function(name)
        outs, tries, secs = [], [], []
        for trial in range(3):
            out = cp.zeros(BLOCKS * 32, cp.uint32)
            tr = cp.zeros(BLOCKS * 32, cp.uint32)
            args = [out, tr]
            if name in ("spin_backoff", "fp_global"):
                args.append(cp.zeros(BLOCKS, cp.uint32))
            if name in ("spin_timeout", "fp_timeout"):
                args.append(np.uint32(LIMIT))
            t = time.perf_counter()
            fn((BLOCKS, 1, 1), (32, 1, 1), tuple(args))
            cp.cuda.Device().synchronize()
            secs.append(time.perf_counter() - t)
            outs.append(out.get())
            tries.append(tr.get())
        res[name + "__out"] = np.stack(outs)
        res[name + "__tries"] = np.stack(tries)
        res[name + "__seconds"] = np.array(secs)
        print(name, "out", outs[0][:4], outs[0][32:36], "tries min/max", tries[0][1:32].min(), tries[0].max(),
              "s", ["%.4f" % s for s in secs], flush=True)
    np.savez_compressed(out_path, **res)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
