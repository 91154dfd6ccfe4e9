"""A Gluon ``warp_specialize`` kernel with worker loops (Triton 3.6): the partition dispatch is a ``brx.idx``
jump table. The default partition (4 warps) and two one-warp workers each loop over the input."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def _default(x_ptr, y_ptr, n, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    for i in range(0, n, BLOCK):
        offs = i + gl.arange(0, BLOCK, layout)
        v = gl.load(x_ptr + offs, mask=offs < n)
        gl.store(y_ptr + offs, v * 2.0 + 1.0, mask=offs < n)


@gluon.jit
def _reduce_worker(x_ptr, z_ptr, n, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    acc = gl.zeros([BLOCK], gl.float32, layout)
    for i in range(0, n, BLOCK):
        offs = i + gl.arange(0, BLOCK, layout)
        v = gl.load(x_ptr + offs, mask=offs < n, other=0.0)
        acc = acc * 0.5 + v
    gl.store(z_ptr + gl.arange(0, BLOCK, layout), acc)


@gluon.jit
def _copy_worker(x_ptr, w_ptr, n, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    for i in range(0, n, BLOCK):
        offs = i + gl.arange(0, BLOCK, layout)
        v = gl.load(x_ptr + offs, mask=offs < n, other=0.0)
        gl.store(w_ptr + offs, v - 3.0, mask=offs < n)


@gluon.jit
def ws_loops_kernel(x_ptr, y_ptr, z_ptr, w_ptr, n, BLOCK: gl.constexpr):
    gl.warp_specialize([(_default, (x_ptr, y_ptr, n, BLOCK)), (_reduce_worker, (x_ptr, z_ptr, n, 32)),
                        (_copy_worker, (x_ptr, w_ptr, n, 32))], [1, 1], [48, 48])


def compile_ptx(target=90):
    """(ptx, kernel name, num_warps, shared bytes, scratch bytes) compiled by Triton, no GPU needed."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "w_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    k = triton.compile(GluonASTSource(ws_loops_kernel, sig, {"BLOCK": 128}), target=GPUTarget("cuda", target, 32),
                       options={"num_warps": 4})
    md = k.metadata
    return k.asm["ptx"], md.name, md.num_warps, md.shared, int(getattr(md, "global_scratch_size", 0) or 0)
