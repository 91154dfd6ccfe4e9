// IEEE arithmetic and conversions in every rounding mode, one result per thread and operation.
//
// Thread t reads f32 inputs a[t], b[t], c[t] and f64 inputs da[t], db[t], dc[t], and writes NF 32-bit
// results to out32[t * NF + i] and ND 64-bit results to out64[t * ND + i]. Each line below maps to one PTX
// instruction (the intrinsics pin the rounding mode, so nvcc neither fuses nor reorders them).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define NF 72
#define ND 16

__global__ void float_ops(const float *a, const float *b, const float *c, const double *da, const double *db,
                          const double *dc, unsigned *out32, unsigned long long *out64) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float x = a[t], y = b[t], z = c[t];
  double u = da[t], v = db[t], w = dc[t];
  unsigned *o = out32 + t * NF;
  unsigned long long *q = out64 + t * ND;
  int k = 0;
#define F(e) o[k++] = __float_as_uint(e)
#define I(e) o[k++] = (unsigned)(e)
#define D(e) q[j++] = __double_as_longlong(e)
  F(__fadd_rn(x, y)); F(__fadd_rz(x, y)); F(__fadd_rd(x, y)); F(__fadd_ru(x, y));
  F(__fsub_rn(x, y)); F(__fsub_rz(x, y));
  F(__fmul_rn(x, y)); F(__fmul_rz(x, y)); F(__fmul_rd(x, y)); F(__fmul_ru(x, y));
  F(__fmaf_rn(x, y, z)); F(__fmaf_rz(x, y, z)); F(__fmaf_rd(x, y, z)); F(__fmaf_ru(x, y, z));
  F(__fdiv_rn(x, y)); F(__fdiv_rz(x, y)); F(__fdiv_rd(x, y)); F(__fdiv_ru(x, y));
  F(__fsqrt_rn(x)); F(__fsqrt_rz(y)); F(__fsqrt_rd(z)); F(__fsqrt_ru(x));
  F(__frcp_rn(x)); F(__frcp_rz(y));
  F(fminf(x, y)); F(fmaxf(x, y)); F(fabsf(z)); F(-y);
  F(rintf(x)); F(truncf(y)); F(floorf(z)); F(ceilf(x));
  I(__float2int_rn(x)); I(__float2int_rz(y)); I(__float2int_rd(z)); I(__float2int_ru(x));
  I(__float2uint_rn(y)); I(__float2uint_rz(z));
  I(__float2ll_rz(x)); I(__float2ll_rd(y) >> 32);
  int ix = __float_as_int(x), iy = __float_as_int(y);
  F(__int2float_rn(ix)); F(__int2float_rz(ix)); F(__int2float_rd(iy)); F(__int2float_ru(iy));
  F(__uint2float_rn((unsigned)ix)); F(__uint2float_rz((unsigned)iy));
  long long lx = ((long long)ix << 24) ^ iy;
  F(__ll2float_rn(lx)); F(__ll2float_rd(lx));
  I(__half_as_ushort(__float2half_rn(x)) | (__half_as_ushort(__float2half_rz(y)) << 16));
  I(__half_as_ushort(__float2half_rd(z)) | (__half_as_ushort(__float2half_ru(x)) << 16));
  F(__half2float(__ushort_as_half((unsigned short)ix)));
  I(__bfloat16_as_ushort(__float2bfloat16_rn(y)) | (__bfloat16_as_ushort(__float2bfloat16_rz(z)) << 16));
  __half2 h1 = __floats2half2_rn(x, y), h2 = __floats2half2_rn(z, x * 0.5f);
  __half2 hs = __hadd2(h1, h2), hm = __hmul2(h1, h2), hf = __hfma2(h1, h2, hs);
  I(*(unsigned *)&hs); I(*(unsigned *)&hm); I(*(unsigned *)&hf);
  I(__half_as_ushort(__hadd(__low2half(h1), __high2half(h2))));
  __nv_bfloat162 b1 = __floats2bfloat162_rn(x, z), b2 = __floats2bfloat162_rn(y, z);
  __nv_bfloat162 bf = __hfma2(b1, b2, b1);
  I(*(unsigned *)&bf);
  F(__double2float_rn(u)); F(__double2float_rz(u)); F(__double2float_rd(v)); F(__double2float_ru(v));
  I(__double2int_rz(w)); I(__double2uint_rn(u));
  F(x * y + z);            // contracted: fma.rn.f32
  F(copysignf(x, y));
  int j = 0;
  D(__dadd_rn(u, v)); D(__dadd_rz(u, v)); D(__dadd_rd(u, w)); D(__dadd_ru(v, w));
  D(__dmul_rn(u, v)); D(__dmul_rz(u, w)); D(__dmul_ru(v, w));
  D(__fma_rn(u, v, w)); D(__fma_rz(u, v, w));
  D(__ddiv_rn(u, v)); D(__ddiv_rd(u, w));
  D(__dsqrt_rn(u)); D(__dsqrt_ru(v));
  D((double)x * (double)y);
  D(__ll2double_rd(lx * 1000003LL)); D(fmin(u, v));
}
