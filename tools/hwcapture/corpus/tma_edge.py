"""TMA boxes that end inside a 16-byte chunk of the tensor's innermost dimension (``tests/data/tma_edge.npz``):
what a TMA store writes and a TMA load reads past the last element of a row whose byte length is not a multiple
of 16 (f32 x 119, f16 x 117, u8 x 113 inside rows of 128 elements; a box also past the second dimension).

    python tools/hwcapture/corpus/tma_edge.py BUNDLE.npz      # Triton 3.6, sm_90a, no GPU needed
    python tools/hwcapture/corpus/run_gpu.py BUNDLE.npz OUT.npz
    python tools/hwcapture/corpus/heldout_tma.py --pack BUNDLE.npz OUT.npz tests/data/tma_edge.npz
"""
import os
import sys

import numpy as np
import triton
import triton.language as tl

HERE = os.path.dirname(os.path.abspath(__file__))


@triton.jit
def store_edge_kernel(o_ptr, R, C, ROWS: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    desc = tl.make_tensor_descriptor(o_ptr, shape=[R, C], strides=[128, 1], block_shape=[BR, BC])
    k = tl.program_id(0) * BC
    v = (tl.arange(0, BR)[:, None] * 128 + k + tl.arange(0, BC)[None, :] + 1) % 251
    desc.store([0, k], v.to(o_ptr.dtype.element_ty))


@triton.jit
def load_edge_kernel(a_ptr, o_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
    desc = tl.make_tensor_descriptor(a_ptr, shape=[R, C], strides=[128, 1], block_shape=[BR, BC])
    k = tl.program_id(0) * BC
    v = desc.load([0, k])
    tl.store(o_ptr + tl.arange(0, BR)[:, None] * 128 + k + tl.arange(0, BC)[None, :], v)


def cases(rng):
    out = []

    def add(name, kernel, grid, args, outputs, **constexprs):
        out.append(dict(name=name, kernel=kernel, grid=grid, args=args, outputs=list(outputs), num_warps=4,
                        targets=("sm_90a",), constexprs=constexprs))
    for dt, c, bc in [(np.float32, 119, 32), (np.float16, 117, 64), (np.uint8, 113, 128)]:
        n = np.dtype(dt).name
        fill = 255 if dt == np.uint8 else -1          # (no value the kernels write)
        add(f"store_{n}_{c}", store_edge_kernel, (128 // bc,), dict(o=np.full((8, 128), fill, dt), R=6, C=c), ["o"],
            ROWS=8, BR=8, BC=bc)
        a = (rng.integers(1, 100, (8, 128))).astype(dt)
        add(f"load_{n}_{c}", load_edge_kernel, (128 // bc,), dict(a=a, o=np.full((8, 128), fill, dt), R=6, C=c), ["o"],
            BR=8, BC=bc)
    return out


def build(out_path):
    sys.path[:0] = [HERE]
    import build as corpus_build
    allc = corpus_build.triton_cases(cases(np.random.default_rng(5)), extra={"file": "tma_edge"})
    corpus_build.write_bundle(allc, out_path)


if __name__ == "__main__":
    build(sys.argv[1])
