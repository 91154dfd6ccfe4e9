// Ordinary CUDA kernels of the kind the emulator should run unchanged: a block reduction with warp
// shuffles, shared memory and a float atomicAdd (its operands are exact, so the order of the atomics does
// not change the sum); a 2D-block shared-memory transpose of float4 data (%tid.y, a padded tile); and a
// kernel with a switch, 64-bit division and remainder, half and double arithmetic and conversions.
// Launches: reduce_sum grid 2, block 128; transpose grid 1, block (32, 32); sw grid 1, block 64.
#include <cuda_fp16.h>
__global__ void __launch_bounds__(128) reduce_sum(const float *__restrict__ x, float *out, int n, float scale) {
  __shared__ float s[4];
  int t = threadIdx.x + blockIdx.x * blockDim.x;
  float v = t < n ? x[t] * scale : 0.f;
  for (int o = 16; o; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) { float r = 0; for (int i = 0; i < 4; i++) r += s[i]; atomicAdd(out, r); }
}
__global__ void transpose(const float4 *in, float4 *out, int n) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  float4 v = in[(y * n + x) / 4 % n];
  tile[threadIdx.y][threadIdx.x] = v.x + v.y * 2 + v.z * 3 + v.w;
  __syncthreads();
  out[(x * n + y) / 4 % n] = make_float4(tile[threadIdx.x][threadIdx.y], 1.f, 2.f, 3.f);
}
__global__ void sw(int *a, long long *b, unsigned long long *c) {
  int t = threadIdx.x;
  int r;
  switch (a[t] & 7) { case 0: r = 5; break; case 1: r = a[t] * 3; break; case 2: r = -a[t]; break;
    case 3: r = a[t] << 2; break; case 4: r = a[t] ^ 99; break; case 5: r = 1234; break; default: r = 0; }
  a[t] = r;
  b[t] = b[t] / (long long)(t + 1) + b[t] % 7;
  c[t] = c[t] / (unsigned long long)(t + 3);
  __half h = __float2half(a[t] * 0.5f);
  h = __hmul(h, __float2half(1.5f));
  a[t] += (int)__half2float(h);
  double d = (double)b[t] * 1.5;
  a[t] += (int)d;
  float f = __int_as_float(a[t]);
  a[t] ^= __float_as_int(fmaxf(f, 1.0f) * 3.0f + (float)t);
  a[t] += __float2int_rn(sqrtf((float)t));
  a[t] += (int)(1.0f / (float)(t + 1) * 1000.f);
}
