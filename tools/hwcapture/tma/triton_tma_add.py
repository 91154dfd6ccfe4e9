"""Triton 3.6's tensor-descriptor path (device-built tensor maps, TMA load and store) in a small kernel:
``c = a * 2 + 1`` tile by tile. Writes its sm_90a PTX to tests/data/tma/triton_tma_add.ptx.

    python tools/hwcapture/tma/triton_tma_add.py
"""
import os
import re

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
BM, BN = 32, 64


@triton.jit
def tma_add(a_ptr, c_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    x = a_desc.load([pid_m * BM, pid_n * BN])
    c_desc.store([pid_m * BM, pid_n * BN], x * 2.0 + 1.0)


def build():
    src = triton.compiler.ASTSource(fn=tma_add, signature={"a_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32",
                                                           "N": "i32", "BM": "constexpr", "BN": "constexpr"},
                                    constexprs={"BM": BM, "BN": BN})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    ptx = re.sub(r'\.file\s+(\d+)\s+"[^"]*"', r'.file \1 "triton_tma_add.py"', k.asm["ptx"])
    ptx = re.sub(r"\s*\.section\s+\.debug\w*\s*\{[^}]*\}", "", ptx)      # DWARF sections: not needed to run
    with open(os.path.join(ROOT, "tests", "data", "tma", "triton_tma_add.ptx"), "w") as f:
        f.write(ptx)
    return k.metadata


if __name__ == "__main__":
    md = build()
    print("shared", md.shared, "global_scratch", md.global_scratch_size, md.global_scratch_align)
