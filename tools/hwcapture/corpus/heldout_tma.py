"""TMA kernels from Triton's own sources, held out from the corpus the fast engine was tuned on
(``tests/data/heldout_tma.npz``, replayed by ``tests/test_heldout_tma.py``).

* The persistent matmul of Triton's tutorial ``python/tutorials/09-persistent-matmul.py``
  (``matmul_kernel_descriptor_persistent`` with its ``_compute_pid``: device-side ``tl.make_tensor_descriptor``,
  TMA loads into a software pipeline, wgmma, TMA stores, with and without the epilogue subtiling), f16 and fp8
  e4m3, one problem with partial tiles (the TMA's out-of-bounds zero fill and clipped stores).
* Three kernels of Triton's ``python/test/unit/language/test_tensor_descriptor.py``: the 3-D descriptor load and
  store tests (a strided view whose last two dimensions end inside their boxes) and the device-side padding test
  with ``padding_option="nan"`` (the NaN fill of out-of-bounds elements).

Each ``@triton.jit`` function is copied out of its file at build time (``TRITON_SRC``: a Triton checkout) into
``build/heldout_tma/``, so none of that code lives in this repository; Triton 3.6 compiles it for sm_90a and
``run_gpu.py`` runs the PTX on the H100 (the corpus format, docs/corpus.md):

    TRITON_SRC=... python tools/hwcapture/corpus/heldout_tma.py BUNDLE.npz
    python tools/hwcapture/corpus/run_gpu.py BUNDLE.npz OUT.npz          # on the GPU
    python tools/hwcapture/corpus/pack.py ...                            # or heldout_tma.py --pack BUNDLE OUT
"""
import ast
import importlib.util
import os
import sys

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
TUTORIAL = "python/tutorials/09-persistent-matmul.py"
TESTS = "python/test/unit/language/test_tensor_descriptor.py"


def _copy_out(src, path, names, nested=()):
    """The source of the top-level functions ``names`` of ``path`` and of the functions ``(test, inner, as)``
    defined inside test functions, each with its decorators replaced by ``@triton.jit``."""
    text = open(os.path.join(src, path)).read()
    tree = ast.parse(text)
    lines = text.splitlines()
    out = []

    def emit(fn, rename=None):
        body = lines[fn.lineno - 1:fn.end_lineno]
        indent = len(body[0]) - len(body[0].lstrip())
        body = [b[indent:] for b in body]
        if rename:
            body[0] = body[0].replace(f"def {fn.name}(", f"def {rename}(", 1)
        out.append("@triton.jit\n" + "\n".join(body) + "\n")
    top = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for n in names:
        emit(top[n])
    for test, inner, new in nested:
        fn = next(x for x in ast.walk(top[test]) if isinstance(x, ast.FunctionDef) and x.name == inner)
        emit(fn, new)
    return out


def kernels(src):
    """Import the copied kernels as one module (Triton reads a kernel's source from its file)."""
    code = ["import triton", "import triton.language as tl", ""]
    code += _copy_out(src, TUTORIAL, ["_compute_pid", "matmul_kernel_descriptor_persistent"])
    code += _copy_out(src, TESTS, [], [("test_tensor_descriptor_load3d", "kernel", "load3d_kernel"),
                                       ("test_tensor_descriptor_store3d", "kernel", "store3d_kernel"),
                                       ("test_tensor_descriptor_padding", "device_tma_load", "padding_kernel")])
    d = os.path.join(ROOT, "build", "heldout_tma")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "heldout_tma_kernels.py")
    with open(path, "w") as f:
        f.write("\n\n".join(code))
    spec = importlib.util.spec_from_file_location("heldout_tma_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fp8(rng, shape):
    """Finite e4m3 values (the tutorial's inputs: normal f16 values cast to fp8)."""
    return rng.standard_normal(shape).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)


def cases(k, rng):
    out = []

    def add(name, kernel, grid, args, outputs, num_warps=4, **constexprs):
        out.append(dict(name=name, kernel=kernel, grid=grid, args=args, outputs=list(outputs), num_warps=num_warps,
                        targets=("sm_90a",), constexprs=constexprs))

    mm = k.matmul_kernel_descriptor_persistent
    for name, (M, N, K), dt, nw, sub, sms, bk in [
            ("persistent_f16", (256, 256, 256), np.float16, 8, False, 2, 64),
            ("persistent_f16_subtile_partial", (192, 256, 128), np.float16, 4, True, 3, 64),
            ("persistent_fp8", (256, 256, 512), "fp8", 8, False, 2, 128)]:
        if dt == "fp8":
            a, b, c = _fp8(rng, (M, K)), _fp8(rng, (N, K)), np.zeros((M, N), ml_dtypes.float8_e4m3fn)
        else:
            a = rng.standard_normal((M, K)).astype(dt)
            b = rng.standard_normal((N, K)).astype(dt)
            c = np.zeros((M, N), dt)
        add(name, mm, (sms,), dict(a=a, b=b, c=c, M=M, N=N, K=K), ["c"], num_warps=nw, BLOCK_SIZE_M=128,
            BLOCK_SIZE_N=128, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, EPILOGUE_SUBTILE=sub, NUM_SMS=sms,
            WARP_SPECIALIZE=False)
    # test_tensor_descriptor_load3d: a (10, 50, 119) view of a (10, 64, 128) f16 array, K_BLOCK 64
    full = rng.standard_normal((10, 64, 128)).astype(np.float16)
    add("load3d_f16", k.load3d_kernel, (2, 7, 2), dict(o=np.zeros((10, 50, 119), np.float16), a=full, M=10, N=50,
                                                       K=119, sm=64 * 128, sn=128, sk=1),
        ["o"], M_BLOCK=8, N_BLOCK=8, K_BLOCK=64)
    # test_tensor_descriptor_store3d: f32, K_BLOCK 32, into a (10, 64, 128) array whose other bytes stay as they were
    add("store3d_f32", k.store3d_kernel, (2, 7, 4),
        dict(o=np.full((10, 64, 128), -1.0, np.float32), a=rng.standard_normal((10, 50, 119)).astype(np.float32),
             M=10, N=50, K=119, sm=64 * 128, sn=128, sk=1), ["o"], M_BLOCK=8, N_BLOCK=8, K_BLOCK=32)
    # test_tensor_descriptor_padding: a 48 x 48 f32 tensor read in 32 x 32 boxes over a 64 x 64 grid, NaN fill
    add("padding_nan", k.padding_kernel, (2, 2),
        dict(i=np.arange(48 * 48, dtype=np.float32), o=np.zeros((64, 64), np.float32), IM=48, IN=48, YM=64, YN=64),
        ["o"], M_BLOCK=32, N_BLOCK=32, padding="nan")
    return out


def build(out_path):
    sys.path[:0] = [HERE, ROOT]
    import build as corpus_build
    src = os.environ.get("TRITON_SRC")
    if not src:
        raise RuntimeError("set TRITON_SRC to a Triton checkout")
    allc = corpus_build.triton_cases(cases(kernels(src), np.random.default_rng(2026)),
                                     extra={"file": "heldout_tma"})
    corpus_build.write_bundle(allc, out_path, rename=lambda n: n.replace("triton_", "heldout_", 1))


def pack(bundle, captured, out_path):
    """The bundle's cases with the H100's outputs (``<case>__out__<arg>``), in the corpus format; a case that failed
    or did not reproduce on the GPU is left out (and named)."""
    res = {}
    with np.load(bundle, allow_pickle=False) as b, np.load(captured, allow_pickle=False) as g:
        names = sorted({k.split("__")[0] for k in b.files})
        for n in names:
            if f"{n}__error" in g.files or not bool(g[f"{n}__reproducible"]):
                print(f"{n}: left out ({g[n + '__error'] if n + '__error' in g.files else 'not reproducible'})")
                continue
            res.update({k: b[k] for k in b.files if k.split("__")[0] == n})
            res.update({k: g[k] for k in g.files if k.startswith(n + "__out__")})
        res["meta"] = g["meta"]
    np.savez_compressed(out_path, **res)
    print(f"-> {out_path} ({os.path.getsize(out_path)} bytes)")


if __name__ == "__main__":
    if sys.argv[1] == "--pack":
        pack(*sys.argv[2:5])
    else:
        build(sys.argv[1])
