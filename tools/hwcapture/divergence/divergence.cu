// Kernels whose lanes diverge and meet again: the emulator's reconvergence model against the H100.
// Each kernel runs one CTA (or a few); outputs are plain arrays. Compiled with nvcc -arch=sm_90a -ptx.
#include <cstdint>

__device__ __forceinline__ unsigned lane_id() { unsigned l; asm("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }

__device__ __forceinline__ unsigned elect_one() {
    unsigned pred = 0;
    asm volatile("{\n .reg .pred p;\n elect.sync _|p, 0xffffffff;\n selp.u32 %0, 1, 0, p;\n}" : "=r"(pred));
    return pred;
}

// A loop whose cold, divergent block (lane 0 only) is laid out after the loop, so that the join sits before
// it in the PTX; then a named barrier for all 256 threads (the ThunderKittens shape).
extern "C" __global__ void join_before_named_bar(const int *in, int *out, int iters) {
    __shared__ int s[256];
    unsigned lane = lane_id();
    int acc = 0;
    for (int it = 0; it < iters; ++it) {
        if (__builtin_expect(lane == 0, 0)) {
            int x = in[(threadIdx.x + it) & 255];
            for (int k = 0; k < (x & 7); ++k) x = x * 3 + k;
            s[threadIdx.x] = x;
        } else {
            s[threadIdx.x] = it + (int)threadIdx.x;
        }
        asm volatile("bar.sync 1, 256;" ::: "memory");
        acc += s[(threadIdx.x * 7 + it) & 255];
        asm volatile("bar.sync 1, 256;" ::: "memory");
    }
    out[threadIdx.x] = acc;
}

// Soft-capped logits (inlined tanhf with its internal branch) then a block reduction with bar.sync.
extern "C" __global__ void softcap_tanh_reduce(const float *x, float *y, float *sum, float cap) {
    __shared__ float red[256];
    float v = x[threadIdx.x];
    float t = cap * tanhf(v / cap);
    y[threadIdx.x] = t;
    red[threadIdx.x] = t;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) sum[0] = red[0];
}

// Per-lane trip counts, then elect.sync with the full mask right after the loop (the CUTLASS shape).
extern "C" __global__ void elect_after_loop(const int *in, int *out, int *who) {
    unsigned lane = lane_id();
    int x = in[threadIdx.x];
    int n = 0;
    while (x > 1) {                       // Collatz steps: data-dependent trip counts
        x = (x & 1) ? 3 * x + 1 : x >> 1;
        ++n;
    }
    out[threadIdx.x] = n;
    if (elect_one()) who[threadIdx.x >> 5] = (int)lane + 100 * n;
    __syncwarp();
}

// Loops with break and continue, nested data-dependent divergence.
extern "C" __global__ void break_continue(const int *in, int *out) {
    int x = in[threadIdx.x];
    int acc = 0;
    for (int i = 0; i < 40; ++i) {
        if (((x >> (i & 7)) & 3) == 1) continue;
        if (acc > 5000 + (x & 255)) break;
        if (x & (1 << (i % 13))) {
            if (i & 1) acc += x ^ i; else acc -= i * 3;
        } else {
            acc = acc * 3 + 1;
            if (acc & 16) continue;
            acc ^= x;
        }
    }
    out[threadIdx.x] = acc;
}

// A switch on per-lane data (small: compares; large and dense: possibly a jump table).
extern "C" __global__ void switch_small(const int *in, int *out) {
    int x = in[threadIdx.x];
    int r;
    switch (x % 5) {
        case 0: r = x * 7; break;
        case 1: r = x ^ 0x55; break;
        case 2: r = x + 1000; break;
        case 3: r = -x; break;
        default: r = x >> 2; break;
    }
    out[threadIdx.x] = r;
}

// Named barriers after a divergent region: 4 warps, two barrier ids with counts.
extern "C" __global__ void named_bars_after_divergence(const int *in, int *out) {
    __shared__ int s[128];
    int x = in[threadIdx.x];
    int y = 0;
    if (x & 1) { for (int k = 0; k < (x & 15); ++k) y += k * x; }
    else if (x & 2) { y = x * x; }
    else { y = -x; }
    s[threadIdx.x] = y;
    if (threadIdx.x < 64) asm volatile("bar.sync 2, 64;" ::: "memory");
    else asm volatile("bar.sync 3, 64;" ::: "memory");
    out[threadIdx.x] = s[threadIdx.x ^ 33] + y;
}

// libdevice functions with internal branches (slow paths for large arguments), then a reduction.
extern "C" __global__ void libdevice_branches(const float *x, float *y, float *red) {
    __shared__ float s[128];
    float v = x[threadIdx.x];
    float a = sinf(v) + cosf(v * 0.5f);
    float b = powf(fabsf(v) + 0.5f, 1.7f);
    float c = erfinvf(fmaxf(fminf(v * 1e-3f, 0.999f), -0.999f));
    float d = lgammaf(fabsf(v) * 0.01f + 0.1f);
    float r = a + b * 1e-3f + c + d;
    y[threadIdx.x] = r;
    y[128 + threadIdx.x] = a;
    y[256 + threadIdx.x] = b;
    y[384 + threadIdx.x] = c;
    y[512 + threadIdx.x] = d;
    s[threadIdx.x] = r;
    __syncthreads();
    if (threadIdx.x < 32) {
        float t = s[threadIdx.x] + s[threadIdx.x + 32] + s[threadIdx.x + 64] + s[threadIdx.x + 96];
        for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
        if (threadIdx.x == 0) red[0] = t;
    }
}

// Warp-specialised producer/consumer through a shared ring with volatile flags: warp 0 produces, warp 1
// consumes; inside warp 2 lanes 0-15 produce and lanes 16-31 consume (independent thread scheduling).
extern "C" __global__ void producer_consumer(const int *in, int *out, int rounds) {
    __shared__ volatile int ring[4];
    __shared__ volatile int full[4];
    __shared__ volatile int ring2[16];
    __shared__ volatile int flag2[16];
    unsigned warp = threadIdx.x >> 5, lane = lane_id();
    if (threadIdx.x < 4) full[threadIdx.x] = 0;
    if (threadIdx.x < 16) flag2[threadIdx.x] = 0;
    __syncthreads();
    if (warp == 0) {
        for (int r = 0; r < rounds; ++r) {
            int slot = r & 3;
            if (lane == 0) {
                while (full[slot] != 0) { }
                ring[slot] = in[r] * 3 + r;
                __threadfence_block();
                full[slot] = 1;
            }
            __syncwarp();
        }
    } else if (warp == 1) {
        int acc = 0;
        for (int r = 0; r < rounds; ++r) {
            int slot = r & 3;
            if (lane == 0) {
                while (full[slot] == 0) { }
                acc = acc * 31 + ring[slot];
                __threadfence_block();
                full[slot] = 0;
            }
            __syncwarp();
        }
        if (lane == 0) out[0] = acc;
    } else {
        if (lane < 16) {
            ring2[lane] = in[lane] + 7;
            __threadfence_block();
            flag2[lane] = 1;
        } else {
            while (flag2[lane - 16] == 0) { }
            out[1 + lane] = ring2[lane - 16] * 2;
        }
        __syncwarp();
        out[64 + lane] = ring2[lane & 15];
    }
}

// Which lane group runs first: each group reads a shared clock, records it and advances it; all lanes of
// a group run together, so the recorded values give the order of the groups (no clock, no atomics).
#define TICK(slot) do { int c_ = *clk; seq[(slot)] = c_; *clk = c_ + 1; } while (0)

extern "C" __global__ void order_if_else(const int *in, int *out) {
    __shared__ volatile int clkv[1];
    __shared__ volatile int seqv[32 * 8];
    volatile int *clk = clkv, *seq = seqv;
    unsigned lane = lane_id();
    if (lane == 0) *clk = 0;
    __syncwarp();
    int x = in[lane];
    if (x & 1) { TICK(lane * 8 + 0); if (x & 2) TICK(lane * 8 + 1); else TICK(lane * 8 + 2); }
    else { TICK(lane * 8 + 3); if (x & 4) { TICK(lane * 8 + 4); } }
    TICK(lane * 8 + 5);
    __syncwarp();
    for (int k = 0; k < 8; ++k) out[lane * 8 + k] = (k == 6 || k == 7) ? 0 : seq[lane * 8 + k];
}

extern "C" __global__ void order_loop_exit(const int *in, int *out) {
    __shared__ volatile int clkv[1];
    __shared__ volatile int seqv[32 * 16];
    volatile int *clk = clkv, *seq = seqv;
    unsigned lane = lane_id();
    if (lane == 0) *clk = 0;
    __syncwarp();
    int n = in[lane] & 7;
    int i = 0;
    for (; i < n; ++i) {
        TICK(lane * 16 + i);
        if ((in[lane] >> (i + 3)) & 1) { TICK(lane * 16 + 8 + i); }
    }
    TICK(lane * 16 + 15);
    __syncwarp();
    for (int k = 0; k < 16; ++k) out[lane * 16 + k] = (k < n || (k >= 8 && k < 8 + n) || k == 15) ? seq[lane * 16 + k] : -1;
}

// Lanes that return early, a barrier for the rest (exited lanes do not count).
extern "C" __global__ void early_return_bar(const int *in, int *out, int n) {
    __shared__ int s[128];
    if ((int)threadIdx.x >= n) return;
    int x = in[threadIdx.x];
    s[threadIdx.x] = x * 5;
    __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % n] - x;
}

// Independent thread scheduling: a lock taken by every lane of a warp in turn.
extern "C" __global__ void warp_lock(int *counter, int *order) {
    __shared__ int lock;
    __shared__ int next;
    if (threadIdx.x == 0) { lock = 0; next = 0; }
    __syncthreads();
    bool done = false;
    while (!done) {
        if (atomicCAS(&lock, 0, 1) == 0) {
            int k = next;
            order[k] = threadIdx.x;
            next = k + 1;
            counter[0] += (int)threadIdx.x;
            __threadfence_block();
            atomicExch(&lock, 0);
            done = true;
        }
    }
}

// Order probes that ptxas cannot merge or predicate: one shared atomic per lane group (its first lane takes
// the ticket, a shuffle hands it to the group), with data-dependent loops on each side.
__device__ __forceinline__ void tick(int *clk, int *seq, int slot) {
    unsigned m = __activemask();
    int leader = __ffs(m) - 1;
    int t = 0;
    if ((int)lane_id() == leader) t = atomicAdd(clk, 1);
    t = __shfl_sync(m, t, leader);
    seq[slot] = t;
}

extern "C" __global__ void ticket_if_else(const int *in, int *out, int *acc_out) {
    __shared__ int clk;
    __shared__ int seq[32 * 4];
    unsigned lane = lane_id();
    if (lane == 0) clk = 0;
    seq[lane * 4] = seq[lane * 4 + 1] = seq[lane * 4 + 2] = seq[lane * 4 + 3] = -1;
    __syncwarp();
    int x = in[lane];
    int acc = x;
    if (x & 1) {
        for (int k = 0; k < (x >> 4); ++k) acc = acc * 3 + k;
        tick(&clk, seq, lane * 4 + 0);
    } else {
        for (int k = 0; k < (x >> 5); ++k) acc = acc * 5 - k;
        tick(&clk, seq, lane * 4 + 1);
        if (x & 2) {
            for (int k = 0; k < (x & 12); ++k) acc ^= acc << 1;
            tick(&clk, seq, lane * 4 + 2);
        }
    }
    tick(&clk, seq, lane * 4 + 3);
    __syncwarp();
    acc_out[lane] = acc;
    for (int k = 0; k < 4; ++k) out[lane * 4 + k] = seq[lane * 4 + k];
}

extern "C" __global__ void ticket_loop(const int *in, int *out) {
    __shared__ int clk;
    __shared__ int seq[32 * 9];
    unsigned lane = lane_id();
    if (lane == 0) clk = 0;
    for (int k = 0; k < 9; ++k) seq[lane * 9 + k] = -1;
    __syncwarp();
    int x = in[lane];
    int n = x & 7;
    for (int i = 0; i < n; ++i) {
        if ((x >> (i + 3)) & 1) continue;
        tick(&clk, seq, lane * 9 + i);
        if ((x >> (i + 10)) & 1) break;
    }
    tick(&clk, seq, lane * 9 + 8);
    __syncwarp();
    for (int k = 0; k < 9; ++k) out[lane * 9 + k] = seq[lane * 9 + k];
}

extern "C" __global__ void ticket_switch(const int *in, int *out) {
    __shared__ int clk;
    __shared__ int seq[32 * 2];
    unsigned lane = lane_id();
    if (lane == 0) clk = 0;
    __syncwarp();
    int x = in[lane];
    int acc = 0;
    switch (x & 3) {
        case 0: for (int k = 0; k < (x >> 2); ++k) acc += k; tick(&clk, seq, lane * 2); break;
        case 1: for (int k = 0; k < (x >> 3); ++k) acc ^= k * 7; tick(&clk, seq, lane * 2); break;
        case 2: tick(&clk, seq, lane * 2); break;
        default: for (int k = 0; k < (x >> 4); ++k) acc -= k; tick(&clk, seq, lane * 2); break;
    }
    tick(&clk, seq, lane * 2 + 1);
    __syncwarp();
    out[lane * 2] = seq[lane * 2];
    out[lane * 2 + 1] = seq[lane * 2 + 1] + 1000 * (acc & 1);
}
