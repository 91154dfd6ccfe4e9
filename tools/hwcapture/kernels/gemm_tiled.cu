// A tiled tensor-core GEMM: C (M x N, f32) = A (M x K, f16, row-major) * B (K x N, f16, row-major).
//
// One CTA of 4 warps computes a 64x64 tile of C; each warp owns a 32x32 quarter (2 x 4 mma tiles of
// m16n8k16 with f32 accumulators). The K loop walks 16-wide slices of A and B that cp.async.cg copies
// into a double buffer in shared memory (the copy of slice k+1 overlaps the mma of slice k); ldmatrix
// .x4 reads A fragments and ldmatrix .x2.trans reads B fragments. Rows in shared memory are padded by
// 8 halves so that the eight rows of one ldmatrix phase fall into different banks.
//
// Requires M % 64 == 0, N % 64 == 0, K % 16 == 0; grid = (N / 64, M / 64), block = 128.
#include <cuda_fp16.h>

#define BM 64
#define BN 64
#define BK 16
#define SA_STRIDE (BK + 8)   // halves per padded A row in shared memory
#define SB_STRIDE (BN + 8)   // halves per padded B row in shared memory

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}

__global__ void gemm_tiled(const __half *A, const __half *B, float *C, int M, int N, int K) {
  __shared__ __align__(128) __half sa[2][BM * SA_STRIDE];
  __shared__ __align__(128) __half sb[2][BK * SB_STRIDE];
  int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;

  // Each thread copies one 16-byte chunk of the A slice (64 rows x 2 chunks) and one of the B slice
  // (16 rows x 8 chunks).
  int a_r = tid >> 1, a_c = (tid & 1) * 8;
  int b_r = tid >> 3, b_c = (tid & 7) * 8;
  auto load_slice = [&](int stage, int k0) {
    cp_async16(&sa[stage][a_r * SA_STRIDE + a_c], A + (size_t)(row0 + a_r) * K + k0 + a_c);
    cp_async16(&sb[stage][b_r * SB_STRIDE + b_c], B + (size_t)(k0 + b_r) * N + col0 + b_c);
    asm volatile("cp.async.commit_group;\n" ::);
  };

  float acc[2][4][4];
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
      for (int r = 0; r < 4; r++) acc[i][j][r] = 0.0f;

  int nk = K / BK;
  load_slice(0, 0);
  for (int kt = 0; kt < nk; kt++) {
    int stage = kt & 1;
    if (kt + 1 < nk) {
      load_slice(stage ^ 1, (kt + 1) * BK);
      asm volatile("cp.async.wait_group 1;\n" ::);
    } else {
      asm volatile("cp.async.wait_group 0;\n" ::);
    }
    __syncthreads();

    unsigned af[2][4], bf[4][2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const __half *p = &sa[stage][(wm + i * 16 + (lane & 15)) * SA_STRIDE + (lane >> 4) * 8];
      unsigned addr = (unsigned)__cvta_generic_to_shared(p);
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(af[i][0]), "=r"(af[i][1]), "=r"(af[i][2]), "=r"(af[i][3]) : "r"(addr));
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const __half *p = &sb[stage][(lane & 15) * SB_STRIDE + wn + j * 8];
      unsigned addr = (unsigned)__cvta_generic_to_shared(p);
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                   : "=r"(bf[j][0]), "=r"(bf[j][1]) : "r"(addr));
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
      for (int j = 0; j < 4; j++)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                     "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
                     : "r"(af[i][0]), "r"(af[i][1]), "r"(af[i][2]), "r"(af[i][3]), "r"(bf[j][0]),
                       "r"(bf[j][1]));
    __syncthreads();   // every warp is done with this stage before it is overwritten
  }

  int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) {
      int r = row0 + wm + i * 16 + g, c = col0 + wn + j * 8 + 2 * t;
      *(float2 *)&C[(size_t)r * N + c] = make_float2(acc[i][j][0], acc[i][j][1]);
      *(float2 *)&C[(size_t)(r + 8) * N + c] = make_float2(acc[i][j][2], acc[i][j][3]);
    }
}
