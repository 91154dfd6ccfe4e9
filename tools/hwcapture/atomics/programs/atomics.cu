#include <cuda_bf16.h>
#include <cuda_fp16.h>
extern "C" __global__ void add_bf16(__nv_bfloat16 *x, const __nv_bfloat16 *y, __nv_bfloat16 *old, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) old[i] = atomicAdd(&x[i], y[i]);
}
extern "C" __global__ void add_bf16_one(__nv_bfloat16 *x, const __nv_bfloat16 *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&x[i % 4], y[i]);
}
extern "C" __global__ void add_bf162(__nv_bfloat162 *x, const __nv_bfloat162 *y, __nv_bfloat162 *old, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) old[i] = atomicAdd(&x[i], y[i]);
}
extern "C" __global__ void cas_u16(unsigned short *x, const unsigned short *c, const unsigned short *v, unsigned short *old, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) old[i] = atomicCAS(&x[i], c[i], v[i]);
}
