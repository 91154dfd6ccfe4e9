"""rsqrt.approx.f64 (not .ftz) on the GPU over special values, subnormals and random normals: its slow path
(zeros, infinities, NaNs, negatives, subnormals scaled by 2^54) and its DFMA refinement.

    python tools/hwcapture/mufu/rsqrt_f64.py OUT.npz        # needs a GPU and cupy
"""
import sys

import numpy as np

PTX = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 i, .param .u64 o, .param .u32 n)
{ .reg .b32 %r<6>; .reg .f64 %d<3>; .reg .b64 %rd<8>; .reg .pred %p1;
  mov.u32 %r1, %ctaid.x; mov.u32 %r2, %ntid.x; mov.u32 %r3, %tid.x; mad.lo.s32 %r4, %r1, %r2, %r3;
  ld.param.u32 %r5, [n]; setp.ge.u32 %p1, %r4, %r5; @%p1 bra DONE;
  ld.param.u64 %rd1, [i]; ld.param.u64 %rd2, [o]; mul.wide.u32 %rd3, %r4, 8;
  add.s64 %rd4, %rd1, %rd3; add.s64 %rd5, %rd2, %rd3;
  ld.global.f64 %d1, [%rd4]; rsqrt.approx.f64 %d2, %d1; st.global.f64 [%rd5], %d2;
DONE: ret; }
"""


def inputs():
    rng = np.random.default_rng(3)
    special = [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000001,
               0x7FF0000000000001, 0x7FF4000000000123, 0xBFF0000000000000, 0x8000000000000001, 0x0010000000000000,
               0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000, 0x4010000000000000]
    sub = rng.integers(1, 1 << 52, 2000, dtype=np.uint64)                      # positive subnormals
    sub |= (rng.integers(0, 2, 2000, dtype=np.uint64) << np.uint64(63)) * (rng.random(2000) < 0.1)
    norm = rng.integers(0, 1 << 63, 4000, dtype=np.uint64)                    # random, mostly normal
    return np.concatenate([np.array(special, np.uint64), sub.astype(np.uint64), norm])


def main(out):
    import cupy as cp
    x = inputs()
    mod = cp.cuda.function.Module()
    mod.load(PTX.encode())
    d = cp.asarray(x)
    o = cp.empty_like(d)
    mod.get_function("k")(((x.size + 255) // 256,), (256,), (d, o, np.uint32(x.size)))
    np.savez_compressed(out, x=x, out=cp.asnumpy(o))


if __name__ == "__main__":
    main(sys.argv[1])
