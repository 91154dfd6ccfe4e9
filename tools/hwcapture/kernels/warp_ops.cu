// Divergent control flow and warp-level operations on a CTA of several warps.
//
// Every thread writes NOUT 32-bit results to out[tid * NOUT + i]; the CTA also accumulates into
// shared and global counters with atomics whose final values do not depend on the order of the
// atomic operations (sums, minima, maxima, a CAS loop), so the hardware's run is reproducible.
// g_bits collects the ballots of every warp (read back after the kernel). A few lanes print with printf. Launch: grid = (2, 1, 1), block = (96, 1, 1).
#include <cstdio>

#define NOUT 24

__constant__ int coeffs[8] = {3, -5, 7, 11, -13, 17, 19, -23};
__device__ unsigned long long g_bits;   // OR of the ballots of every warp (atomicOr)

__device__ __noinline__ int collatz_steps(int x) {
  int n = 0;
  while (x != 1 && n < 200) {
    x = (x & 1) ? 3 * x + 1 : x >> 1;
    n++;
  }
  return n;
}

__global__ void warp_ops(const int *in, int *out, int *counters) {
  __shared__ int s_sum, s_min, s_max, s_hist[8];
  int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  int gtid = blockIdx.x * blockDim.x + tid;
  if (tid < 8) s_hist[tid] = 0;
  if (tid == 0) { s_sum = 0; s_min = 0x7fffffff; s_max = -0x7fffffff - 1; }
  __syncthreads();

  int v = in[gtid];
  int *o = out + gtid * NOUT;

  // Divergent branches: three paths, nested, with a data-dependent loop.
  int x;
  if (lane % 3 == 0) {
    x = v * coeffs[lane & 7];
    if (v & 4) x ^= 0x5a5a;
  } else if (lane % 3 == 1) {
    x = collatz_steps((v & 1023) + 1);
  } else {
    x = 0;
    for (int i = 0; i < (v & 15); i++) x += i * v;
  }
  o[0] = x;
  // Votes and activemask inside divergent code.
  unsigned am = 0, bal = 0;
  if (v & 1) {
    am = __activemask();
    bal = __ballot_sync(am, x > 0);
  }
  o[1] = am;
  o[2] = bal;
  o[3] = __ballot_sync(0xffffffff, x & 1);
  o[4] = __any_sync(0xffffffff, x > 1000);
  o[5] = __all_sync(0xffffffff, x != 12345);
  // Shuffles in all four modes, full and sub-warp widths.
  o[6] = __shfl_sync(0xffffffff, x, (lane * 7 + 3) & 31);
  o[7] = __shfl_up_sync(0xffffffff, x, 3);
  o[8] = __shfl_down_sync(0xffffffff, x, 5, 16);
  o[9] = __shfl_xor_sync(0xffffffff, x, 6, 8);
  o[10] = __shfl_sync(0xffffffff, v, 2, 4);
  // Warp reduction with xor shuffles.
  int r = x;
  for (int m = 16; m; m >>= 1) r += __shfl_xor_sync(0xffffffff, r, m);
  o[11] = r;
  // Bit manipulation.
  o[12] = __popc(v) + 100 * __clz(x);
  o[13] = __brev(v);
  o[14] = __ffs(x);
  o[15] = __byte_perm(v, x, 0x5140 + lane);
  o[16] = __funnelshift_l(v, x, lane);
  o[17] = __funnelshift_r(v, x, lane);
  o[18] = __mul24(v, x) + __umulhi(v, x);
  o[19] = __sad(v, x, lane) + __usad(v, x, 7);
  // A thread-local array indexed at run time (lives in .local memory).
  int buf[16];
  for (int i = 0; i < 16; i++) buf[i] = v + i * x;
  o[20] = buf[(v ^ lane) & 15] + buf[lane & 15];
  o[21] = max(min(v, x), -x) + abs(v - x);
  o[22] = (v > x) ? v / (lane + 1) : x % (lane + 3);
  o[23] = (unsigned)v / (unsigned)(lane + 7) + (unsigned)x % 13u;

  // Atomics whose final values are order-independent.
  atomicAdd(&s_sum, x);
  atomicMin(&s_min, x);
  atomicMax(&s_max, v);
  atomicAdd(&s_hist[v & 7], 1);
  atomicAdd(&counters[0], v & 0xffff);
  atomicMax(&counters[1], x);
  atomicMin((unsigned *)&counters[2], (unsigned)v);
  atomicXor(&counters[3], v);
  atomicAnd(&counters[4], v | 0x10000);
  atomicInc((unsigned *)&counters[5], 1000000u);
  // A CAS loop: the largest (x ^ v) in the grid.
  int old = counters[6], assumed;
  do {
    assumed = old;
    old = atomicCAS(&counters[6], assumed, max(assumed, x ^ v));
  } while (old != assumed);
  if (lane == 0) atomicOr(&g_bits, (unsigned long long)bal << (warp * 16));
  __syncthreads();
  if (tid == 0) {
    counters[8 + 4 * blockIdx.x] = s_sum;
    counters[9 + 4 * blockIdx.x] = s_min;
    counters[10 + 4 * blockIdx.x] = s_max;
    counters[11 + 4 * blockIdx.x] = s_hist[0] + 10 * s_hist[3] + 100 * s_hist[7];
  }
  if (lane == 5 && blockIdx.x == 0)
    printf("block %d warp %d lane %d: v=%d x=%x r=%u bal=%08x %s %5.2f|%-6d|%lld\n", blockIdx.x, warp,
           lane, v, x, r, bal, (x & 1) ? "odd" : "even", (double)x / 7.0, lane, (long long)v * x);
}
