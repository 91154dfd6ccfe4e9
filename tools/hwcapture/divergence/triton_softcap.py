"""A Triton kernel in the shape of a soft-capped cross-entropy (libdevice tanh with its branches, then a
row max and sum across warps), compiled for sm_90a without a GPU: writes softcap_ce.ptx.

    /path/to/python-with-triton tools/hwcapture/divergence/triton_softcap.py
"""
import os
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice
from triton.backends.compiler import GPUTarget

@triton.jit
def softcap_ce(x_ptr, y_ptr, loss_ptr, n, cap, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=float("-inf"))
    x = cap * libdevice.tanh(x / cap)
    mx = tl.max(x, 0)
    e = tl.exp(x - mx)
    s = tl.sum(e, 0)
    tl.store(y_ptr + offs, e / s, mask=m)
    tl.store(loss_ptr, tl.log(s) + mx)

src = triton.compiler.ASTSource(fn=softcap_ce, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "loss_ptr": "*fp32", "n": "i32", "cap": "fp32"}, constexprs={"BLOCK": 1024})
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "softcap_ce.ptx"), "w").write(k.asm["ptx"])
print(k.metadata.shared, k.metadata.num_warps)
