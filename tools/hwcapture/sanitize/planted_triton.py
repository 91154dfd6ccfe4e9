"""Planted bugs written in Triton, each with a clean twin, compiled for sm_90a (no GPU needed) into
tests/data/sanitize/planted_triton.json:

    /path/to/python-with-triton tools/hwcapture/sanitize/planted_triton.py

Each kernel takes (out_ptr, in_ptr, buf_ptr, n); the launch gives out zeroed, in = 0..n-1 and buf allocated
but never written, as planted.cu's kernels get."""
import json
import os

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DEST = os.path.join(ROOT, "tests", "data", "sanitize", "planted_triton.json")


@triton.jit
def tt_same_slots_bug(out_ptr, in_ptr, buf_ptr, n, BLOCK: tl.constexpr):
    # every program stores its values to the same BLOCK words: a race between CTAs
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + offs)
    tl.store(out_ptr + offs, x + tl.program_id(0))


@triton.jit
def tt_same_slots_ok(out_ptr, in_ptr, buf_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + offs)
    tl.atomic_add(out_ptr + offs, x + tl.program_id(0))


@triton.jit
def tt_mask_past_end_bug(out_ptr, in_ptr, buf_ptr, n, BLOCK: tl.constexpr):
    # the mask lets the last program read 8 words past the end of in
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(in_ptr + offs, mask=offs < n + 8, other=0)
    tl.store(out_ptr + offs, x, mask=offs < n)


@triton.jit
def tt_mask_past_end_ok(out_ptr, in_ptr, buf_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(in_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + offs, x, mask=offs < n)


@triton.jit
def tt_uninit_buf_bug(out_ptr, in_ptr, buf_ptr, n, BLOCK: tl.constexpr):
    # reads scratch memory that nothing wrote
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(buf_ptr + offs) + 1)


@triton.jit
def tt_uninit_buf_ok(out_ptr, in_ptr, buf_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(buf_ptr + offs, tl.load(in_ptr + offs))
    tl.store(out_ptr + offs, tl.load(buf_ptr + offs) + 1)


KERNELS = [tt_same_slots_bug, tt_same_slots_ok, tt_mask_past_end_bug, tt_mask_past_end_ok, tt_uninit_buf_bug,
           tt_uninit_buf_ok]
GRID = {"tt_same_slots": 2, "tt_mask_past_end": 3, "tt_uninit_buf": 2}


def main():
    sig = {"out_ptr": "*i32", "in_ptr": "*i32", "buf_ptr": "*i32", "n": "i32", "BLOCK": "constexpr"}
    out = {"triton": triton.__version__, "block": 64, "words": 128, "kernels": {}}
    for fn in KERNELS:
        k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs={"BLOCK": 64}),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": 2, "num_stages": 1})
        name = fn.__name__
        out["kernels"][name] = {"ptx": k.asm["ptx"], "entry": k.metadata.name, "num_warps": 2,
                                "shared": k.metadata.shared, "grid": GRID[name.rsplit("_", 1)[0]],
                                "scratch": getattr(k.metadata, "global_scratch_size", 0)}
    with open(DEST, "w") as f:
        json.dump(out, f, indent=1)
    print(DEST, {n: len(v["ptx"]) for n, v in out["kernels"].items()})


if __name__ == "__main__":
    main()
