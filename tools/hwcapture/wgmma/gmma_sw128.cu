// One warpgroup computes C (64 x 128, f32) = A (64 x 64, f16) * B (64 x 128, f16) with wgmma, the shared
// layouts of CUTLASS's CuTe Hopper GMMA tutorial: A K-major and B MN-major, both 128-byte swizzled
// (CuTe's GMMA::Layout_K_SW128_Atom / Layout_MN_SW128_Atom tiled over the operands).  Compiled by
// nvcc -arch=sm_90a -ptx; the PTX runs on the H100 by
// tools/hwcapture/wgmma/nvcc_capture.py.
#include <cuda_fp16.h>
#include <stdint.h>

__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr >> 4) & 0x3FFF) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16)
       | ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

__device__ __forceinline__ uint32_t sw128(uint32_t off) { return off ^ (((off >> 7) & 7) << 4); }

extern "C" __global__ void __launch_bounds__(128) gmma_sw128(const half* A, const half* B, float* C) {
  __shared__ __align__(1024) half sA[64 * 64];    // (m, k) at m*128 + 2k: 128-byte rows, 8 rows an atom
  __shared__ __align__(1024) half sB[64 * 128];   // (k, n) at (n/64)*8192 + k*128 + 2(n%64)
  int t = threadIdx.x;
  for (int i = t; i < 64 * 64; i += 128) {
    int m = i / 64, k = i % 64;
    sA[sw128(m * 128 + k * 2) / 2] = A[m * 64 + k];
  }
  for (int i = t; i < 64 * 128; i += 128) {
    int k = i / 128, n = i % 128;
    sB[sw128((n / 64) * 8192 + k * 128 + (n % 64) * 2) / 2] = B[k * 128 + n];
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  float d[64];
  for (int i = 0; i < 64; i++) d[i] = 0.f;
  uint32_t a0 = (uint32_t)__cvta_generic_to_shared(sA), b0 = (uint32_t)__cvta_generic_to_shared(sB);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
  for (int ks = 0; ks < 4; ks++) {
    uint64_t da = sw128_desc(a0 + ks * 32, 16, 1024);          // K-major: a k16 step is 32 bytes along the row
    uint64_t db = sw128_desc(b0 + ks * 2048, 8192, 1024);      // MN-major: a k16 step is 16 rows of 128 bytes
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1, 1, 1, 0, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "l"(da), "l"(db));
  }
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  int w = t / 32, l = t % 32;
  for (int i = 0; i < 64; i++) {
    int row = 16 * w + l / 4 + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * (l % 4) + (i & 1);
    C[row * 128 + col] = d[i];
  }
}
