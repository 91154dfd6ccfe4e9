// Planted bugs for the sanitizer, each with a clean twin (<name>_bug / <name>_ok).
// Every kernel takes (out, in, buf, n): out is zero-filled by the host, in holds 0..n-1, buf is allocated but
// never written by the host (uninitialised). The launch shapes are in planted.json.
#include <cstdint>

#define K extern "C" __global__ void
#define ARGS unsigned *out, const unsigned *in, unsigned *buf, int n

__device__ __forceinline__ unsigned saddr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(unsigned a, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned a) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(a) : "memory");
}
__device__ __forceinline__ void mbar_expect(unsigned a, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(a), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned a, unsigned parity) {
    asm volatile("{\n .reg .pred p;\n W%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 " @!p bra W%=;\n}" :: "r"(a), "r"(parity) : "memory");
}

// ---- racecheck: shared memory between warps -------------------------------------------------------
// RAW: warp 0 writes, warp 1 reads the same words
#define RAW2(NAME, SYNC) K NAME(ARGS) { __shared__ unsigned s[32]; unsigned t = threadIdx.x; \
    if (t < 32) s[t] = in[t] * 3u; SYNC; if (t >= 32) out[t] = s[t - 32]; }
RAW2(raw_2warps_bug, (void)0)
RAW2(raw_2warps_ok, __syncthreads())

// WAR: everybody reads a neighbour's word, then overwrites its own (the second barrier missing)
#define WAR(NAME, SYNC) K NAME(ARGS) { __shared__ unsigned s[64]; unsigned t = threadIdx.x; \
    s[t] = in[t]; __syncthreads(); unsigned v = s[(t + 32) & 63]; SYNC; s[t] = v + 1u; __syncthreads(); \
    out[t] = s[t]; }
WAR(war_neighbour_bug, (void)0)
WAR(war_neighbour_ok, __syncthreads())

// WAW: two warps write the same words; then a barrier and a read
#define WAW(NAME, IDX) K NAME(ARGS) { __shared__ unsigned s[64]; unsigned t = threadIdx.x; \
    s[IDX] = t; __syncthreads(); out[t] = s[t & 63]; }
WAW(waw_2warps_bug, t & 31)
WAW(waw_2warps_ok, t)

// tree reduction without the barrier inside the loop
#define RED(NAME, SYNC) K NAME(ARGS) { __shared__ unsigned s[128]; unsigned t = threadIdx.x; s[t] = in[t]; \
    __syncthreads(); for (unsigned k = 64; k > 0; k >>= 1) { if (t < k) s[t] += s[t + k]; SYNC; } \
    if (t == 0) out[0] = s[0]; }
RED(reduce_nosync_bug, (void)0)
RED(reduce_nosync_ok, __syncthreads())

// one thread publishes a word, every thread reads it
#define BCAST(NAME, SYNC) K NAME(ARGS) { __shared__ unsigned s; unsigned t = threadIdx.x; \
    if (t == 0) s = in[5]; SYNC; out[t] = s + t; }
BCAST(broadcast_bug, (void)0)
BCAST(broadcast_ok, __syncthreads())

// byte stores against a word load of the same bytes, other warp
#define BYTES(NAME, SYNC) K NAME(ARGS) { __shared__ unsigned s[16]; unsigned t = threadIdx.x; \
    if (t < 64) ((unsigned char *)s)[t] = (unsigned char)t; SYNC; if (t >= 64 && t < 80) out[t] = s[t - 64]; }
BYTES(bytes_vs_word_bug, (void)0)
BYTES(bytes_vs_word_ok, __syncthreads())

// dynamic shared memory
#define DYN(NAME, SYNC) K NAME(ARGS) { extern __shared__ unsigned d[]; unsigned t = threadIdx.x; \
    d[t] = in[t]; SYNC; out[t] = d[blockDim.x - 1 - t]; }
DYN(dynamic_smem_bug, (void)0)
DYN(dynamic_smem_ok, __syncthreads())

// atomics on shared memory against a plain store
#define ATOM(NAME, WARP1) K NAME(ARGS) { __shared__ unsigned s[4]; unsigned t = threadIdx.x; \
    if (t == 0) s[0] = 0; __syncthreads(); if (t < 32) atomicAdd(&s[0], 1u); else if (t == 32) WARP1; \
    __syncthreads(); if (t == 0) out[0] = s[0]; }
ATOM(atomic_vs_store_bug, s[0] = 100u)
ATOM(atomic_vs_store_ok, atomicAdd(&s[0], 100u))

// intra-warp: a lane reads its neighbour's word without __syncwarp
#define WARPX(NAME, SYNC) K NAME(ARGS) { __shared__ unsigned s[32]; unsigned t = threadIdx.x; \
    s[t] = in[t] * 7u; SYNC; out[t] = s[t ^ 1]; }
WARPX(intrawarp_nosyncwarp_bug, (void)0)
WARPX(intrawarp_nosyncwarp_ok, __syncwarp())

// named barrier: the producer warp arrives, the consumer warp syncs; the bug's consumer only arrives
#define NAMED(NAME, CONS) K NAME(ARGS) { __shared__ unsigned s[32]; unsigned t = threadIdx.x; \
    if (t < 32) { s[t] = in[t] + 9u; asm volatile("bar.arrive 1, 64;" ::: "memory"); } \
    else { asm volatile(CONS " 1, 64;" ::: "memory"); out[t] = s[t - 32]; } }
NAMED(named_barrier_arrive_bug, "bar.arrive")
NAMED(named_barrier_arrive_ok, "bar.sync")

// mbarrier message passing: warp 0 writes and arrives, warp 1 waits then reads (the bug reads first)
#define MBAR(NAME, BUG) K NAME(ARGS) { __shared__ unsigned s[32]; __shared__ uint64_t bar; unsigned t = threadIdx.x; \
    if (t == 0) mbar_init(saddr(&bar), 32); __syncthreads(); \
    if (t < 32) { s[t] = in[t] ^ 0x55u; mbar_arrive(saddr(&bar)); } \
    else { unsigned v = 0; if (BUG) v = s[t - 32]; mbar_wait(saddr(&bar), 0); if (!BUG) v = s[t - 32]; out[t] = v; } }
MBAR(mbarrier_early_read_bug, 1)
MBAR(mbarrier_early_read_ok, 0)

// cp.async into shared memory read by another warp without wait + barrier
#define CPA(NAME, SYNC) K NAME(ARGS) { __shared__ __align__(16) unsigned s[64]; unsigned t = threadIdx.x; \
    if (t < 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(saddr(&s[4 * t])), "l"(in + 4 * t) : "memory"); \
    asm volatile("cp.async.commit_group;" ::: "memory"); SYNC; if (t >= 32) out[t] = s[t]; }
CPA(cpasync_nowait_bug, asm volatile("cp.async.wait_all;" ::: "memory"))
CPA(cpasync_nowait_ok, asm volatile("cp.async.wait_all;" ::: "memory"); __syncthreads())

// a spinning consumer warp that reads data published by one lane without a barrier in between
#define FLAGS(NAME, SYNC) K NAME(ARGS) { __shared__ unsigned s[64]; unsigned t = threadIdx.x; \
    s[t] = 0; __syncthreads(); s[t] = in[t]; SYNC; out[t] = s[63 - t]; }
FLAGS(second_phase_bug, __syncwarp())
FLAGS(second_phase_ok, __syncthreads())

// ---- memcheck --------------------------------------------------------------------------------
#define OOBW(NAME, OFF) K NAME(ARGS) { unsigned t = threadIdx.x; out[t + OFF] = in[t]; }
OOBW(global_oob_write_bug, 1)
OOBW(global_oob_write_ok, 0)
#define OOBR(NAME, OFF) K NAME(ARGS) { unsigned t = threadIdx.x; out[t] = in[t + OFF]; }
OOBR(global_oob_read_bug, 1)
OOBR(global_oob_read_ok, 0)
#define SOOB(NAME, OFF) K NAME(ARGS) { extern __shared__ unsigned d[]; unsigned t = threadIdx.x; \
    d[t + OFF] = in[t]; __syncthreads(); out[t] = d[t]; }
SOOB(shared_oob_write_bug, 1024)
SOOB(shared_oob_write_ok, 0)
#define MISG(NAME, OFF) K NAME(ARGS) { unsigned t = threadIdx.x; \
    out[t] = *(const unsigned *)((const char *)(in + t) + (t == 3 ? OFF : 0)); }
MISG(global_misaligned_bug, 2)
MISG(global_misaligned_ok, 0)
#define MISS(NAME, OFF) K NAME(ARGS) { __shared__ unsigned s[64]; unsigned t = threadIdx.x; s[t] = in[t]; \
    __syncthreads(); out[t] = *(volatile unsigned *)((char *)&s[t] + (t == 5 ? OFF : 0)); }
MISS(shared_misaligned_bug, 2)
MISS(shared_misaligned_ok, 0)
#define ATOOB(NAME, OFF) K NAME(ARGS) { unsigned t = threadIdx.x; atomicAdd(&out[t + (t == blockDim.x - 1 ? OFF : 0)], 1u); }
ATOOB(atomic_oob_bug, 1)
ATOOB(atomic_oob_ok, 0)
#define V4(NAME, OFF) K NAME(ARGS) { unsigned t = threadIdx.x; \
    uint4 v = *(const uint4 *)(in + 4 * t + (t == 2 ? OFF : 0)); out[t] = v.x + v.y + v.z + v.w; }
V4(vector_misaligned_bug, 2)
V4(vector_misaligned_ok, 0)

// ---- initcheck -------------------------------------------------------------------------------
#define UNG(NAME, INIT) K NAME(ARGS) { unsigned t = threadIdx.x; INIT; out[t] = buf[t] + 1u; }
UNG(uninit_global_bug, (void)0)
UNG(uninit_global_ok, buf[t] = t)
// half of the words written, all read, by another thread and after a barrier
#define UNH(NAME, LIM) K NAME(ARGS) { unsigned t = threadIdx.x; if (t < LIM) buf[t] = t; __syncthreads(); \
    out[t] = buf[63 - t]; }
UNH(uninit_global_half_bug, 32)
UNH(uninit_global_half_ok, 64)
// shared memory read before anything wrote it
#define UNS(NAME, INIT) K NAME(ARGS) { __shared__ unsigned s[64]; unsigned t = threadIdx.x; INIT; __syncthreads(); \
    out[t] = s[t]; }
UNS(uninit_shared_bug, if (t < 32) s[t] = t)
UNS(uninit_shared_ok, s[t] = t)

// ---- synccheck -------------------------------------------------------------------------------
#define DIV(NAME, COND) K NAME(ARGS) { __shared__ unsigned s[64]; unsigned t = threadIdx.x; s[t] = in[t]; \
    if (COND) __syncthreads(); out[t] = s[t]; }
DIV(divergent_barrier_bug, t & 1)
DIV(divergent_barrier_ok, 1)
#define SHM(NAME, MASK) K NAME(ARGS) { unsigned t = threadIdx.x; out[t] = __shfl_sync(MASK, in[t], 0); }
SHM(shfl_membermask_bug, 0x0000ffffu)
SHM(shfl_membermask_ok, 0xffffffffu)
#define SWM(NAME, MASK) K NAME(ARGS) { __shared__ unsigned s[32]; unsigned t = threadIdx.x; s[t] = in[t]; \
    __syncwarp(MASK); out[t] = s[t]; }
SWM(syncwarp_membermask_bug, 0x0000ffffu)
SWM(syncwarp_membermask_ok, 0xffffffffu)
#define VOT(NAME, MASK) K NAME(ARGS) { unsigned t = threadIdx.x; out[t] = __ballot_sync(MASK, in[t] & 1); }
VOT(ballot_membermask_bug, 0x7fffffffu)
VOT(ballot_membermask_ok, 0xffffffffu)
// mbarrier initialised for 32 arrivals, 64 threads arrive
#define OVER(NAME, CNT) K NAME(ARGS) { __shared__ uint64_t bar; unsigned t = threadIdx.x; \
    if (t == 0) mbar_init(saddr(&bar), CNT); __syncthreads(); mbar_arrive(saddr(&bar)); mbar_wait(saddr(&bar), 0); \
    out[t] = t; }
OVER(mbarrier_overarrive_bug, 32)
OVER(mbarrier_overarrive_ok, 64)

// ---- global memory across CTAs (beyond racecheck) --------------------------------------------
#define XW(NAME, IDX) K NAME(ARGS) { unsigned t = threadIdx.x; out[IDX] = in[t] + blockIdx.x; }
XW(cross_cta_waw_bug, t)
XW(cross_cta_waw_ok, t + 32 * blockIdx.x)
#define XR(NAME, SRC) K NAME(ARGS) { unsigned t = threadIdx.x; if (blockIdx.x == 0) buf[t] = t; \
    else out[t] = SRC[t]; }
XR(cross_cta_raw_bug, buf)
XR(cross_cta_raw_ok, in)
// the last CTA to finish sums every CTA's partial result: __threadfence before the counter (the bug leaves it out)
#define LAST(NAME, FENCE) K NAME(ARGS) { __shared__ bool last; unsigned t = threadIdx.x; \
    if (t == 0) { buf[64 + blockIdx.x] = in[blockIdx.x] * 2u; FENCE; \
        unsigned k = atomicAdd(&out[100], 1u); last = (k == gridDim.x - 1); } __syncthreads(); \
    if (last && t == 0) { __threadfence(); unsigned sum = 0; for (unsigned b = 0; b < gridDim.x; b++) \
        sum += ((volatile unsigned *)buf)[64 + b]; out[0] = sum; } }
LAST(last_block_fence_bug, (void)0)
LAST(last_block_fence_ok, __threadfence())

// ---- the asynchronous proxy (sm_90) ----------------------------------------------------------
// a bulk copy shared -> global of words written by st.shared: fence.proxy.async in between (the bug leaves it out)
#define BULKS(NAME, FENCE) K NAME(ARGS) { __shared__ __align__(128) unsigned s[64]; unsigned t = threadIdx.x; \
    s[t] = in[t] * 5u; FENCE; __syncthreads(); if (t == 0) { \
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 256;" :: "l"(out), "r"(saddr(s)) : "memory"); \
    asm volatile("cp.async.bulk.commit_group;" ::: "memory"); asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); } }
BULKS(bulk_store_nofence_bug, (void)0)
BULKS(bulk_store_nofence_ok, asm volatile("fence.proxy.async.shared::cta;" ::: "memory"))
// a bulk copy global -> shared completing on an mbarrier: the bug reads the destination before the phase completes
#define BULKL(NAME, BUG) K NAME(ARGS) { __shared__ __align__(128) unsigned s[64]; __shared__ uint64_t bar; \
    unsigned t = threadIdx.x; if (t == 0) { mbar_init(saddr(&bar), 1); \
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); } __syncthreads(); \
    if (t == 0) { mbar_expect(saddr(&bar), 256); \
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 256, [%2];" \
                 :: "r"(saddr(s)), "l"(in), "r"(saddr(&bar)) : "memory"); } \
    unsigned v = 0; if (BUG) v = s[t]; mbar_wait(saddr(&bar), 0); if (!BUG) v = s[t]; out[t] = v; }
BULKL(bulk_load_early_read_bug, 1)
BULKL(bulk_load_early_read_ok, 0)
// shared memory rewritten by st.shared after a bulk load into it completed, then stored by a bulk copy:
// the rewrite needs fence.proxy.async before the bulk store reads it
#define BULKRW(NAME, FENCE) K NAME(ARGS) { __shared__ __align__(128) unsigned s[64]; __shared__ uint64_t bar; \
    unsigned t = threadIdx.x; if (t == 0) { mbar_init(saddr(&bar), 1); \
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); } __syncthreads(); \
    if (t == 0) { mbar_expect(saddr(&bar), 256); \
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 256, [%2];" \
                 :: "r"(saddr(s)), "l"(in), "r"(saddr(&bar)) : "memory"); } \
    mbar_wait(saddr(&bar), 0); s[t] += 1u; FENCE; __syncthreads(); if (t == 0) { \
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 256;" :: "l"(out), "r"(saddr(s)) : "memory"); \
    asm volatile("cp.async.bulk.commit_group;" ::: "memory"); asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); } }
BULKRW(bulk_roundtrip_nofence_bug, (void)0)
BULKRW(bulk_roundtrip_nofence_ok, asm volatile("fence.proxy.async.shared::cta;" ::: "memory"))
