// Tensor cores through the WMMA API and a cp.async pipeline (nvcc writes mma.sync / ldmatrix / cp.async).
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
using namespace nvcuda;

extern "C" __global__ void wmma_f16(const half *a, const half *b, float *c, int M, int N, int K) {
    int wm = blockIdx.y, wn = blockIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, a + wm * 16 * K + k, K);
        wmma::load_matrix_sync(fb, b + wn * 16 * K + k, K);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(c + wm * 16 * N + wn * 16, fc, N, wmma::mem_row_major);
}

extern "C" __global__ void wmma_tf32(const float *a, const float *b, float *c, int M, int N, int K) {
    int wm = blockIdx.y, wn = blockIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    for (int k = 0; k < K; k += 8) {
        wmma::load_matrix_sync(fa, a + wm * 16 * K + k, K);
        wmma::load_matrix_sync(fb, b + k * N + wn * 16, N);
        for (int t = 0; t < fa.num_elements; t++) fa.x[t] = wmma::__float_to_tf32(fa.x[t]);
        for (int t = 0; t < fb.num_elements; t++) fb.x[t] = wmma::__float_to_tf32(fb.x[t]);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(c + wm * 16 * N + wn * 16, fc, N, wmma::mem_row_major);
}

extern "C" __global__ void wmma_s8(const signed char *a, const signed char *b, int *c, int M, int N, int K) {
    int wm = blockIdx.y, wn = blockIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::fill_fragment(fc, 0);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, a + wm * 16 * K + k, K);
        wmma::load_matrix_sync(fb, b + wn * 16 * K + k, K);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(c + wm * 16 * N + wn * 16, fc, N, wmma::mem_row_major);
}

extern "C" __global__ void pipeline_copy(const float4 *in, float4 *out, int n) {
    __shared__ float4 buf[2][128];
    int t = threadIdx.x;
    int tiles = n / 128;
    __pipeline_memcpy_async(&buf[0][t], &in[t], sizeof(float4));
    __pipeline_commit();
    for (int k = 0; k < tiles; k++) {
        if (k + 1 < tiles) __pipeline_memcpy_async(&buf[(k + 1) & 1][t], &in[(k + 1) * 128 + t], sizeof(float4));
        __pipeline_commit();
        __pipeline_wait_prior(1);
        __syncthreads();
        float4 v = buf[k & 1][(t + 1) % 128];
        out[k * 128 + t] = make_float4(v.x * 2.f, v.y + 1.f, v.z - v.w, v.w);
        __syncthreads();
    }
}
