// Several lanes of one warp store to the same address in one instruction: which lane's value stays.
// Each CTA takes its own random input; the stores are volatile so that each one stays one instruction.
#include <cstdint>

__device__ __forceinline__ unsigned lane_id() { unsigned l; asm("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }

extern "C" __global__ void same_address_stores(const unsigned *in, unsigned *out, unsigned *gout) {
    __shared__ __align__(16) unsigned s[64];
    volatile unsigned *vs = s;
    unsigned lane = lane_id();
    unsigned x = in[blockIdx.x * 32 + lane];
    vs[lane] = 0; vs[32 + lane] = 0;
    __syncwarp();
    vs[0] = 1000 + lane;                                                  // every lane, one word
    if (x & 1) vs[1] = 2000 + lane;                                       // a data-dependent subset
    ((volatile unsigned char *)s)[8] = (unsigned char)(lane * 7 + 1);     // bytes
    ((volatile unsigned short *)s)[5] = (unsigned short)(300 + lane);     // halves
    ((volatile unsigned long long *)s)[2] = 0x100000000ull * (lane + 1) + 5000 + lane;   // 64 bits
    vs[6 + (lane & 1)] = 3000 + lane;                                     // two words, by parity
    vs[8 + (lane & 3)] = 4000 + lane;                                     // four words
    vs[12 + (x & 3)] = 5000 + lane;                                       // data-dependent words
    if (x & 4) {                                                          // 128-bit vectors, a subset
        asm volatile("st.volatile.shared.v4.u32 [%0], {%1, %2, %3, %4};" :: "r"((unsigned)__cvta_generic_to_shared(s + 16)),
                     "r"(6000 + lane), "r"(6100 + lane), "r"(6200 + lane), "r"(6300 + lane) : "memory");
    }
    if ((x & 24) != 0) {                                                  // 64-bit vectors, two addresses
        asm volatile("st.volatile.shared.v2.u32 [%0], {%1, %2};" ::
                     "r"((unsigned)__cvta_generic_to_shared(s + 20 + 2 * ((x >> 3) & 1))), "r"(7000 + lane), "r"(7100 + lane)
                     : "memory");
    }
    volatile unsigned *g = gout + blockIdx.x * 16;
    g[0] = 1000 + lane;                                                   // global, every lane
    if (x & 1) g[1] = 2000 + lane;                                        // global, a subset
    g[2 + (x & 3)] = 3000 + lane;                                         // global, data-dependent words
    if (x & 4)
        asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(g + 8), "r"(6000 + lane), "r"(6100 + lane),
                     "r"(6200 + lane), "r"(6300 + lane) : "memory");
    ((volatile unsigned char *)g)[48] = (unsigned char)(lane * 7 + 1);
    __syncwarp();
    out[blockIdx.x * 64 + lane] = vs[lane];
    out[blockIdx.x * 64 + 32 + lane] = vs[32 + lane];
}
