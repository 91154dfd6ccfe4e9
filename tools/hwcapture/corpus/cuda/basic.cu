// Everyday CUDA kernels for the corpus (compiled by nvcc with several flag sets, see nvcc_cases.py).
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cstdio>

extern "C" __global__ void saxpy(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void reduce_sum(const float *x, float *out, int n) {
    __shared__ float buf[256];
    int t = threadIdx.x;
    float s = 0.f;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x) s += x[i];
    buf[t] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k >= 32; k >>= 1) {
        if (t < k) buf[t] += buf[t + k];
        __syncthreads();
    }
    if (t < 32) {
        float v = buf[t];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (t == 0) out[blockIdx.x] = v;
    }
}

extern "C" __global__ void histogram_smem(const uint32_t *x, uint32_t *h, int n) {
    __shared__ uint32_t local[64];
    for (int i = threadIdx.x; i < 64; i += blockDim.x) local[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[x[i] & 63], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < 64; i += blockDim.x) atomicAdd(&h[i], local[i]);
}

extern "C" __global__ void transpose_smem(const float *in, float *out, int rows, int cols) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void int_math(const int64_t *a, const int64_t *b, int64_t *o, const uint32_t *u,
                                    uint32_t *ou, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int64_t x = a[i], y = b[i];
    o[4 * i + 0] = x / y;
    o[4 * i + 1] = x % y;
    o[4 * i + 2] = (int64_t)((uint64_t)x / (uint64_t)(y | 1));
    o[4 * i + 3] = __mul64hi(x, y) ^ (int64_t)__umul64hi((uint64_t)x, (uint64_t)y);
    uint32_t p = u[2 * i], q = u[2 * i + 1];
    uint32_t r = __popc(p) + __clz(q) + __brev(p) + __byte_perm(p, q, 0x5140) + __funnelshift_l(p, q, q & 31)
               + __funnelshift_r(p, q, 13) + __ffs(q) + __umulhi(p, q) + __sad(p, q, 7u);
    r ^= (p & q) | (~p & (q ^ r));     // lop3
    r += __vabsdiffu4(p, q) + (uint32_t)__dp4a((int)p, (int)q, 5) + (uint32_t)__dp2a_lo((int)p, (int)q, 3);
    ou[i] = r + p / (q | 1) + p % 1000u;
}

extern "C" __global__ void float_math(const float *x, const float *y, float *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i];
    float r = __fdiv_rn(a, b) + __fsqrt_rn(fabsf(a)) + fmaf(a, b, -a) + __frcp_rn(b) + fminf(a, b) * fmaxf(a, b);
    r += truncf(a) + floorf(b) + ceilf(a) + rintf(b) + roundf(a) + copysignf(a, b) + fabsf(b);
    r += __fadd_rz(a, b) + __fmul_ru(a, b) + __fmaf_rd(a, b, r) + (float)__float2int_rn(a) + (float)__float2uint_rz(b);
    o[i] = r + a / b;
}

extern "C" __global__ void double_math(const double *x, const double *y, double *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double a = x[i], b = y[i];
    o[i] = __dadd_rn(a, b) * __dmul_rz(a, b) + fma(a, b, a) + floor(a) + (double)(float)b + __dsqrt_rn(fabs(a));
}

extern "C" __global__ void double_div(const double *x, const double *y, double *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = x[i] / y[i];
}

extern "C" __global__ void half_math(const __half2 *x, const __half2 *y, __half2 *o, const __nv_bfloat162 *bx,
                                     __nv_bfloat162 *bo, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half2 a = x[i], b = y[i];
    o[i] = __hfma2(a, b, __hadd2(a, b)) * __hmax2(a, b) - __hmin2(a, b) + __habs2(b);
    __nv_bfloat162 c = bx[i];
    bo[i] = __hfma2(c, c, c) + __hmul2(c, __float2bfloat162_rn(0.5f));
}

extern "C" __global__ void conversions(const float *x, __half *h, __nv_bfloat16 *b, int *iv, unsigned *uv,
                                       signed char *c, double *d, long long *ll, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i];
    h[i] = __float2half_rn(a);
    b[i] = __float2bfloat16_rn(a);
    iv[i] = __float2int_rz(a);
    uv[i] = __float2uint_rn(a);
    c[i] = (signed char)__float2int_rn(a);
    d[i] = (double)a + (double)__half2float(h[i]);
    ll[i] = __float2ll_rn(a) + __double2ll_rz((double)a * 3.0);
}

extern "C" __global__ void warp_collectives(const unsigned *x, unsigned *o) {
    unsigned v = x[blockIdx.x * blockDim.x + threadIdx.x];
    unsigned m = __match_any_sync(0xffffffffu, v & 7);
    unsigned s = __reduce_add_sync(0xffffffffu, v & 0xffff);
    unsigned mx = __reduce_max_sync(0xffffffffu, v);
    unsigned b = __ballot_sync(0xffffffffu, v & 1);
    unsigned up = __shfl_up_sync(0xffffffffu, v, 3);
    unsigned dn = __shfl_down_sync(0xffffffffu, v, 5);
    unsigned idx = __shfl_sync(0xffffffffu, v, (threadIdx.x * 7) & 31);
    int any = __any_sync(0xffffffffu, v > 0xF0000000u), all = __all_sync(0xffffffffu, v > 5);
    unsigned ar = __reduce_and_sync(0xffffffffu, v) ^ __reduce_or_sync(0xffffffffu, v) ^ __reduce_xor_sync(0xffffffffu, v);
    o[blockIdx.x * blockDim.x + threadIdx.x] = m ^ s ^ mx ^ b ^ up ^ dn ^ idx ^ (any << 1) ^ all ^ ar;
}

__device__ __noinline__ float poly(float x, int k) {
    float r = 0.f;
    for (int i = 0; i < k; i++) r = r * x + (float)i;
    return r;
}

extern "C" __global__ void calls_and_switch(const float *x, const int *sel, float *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    switch (sel[i] & 7) {
        case 0: v = poly(v, 3); break;
        case 1: v = v * 2.f; break;
        case 2: v = poly(v, 5) - 1.f; break;
        case 3: v = -v; break;
        case 4: v = v + 100.f; break;
        case 5: v = poly(v, 2) * v; break;
        default: v = 0.f;
    }
    o[i] = v;
}

extern "C" __global__ void printf_kernel(const int *x) {
    if (threadIdx.x % 8 == 0) printf("thread %d block %d value %d\n", threadIdx.x, blockIdx.x, x[threadIdx.x]);
}

extern "C" __global__ void dyn_smem_scan(const int *x, int *o, int n) {
    extern __shared__ int s[];
    int t = threadIdx.x;
    s[t] = t < n ? x[t] : 0;
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        int v = t >= off ? s[t - off] : 0;
        __syncthreads();
        s[t] += v;
        __syncthreads();
    }
    if (t < n) o[t] = s[t];
}

extern "C" __global__ void cache_hints(const float *x, float *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    float a;
    asm volatile("ld.global.L1::no_allocate.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(a) : "l"(x + i), "l"(pol));
    float b = __ldg(x + (i ^ 1) % n) + __ldcs(x + i) + __ldlu(x + i) + __ldcv(x + i);
    __stcs(o + i, a + b);
    __stwt(o + i, __ldcg(o + i) * 2.f);
}

// The opaque 64-bit cache policies createpolicy makes, stored so that their encoding is recorded.
extern "C" __global__ void policy_values(uint64_t *o) {
    uint64_t p0, p1, p2, p3, p4, p5, p6, p7;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p0));
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p1));
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p2));
    asm volatile("createpolicy.fractional.L2::evict_unchanged.b64 %0, 1.0;" : "=l"(p3));
    asm volatile("createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64 %0, 0.5;" : "=l"(p4));
    asm volatile("createpolicy.fractional.L2::evict_last.L2::evict_first.b64 %0, 0.25;" : "=l"(p5));
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0;" : "=l"(p6));
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 0.75;" : "=l"(p7));
    int t = threadIdx.x;
    if (t == 0) { o[0] = p0; o[1] = p1; o[2] = p2; o[3] = p3; o[4] = p4; o[5] = p5; o[6] = p6; o[7] = p7; }
}
