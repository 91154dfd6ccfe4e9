"""The Triton half of the corpus: kernels written as a user would, with their inputs.

``CASES`` lists (name, kernel, grid, arrays, scalars, constexprs, outputs, num_warps, targets). Each case is
compiled by Triton itself for sm_80 and sm_90a (``build.py``), run on an H100 from that PTX text
(``run_gpu.py``) and replayed by the tests from ``tests/data/corpus``.
"""
import ml_dtypes
import numpy as np
import triton
import triton.language as tl

# ------------------------------------------------------------------------------------------------
# elementwise


@triton.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def axpy_f16_kernel(x_ptr, y_ptr, z_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(z_ptr + offs, (x * a.to(tl.float16) + y), mask=m)


@triton.jit
def fma_minmax_kernel(x_ptr, y_ptr, z_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    r = tl.fma(x, y, z)
    r = tl.maximum(r, tl.minimum(x, y)) - tl.abs(z)
    r = tl.where(x > y, r, -r)
    r = tl.clamp(r, -100.0, 100.0)
    tl.store(o_ptr + offs, r, mask=m)


@triton.jit
def nan_minmax_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    a = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    b = tl.minimum(x, y)
    tl.store(o_ptr + offs, a * 2.0 + b, mask=m)


@triton.jit
def bitops_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    r = (x ^ (y << 3)) | ((x & y) >> 2)
    r = r + (~x & 0x0F0F0F0F)
    r = r + (x >> (y & 31))
    r = r + tl.umulhi(x.to(tl.uint32), y.to(tl.uint32)).to(tl.int32)
    tl.store(o_ptr + offs, r, mask=m)


@triton.jit
def int_div_kernel(x_ptr, y_ptr, q_ptr, r_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    tl.store(q_ptr + offs, x // y, mask=m)
    tl.store(r_ptr + offs, x % y, mask=m)


@triton.jit
def int_div_const_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    r = x // 7 + x % 13 + (x.to(tl.uint32) // 10).to(tl.int32) + x // -3
    tl.store(o_ptr + offs, r, mask=m)


@triton.jit
def int64_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    r = x * y + (x // y) - (x % y) + (x >> 7) + (y << 5)
    tl.store(o_ptr + offs, r, mask=m)


@triton.jit
def relu_gelu_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    g = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(o_ptr + offs, tl.where(x > 0, g, 0.01 * x), mask=m)


@triton.jit
def libdevice_kernel(x_ptr, o_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if FN == 0:
        r = tl.exp(x)
    elif FN == 1:
        r = tl.log(x)
    elif FN == 2:
        r = tl.sin(x)
    elif FN == 3:
        r = tl.cos(x)
    elif FN == 4:
        r = tl.sqrt(x)
    elif FN == 5:
        r = tl.sqrt_rn(x)
    elif FN == 6:
        r = tl.math.erf(x)
    elif FN == 7:
        r = tl.extra.cuda.libdevice.tanh(x)
    elif FN == 8:
        r = tl.extra.cuda.libdevice.pow(x, 1.7)
    elif FN == 9:
        r = tl.rsqrt(x)
    elif FN == 10:
        r = tl.div_rn(x, 3.0)
    elif FN == 11:
        r = x / 3.0
    elif FN == 12:
        r = tl.floor(x) + tl.ceil(x * 0.5)
    elif FN == 13:
        r = tl.extra.cuda.libdevice.exp(x)
    elif FN == 14:
        r = tl.extra.cuda.libdevice.log1p(x)
    elif FN == 15:
        r = tl.sigmoid(x)
    else:
        r = tl.exp2(x) + tl.log2(tl.abs(x))
    tl.store(o_ptr + offs, r, mask=m)


@triton.jit
def f64_math_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    r = tl.fma(x, y, x) + tl.sqrt(tl.abs(y)) + x * y - x
    tl.store(o_ptr + offs, r, mask=m)


@triton.jit
def convert_kernel(x_ptr, f16_ptr, bf16_ptr, i32_ptr, i8_ptr, u8_ptr, f64_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(f16_ptr + offs, x.to(tl.float16), mask=m)
    tl.store(bf16_ptr + offs, x.to(tl.bfloat16), mask=m)
    tl.store(i32_ptr + offs, x.to(tl.int32), mask=m)
    tl.store(i8_ptr + offs, x.to(tl.int8), mask=m)
    tl.store(u8_ptr + offs, x.to(tl.uint8), mask=m)
    tl.store(f64_ptr + offs, x.to(tl.float64), mask=m)


@triton.jit
def convert_back_kernel(h_ptr, b_ptr, i_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    h = tl.load(h_ptr + offs, mask=m).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=m).to(tl.float32)
    i = tl.load(i_ptr + offs, mask=m).to(tl.float32)
    tl.store(o_ptr + offs, h + b * 0.5 + i, mask=m)


@triton.jit
def convert_fp8_kernel(x_ptr, e4_ptr, e5_ptr, back_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    e4 = x.to(tl.float8e4nv)
    e5 = x.to(tl.float8e5)
    tl.store(e4_ptr + offs, e4, mask=m)
    tl.store(e5_ptr + offs, e5, mask=m)
    tl.store(back_ptr + offs, e4.to(tl.float32) + e5.to(tl.float32), mask=m)


@triton.jit
def dropout_kernel(x_ptr, o_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    r = tl.rand(seed, offs)
    keep = r > p
    tl.store(o_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=m)


@triton.jit
def randint_kernel(o_ptr, n, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(o_ptr + offs, a ^ b ^ c ^ d, mask=m)


# ------------------------------------------------------------------------------------------------
# reductions, scans, atomics


@triton.jit
def row_sum_kernel(x_ptr, o_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(o_ptr + row, tl.sum(x, axis=0))


@triton.jit
def row_max_argmax_kernel(x_ptr, mx_ptr, am_ptr, mn_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf"))
    tl.store(mx_ptr + row, tl.max(x, axis=0))
    tl.store(am_ptr + row, tl.argmax(x, axis=0))
    y = tl.where(cols < N, x, float("inf"))
    tl.store(mn_ptr + row, tl.argmin(y, axis=0))


@triton.jit
def int_reduce_kernel(x_ptr, o_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0)
    tl.store(o_ptr + 4 * row + 0, tl.sum(x, axis=0))
    tl.store(o_ptr + 4 * row + 1, tl.max(x, axis=0))
    tl.store(o_ptr + 4 * row + 2, tl.reduce_or(x, axis=0))
    tl.store(o_ptr + 4 * row + 3, tl.xor_sum(x, axis=0))


@triton.jit
def sum2d_kernel(x_ptr, o_ptr, o2_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
    tl.store(o_ptr + rn, tl.sum(x, axis=0), mask=rn < N)
    tl.store(o2_ptr + rm, tl.sum(x * x, axis=1), mask=rm < M)


@triton.jit
def cumsum_kernel(x_ptr, o_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0)
    tl.store(o_ptr + row * N + cols, tl.cumsum(x, axis=0), mask=cols < N)


@triton.jit
def _combine_max_idx(a, b):
    return tl.maximum(a, b)


@triton.jit
def cummax_kernel(x_ptr, o_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(o_ptr + row * N + cols, tl.associative_scan(x, 0, _combine_max_idx), mask=cols < N)


@triton.jit
def histogram_kernel(x_ptr, h_ptr, n, NBINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_add(h_ptr + (x % NBINS), 1, mask=m)


@triton.jit
def tl_histogram_kernel(x_ptr, h_ptr, n, NBINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(h_ptr + tl.arange(0, NBINS), tl.histogram(x, NBINS))


@triton.jit
def atomics_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_max(acc_ptr + 0, tl.max(x, axis=0))
    tl.atomic_min(acc_ptr + 1, tl.min(x, axis=0))
    tl.atomic_add(acc_ptr + 2, tl.sum(x, axis=0))
    tl.atomic_or(acc_ptr + 3, tl.reduce_or(x, axis=0))
    tl.atomic_xchg(acc_ptr + 4 + tl.program_id(0), tl.program_id(0) + 1)


@triton.jit
def atomic_cas_kernel(lock_ptr, cnt_ptr, ITERS: tl.constexpr):
    for _ in range(ITERS):
        while tl.atomic_cas(lock_ptr, 0, 1) == 1:
            pass
        c = tl.load(cnt_ptr, volatile=True)
        tl.store(cnt_ptr, c + 1)
        tl.atomic_xchg(lock_ptr, 0)


@triton.jit
def atomic_fadd_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.atomic_add(acc_ptr + (offs % 16), x, mask=m)


# ------------------------------------------------------------------------------------------------
# rows: softmax, layernorm


@triton.jit
def softmax_kernel(x_ptr, o_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(o_ptr + row * N + cols, e / tl.sum(e, axis=0), mask=cols < N)


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, o_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=0.0)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(m, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=m)
    b = tl.load(b_ptr + cols, mask=m)
    tl.store(o_ptr + row * N + cols, d * rstd * w + b, mask=m)


@triton.jit
def rmsnorm_f16_kernel(x_ptr, w_ptr, o_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=0.0).to(tl.float32)
    r = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=m).to(tl.float32)
    tl.store(o_ptr + row * N + cols, (x * r * w).to(tl.float16), mask=m)


# ------------------------------------------------------------------------------------------------
# data movement


@triton.jit
def transpose_kernel(x_ptr, o_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask)
    tl.store(o_ptr + rn[None, :] * M + rm[:, None], x, mask=mask)


@triton.jit
def trans_f16_kernel(x_ptr, o_ptr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    tl.store(o_ptr + rn[:, None] * BM + rm[None, :], tl.trans(x))


@triton.jit
def gather_kernel(x_ptr, idx_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    i = tl.load(idx_ptr + offs, mask=m, other=0)
    tl.store(o_ptr + offs, tl.load(x_ptr + i, mask=m), mask=m)


@triton.jit
def join_split_kernel(x_ptr, y_ptr, o_ptr, p_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.join(x, y)
    tl.store(o_ptr + 2 * offs[:, None] + tl.arange(0, 2)[None, :], z)
    a, b = tl.split(z)
    tl.store(p_ptr + offs, a * b)


@triton.jit
def sort_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, tl.sort(x))


@triton.jit
def broadcast_kernel(x_ptr, y_ptr, o_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm, mask=rm < M)
    y = tl.load(y_ptr + rn, mask=rn < N)
    o = x[:, None] * y[None, :] + rm[:, None].to(tl.float32)
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], o, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def loop_kernel(x_ptr, o_ptr, n, ITERS, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, ITERS):
        x = tl.load(x_ptr + i * BLOCK + offs, mask=i * BLOCK + offs < n, other=0.0)
        acc = acc * 0.5 + x
    tl.store(o_ptr + offs, acc)


# ------------------------------------------------------------------------------------------------
# matmuls


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr,
                  ACC: tl.constexpr, OUT: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak, mask=(rm[:, None] < M) & (kk[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + kk[:, None] * sbk + rn[None, :] * sbn, mask=(kk[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PREC, out_dtype=ACC)
    c = acc.to(OUT)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_bias_relu_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    acc += tl.load(bias_ptr + rn)[None, :]
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.maximum(acc, 0.0).to(tl.float16))


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, L, scale, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = tl.full([BM], -float("inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for start in range(0, L, BN):
        rn = start + tl.arange(0, BN)
        k = tl.load(k_ptr + rn[None, :] * D + rd[:, None])
        s = tl.dot(q, k) * scale
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], (acc / l_i[:, None]).to(tl.float16))


@triton.jit
def tma_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([pm * BM, k])
        b = b_desc.load([k, pn * BN])
        acc = tl.dot(a, b, acc)
    c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))


# ------------------------------------------------------------------------------------------------
# inputs


def _f32(rng, n, scale=1.0):
    x = (rng.standard_normal(n) * scale).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-42, 65504.0, 70000.0, 3e38, 1.5, 2.5,
                        -2.5, 0.5, 255.5, 256.0, -129.0, 1e10], np.float32)
    k = min(n // 8, special.size)
    x[rng.choice(n, k, replace=False)] = special[:k]
    return x


def _vec(n=1000, BLOCK=256):
    return dict(grid=(-(-n // BLOCK),), BLOCK=BLOCK)


def cases():
    """Every Triton case: dict(name, kernel, grid, args (ordered: numpy arrays or scalars), constexprs,
    outputs (names of array args the kernel writes), num_warps, targets)."""
    rng = np.random.default_rng(9)
    out = []

    def add(name, kernel, grid, args, outputs, num_warps=4, targets=("sm_80", "sm_90a"), **constexprs):
        out.append(dict(name=name, kernel=kernel, grid=grid, args=args, outputs=list(outputs),
                        num_warps=num_warps, targets=targets, constexprs=constexprs))

    n = 1000
    v = _vec(n)
    add("add_f32", add_kernel, v["grid"], dict(x=_f32(rng, n), y=_f32(rng, n), z=np.zeros(n, np.float32), n=n),
        ["z"], BLOCK=256)
    add("add_f32_w1", add_kernel, (4,), dict(x=_f32(rng, 500), y=_f32(rng, 500), z=np.zeros(500, np.float32),
                                              n=500), ["z"], num_warps=1, BLOCK=128)
    add("axpy_f16", axpy_f16_kernel, v["grid"], dict(x=_f32(rng, n).astype(np.float16),
                                                      y=_f32(rng, n).astype(np.float16),
                                                      z=np.zeros(n, np.float16), a=0.75, n=n), ["z"], BLOCK=256)
    add("fma_minmax", fma_minmax_kernel, v["grid"], dict(x=_f32(rng, n), y=_f32(rng, n), z=_f32(rng, n),
                                                          o=np.zeros(n, np.float32), n=n), ["o"], BLOCK=256)
    add("nan_minmax", nan_minmax_kernel, v["grid"], dict(x=_f32(rng, n), y=_f32(rng, n),
                                                          o=np.zeros(n, np.float32), n=n), ["o"], BLOCK=256)
    add("bitops", bitops_kernel, v["grid"], dict(x=rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32),
                                                  y=rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32),
                                                  o=np.zeros(n, np.int32), n=n), ["o"], BLOCK=256)
    yi = rng.integers(-1000, 1000, n).astype(np.int32)
    yi[yi == 0] = 7
    add("int_div_i32", int_div_kernel, v["grid"], dict(x=rng.integers(-2**31, 2**31, n, dtype=np.int64)
                                                        .astype(np.int32), y=yi, q=np.zeros(n, np.int32),
                                                        r=np.zeros(n, np.int32), n=n), ["q", "r"], BLOCK=256)
    yu = rng.integers(1, 2**32, n, dtype=np.uint64).astype(np.uint32)
    yu[:50] = rng.integers(1, 100, 50).astype(np.uint32)
    add("int_div_u32", int_div_kernel, v["grid"], dict(x=rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32),
                                                        y=yu, q=np.zeros(n, np.uint32), r=np.zeros(n, np.uint32),
                                                        n=n), ["q", "r"], BLOCK=256)
    y64 = rng.integers(-2**40, 2**40, n, dtype=np.int64)
    y64[y64 == 0] = 3
    y64[:100] = rng.integers(1, 1000, 100)
    add("int_div_i64", int_div_kernel, v["grid"], dict(x=rng.integers(-2**62, 2**62, n, dtype=np.int64), y=y64,
                                                        q=np.zeros(n, np.int64), r=np.zeros(n, np.int64), n=n),
        ["q", "r"], BLOCK=256)
    add("int_div_const", int_div_const_kernel, v["grid"], dict(x=rng.integers(-2**31, 2**31, n, dtype=np.int64)
                                                                .astype(np.int32), o=np.zeros(n, np.int32), n=n),
        ["o"], BLOCK=256)
    add("int64_ops", int64_kernel, v["grid"], dict(x=rng.integers(-2**62, 2**62, n, dtype=np.int64), y=y64,
                                                    o=np.zeros(n, np.int64), n=n), ["o"], BLOCK=256)
    add("relu_gelu", relu_gelu_kernel, v["grid"], dict(x=_f32(rng, n, 3.0), o=np.zeros(n, np.float32), n=n),
        ["o"], BLOCK=256)
    names = ["exp", "log", "sin", "cos", "sqrt", "sqrt_rn", "erf", "tanh", "pow", "rsqrt", "div_rn", "div",
             "floor_ceil", "libdevice_exp", "log1p", "sigmoid", "exp2_log2"]
    for fn, nm in enumerate(names):
        x = _f32(rng, 512, 4.0)
        if nm in ("log", "sqrt", "sqrt_rn", "pow", "rsqrt", "log1p"):
            x = np.abs(x)
        add(f"math_{nm}", libdevice_kernel, (2,), dict(x=x, o=np.zeros(512, np.float32), n=512), ["o"],
            FN=fn, BLOCK=256)
    add("f64_math", f64_math_kernel, (4,), dict(x=rng.standard_normal(n) * 100, y=rng.standard_normal(n),
                                                o=np.zeros(n), n=n), ["o"], BLOCK=256)
    xc = _f32(rng, n, 200.0)
    add("convert_f32", convert_kernel, v["grid"], dict(x=xc, f16=np.zeros(n, np.float16),
                                                        bf16=np.zeros(n, ml_dtypes.bfloat16), i32=np.zeros(n, np.int32),
                                                        i8=np.zeros(n, np.int8), u8=np.zeros(n, np.uint8),
                                                        f64=np.zeros(n, np.float64), n=n),
        ["f16", "bf16", "i32", "i8", "u8", "f64"], BLOCK=256)
    add("convert_back", convert_back_kernel, v["grid"],
        dict(h=_f32(rng, n).astype(np.float16), b=_f32(rng, n).astype(ml_dtypes.bfloat16),
             i=rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32), o=np.zeros(n, np.float32), n=n),
        ["o"], BLOCK=256)
    add("convert_fp8", convert_fp8_kernel, v["grid"], dict(x=_f32(rng, n, 50.0),
                                                            e4=np.zeros(n, ml_dtypes.float8_e4m3fn),
                                                            e5=np.zeros(n, ml_dtypes.float8_e5m2),
                                                            back=np.zeros(n, np.float32), n=n),
        ["e4", "e5", "back"], targets=("sm_90a",), BLOCK=256)
    add("dropout", dropout_kernel, v["grid"], dict(x=_f32(rng, n), o=np.zeros(n, np.float32), n=n, p=0.3,
                                                    seed=1234), ["o"], BLOCK=256)
    add("randint", randint_kernel, v["grid"], dict(o=np.zeros(n, np.uint32), n=n, seed=77), ["o"], BLOCK=256)

    R, N = 16, 200
    add("row_sum", row_sum_kernel, (R,), dict(x=_f32(rng, R * N), o=np.zeros(R, np.float32), N=N), ["o"], BLOCK=256)
    add("row_max_argmax", row_max_argmax_kernel, (R,), dict(x=rng.standard_normal(R * N).astype(np.float32),
                                                             mx=np.zeros(R, np.float32), am=np.zeros(R, np.int32),
                                                             mn=np.zeros(R, np.int32), N=N),
        ["mx", "am", "mn"], BLOCK=256)
    add("int_reduce", int_reduce_kernel, (R,), dict(x=rng.integers(-2**31, 2**31, R * N, dtype=np.int64)
                                                     .astype(np.int32), o=np.zeros(4 * R, np.int32), N=N),
        ["o"], BLOCK=256)
    add("sum2d", sum2d_kernel, (1,), dict(x=rng.standard_normal(40 * 50).astype(np.float32),
                                          o=np.zeros(50, np.float32), o2=np.zeros(40, np.float32), M=40, N=50),
        ["o", "o2"], BM=64, BN=64)
    add("cumsum_i32", cumsum_kernel, (8,), dict(x=rng.integers(-1000, 1000, 8 * N).astype(np.int32),
                                                o=np.zeros(8 * N, np.int32), N=N), ["o"], BLOCK=256)
    add("cumsum_f32", cumsum_kernel, (8,), dict(x=rng.standard_normal(8 * N).astype(np.float32),
                                                o=np.zeros(8 * N, np.float32), N=N), ["o"], BLOCK=256)
    add("cummax", cummax_kernel, (8,), dict(x=rng.standard_normal(8 * N).astype(np.float32),
                                            o=np.zeros(8 * N, np.float32), N=N), ["o"], BLOCK=256)
    add("histogram_atomic", histogram_kernel, v["grid"], dict(x=rng.integers(0, 10**6, n).astype(np.int32),
                                                               h=np.zeros(64, np.int32), n=n), ["h"],
        NBINS=64, BLOCK=256)
    add("tl_histogram", tl_histogram_kernel, (1,), dict(x=rng.integers(0, 32, 256).astype(np.int32),
                                                        h=np.zeros(32, np.int32), n=250), ["h"], NBINS=32, BLOCK=256)
    add("atomics", atomics_kernel, v["grid"], dict(x=rng.integers(-10**6, 10**6, n).astype(np.int32),
                                                    acc=np.array([-2**31, 2**31 - 1] + [0] * 6, np.int32), n=n),
        ["acc"], BLOCK=256)
    add("atomic_cas_lock", atomic_cas_kernel, (4,), dict(lock=np.zeros(1, np.int32), cnt=np.zeros(1, np.int32)),
        ["cnt", "lock"], num_warps=1, ITERS=3)
    add("atomic_fadd", atomic_fadd_kernel, v["grid"], dict(x=rng.integers(-64, 64, n).astype(np.float32),
                                                            acc=np.zeros(16, np.float32), n=n), ["acc"], BLOCK=256)
    add("softmax", softmax_kernel, (R,), dict(x=_f32(rng, R * N), o=np.zeros(R * N, np.float32), N=N), ["o"],
        BLOCK=256)
    add("layernorm", layernorm_kernel, (R,), dict(x=rng.standard_normal(R * N).astype(np.float32),
                                                  w=rng.standard_normal(N).astype(np.float32),
                                                  b=rng.standard_normal(N).astype(np.float32),
                                                  o=np.zeros(R * N, np.float32), N=N, eps=1e-5), ["o"], BLOCK=256)
    add("rmsnorm_f16", rmsnorm_f16_kernel, (R,), dict(x=rng.standard_normal(R * N).astype(np.float16),
                                                      w=rng.standard_normal(N).astype(np.float16),
                                                      o=np.zeros(R * N, np.float16), N=N, eps=1e-6), ["o"], BLOCK=256)
    add("transpose_f32", transpose_kernel, (2, 3), dict(x=rng.standard_normal(50 * 70).astype(np.float32),
                                                        o=np.zeros(50 * 70, np.float32), M=50, N=70), ["o"],
        BM=32, BN=32)
    add("trans_f16", trans_f16_kernel, (1,), dict(x=rng.standard_normal(32 * 64).astype(np.float16),
                                                  o=np.zeros(32 * 64, np.float16)), ["o"], BM=32, BN=64)
    add("gather", gather_kernel, v["grid"], dict(x=_f32(rng, n), idx=rng.integers(0, n, n).astype(np.int32),
                                                 o=np.zeros(n, np.float32), n=n), ["o"], BLOCK=256)
    add("join_split", join_split_kernel, (1,), dict(x=_f32(rng, 128), y=_f32(rng, 128),
                                                    o=np.zeros(256, np.float32), p=np.zeros(128, np.float32)),
        ["o", "p"], BLOCK=128)
    add("sort_f32", sort_kernel, (1,), dict(x=rng.standard_normal(128).astype(np.float32),
                                            o=np.zeros(128, np.float32)), ["o"], BLOCK=128)
    add("sort_i32", sort_kernel, (1,), dict(x=rng.integers(-1000, 1000, 256).astype(np.int32),
                                            o=np.zeros(256, np.int32)), ["o"], BLOCK=256)
    add("broadcast", broadcast_kernel, (1,), dict(x=_f32(rng, 30), y=_f32(rng, 40), o=np.zeros(1200, np.float32),
                                                  M=30, N=40), ["o"], BM=32, BN=64)
    add("loop_scalar_bound", loop_kernel, (1,), dict(x=_f32(rng, 1000), o=np.zeros(128, np.float32), n=1000,
                                                     ITERS=8), ["o"], BLOCK=128)

    def mm(name, dt, acc, outdt, prec="ieee", M=64, N=64, K=64, BM=32, BN=32, BK=32, targets=("sm_80", "sm_90a"),
           num_warps=4, scale=1.0):
        if dt in (np.int8,):
            a = rng.integers(-128, 128, (M, K)).astype(np.int8)
            b = rng.integers(-128, 128, (K, N)).astype(np.int8)
        else:
            a = (rng.standard_normal((M, K)) * scale).astype(dt)
            b = (rng.standard_normal((K, N)) * scale).astype(dt)
        c = np.zeros((M, N), outdt)
        add(name, matmul_kernel, (-(-M // BM), -(-N // BN)),
            dict(a=a, b=b, c=c, M=M, N=N, K=K, sam=K, sak=1, sbk=N, sbn=1, scm=N, scn=1), ["c"],
            num_warps=num_warps, targets=targets, BM=BM, BN=BN, BK=BK, PREC=prec,
            ACC=acc, OUT=outdt_tl(outdt))

    def outdt_tl(d):
        return {np.float32: tl.float32, np.float16: tl.float16, np.int32: tl.int32, np.float64: tl.float64,
                ml_dtypes.bfloat16: tl.bfloat16}[d]

    mm("matmul_f16", np.float16, tl.float32, np.float16)
    mm("matmul_f16_f32out", np.float16, tl.float32, np.float32, M=48, N=40, K=72)
    mm("matmul_f16_acc16", np.float16, tl.float16, np.float16)
    mm("matmul_bf16", ml_dtypes.bfloat16, tl.float32, ml_dtypes.bfloat16)
    mm("matmul_tf32", np.float32, tl.float32, np.float32, prec="tf32")
    mm("matmul_tf32x3", np.float32, tl.float32, np.float32, prec="tf32x3")
    mm("matmul_f32_ieee", np.float32, tl.float32, np.float32, prec="ieee", M=32, N=32, K=32, BM=16, BN=16, BK=16)
    mm("matmul_f64", np.float64, tl.float64, np.float64, M=32, N=32, K=32, BM=16, BN=16, BK=16)
    mm("matmul_int8", np.int8, tl.int32, np.int32)
    mm("matmul_fp8e4", ml_dtypes.float8_e4m3fn, tl.float32, np.float32, targets=("sm_90a",))
    mm("matmul_fp8e5", ml_dtypes.float8_e5m2, tl.float32, np.float32, targets=("sm_90a",))
    mm("matmul_f16_64x64", np.float16, tl.float32, np.float16, M=64, N=64, K=64, BM=64, BN=64, BK=32)
    mm("matmul_bf16_64x64", ml_dtypes.bfloat16, tl.float32, np.float32, M=64, N=128, K=64, BM=64, BN=128, BK=32)
    mm("matmul_tf32_64x64", np.float32, tl.float32, np.float32, prec="tf32", M=64, N=64, K=32, BM=64, BN=64, BK=16)
    mm("matmul_fp8e4_64x64", ml_dtypes.float8_e4m3fn, tl.float32, np.float32, M=64, N=64, K=64, BM=64, BN=64,
       BK=64, targets=("sm_90a",))
    mm("matmul_int8_64x64", np.int8, tl.int32, np.int32, M=64, N=64, K=64, BM=64, BN=64, BK=32)
    mm("matmul_f16_w8", np.float16, tl.float32, np.float16, M=128, N=128, K=64, BM=64, BN=64, BK=32, num_warps=8)
    add("matmul_bias_relu", matmul_bias_relu_kernel, (2, 2),
        dict(a=rng.standard_normal((64, 64)).astype(np.float16), b=rng.standard_normal((64, 64)).astype(np.float16),
             bias=rng.standard_normal(64).astype(np.float32), c=np.zeros((64, 64), np.float16), M=64, N=64, K=64),
        ["c"], BM=32, BN=32, BK=32)
    L, D = 64, 32
    add("flash_attention", attention_kernel, (2,),
        dict(q=rng.standard_normal((L, D)).astype(np.float16), k=rng.standard_normal((L, D)).astype(np.float16),
             v=rng.standard_normal((L, D)).astype(np.float16), o=np.zeros((L, D), np.float16), L=L,
             scale=0.17677669 * 1.4426950408889634), ["o"], BM=32, BN=32, D=D)
    add("tma_matmul", tma_matmul_kernel, (1, 1),
        dict(a=rng.standard_normal((64, 64)).astype(np.float16), b=rng.standard_normal((64, 64)).astype(np.float16),
             c=np.zeros((64, 64), np.float16), M=64, N=64, K=64), ["c"], targets=("sm_90a",), BM=64, BN=64, BK=32)
    return out
