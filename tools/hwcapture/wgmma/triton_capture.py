"""Run Triton 3.6 matmuls (tl.dot, sm_90a: wgmma) on an H100 and keep what the emulator needs to replay
them from Triton's own PTX: the PTX text, launch geometry, inputs and outputs.

    python tools/hwcapture/wgmma/triton_capture.py RESULT.npz        # needs triton, torch and a GPU

Inputs come from a fixed numpy seed and are saved with the outputs.
"""
import json
import sys

import numpy as np
try:
    import torch
except ImportError:      # building PTX without a GPU
    torch = None
import triton
import triton.language as tl


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr, ACC_INT: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if ACC_INT:
        acc = tl.zeros((BM, BN), dtype=tl.int32)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
        if ACC_INT:
            acc = tl.dot(a, b, acc, out_dtype=tl.int32)
        else:
            acc = tl.dot(a, b, acc, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty))


@triton.jit
def attention(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """One head of flash attention (online softmax): S = Q K^T (wgmma, A and B from shared memory),
    P V (wgmma with P in registers)."""
    pid = tl.program_id(0)
    rm = pid * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = tl.full((BM,), float("-inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for start in range(0, seq, BN):
        rn = start + tl.arange(0, BN)
        k = tl.load(k_ptr + rn[None, :] * D + rd[:, None])
        s = tl.dot(q, k) * scale
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc / l_i[:, None])


def attention_main(out, meta, rng):
    for name, nw, BM, BN, D, seq in (("attn_w4", 4, 64, 64, 64, 128), ("attn_w8", 8, 128, 64, 64, 256)):
        q, k, v = (torch.from_numpy(rng.standard_normal((seq, D)).astype(np.float32)).to(torch.float16)
                   for _ in range(3))
        o = torch.zeros((seq, D), dtype=torch.float32)
        qg, kg, vg, og = q.cuda(), k.cuda(), v.cuda(), o.cuda()
        kern = attention[(seq // BM,)](qg, kg, vg, og, seq, 0.125, D=D, BM=BM, BN=BN, num_warps=nw, num_stages=2)
        torch.cuda.synchronize()
        raw = lambda t: t.cpu().contiguous().view(torch.uint8).numpy()  # noqa: E731
        out[f"{name}_q"], out[f"{name}_k"], out[f"{name}_v"], out[f"{name}_o"] = raw(q), raw(k), raw(v), raw(og)
        out[f"{name}_ptx"] = np.frombuffer(kern.asm["ptx"].encode(), np.uint8)
        meta["attention"].append(dict(name=name, num_warps=nw, grid=[seq // BM, 1], seq=seq, D=D, BM=BM, BN=BN,
                                      shared=int(kern.metadata.shared), entry=kern.metadata.name, scale=0.125))
        print(name, "ok", flush=True)


CONFIGS = [  # name, in dtype, out dtype, precision, num_warps, BM, BN, BK, M, N, K
    ("f16_f32_w4", "float16", "float32", "ieee", 4, 64, 64, 32, 64, 64, 128),
    ("f16_f32_w8", "float16", "float32", "ieee", 8, 128, 64, 32, 128, 64, 64),
    ("f16_f16_w4", "float16", "float16", "ieee", 4, 64, 64, 32, 64, 128, 64),
    ("bf16_f32_w4", "bfloat16", "float32", "ieee", 4, 64, 64, 32, 64, 64, 64),
    ("tf32_f32_w4", "float32", "float32", "tf32", 4, 64, 64, 32, 64, 64, 64),
    ("tf32x3_f32_w4", "float32", "float32", "tf32x3", 4, 64, 64, 32, 64, 64, 64),
    ("e4m3_f32_w4", "float8_e4m3fn", "float32", "ieee", 4, 64, 64, 64, 64, 64, 256),
    ("e5m2_f32_w8", "float8_e5m2", "float32", "ieee", 8, 128, 64, 64, 128, 64, 128),
    ("s8_s32_w4", "int8", "int32", "ieee", 4, 64, 64, 64, 64, 64, 128),
]


def main(path, only_attention=False):
    rng = np.random.default_rng(1234)
    out, meta = {}, {"device": torch.cuda.get_device_name(), "triton": triton.__version__, "kernels": []}
    for name, din, dout, prec, nw, BM, BN, BK, M, N, K in ([] if only_attention else CONFIGS):
        tin, tout = getattr(torch, din), getattr(torch, dout)
        if din == "int8":
            a = torch.randint(-128, 128, (M, K), dtype=torch.int8)
            b = torch.randint(-128, 128, (K, N), dtype=torch.int8)
        else:
            a = (torch.from_numpy(rng.standard_normal((M, K)).astype(np.float32))).to(tin)
            b = (torch.from_numpy(rng.standard_normal((K, N)).astype(np.float32))).to(tin)
        c = torch.zeros((M, N), dtype=tout)
        ag, bg, cg = a.cuda(), b.cuda(), c.cuda()
        grid = (M // BM, N // BN)
        k = matmul[grid](ag, bg, cg, M, N, K, ag.stride(0), ag.stride(1), bg.stride(0), bg.stride(1),
                         cg.stride(0), cg.stride(1), BM=BM, BN=BN, BK=BK, PREC=prec, ACC_INT=din == "int8",
                         num_warps=nw, num_stages=2)
        torch.cuda.synchronize()
        raw = lambda t: t.cpu().contiguous().view(torch.uint8).numpy()  # noqa: E731
        out[f"{name}_a"], out[f"{name}_b"], out[f"{name}_c"] = raw(a), raw(b), raw(cg)
        out[f"{name}_ptx"] = np.frombuffer(k.asm["ptx"].encode(), np.uint8)
        meta["kernels"].append(dict(name=name, din=din, dout=dout, prec=prec, num_warps=nw, grid=list(grid),
                                    M=M, N=N, K=K, shared=int(k.metadata.shared), entry=k.metadata.name,
                                    sizes=[M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                           c.stride(0), c.stride(1)]))
        print(name, "ok", flush=True)
    meta["attention"] = []
    attention_main(out, meta, rng)
    np.savez_compressed(path, meta=json.dumps(meta), **out)


if __name__ == "__main__":
    main(sys.argv[1], "--attention" in sys.argv)
