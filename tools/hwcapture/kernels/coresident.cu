// Kernels whose CTAs wait on each other through global memory: they finish only when the CTAs they wait for
// are resident at the same time. Compiled against CUTLASS's cutlass/barrier.h (the inter-CTA semaphore its
// split-K and stream-K GEMMs use), as CUTLASS compiles it:
//
//   nvcc -std=c++17 -arch=sm_90a -I$CUTLASS/include -ptx coresident.cu -o coresident.ptx
//
// tools/hwcapture/kernels/coresident_run.py runs the PTX on the GPU; tests/test_coresident.py replays it.
#include <cutlass/barrier.h>

using Barrier = cutlass::Barrier;     // GenericBarrier<SyncthreadsSync>

__device__ __forceinline__ int ld_acquire(const int *p) {
    int v;
    asm volatile("ld.global.acquire.gpu.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Split-K with a semaphore: CTA (s, tile) sums its K slice of a 16x16 tile of C = A (MxK) * B (KxN), then
// adds it into C in split order. reverse = 0: split s waits for flag == s (CTA 0 goes first); reverse = 1:
// split s waits for flag == splits-1-s, so CTA 0 waits for every later CTA of its tile.
extern "C" __global__ void splitk_sem(const float *A, const float *B, float *C, int *flags, int M, int N, int K,
                                      int reverse) {
    int s = blockIdx.x, splits = gridDim.x, tile = blockIdx.y;
    int tiles_n = N / 16;
    int tm = tile / tiles_n, tn = tile % tiles_n;
    int kper = K / splits;
    float acc[2];
    for (int e = 0; e < 2; ++e) {
        int idx = threadIdx.x + e * blockDim.x;          // 128 threads x 2 = 256 outputs
        int r = tm * 16 + idx / 16, c = tn * 16 + idx % 16;
        float a = 0.f;
        for (int k = s * kper; k < (s + 1) * kper; ++k) a = fmaf(A[r * K + k], B[k * N + c], a);
        acc[e] = a;
    }
    int turn = reverse ? splits - 1 - s : s;
    Barrier::wait_eq(flags, threadIdx.x, tile, turn);
    for (int e = 0; e < 2; ++e) {
        int idx = threadIdx.x + e * blockDim.x;
        int r = tm * 16 + idx / 16, c = tn * 16 + idx % 16;
        C[r * N + c] = turn == 0 ? acc[e] : C[r * N + c] + acc[e];
    }
    Barrier::arrive_inc(flags, threadIdx.x, tile);
}

// Stream-K-like fix-up: `units` = tiles x iters (k-steps of 16) are cut evenly over the grid's CTAs. A CTA
// that owns a tile (it computes the tile's first k-step) keeps its partial sum; the CTAs that compute the
// tile's later k-steps store their partials in the workspace and signal; the owner waits for them (LATER
// CTAs) and adds them in k order.
extern "C" __global__ void streamk_fixup(const float *A, const float *B, float *C, float *work, int *flags,
                                         int M, int N, int K) {
    int tiles_n = N / 16, tiles = (M / 16) * tiles_n, iters = K / 16;
    int units = tiles * iters;
    int per = (units + gridDim.x - 1) / gridDim.x;
    int u0 = blockIdx.x * per, u1 = min(units, u0 + per);
    int u = u0;
    while (u < u1) {
        int tile = u / iters, kb = u % iters;
        int ke = min(iters, kb + (u1 - u));           // this CTA's k-steps of this tile: [kb, ke)
        int tm = tile / tiles_n, tn = tile % tiles_n;
        float acc[2];
        for (int e = 0; e < 2; ++e) {
            int idx = threadIdx.x + e * blockDim.x;
            int r = tm * 16 + idx / 16, c = tn * 16 + idx % 16;
            float a = 0.f;
            for (int k = kb * 16; k < ke * 16; ++k) a = fmaf(A[r * K + k], B[k * N + c], a);
            acc[e] = a;
        }
        if (kb == 0) {
            // owner: the peers are the CTAs holding k-steps [ke, iters)
            int peers = 0;
            for (int k = ke; k < iters; k += per) ++peers;
            // the peers' segments start at ke, then every `per` k-steps (a peer covers at most `per`)
            Barrier::wait_eq(flags, threadIdx.x, tile, peers);
            for (int e = 0; e < 2; ++e) {
                int idx = threadIdx.x + e * blockDim.x;
                int r = tm * 16 + idx / 16, c = tn * 16 + idx % 16;
                float a = acc[e];
                for (int k = ke, j = 0; k < iters; k += per, ++j)
                    a += work[((size_t)tile * iters + k) * 256 + idx];
                C[r * N + c] = a;
            }
        } else {
            for (int e = 0; e < 2; ++e) {
                int idx = threadIdx.x + e * blockDim.x;
                work[((size_t)tile * iters + kb) * 256 + idx] = acc[e];
            }
            Barrier::arrive_inc(flags, threadIdx.x, tile);
        }
        u += ke - kb;
    }
}

// A grid-wide barrier (atomic counter, ld.acquire.gpu spin), used `rounds` times: round r writes
// x[r+1][cta] from x[r] of the two neighbouring CTAs. Dynamic shared memory (smem_bytes) limits how many
// CTAs are resident; it is touched so that it is really used.
extern "C" __global__ void grid_barrier(float *x, int *counter, int rounds) {
    extern __shared__ float scratch[];
    int n = gridDim.x, b = blockIdx.x;
    for (int r = 0; r < rounds; ++r) {
        float left = x[r * n + (b + n - 1) % n], right = x[r * n + (b + 1) % n];
        if (threadIdx.x == 0) scratch[0] = left * 0.75f + right * 1.25f;
        __syncthreads();
        if (threadIdx.x == 0) {
            x[(r + 1) * n + b] = scratch[0] + x[r * n + b];
            __threadfence();
            atomicAdd(counter, 1);
            while (ld_acquire(counter) < n * (r + 1)) {}
        }
        __syncthreads();
    }
}

// A lock taken with atom.cas (a failed CAS retries at once): CTA 0 takes it first and keeps it until the
// last CTA has set `go`, so every other CTA fails its CAS, again and again, until then. Inside the lock each
// CTA adds vals[cta] (small integers: the sum is exact in any order) and bumps a plain counter.
extern "C" __global__ void cas_lock(float *acc, int *count, int *lock, int *go, const float *vals) {
    if (threadIdx.x == 0) {
        int b = blockIdx.x;
        if (b == gridDim.x - 1) atomicExch(go, 1);
        while (atomicCAS(lock, 0, 1) != 0) {}
        __threadfence();
        if (b == 0) while (ld_acquire(go) == 0) {}
        *(volatile float *)acc = *(volatile float *)acc + vals[b];
        *(volatile int *)count = *(volatile int *)count + 1;
        __threadfence();
        atomicExch(lock, 0);
    }
}

// CUTLASS's wait_eq_reset (an atom.cas spin that resets the flag) as a token ring: CTA b waits for the
// token value b+1, adds its value to a running sum, and passes the token on. The ring starts at the LAST
// CTA (the token starts at 1000: CTA n-1 goes first), so every CTA waits for a later one.
extern "C" __global__ void cas_ring(float *sum, float *trail, int *token, const float *vals) {
    int b = blockIdx.x, n = gridDim.x;
    int want = (b + 1) % n;          // CTA n-1 waits for 0, CTA b waits for b+1
    Barrier::wait_eq_reset(token, threadIdx.x, 0, want + 1000);
    if (threadIdx.x == 0) {
        float s = *(volatile float *)sum * 0.5f + vals[b];
        *(volatile float *)sum = s;
        trail[b] = s;
        __threadfence();
        int next = (b + n - 1) % n;              // the CTA before this one goes next
        if (b != 0) atomicExch(token, ((next + 1) % n) + 1000);
    }
}

// nanosleep back-off: CTA b waits for flag[b], set by CTA b+1 once it is done, so the CTAs finish from the
// last to the first; each polls with exponentially growing naps.
extern "C" __global__ void nap_chain(float *out, int *flag, const float *vals) {
    int b = blockIdx.x, n = gridDim.x;
    if (threadIdx.x == 0) {
        float next = 1.0f;
        if (b < n - 1) {
            unsigned ns = 8;
            while (ld_acquire(&flag[b]) == 0) {
                __nanosleep(ns);
                ns = ns < 1024 ? ns * 2 : ns;
            }
            next = *(volatile float *)&out[b + 1];
        }
        out[b] = next * 1.5f + vals[b];
        __threadfence();
        if (b > 0) atomicExch(&flag[b - 1], 1);
    }
}

// Programmatic dependent launch: the primary lets its dependents start early, the secondary waits for the
// primary grid (griddepcontrol.wait) before it reads what the primary wrote.
extern "C" __global__ void pdl_primary(const float *x, float *y, int n) {
    asm volatile("griddepcontrol.launch_dependents;");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * 3.0f + 0.5f;
}

extern "C" __global__ void pdl_secondary(const float *y, float *z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float w = i < n ? (float)i * 0.25f : 0.f;          // work before the wait overlaps the primary
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (i < n) z[i] = y[i] * y[i] + w;
}
