// The demo kernels of `python -m emulator demo`: one m16n8k16 f16 tensor-core product D = A * B.
//
// A is 16x16 and B is 16x8, both f16 in row-major order, C is 16x8 f16 (the output).
// ptx_mma_shared stages A and B through shared memory with cp.async.cg (16 bytes per lane), reads the
// fragments with ldmatrix (.x4 for A, .x2.trans for B) and issues one mma.sync.
// ptx_mma_global reads the same fragments straight from global memory, using the fragment layout of
// the PTX ISA for mma.m16n8k16 with .f16 operands (groupID = lane / 4, threadID_in_group = lane % 4).
//
// Build: nvcc -ptx -arch=sm_90 mma_demo.cu -o mma_demo.ptx
#include <cuda_fp16.h>

__device__ __forceinline__ unsigned pack_halves(__half lo, __half hi) {
  return (unsigned)__half_as_ushort(lo) | ((unsigned)__half_as_ushort(hi) << 16);
}

__global__ void ptx_mma_shared(__half *a, __half *b, __half *c, int M, int N, int K) {
  __shared__ __align__(128) __half sa[16 * 16];
  __shared__ __align__(128) __half sb[16 * 8];
  int lane = threadIdx.x & 31;

  // A is 512 bytes: one 16-byte chunk per lane. B is 256 bytes: lanes 0..15 copy one chunk each.
  unsigned dst_a = (unsigned)__cvta_generic_to_shared(sa + lane * 8);
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(dst_a), "l"(a + lane * 8));
  if (lane < 16) {
    unsigned dst_b = (unsigned)__cvta_generic_to_shared(sb + lane * 8);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst_b), "l"(b + lane * 8));
  }
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();

  // ldmatrix.x4: lanes 0..15 give rows 0..15 at column 0, lanes 16..31 the same rows at column 8.
  unsigned a0, a1, a2, a3, b0, b1;
  unsigned row_a = (unsigned)__cvta_generic_to_shared(sa + (lane % 16) * K + (lane / 16) * 8);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(row_a));
  // B is K x N row-major: lanes 0..15 give the 16 rows k; .trans turns them into the "col" fragment.
  unsigned row_b = (unsigned)__cvta_generic_to_shared(sb + (lane % 16) * N);
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(b0), "=r"(b1) : "r"(row_b));

  unsigned d0, d1, zero = 0;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, "
               "{%8, %9};\n"
               : "=r"(d0), "=r"(d1)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(zero), "r"(zero));

  int g = lane >> 2, t = lane & 3;
  *(unsigned *)(c + g * N + 2 * t) = d0;
  *(unsigned *)(c + (g + 8) * N + 2 * t) = d1;
}

__global__ void ptx_mma_global(__half *a, __half *b, __half *c, int M, int N, int K) {
  int lane = threadIdx.x & 31;
  int g = lane >> 2, t = lane & 3;
  // A fragment: a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]
  unsigned a0 = *(const unsigned *)(a + g * K + 2 * t);
  unsigned a1 = *(const unsigned *)(a + (g + 8) * K + 2 * t);
  unsigned a2 = *(const unsigned *)(a + g * K + 2 * t + 8);
  unsigned a3 = *(const unsigned *)(a + (g + 8) * K + 2 * t + 8);
  // B fragment: b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g] (two elements of one column)
  unsigned b0 = pack_halves(b[(2 * t) * N + g], b[(2 * t + 1) * N + g]);
  unsigned b1 = pack_halves(b[(2 * t + 8) * N + g], b[(2 * t + 9) * N + g]);

  unsigned d0, d1, zero = 0;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, "
               "{%8, %9};\n"
               : "=r"(d0), "=r"(d1)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(zero), "r"(zero));
  *(unsigned *)(c + g * N + 2 * t) = d0;
  *(unsigned *)(c + (g + 8) * N + 2 * t) = d1;
}
