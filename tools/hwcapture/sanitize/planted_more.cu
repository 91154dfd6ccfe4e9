// More planted bugs for the sanitizer, each with a clean twin (<name>_bug / <name>_ok), as planted.cu:
// ldmatrix and stmatrix in the race check, and conflicting stores to global memory from two warps of one CTA.
// Every kernel takes (out, in, buf, n); the launch shapes are in planted_more.json.
#include <cstdint>

#define K extern "C" __global__ void
#define ARGS unsigned *out, const unsigned *in, unsigned *buf, int n

__device__ __forceinline__ unsigned saddr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

// ldmatrix: warp 0 stores an 8x8 matrix of b16 (eight 16-byte rows), warp 1 loads it with ldmatrix
#define LDM(NAME, SYNC) K NAME(ARGS) { __shared__ __align__(16) unsigned s[32]; unsigned t = threadIdx.x; \
    if (t < 32) s[t] = in[t] * 3u + 1u; SYNC; \
    if (t >= 32) { unsigned l = t - 32, r; \
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r) : "r"(saddr(&s[(l & 7) * 4])) \
                     : "memory"); \
        out[l] = r; } }
LDM(ldmatrix_read_bug, (void)0)
LDM(ldmatrix_read_ok, __syncthreads())

// stmatrix: warp 0 stores the matrix with stmatrix, warp 1 reads its words
#define STM(NAME, SYNC) K NAME(ARGS) { __shared__ __align__(16) unsigned s[32]; unsigned t = threadIdx.x; \
    if (t < 32) { unsigned v = in[t] * 5u + 2u; \
        asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(saddr(&s[(t & 7) * 4])), "r"(v) \
                     : "memory"); } \
    SYNC; if (t >= 32) out[t - 32] = s[t - 32]; }
STM(stmatrix_write_bug, (void)0)
STM(stmatrix_write_ok, __syncthreads())

// global memory inside one CTA: warps 0 and 1 write different words to the same places of out
#define GIC(NAME, SYNC) K NAME(ARGS) { unsigned t = threadIdx.x; \
    if (t < 32) out[64 + t] = in[t] + 7u; SYNC; if (t >= 32) out[64 + t - 32] = in[t] * 2u; }
GIC(global_intra_cta_bug, (void)0)
GIC(global_intra_cta_ok, __syncthreads())
