// Racy order probes: the lane groups of one diverged warp read and write one shared (or global) volatile word
// with no __syncwarp between them. Which value each group sees depends on the order in which the H100 runs the
// groups and on what ptxas did to the code around the branch (hoisting, predication, block order). Every slot
// a kernel outputs is written first (-1), so no output depends on what an earlier kernel left in memory.
#include <cstdint>

__device__ __forceinline__ unsigned lane_id() { unsigned l; asm("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }

#define TICK(slot) do { int c_ = *clk; seq[(slot)] = c_; *clk = c_ + 1; } while (0)
#define PROLOGUE(S)                                                                 \
    __shared__ volatile int clkv[1];                                               \
    __shared__ volatile int seqv[32 * (S)];                                        \
    volatile int *clk = clkv, *seq = seqv + lane_id() * (S);                       \
    unsigned lane = lane_id();                                                     \
    for (int k = 0; k < (S); ++k) seq[k] = -1;                                     \
    if (lane == 0) *clk = 0;                                                       \
    __syncwarp();
#define EPILOGUE(S)                                                                \
    __syncwarp();                                                                  \
    for (int k = 0; k < (S); ++k) out[lane * (S) + k] = seq[k];                    \
    if (lane == 0) out[32 * (S)] = *clk;

// the corpus's order_if_else with every slot written first
extern "C" __global__ void race_if_else(const int *in, int *out) {
    PROLOGUE(8)
    int x = in[lane];
    if (x & 1) { TICK(0); if (x & 2) TICK(1); else TICK(2); }
    else { TICK(3); if (x & 4) { TICK(4); } }
    TICK(5);
    EPILOGUE(8)
}

// the corpus's order_loop_exit with every slot written first
extern "C" __global__ void race_loop_exit(const int *in, int *out) {
    PROLOGUE(16)
    int n = in[lane] & 7;
    for (int i = 0; i < n; ++i) {
        TICK(i);
        if ((in[lane] >> (i + 3)) & 1) { TICK(8 + i); }
    }
    TICK(15);
    EPILOGUE(16)
}

// only one side begins with a load of the clock; the other side stores it first
extern "C" __global__ void race_one_side_load(const int *in, int *out) {
    PROLOGUE(4)
    int x = in[lane];
    if (x & 1) { TICK(0); }
    else { *clk = 40 + (x & 6); seq[1] = x; }
    TICK(2);
    TICK(3);
    EPILOGUE(4)
}

// both sides store the clock before they read it
extern "C" __global__ void race_store_first(const int *in, int *out) {
    PROLOGUE(4)
    int x = in[lane];
    if (x & 1) { *clk = 100 + (x & 6); TICK(0); }
    else { *clk = 200 + (x & 12); TICK(1); }
    TICK(2);
    EPILOGUE(4)
}

// short nested read-modify-writes of the clock: candidates for predication
extern "C" __global__ void race_nested_short(const int *in, int *out) {
    PROLOGUE(4)
    int x = in[lane];
    if (x & 1) { if (x & 2) *clk += 1; else *clk += 2; seq[0] = *clk; }
    else { if (x & 4) *clk += 4; seq[1] = *clk; }
    seq[2] = *clk;
    TICK(3);
    EPILOGUE(4)
}

// a clock read-modify-write inside a loop with a data-dependent trip count and a guarded extra step
extern "C" __global__ void race_loop_body(const int *in, int *out) {
    PROLOGUE(16)
    int x = in[lane];
    int n = x & 7;
    for (int i = 0; i < n; ++i) {
        TICK(i);
        if ((x >> (i + 3)) & 1) *clk += 3;
    }
    TICK(15);
    EPILOGUE(16)
}

// each side runs a data-dependent loop before its tick (no predication possible)
extern "C" __global__ void race_long_sides(const int *in, int *out) {
    PROLOGUE(4)
    int x = in[lane];
    int acc = x;
    if (x & 1) { for (int k = 0; k < ((x >> 3) & 7); ++k) acc = acc * 3 + k; TICK(0); }
    else { for (int k = 0; k < ((x >> 4) & 7); ++k) acc = acc * 5 - k; TICK(1); }
    TICK(2);
    seq[3] = acc;
    EPILOGUE(4)
}

// a four-way switch, a tick on each side after different work
extern "C" __global__ void race_switch(const int *in, int *out) {
    PROLOGUE(4)
    int x = in[lane];
    switch (x & 3) {
        case 0: TICK(0); break;
        case 1: seq[1] = x; TICK(0); break;
        case 2: *clk = *clk + 7; TICK(0); break;
        default: TICK(0); TICK(1); break;
    }
    TICK(2);
    EPILOGUE(4)
}

// the clock in global memory
extern "C" __global__ void race_global(const int *in, int *out, int *gclk) {
    __shared__ volatile int seqv[32 * 4];
    volatile int *clk = gclk, *seq = seqv + lane_id() * 4;
    unsigned lane = lane_id();
    for (int k = 0; k < 4; ++k) seq[k] = -1;
    __syncwarp();
    int x = in[lane];
    if (x & 1) { TICK(0); }
    else { TICK(1); if (x & 2) TICK(2); }
    TICK(3);
    __syncwarp();
    for (int k = 0; k < 4; ++k) out[lane * 4 + k] = seq[k];
}

// lanes that leave early after a tick, the others tick twice more
extern "C" __global__ void race_early_return(const int *in, int *out) {
    __shared__ volatile int clkv[1];
    volatile int *clk = clkv;
    unsigned lane = lane_id();
    int r[3] = {-1, -1, -1};
    if (lane == 0) *clk = 0;
    __syncwarp();
    int x = in[lane];
    if (x & 1) {
        int c = *clk; *clk = c + 1;
        out[lane * 3] = c; out[lane * 3 + 1] = -1; out[lane * 3 + 2] = -1;
        return;
    }
    int c = *clk; *clk = c + 1; r[1] = c;
    c = *clk; *clk = c + 1; r[2] = c;
    out[lane * 3] = r[0]; out[lane * 3 + 1] = r[1]; out[lane * 3 + 2] = r[2];
}

// the same ticks through plain (not volatile) shared memory
extern "C" __global__ void race_plain(const int *in, int *out) {
    __shared__ int clk[1];
    __shared__ int seqv[32 * 4];
    int *seq = seqv + lane_id() * 4;
    unsigned lane = lane_id();
    for (int k = 0; k < 4; ++k) seq[k] = -1;
    if (lane == 0) clk[0] = 0;
    __syncwarp();
    int x = in[lane];
    if (x & 1) { int c = clk[0]; seq[0] = c; clk[0] = c + 1; }
    else { int c = clk[0]; seq[1] = c; clk[0] = c + 2; if (x & 2) { c = clk[0]; seq[2] = c; clk[0] = c + 1; } }
    int c = clk[0]; seq[3] = c; clk[0] = c + 1;
    __syncwarp();
    for (int k = 0; k < 4; ++k) out[lane * 4 + k] = seq[k];
}

// three lane groups by lane range (not data): the order of the groups on the H100
extern "C" __global__ void race_lane_ranges(const int *in, int *out) {
    PROLOGUE(4)
    int x = in[lane];
    if (lane < 8) { TICK(0); }
    else if (lane < 20) { TICK(1); if (x & 1) TICK(2); }
    else { seq[2] = x; }
    TICK(3);
    EPILOGUE(4)
}
