"""Triton 3.6 kernels whose PTX is ``triton_atomic_*.ptx`` (compiled for sm_90a without a GPU):

    python triton_atomics.py        # writes the .ptx files beside this one
"""
import os

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def k(X, Y, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.atomic_add(X + o, tl.load(Y + o))


@triton.jit
def kc(X, C, V, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.atomic_cas(X + o, tl.load(C + o), tl.load(V + o))


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    for name, fn, sig in [("triton_atomic_add_bf16", k, {"X": "*bf16", "Y": "*bf16", "N": "constexpr"}),
                          ("triton_atomic_cas_f16", kc, {"X": "*fp16", "C": "*fp16", "V": "*fp16", "N": "constexpr"})]:
        c = triton.compile(ASTSource(fn, sig, constexprs={"N": 128}), target=GPUTarget("cuda", 90, 32))
        open(os.path.join(here, name + ".ptx"), "w").write(c.asm["ptx"])
