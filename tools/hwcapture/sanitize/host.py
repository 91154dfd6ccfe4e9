"""Launch the planted-bug kernels from planted.ptx (cuModuleLoadData through cupy), one after the other, for
compute-sanitizer to watch:

    compute-sanitizer --tool racecheck python3 host.py planted.ptx planted.json [FIRST]

Each launch prints '@@BEGIN name' and '@@END name' (after a synchronize) on stdout; a launch that fails prints
'@@FAIL name error' and the process exits with status 3 (a broken context cannot launch again), so that the
caller restarts from the next kernel. Arrays: out zero-filled, in = 0..words-1, buf allocated and never
written (uninitialised), each allocated afresh for each launch without a memory pool."""
import json
import os
import sys

import cupy as cp
import numpy as np


def main():
    ptx, cfg = open(sys.argv[1], "rb").read(), json.load(open(sys.argv[2]))
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    cp.cuda.set_allocator(None)            # cudaMalloc per array: initcheck sees fresh allocations
    mod = cp.cuda.function.Module()
    mod.load(ptx + b"\0")
    words = cfg["words"]
    names = [k + s for k in cfg["shapes"] for s in ("_bug", "_ok")]
    skip = set(os.environ.get("PLANTED_SKIP", "").split(","))
    for i, name in enumerate(names):
        if i < first or name in skip:
            continue
        grid, block, shared = cfg["shapes"][name.rsplit("_", 1)[0]]
        print(f"@@BEGIN {i} {name}", flush=True)
        try:
            fn = mod.get_function(name)
            out = cp.zeros(words, cp.uint32)
            inp = cp.arange(words, dtype=cp.uint32)
            buf = cp.empty(words, cp.uint32)
            fn((grid,), (block,), (out, inp, buf, np.int32(words)), shared_mem=shared)
            cp.cuda.Device().synchronize()
            print(f"@@END {i} {name} out={cp.asnumpy(out)[:8].tolist()}", flush=True)
            del out, inp, buf
        except Exception as e:          # noqa: BLE001 (a faulting kernel poisons the context)
            print(f"@@FAIL {i} {name} {type(e).__name__}: {e}", flush=True)
            sys.exit(3)


if __name__ == "__main__":
    main()
