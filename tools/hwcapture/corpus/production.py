"""Third-party production kernels as corpus cases (``tests/data/corpus/production.npz``), each run on the
H100 from its own PTX and replayed bit for bit by the tests.

* Triton kernels of Liger-Kernel (``LIGER_DIR``) and unsloth (``UNSLOTH_DIR``), copied out of their source files
  with the helpers they call (``build/thirdparty/``, so that neither package is installed) and compiled by Triton
  3.6 for sm_80 and sm_90a: Liger's cross-entropy (with and without softcap, label smoothing, z-loss, ignored
  rows; the fused-linear cross-entropy's ``element_mul_kernel``), RMSNorm forward (Llama and Gemma casting) and
  backward, SwiGLU, GEGLU (tanh) forward and backward, RoPE; unsloth's RMS layernorm (and Gemma's), cross-entropy
  forward and backward (softcap, logit scaling), RoPE, SwiGLU forward and backward.

      LIGER_DIR=... UNSLOTH_DIR=... python tools/hwcapture/corpus/production.py triton BUNDLE.npz
      (then run_gpu.py and pack.py as for the other bundles)

* CUDA C++ kernels with TMA descriptors inside their ``__grid_constant__`` arguments (``production/*.cu``):
  ThunderKittens' H100 bf16 and fp8 GEMMs and attention forward (D 64 and 128, causal or not, grouped heads),
  DeepGEMM's SM90 fp8 GEMM (BLOCK_M 64/128, BLOCK_N 128/112, 2-CTA clusters with TMA multicast of A or B) and
  bf16 GEMM. Each host program builds the
  arguments as the project's own host code does, loads the PTX text with ``cuModuleLoadData``, launches it
  twice and writes the argument bytes, every array's device address and its bytes before and after
  (``production/capture.cuh``); ``build_native.sh`` compiles the PTX and the host programs with each project's
  flags and runs them. ``native`` turns that folder into a bundle and GPU outputs for ``pack.py``; the replay
  places each array at the address it had on the GPU (the config's ``at``), so the recorded bytes need no
  patching.

      python tools/hwcapture/corpus/production.py native CAPTURE_DIR BUNDLE.npz GPU.npz
"""
import ast
import importlib.util
import json
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
FILE = {"file": "production"}


def load_jits(path, names, prelude, wrap=()):
    """The functions ``names`` of the source file ``path`` (the first is returned, the others are the helpers it
    calls), in one module holding only ``prelude`` and their text; ``wrap`` names the ones the file turns into
    Triton functions with ``name = triton.jit(name)`` instead of a decorator."""
    src = open(path).read()
    lines = src.splitlines()
    parts = []
    for name in names:
        fn = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == name)
        start = min([d.lineno for d in fn.decorator_list] + [fn.lineno]) - 1
        parts.append("\n".join(lines[start:fn.end_lineno]))
        if name in wrap:
            parts.append(f"{name} = triton.jit({name})")
    os.makedirs(os.path.join("build", "thirdparty"), exist_ok=True)
    tag = os.path.splitext(os.path.basename(path))[0]
    mod = os.path.join("build", "thirdparty", f"{tag}_{names[0].strip('_')}.py")
    with open(mod, "w") as f:
        f.write(prelude + "\n\n" + "\n\n\n".join(parts) + "\n")
    spec = importlib.util.spec_from_file_location(f"{tag}_{names[0].strip('_')}", mod)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return getattr(m, names[0])


def ordered(kernel, args, constexprs):
    """(args, constexprs) with every parameter before the last runtime one in the kernel's order: build.py passes
    the case's arguments positionally, so constexpr parameters in between go in their place (named as in the
    kernel)."""
    params = kernel.params
    last = max(i for i, p in enumerate(params) if not p.is_constexpr)
    values, rest, out = list(args.items()), dict(constexprs), {}
    for p in params[:last + 1]:
        if p.is_constexpr:
            out[p.name] = rest.pop(p.name)
        else:
            assert values, f"{kernel.fn.__name__}: no argument for {p.name}"
            k, v = values.pop(0)
            out[k] = v
    assert not values, f"{kernel.fn.__name__}: arguments left over: {[k for k, _ in values]}"
    return out, rest


TL = "import triton\nimport triton.language as tl\n"
LIBDEVICE = "from triton.language.extra import libdevice\n"


def _bf16():
    import ml_dtypes
    return ml_dtypes.bfloat16


def liger_cases(rng, liger):
    import triton
    bf16 = _bf16()
    ops = os.path.join(liger, "src", "liger_kernel", "ops")
    out = []

    def case(name, kernel, grid, args, outputs, warps, constexprs, origin):
        args, constexprs = ordered(kernel, args, constexprs)
        out.append(dict(name=f"liger_{name}", kernel=kernel, grid=grid, args=args, outputs=outputs, num_warps=warps,
                        targets=("sm_80", "sm_90a"), constexprs=constexprs,
                        config=dict(FILE, origin=f"Liger-Kernel {origin}")))

    ce = load_jits(os.path.join(ops, "cross_entropy.py"), ["liger_cross_entropy_kernel"],
                   TL + "from triton.language.extra.libdevice import tanh\nLOG2_E = tl.constexpr(1.4426950408889634)")
    for tag, dt, V, softcap, smooth, zl in (("softcap_bf16", bf16, 1000, 30.0, 0.0, False),
                                            ("smooth_zloss_f32", np.float32, 700, None, 0.1, True)):
        rows = 6
        x = (4 * rng.standard_normal((rows, V))).astype(dt)
        x[0, :7] = [60, -60, 1e-30, -0.0, 0.0, 200, -200]     # saturating and tiny logits through tanh
        y = rng.integers(0, V, rows).astype(np.int64)
        y[2] = -100                                           # an ignored row
        n = int((y != -100).sum())
        args = dict(X=x, Xs=V, Y=y, Ys=1, weight=None, loss=np.zeros(rows, np.float32),
                    zloss=np.zeros(rows, np.float32) if zl else None, ls=1, acc=None, accs=0, pred=None, preds=0,
                    n_cols=V, n_non_ignore=n, sum_w=float(n), wsum=0.0, ignore_index=-100, softcap=softcap)
        block = min(65536 // 2, triton.next_power_of_2(V))
        case(f"cross_entropy_{tag}", ce, (rows,), args, ["X", "loss"] + (["zloss"] if zl else []), 32,
             dict(lse_square_scale=1e-4 if zl else 0.0, label_smoothing=smooth, reduction="mean",
                  RETURN_Z_LOSS=zl, RETURN_TOKEN_ACCURACY=False, RETURN_PREDICTED_TOKENS=False, BLOCK_SIZE=block,
                  HAS_WEIGHT=False, HAS_SOFTCAPPING=softcap is not None, HAS_GRADIENTS=True),
             f"src/liger_kernel/ops/cross_entropy.py liger_cross_entropy_kernel ({rows} rows of {V} "
             f"{'bf16' if dt is bf16 else 'f32'} logits, softcap {softcap}, label smoothing {smooth}, z-loss {zl}, "
             f"one ignored row; logits overwritten by their gradients)")
    em = load_jits(os.path.join(ops, "utils.py"), ["element_mul_kernel"], TL)
    x = rng.standard_normal((4, 3000)).astype(bf16)
    case("element_mul_bf16", em, (4,), dict(X=x, Xs=3000, g=np.array([0.37], np.float32), n_cols=3000), ["X"], 32,
         dict(BLOCK_SIZE=4096), "src/liger_kernel/ops/utils.py element_mul_kernel (the fused linear cross-entropy's "
         "gradient scaling, 4 rows of 3000 bf16)")
    rms = load_jits(os.path.join(ops, "rms_norm.py"), ["_rms_norm_forward_kernel"],
                    TL + "from triton.language.extra.libdevice import rsqrt\n_CASTING_MODE_NONE: tl.constexpr = "
                    "tl.constexpr(-1)\n_CASTING_MODE_LLAMA: tl.constexpr = tl.constexpr(0)\n_CASTING_MODE_GEMMA: "
                    "tl.constexpr = tl.constexpr(1)")
    rows, n = 8, 1000
    for mode, tag, off in ((0, "llama", 0.0), (1, "gemma", 1.0)):
        x = rng.standard_normal((rows, n)).astype(bf16)
        w = (1 + 0.1 * rng.standard_normal(n)).astype(bf16)
        case(f"rms_norm_{tag}_bf16", rms, (rows,),
             dict(Y=np.zeros((rows, n), bf16), Ys=n, X=x, Xs=n, W=w, Ws=1, RSTD=np.zeros(rows, np.float32), Rs=1,
                  n_cols=n, eps=1e-6, offset=off), ["Y", "RSTD"], 4,
             dict(casting_mode=mode, elementwise_affine=True, BLOCK_SIZE=1024),
             f"src/liger_kernel/ops/rms_norm.py _rms_norm_forward_kernel ({tag} casting, {rows} rows of {n} bf16)")
    rmsb = load_jits(os.path.join(ops, "rms_norm.py"), ["_rms_norm_backward_kernel"],
                     TL + "_CASTING_MODE_NONE: tl.constexpr = tl.constexpr(-1)\n_CASTING_MODE_LLAMA: tl.constexpr = "
                     "tl.constexpr(0)\n_CASTING_MODE_GEMMA: tl.constexpr = tl.constexpr(1)")
    rows, n, progs = 8, 1000, 4
    x = rng.standard_normal((rows, n)).astype(bf16)
    w = (1 + 0.1 * rng.standard_normal(n)).astype(bf16)
    r = (1 / np.sqrt((x.astype(np.float32) ** 2).mean(1) + 1e-6)).astype(np.float32)
    case("rms_norm_backward_llama_bf16", rmsb, (progs,),
         dict(dY=rng.standard_normal((rows, n)).astype(bf16), dYs=n, dX=np.zeros((rows, n), bf16), dXs=n, X=x, Xs=n,
              W=w, Ws=1, RSTD=r, Rs=1, dW=np.zeros((progs, n), np.float32), dWs=n, n_rows=rows, n_cols=n,
              offset=0.0, rows_per_program=rows // progs), ["dX", "dW"], 4,
         dict(X_dtype=triton.language.bfloat16, casting_mode=0, elementwise_affine=True, BLOCK_SIZE=1024),
         f"src/liger_kernel/ops/rms_norm.py _rms_norm_backward_kernel (llama casting, {rows} rows of {n} bf16 on "
         f"{progs} programs)")
    sw = load_jits(os.path.join(ops, "swiglu.py"), ["_swiglu_forward_kernel", "silu"], TL)
    swb = load_jits(os.path.join(ops, "swiglu.py"), ["_swiglu_backward_kernel", "silu"], TL)
    rows, n = 4, 3000
    a, b = rng.standard_normal((rows, n)).astype(bf16), rng.standard_normal((rows, n)).astype(bf16)
    a[0, :6] = [-100, 100, -0.0, 0.0, 88.5, -88.5]
    case("swiglu_forward_bf16", sw, (rows,), dict(a=a, b=b, c=np.zeros((rows, n), bf16), stride=n, gm=1.0),
         ["c"], 8, dict(n_cols=n, BLOCK_SIZE=4096), f"src/liger_kernel/ops/swiglu.py _swiglu_forward_kernel "
         f"({rows} rows of {n} bf16)")
    case("swiglu_backward_bf16", swb, (rows,),
         dict(dc=rng.standard_normal((rows, n)).astype(bf16), a=a.copy(), b=b.copy(), stride=n, gm=0.5),
         ["dc", "a", "b"], 8, dict(n_cols=n, BLOCK_SIZE=4096), f"src/liger_kernel/ops/swiglu.py "
         f"_swiglu_backward_kernel ({rows} rows of {n} bf16, gate multiplier 0.5; writes da, db over a, b)")
    gfw = load_jits(os.path.join(ops, "geglu.py"), ["_geglu_tanh_forward_kernel"],
                    TL + "from triton.language.extra.libdevice import tanh")
    gbw = load_jits(os.path.join(ops, "geglu.py"), ["_geglu_tanh_backward_kernel"],
                    TL + "from triton.language.extra.libdevice import tanh")
    a = (2 * rng.standard_normal((rows, n))).astype(np.float16)
    b = rng.standard_normal((rows, n)).astype(np.float16)
    case("geglu_tanh_forward_f16", gfw, (rows,), dict(a=a, b=b, c=np.zeros((rows, n), np.float16), stride=n),
         ["c"], 8, dict(n_cols=n, BLOCK_SIZE=4096), f"src/liger_kernel/ops/geglu.py _geglu_tanh_forward_kernel "
         f"({rows} rows of {n} f16)")
    case("geglu_tanh_backward_f16", gbw, (rows,),
         dict(dc=rng.standard_normal((rows, n)).astype(np.float16), a=a.copy(), b=b.copy(), stride=n),
         ["dc", "a", "b"], 8, dict(n_cols=n, BLOCK_SIZE=4096), f"src/liger_kernel/ops/geglu.py "
         f"_geglu_tanh_backward_kernel ({rows} rows of {n} f16)")
    rope = load_jits(os.path.join(ops, "rope.py"), ["_triton_rope"], TL)
    bs, sl, nq, nk, hd = 2, 8, 4, 2, 64
    q = rng.standard_normal((bs, sl, nq, hd)).astype(bf16)
    k = rng.standard_normal((bs, sl, nk, hd)).astype(bf16)
    ang = np.arange(sl)[:, None] * (10000.0 ** (-np.arange(hd // 2) * 2 / hd))[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, 1).astype(bf16)[None]
    sin = np.concatenate([np.sin(ang)] * 2, 1).astype(bf16)[None]
    case("rope_bf16", rope, (bs * sl,),
         dict(q=q, qs=nq * hd, k=k, ks=nk * hd, cos=cos, coss=hd, sin=sin, sins=hd, sl=sl), ["q", "k"], 4,
         dict(bs=bs, cos_bs=1, n_qh=nq, n_kh=nk, hd=hd, pad_n_qh=nq, pad_n_kh=nk, pad_hd=hd, BLOCK_SIZE=nq,
              BACKWARD_PASS=False),
         f"src/liger_kernel/ops/rope.py _triton_rope (batch {bs}, {sl} positions, {nq} query and {nk} key heads of "
         f"{hd}, bf16, in place)")
    return out


def unsloth_cases(rng, unsloth):
    bf16 = _bf16()
    kern = os.path.join(unsloth, "unsloth", "kernels")
    out = []

    def case(name, kernel, grid, args, outputs, warps, constexprs, origin):
        args, constexprs = ordered(kernel, args, constexprs)
        out.append(dict(name=f"unsloth_{name}", kernel=kernel, grid=grid, args=args, outputs=outputs, num_warps=warps,
                        targets=("sm_80", "sm_90a"), constexprs=constexprs,
                        config=dict(FILE, origin=f"unsloth {origin}")))

    rows, n = 8, 1000
    for fn, tag in (("_rms_layernorm_forward", "rms_layernorm"), ("_gemma_rms_layernorm_forward", "gemma_rms_layernorm")):
        k = load_jits(os.path.join(kern, "rms_layernorm.py"), [fn], TL)
        x = rng.standard_normal((rows, n)).astype(bf16)
        w = (1 + 0.1 * rng.standard_normal(n)).astype(bf16)
        case(f"{tag}_bf16", k, (rows,), dict(Y=np.zeros((rows, n), bf16), X=x, W=w, r=np.zeros(rows, np.float32)),
             ["Y", "r"], 4, dict(Y_row_stride=n, X_row_stride=n, W_row_stride=1, r_row_stride=1, n_cols=n, eps=1e-6,
                                 BLOCK_SIZE=1024),
             f"unsloth/kernels/rms_layernorm.py {fn} ({rows} rows of {n} bf16)")
    pre = TL + LIBDEVICE + "triton_tanh = libdevice.tanh\ntriton_cast = tl.cast"
    fw = load_jits(os.path.join(kern, "cross_entropy_loss.py"), ["_cross_entropy_forward"], pre,
                   wrap=["_cross_entropy_forward"])
    bw = load_jits(os.path.join(kern, "cross_entropy_loss.py"), ["_cross_entropy_backward"], pre,
                   wrap=["_cross_entropy_backward"])
    rows, V = 6, 1000
    logits = (4 * rng.standard_normal((rows, V))).astype(bf16)
    logits[0, :4] = [90, -90, 0.0, -0.0]
    labels = rng.integers(0, V, rows).astype(np.int64)
    labels[3] = -100
    cx = dict(VOCAB_SIZE=V, BLOCK_SIZE=1024, DO_SOFTCAPPING=True, SOFTCAP=30.0, DO_LOGIT_SCALING=True,
              LOGIT_SCALE=0.5)
    case("cross_entropy_forward_softcap_bf16", fw, (rows,),
         dict(logits=logits, ls=V, loss=np.zeros(rows, np.float32), lse=np.zeros(rows, np.float32), labels=labels),
         ["loss", "lse"], 4, cx, f"unsloth/kernels/cross_entropy_loss.py _cross_entropy_forward ({rows} rows of {V} "
         f"bf16 logits, softcap 30, logit scale 0.5, one ignored row)")
    lse = np.log(np.exp(np.tanh(logits.astype(np.float64) * 0.5 / 30) * 30).sum(1)).astype(np.float32)
    case("cross_entropy_backward_softcap_bf16", bw, (rows, 1),
         dict(logits=logits.copy(), dloss=rng.standard_normal(rows).astype(np.float32), lse=lse, labels=labels),
         ["logits"], 4, dict(logits_row_stride=V, dloss_row_stride=1, **cx),
         f"unsloth/kernels/cross_entropy_loss.py _cross_entropy_backward ({rows} rows of {V} bf16, softcap 30, logit "
         f"scale 0.5; the gradient over the logits)")
    rope = load_jits(os.path.join(kern, "rope_embedding.py"), ["_rope_embedding"], TL, wrap=["_rope_embedding"])
    seq, heads, hd = 8, 6, 64
    q = rng.standard_normal((seq, heads * hd)).astype(bf16)
    ang = np.arange(seq)[:, None] * (10000.0 ** (-np.arange(hd // 2) * 2 / hd))[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, 1).astype(bf16)
    sin = np.concatenate([np.sin(ang)] * 2, 1).astype(bf16)
    case("rope_embedding_bf16", rope, (seq, 2), dict(Q=q, cos=cos, sin=sin, seqlen=seq), ["Q"], 4,
         dict(Q_row_stride=heads * hd, cos_row_stride=hd, sin_row_stride=hd, head_dim=hd, n_heads=heads,
              BACKWARD_PASS=False, BLOCK_SIZE=32),
         f"unsloth/kernels/rope_embedding.py _rope_embedding ({seq} positions, {heads} heads of {hd} in groups of 4, "
         f"bf16, in place)")
    fg = load_jits(os.path.join(kern, "swiglu.py"), ["_fg_kernel"], TL)
    dfg = load_jits(os.path.join(kern, "swiglu.py"), ["_DWf_DW_dfg_kernel"], TL)
    nel = 3000
    e = (3 * rng.standard_normal(nel)).astype(bf16)
    e[:6] = [-100, 100, -0.0, 0.0, 88.5, -88.5]
    g = rng.standard_normal(nel).astype(bf16)
    case("swiglu_fg_bf16", fg, (3,), dict(e=e, g=g, h=np.zeros(nel, bf16), n=nel), ["h"], 4,
         dict(BLOCK_SIZE=1024, LONG_INDEXING=0), f"unsloth/kernels/swiglu.py _fg_kernel ({nel} bf16)")
    case("swiglu_dwf_dw_dfg_bf16", dfg, (3,), dict(DW=rng.standard_normal(nel).astype(bf16), e=e.copy(), g=g.copy(),
                                                  n=nel), ["DW", "e", "g"], 4, dict(BLOCK_SIZE=1024, LONG_INDEXING=0),
         f"unsloth/kernels/swiglu.py _DWf_DW_dfg_kernel ({nel} bf16; writes h, df, de over DW, e, g)")
    return out


def triton_build(bundle):
    sys.path.insert(0, ROOT)
    os.chdir(ROOT)
    sys.path.insert(0, os.path.relpath(HERE, ROOT))
    import build
    liger, unsloth = os.environ.get("LIGER_DIR"), os.environ.get("UNSLOTH_DIR")
    if not liger or not unsloth:
        raise SystemExit("set LIGER_DIR and UNSLOTH_DIR to Liger-Kernel and unsloth checkouts")
    rng = np.random.default_rng(2026)
    cases = liger_cases(rng, liger) + unsloth_cases(rng, unsloth)
    only = os.environ.get("ONLY")
    if only:
        cases = [c for c in cases if only in c["name"]]
    build.write_bundle(build.triton_cases(cases), bundle)


NATIVE_DTYPES = {"bfloat16": "uint16", "float32": "float32", "uint8": "uint8", "int32": "int32"}


def native(capdir, bundle, gpu):
    """The cases a host program wrote under ``capdir`` (``production/capture.cuh``) as a bundle and GPU outputs in
    the form ``pack.py`` merges: the recorded argument bytes as ``["bytes", hex]`` arguments, every array with the
    address it had on the GPU (``at``)."""
    meta = json.load(open(os.path.join(capdir, "meta.json")))
    res, out, first = {}, {"meta": np.array(json.dumps(meta))}, {}
    for name in sorted(os.listdir(capdir)):
        d = os.path.join(capdir, name)
        if not os.path.isfile(os.path.join(d, "config.json")):
            continue
        raw = json.load(open(os.path.join(d, "config.json")))
        ptx = open(os.path.join(capdir, raw["ptx_file"]), "rb").read()
        arrays = raw["arrays"]
        version = re.search(r"cuda_(\d+\.\d+)", meta["nvcc"])
        cfg = dict(FILE, source="nvcc", tool=f"nvcc {version.group(1) if version else meta['nvcc']}", target="sm_90a", flags=raw["flags"], kernel=raw["kernel"],
                   grid=raw["grid"], block=raw["block"], shared=raw["shared"],
                   args=[["bytes", h] for h in raw["args"]], at={a["name"]: a["address"] for a in arrays},
                   outputs=[a["name"] for a in arrays if a["out"]], origin=raw["origin"],
                   dtypes={a["name"]: a["dtype"] for a in arrays if a["dtype"] == "bfloat16"})
        if raw["cluster"] != [1, 1, 1]:
            cfg["cluster"] = raw["cluster"]
        if ptx in first:
            cfg["ptx_from"] = first[ptx]
        else:
            first[ptx] = name
            res[f"{name}__ptx"] = np.frombuffer(ptx, np.uint8)
        res[f"{name}__config"] = np.array(json.dumps(cfg))
        for a in arrays:
            dt = NATIVE_DTYPES[a["dtype"]]
            res[f"{name}__in__{a['name']}"] = np.fromfile(os.path.join(d, f"in_{a['name']}.bin"), dt).reshape(a["shape"])
            if a["out"]:
                out[f"{name}__out__{a['name']}"] = np.fromfile(os.path.join(d, f"out_{a['name']}.bin"),
                                                              dt).reshape(a["shape"])
        out[f"{name}__reproducible"] = np.array(bool(raw["reproducible"]))
    np.savez_compressed(bundle, **res)
    np.savez_compressed(gpu, **out)
    print(f"{len(first)} modules, {sum(k.endswith('__config') for k in res)} cases -> {bundle}, {gpu}")


if __name__ == "__main__":
    if sys.argv[1] == "triton":
        triton_build(sys.argv[2])
    elif sys.argv[1] == "native":
        native(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        raise SystemExit(__doc__)
