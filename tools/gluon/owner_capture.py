"""Measure, on a GPU, which thread and register hold each element of a tensor in a Gluon layout.

    PYTHONPATH=. python tools/gluon/owner_capture.py build OUT.npz   # Gluon (Triton 3.9) -> sm_90a PTX, no GPU
    python tools/gluon/owner_capture.py run OUT.npz RES.npz   # on the H100: load each PTX with CuPy, run it
    python tools/gluon/owner_capture.py pack OUT.npz RES.npz tests/data/gluon/h100_owners.npz

The kernel builds the tensor ``offs[i, j] = i * N + j`` in layout ``L`` and passes all of a thread's
elements, in register order, to one ``inline_asm_elementwise`` (``pack`` = elements per thread) that returns,
for its k-th element, ``tid.x * 256 + k``: the thread id and the register index (Triton's ``register``
input of the linear layout) that held it. ``gl.store(out + offs, ...)`` writes it to the element's place.
Where several threads (or registers) hold the same element, Triton stores only one copy: the one whose
free lane/warp/register bits are zero, i.e. the first holder in (warp, lane, register) order.
"""
import json
import sys

import numpy as np

# (layout text as emulator.gluon.parse_layout reads it, shape, num_warps)
CASES = [
    ("BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])", [64, 64], 4),
    ("BlockedLayout([2, 2], [8, 4], [2, 2], [0, 1])", [32, 64], 4),
    ("BlockedLayout([1, 1], [32, 1], [4, 1], [0, 1])", [16, 16], 4),
    ("BlockedLayout([4, 1], [2, 16], [1, 4], [0, 1])", [64, 32], 4),
    ("BlockedLayout([1, 8], [8, 4], [8, 1], [1, 0])", [128, 64], 8),
    ("NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, 2], instr_shape=[16, 8])", [64, 64], 4),
    ("NVMMADistributedLayout(version=[2, 0], warps_per_cta=[4, 1], instr_shape=[16, 8])", [32, 32], 4),
    ("NVMMADistributedLayout(version=[2, 0], warps_per_cta=[1, 4], instr_shape=[16, 8])", [16, 64], 4),
    ("NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])", [64, 64], 4),
    ("NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 32, 16])", [128, 64], 4),
    ("NVMMADistributedLayout(version=[3, 0], warps_per_cta=[8, 1], instr_shape=[16, 128, 16])", [128, 128], 8),
    ("NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2], instr_shape=[16, 32, 16])", [64, 64], 8),
    ("DotOperandLayout(0, NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, 2], instr_shape=[16, 8]), 2)",
     [64, 32], 4),
    ("DotOperandLayout(1, NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, 2], instr_shape=[16, 8]), 2)",
     [32, 64], 4),
    ("DotOperandLayout(0, NVMMADistributedLayout(version=[2, 0], warps_per_cta=[4, 1], instr_shape=[16, 8]), 1)",
     [64, 16], 4),
    ("DotOperandLayout(0, NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], "
     "instr_shape=[16, 64, 16]), 2)", [64, 32], 4),
    ("SliceLayout(1, BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]))", [64], 4),
    ("SliceLayout(0, NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, 2], instr_shape=[16, 8]))", [64], 4),
    ("DistributedLinearLayout([[0, 1], [8, 0]], [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], [[16, 0], [0, 8]], [], "
     "[32, 16])", [32, 16], 4),
    # the seed's get_tmem_32x32b_reg_layout answers are blocked layouts: their ownership is measurable anywhere
    ("BlockedLayout([1, 64], [32, 1], [4, 2], [0, 1])", [128, 128], 8),
    ("BlockedLayout([1, 32], [16, 2], [4, 1], [0, 1])", [64, 64], 4),
]


def _gluon():
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    return gluon, gl


def make_kernels():
    gluon, gl = _gluon()

    @gluon.jit
    def owner2d(out_ptr, L: gl.constexpr, M: gl.constexpr, N: gl.constexpr, R: gl.constexpr, ASM: gl.constexpr,
                CONS: gl.constexpr):
        rows = gl.arange(0, M, layout=gl.SliceLayout(1, L))
        cols = gl.arange(0, N, layout=gl.SliceLayout(0, L))
        offs = gl.expand_dims(rows, 1) * N + gl.expand_dims(cols, 0)
        ids = gl.inline_asm_elementwise(ASM, CONS, [offs], dtype=gl.int32, is_pure=False, pack=R)
        gl.store(out_ptr + offs, ids)

    @gluon.jit
    def owner1d(out_ptr, L: gl.constexpr, M: gl.constexpr, R: gl.constexpr, ASM: gl.constexpr,
                CONS: gl.constexpr):
        offs = gl.arange(0, M, layout=L)
        ids = gl.inline_asm_elementwise(ASM, CONS, [offs], dtype=gl.int32, is_pure=False, pack=R)
        gl.store(out_ptr + offs, ids)
    return owner1d, owner2d


def to_triton(layout_text):
    from triton.experimental.gluon import language as gl
    ns = {k: getattr(gl, k) for k in ("BlockedLayout", "SliceLayout", "NVMMADistributedLayout",
                                      "DotOperandLayout", "DistributedLinearLayout")}
    return eval(layout_text, ns)


def asm_for(R):
    """tid.x * 256 + k into output k, for the R elements of one thread."""
    body = "{ .reg .u32 t; mov.u32 t, %tid.x; shl.b32 t, t, 8; " + \
           " ".join(f"add.u32 ${k}, t, {k};" for k in range(R)) + " }"
    cons = ",".join(["=r"] * R + ["r"] * R)
    return body, cons


def build(out):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource as ASTSource
    sys.path.insert(0, ".")
    from emulator.gluon import parse_layout
    owner1d, owner2d = make_kernels()
    ptxs, meta = [], []
    for text, shape, nw in CASES:
        R = parse_layout(text).registers(shape)
        body, cons = asm_for(R)
        L = to_triton(text)
        if len(shape) == 2:
            consts = {"L": L, "M": shape[0], "N": shape[1], "R": R, "ASM": body, "CONS": cons}
            fn = owner2d
        else:
            consts = {"L": L, "M": shape[0], "R": R, "ASM": body, "CONS": cons}
            fn = owner1d
        sig = {"out_ptr": "*i32", **{k: "constexpr" for k in consts}}
        src = ASTSource(fn, sig, consts, {(0,): [["tt.divisibility", 16]]})
        # ptx_version 90: the H100's driver (580) reads PTX up to ISA 9.0; Triton 3.9 would write 9.4
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": nw, "ptx_version": 90})
        ptxs.append(k.asm["ptx"])
        meta.append({"layout": text, "shape": shape, "num_warps": nw, "registers": R, "name": k.metadata.name,
                     "shared": k.metadata.shared, "scratch": getattr(k.metadata, "global_scratch_size", 0)})
        print(f"{text} {shape}: {R} registers per thread, {len(k.asm['ptx'])} bytes of PTX")
    np.savez_compressed(out, ptx=np.array(ptxs), meta=json.dumps({"cases": meta, "triton": triton.__version__}))


def run(bundle, out):
    import cupy as cp
    z = np.load(bundle, allow_pickle=False)
    meta = json.loads(str(z["meta"]))["cases"]
    res = {}
    for i, (ptx, m) in enumerate(zip(z["ptx"], meta)):
        mod = cp.cuda.function.Module()
        mod.load(str(ptx).encode() + b"\0")
        fn = mod.get_function(m["name"])
        n = int(np.prod(m["shape"]))
        buf = cp.full(n, -1, cp.int32)
        fn((1, 1, 1), (32 * m["num_warps"], 1, 1), (buf, np.uint64(0), np.uint64(0)), shared_mem=m["shared"])
        cp.cuda.Device().synchronize()
        res[f"case{i}"] = cp.asnumpy(buf).reshape(m["shape"])
        print(m["layout"], m["shape"], "done")
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    np.savez_compressed(out, device=np.array(dev), **res)


def pack(bundle, results, out):
    z = np.load(bundle, allow_pickle=False)
    r = np.load(results, allow_pickle=False)
    meta = json.loads(str(z["meta"]))
    arrays = {f"case{i}": r[f"case{i}"].astype(np.int32) for i in range(len(meta["cases"]))}
    meta["device"] = str(r["device"])
    np.savez_compressed(out, meta=json.dumps(meta), ptx=z["ptx"], **arrays)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "build":
        build(sys.argv[2])
    elif cmd == "run":
        run(sys.argv[2], sys.argv[3])
    elif cmd == "pack":
        pack(sys.argv[2], sys.argv[3], sys.argv[4])
