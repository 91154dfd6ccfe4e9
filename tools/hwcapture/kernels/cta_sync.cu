// Block-level cooperation in a CTA whose size is not a multiple of 32 (block = 80: the third warp has
// 16 lanes), with dynamic shared memory (extern __shared__), barrier reductions (__syncthreads_count /
// _and / _or), __match_any_sync, __reduce_*_sync, __syncwarp and threads that leave early.
// Launch: grid = (3, 1, 1), block = (80, 1, 1), dynamic shared memory = 80 * 4 bytes.
extern __shared__ int dyn[];

__global__ void cta_sync(const int *in, int *out, int n) {
  int tid = threadIdx.x;
  int g = blockIdx.x * blockDim.x + tid;
  int v = in[g];
  dyn[tid] = v;
  int c1 = __syncthreads_count(v > 0);
  int c2 = __syncthreads_and(v != 7);
  int c3 = __syncthreads_or((v & 0xff) == 0x11);
  // Neighbour sums through shared memory, tree reduction with a loop of barriers.
  int left = dyn[(tid + blockDim.x - 1) % blockDim.x];
  __syncthreads();
  for (int s = 64; s > 0; s >>= 1) {
    if (tid < s && tid + s < blockDim.x) dyn[tid] += dyn[tid + s];
    __syncthreads();
  }
  int total = dyn[0];
  unsigned active = __activemask();
  unsigned same = __match_any_sync(active, v & 3);
  int radd = __reduce_add_sync(active, v);
  int rmin = __reduce_min_sync(active, v);
  unsigned rmax = __reduce_max_sync(active, (unsigned)v);
  unsigned rxor = __reduce_xor_sync(active, (unsigned)v);
  __syncwarp(active);
  int *o = out + g * 12;
  o[0] = c1; o[1] = c2; o[2] = c3; o[3] = left; o[4] = total; o[5] = active; o[6] = same;
  o[7] = radd; o[8] = rmin; o[9] = rmax; o[10] = rxor;
  if (v % 5 == 0) return;          // leave early: the rest runs on a partial warp
  int acc = 0;
  for (int i = 0; i < 40; i++) {
    if ((v >> (i % 13)) & 1) continue;
    acc = acc * 31 + i;
    if (acc > 1000000) break;
  }
  o[11] = acc;
}
