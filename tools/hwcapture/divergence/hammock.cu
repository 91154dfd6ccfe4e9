// Which side of a divergent if/else runs first, by the size and contents of the sides: each side ends with a
// store of its own mark to one shared word (no __syncwarp between the sides), the word read after the join
// tells which side ran last. CTA 0 sends 24 lanes to the first side, CTA 1 sends 8: where ptxas keeps a
// branch the smaller group runs first, where it predicates the two sides they run in its order.
#include <cstdint>

__device__ __forceinline__ unsigned lane_id() { unsigned l; asm("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }
__device__ __forceinline__ void mark(unsigned *clk, unsigned v) {
    asm volatile("st.volatile.shared.u32 [%0], %1;" :: "r"((unsigned)__cvta_generic_to_shared(clk)), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned peek(const unsigned *p) {
    unsigned v;
    asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"((unsigned)__cvta_generic_to_shared(p)) : "memory");
    return v;
}

#define KERNEL(NAME, SIDE_A, SIDE_B)                                                   \
extern "C" __global__ void NAME(const unsigned *in, unsigned *out, unsigned *gw) {     \
    __shared__ unsigned clk[1];                                                        \
    __shared__ unsigned dat[32];                                                       \
    unsigned lane = lane_id();                                                         \
    unsigned x = in[blockIdx.x * 32 + lane];                                           \
    dat[lane] = x ^ 0x5bd1e995u;                                                       \
    if (lane == 0) mark(clk, 0);                                                       \
    __syncwarp();                                                                      \
    unsigned v = x;                                                                    \
    unsigned split = blockIdx.x == 0 ? 24 : 8;                                         \
    if (lane < split) { SIDE_A } else { SIDE_B }                                       \
    __syncwarp();                                                                      \
    out[blockIdx.x * 33 + lane] = v;                                                   \
    if (lane == 0) out[blockIdx.x * 33 + 32] = peek(clk);                              \
}

#define R1(OP) OP
#define R2(OP) OP OP
#define R4(OP) R2(OP) R2(OP)
#define R8(OP) R4(OP) R4(OP)
#define LA v = peek(&dat[lane]) + v;
#define MA v = v * x + 0x9e37u;
#define MB v = (v ^ 0x7f4a7c15u) * x;

// the family: a load, K arithmetic instructions and the mark on each side
KERNEL(hammock_0, LA mark(clk, 1);, LA mark(clk, 2);)
KERNEL(hammock_1, LA R1(MA) mark(clk, 1);, LA R1(MB) mark(clk, 2);)
KERNEL(hammock_2, LA R2(MA) mark(clk, 1);, LA R2(MB) mark(clk, 2);)
KERNEL(hammock_3, LA R2(MA) R1(MA) mark(clk, 1);, LA R2(MB) R1(MB) mark(clk, 2);)
KERNEL(hammock_4, LA R4(MA) mark(clk, 1);, LA R4(MB) mark(clk, 2);)
KERNEL(hammock_6, LA R4(MA) R2(MA) mark(clk, 1);, LA R4(MB) R2(MB) mark(clk, 2);)
KERNEL(hammock_8, LA R8(MA) mark(clk, 1);, LA R8(MB) mark(clk, 2);)
KERNEL(hammock_12, LA R8(MA) R4(MA) mark(clk, 1);, LA R8(MB) R4(MB) mark(clk, 2);)
KERNEL(hammock_16, LA R8(MA) R8(MA) mark(clk, 1);, LA R8(MB) R8(MB) mark(clk, 2);)

// other shapes
KERNEL(shape_marks_only, mark(clk, 1);, mark(clk, 2);)
KERNEL(shape_uneven, LA mark(clk, 1);, LA R8(MB) R4(MB) mark(clk, 2);)
KERNEL(shape_two_marks, LA mark(clk, 1); MA mark(clk, 3);, LA mark(clk, 2); MB mark(clk, 4);)
KERNEL(shape_global, v = gw[lane] + v; mark(clk, 1);, v = gw[32 + lane] * v; mark(clk, 2);)
KERNEL(shape_one_sided, LA MA mark(clk, 1);, )
KERNEL(shape_nested, if (x & 1) { LA mark(clk, 1); } else { LA mark(clk, 3); }, LA MB mark(clk, 2);)
KERNEL(shape_loop, for (unsigned k = 0; k < (x & 3); ++k) { MA } mark(clk, 1);, LA mark(clk, 2);)
KERNEL(shape_call_free_div, v = v / (x | 1u); mark(clk, 1);, v = v % (x | 3u); mark(clk, 2);)
