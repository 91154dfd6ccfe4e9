"""Third-party kernels on which the emulator once gave a plausible but wrong answer, as corpus cases
(``tests/data/corpus/regressions.npz``); each stays as a replayed H100 capture so that the answer cannot go wrong
again unnoticed.

* CUTLASS's CuTe Hopper tutorial ``examples/cute/tutorial/hopper/wgmma_sm90.cu`` as written (cp.async into
  128-byte-swizzled shared memory, a 3-stage pipeline, GMMA 64x64x16 f16), NT and TN (``cute_tutorial.py``; needs
  ``CUTLASS_DIR``, the checkout's ``include`` folder). The wgmma of the warpgroup reads shared memory that all four
  warps' cp.async wrote, with only each warp's own ``cp.async.wait_all`` before it.
* ``tl.dot_scaled`` on sm_90a, every (mxfp type, other type, which side is scaled) pair that Triton 3.6's
  ``test_scaled_dot`` tries, with the test's input rules (finite fp8 bytes, scales in [0, 142] for bf16 and
  [124, 131] for fp16 arithmetic), and a few larger column-major shapes of the mixed pairs.
* Liger-Kernel's ``_layer_norm_forward_kernel`` (``LIGER_DIR``: a Liger-Kernel checkout) and unsloth's
  ``_exact_forward_kernel`` (exact GeGLU through libdevice ``erff``; ``UNSLOTH_DIR``), compiled for sm_80 and sm_90a
  from their source files: each ``@triton.jit`` function is copied out of its file (``build/thirdparty/``) with the
  imports it needs, so that neither package has to be installed.

    CUTLASS_DIR=... LIGER_DIR=... UNSLOTH_DIR=... python tools/hwcapture/corpus/build.py B.npz --only regressions
"""
import ast
import importlib.util
import os

import ml_dtypes
import numpy as np
import triton
import triton.language as tl

HERE = os.path.dirname(os.path.abspath(__file__))
FILE = {"file": "regressions"}


# ------------------------------------------------------------------------------------------------
# tl.dot_scaled, as Triton's test_scaled_dot calls it: one program, the whole (BM, BN) tile


@triton.jit
def scaled_dot_kernel(a_ptr, a_s0, a_s1, a_scale_ptr, b_ptr, b_s0, b_s1, b_scale_ptr, out_ptr,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, TYPE_A: tl.constexpr,
                      TYPE_B: tl.constexpr):
    KA: tl.constexpr = BK // 2 if TYPE_A == "e2m1" else BK      # two e2m1 values per byte, packed along K
    KB: tl.constexpr = BK // 2 if TYPE_B == "e2m1" else BK
    a = tl.load(a_ptr + tl.arange(0, BM)[:, None] * a_s0 + tl.arange(0, KA)[None, :] * a_s1)
    b = tl.load(b_ptr + tl.arange(0, KB)[:, None] * b_s0 + tl.arange(0, BN)[None, :] * b_s1)
    NS: tl.constexpr = BK // 32                                   # one e8m0 scale per 32 values of K
    sa = None
    sb = None
    if a_scale_ptr is not None:
        sa = tl.load(a_scale_ptr + tl.arange(0, BM)[:, None] * NS + tl.arange(0, NS)[None, :])
    if b_scale_ptr is not None:
        sb = tl.load(b_scale_ptr + tl.arange(0, BN)[:, None] * NS + tl.arange(0, NS)[None, :])
    c = tl.dot_scaled(a, sa, TYPE_A, b, sb, TYPE_B)
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], c.to(tl.bfloat16))


def _operand(rng, shape, ty, comp, col_major):
    """An operand as the test draws it: (rows, cols) logical, stored column-major when asked."""
    store = shape[::-1] if col_major else shape
    if ty in ("bf16", "fp16"):
        x = np.clip(rng.standard_normal(store), -2.0 ** (6 if comp == "fp16" else 15),
                    2.0 ** (6 if comp == "fp16" else 15) - 1).astype(
            np.float16 if ty == "fp16" else ml_dtypes.bfloat16)
    else:
        x = rng.integers(0, 256, store).astype(np.uint8)
        if ty in ("e4m3", "e5m2"):          # no Inf/NaN bytes (the test's make_finite)
            if ty == "e5m2" and comp == "fp16":
                x &= 0xB
            mask = 0x7C if ty == "e5m2" else 0x7F
            finite = (np.arange(x.size) % mask).astype(np.uint8).reshape(x.shape)
            x = np.where(x & mask == mask, finite | (x & 0x80), x).astype(np.uint8)
    strides = (1, store[1]) if col_major else (store[1], 1)
    return x, strides


def scaled_dot_cases(rng):
    out = []
    configs = [(32, 32, 64, False, False, mx, normal, rhs)
               for mx in ("e2m1", "e4m3", "e5m2") for normal in ("e4m3", "e5m2", "bf16", "fp16")
               for rhs in (False, True)]
    configs += [(64, 64, 128, ca, cb, mx, "e4m3", rhs) for mx in ("e2m1", "e5m2") for rhs in (False, True)
                for ca, cb in ((True, False), (False, True))]
    for M, N, K, col_a, col_b, mx, normal, rhs in configs:
        ta, tb = (normal, mx) if rhs else (mx, normal)
        name = (f"scaled_dot_{ta}_{tb}_{'sb' if rhs else 'sa'}_{M}x{N}x{K}" + ("_ca" if col_a else "")
                + ("_cb" if col_b else ""))       # sa/sb: the scaled operand
        comp = "fp16" if "fp16" in (ta, tb) else "bf16"
        a, (sa0, sa1) = _operand(rng, (M, K // (2 if ta == "e2m1" else 1)), ta, comp, col_a)
        b, (sb0, sb1) = _operand(rng, (K // (2 if tb == "e2m1" else 1), N), tb, comp, col_b)
        lo, hi = (0, 142) if comp == "bf16" else (124, 131)
        a_scale = None if rhs else rng.integers(lo, hi + 1, (M, K // 32)).astype(np.uint8)
        b_scale = rng.integers(lo, hi + 1, (N, K // 32)).astype(np.uint8) if rhs else None
        o = np.zeros((M, N), np.float16 if comp == "fp16" else ml_dtypes.bfloat16)
        out.append(dict(name=name, kernel=scaled_dot_kernel, grid=(1,),
                        args=dict(a=a, sa0=sa0, sa1=sa1, a_scale=a_scale, b=b, sb0=sb0, sb1=sb1, b_scale=b_scale, o=o),
                        outputs=["o"], num_warps=4, targets=("sm_90a",),
                        constexprs=dict(BM=M, BN=N, BK=K, TYPE_A=ta, TYPE_B=tb),
                        config=dict(FILE, origin=f"tl.dot_scaled({ta}, {tb}) as Triton 3.6's test_scaled_dot "
                                                 f"calls it (M={M}, N={N}, K={K}, col_a={col_a}, col_b={col_b})")))
    return out


# ------------------------------------------------------------------------------------------------
# Liger-Kernel and unsloth kernels, copied out of their source files


def load_jit(path, name, prelude):
    """The ``@triton.jit`` function ``name`` of the source file ``path``, loaded from a module that holds only
    ``prelude`` and that function's text (written to ``build/thirdparty/``, a relative path, so that the file
    names in the PTX debug information stay relative)."""
    src = open(path).read()
    fn = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == name)
    lines = src.splitlines()
    start = min([d.lineno for d in fn.decorator_list] + [fn.lineno]) - 1
    os.makedirs(os.path.join("build", "thirdparty"), exist_ok=True)
    mod = os.path.join("build", "thirdparty", f"{name.strip('_')}.py")
    with open(mod, "w") as f:
        f.write(prelude + "\n\n" + "\n".join(lines[start:fn.end_lineno]) + "\n")
    spec = importlib.util.spec_from_file_location(name.strip("_"), mod)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return getattr(m, name)


LIGER_LN = "src/liger_kernel/ops/layer_norm.py"
UNSLOTH_GEGLU = "unsloth/kernels/geglu.py"


def thirdparty_cases(rng):
    out = []
    liger, unsloth = os.environ.get("LIGER_DIR"), os.environ.get("UNSLOTH_DIR")
    if not liger or not unsloth:
        raise RuntimeError("set LIGER_DIR and UNSLOTH_DIR to Liger-Kernel and unsloth checkouts")
    ln = load_jit(os.path.join(liger, LIGER_LN), "_layer_norm_forward_kernel",
                  "import triton\nimport triton.language as tl\nfrom triton.language.extra.libdevice import rsqrt")
    for dt, rows, n in ((np.float16, 16, 1000), (ml_dtypes.bfloat16, 8, 1000), (np.float16, 4, 3000)):
        block = int(triton.next_power_of_2(n))
        warps = 8 if block >= 2048 else 4                 # Liger's calculate_settings
        x = rng.standard_normal((rows, n)).astype(dt)
        w = (1 + 0.2 * rng.standard_normal(n)).astype(dt)
        b = (0.1 * rng.standard_normal(n)).astype(dt)
        tag = f"{'f16' if dt is np.float16 else 'bf16'}_{n}"
        out.append(dict(name=f"liger_layer_norm_{tag}", kernel=ln, grid=(rows,),
                        args=dict(Y=np.zeros((rows, n), dt), Ys=n, X=x, Xs=n, W=w, Ws=1, B=b, Bs=1,
                                  Mean=np.zeros(rows, dt), Ms=1, RSTD=np.zeros(rows, dt), Rs=1, n_cols=n, eps=1e-6),
                        outputs=["Y", "Mean", "RSTD"], num_warps=warps, targets=("sm_80", "sm_90a"),
                        constexprs=dict(BLOCK_SIZE=block),
                        config=dict(FILE, origin=f"Liger-Kernel {LIGER_LN} _layer_norm_forward_kernel "
                                                 f"({rows} rows of {n}, eps 1e-6)")))
    gg = load_jit(os.path.join(unsloth, UNSLOTH_GEGLU), "_exact_forward_kernel",
                  "import triton\nimport triton.language as tl")
    e = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)     # every f16 gate value
    out.append(dict(name="unsloth_geglu_exact", kernel=gg, grid=(64,),
                    args=dict(e=e, g=np.ones(1 << 16, np.float16), h=np.zeros(1 << 16, np.float16), n=1 << 16),
                    outputs=["h"], num_warps=4, targets=("sm_80", "sm_90a"),
                    constexprs=dict(BLOCK_SIZE=1024, LONG_INDEXING=0),
                    config=dict(FILE, origin=f"unsloth {UNSLOTH_GEGLU} _exact_forward_kernel (every f16 gate value, "
                                             f"up = 1)")))
    return out


# ------------------------------------------------------------------------------------------------


def build(triton_cases):
    """{case: (ptx, config, inputs)} of every regression case (``triton_cases``: build.py's compiler)."""
    import cute_tutorial
    rng = np.random.default_rng(23)
    res = triton_cases(scaled_dot_cases(rng) + thirdparty_cases(rng))
    inc = os.environ.get("CUTLASS_DIR")
    if not inc:
        raise RuntimeError("set CUTLASS_DIR to a CUTLASS checkout's include folder")
    dump = open(os.path.join(HERE, "cute", "tutorial_cpasync_launches.txt")).read()
    ptx = cute_tutorial.compile_ptx(os.path.dirname(os.path.normpath(inc)), cute_tutorial.TUTORIAL_CPASYNC)
    for name, (p, cfg, inputs) in cute_tutorial.cases(dump, ptx, np.random.default_rng(93),
                                                      cute_tutorial.TUTORIAL_CPASYNC).items():
        cfg.update(FILE)
        res[name] = (p, cfg, inputs)
    return res
