// A warp-specialised producer/consumer ring (Gluon's Channel, written out in CUDA C++ with PTX).
//
// Warp 0 (one elected lane) is the producer: for chunk i it takes slot s = i % NBUF, waits until the slot's
// "empty" barrier has completed the phase that frees it, announces the bytes on the slot's "ready" barrier
// (arrive.expect_tx) and starts a bulk copy that completes on that barrier. Warps 1..NCONS are consumers:
// each waits on "ready" of slot s with the parity of the round (i / NBUF) & 1, reads the chunk, writes its
// result and arrives on "empty" of slot s. "empty" counts NCONS arrivals, "ready" one arrival plus the bytes.
//
//   nvcc -arch=sm_90a -ptx ws_ring.cu -o tests/data/tma/ws_ring.ptx
#include <cstdint>

constexpr int NBUF = 3;
constexpr int NCONS = 2;
constexpr int CHUNK = 256;                 // floats per chunk: 32 lanes x 8

__device__ __forceinline__ void bar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count));
}

__device__ __forceinline__ void bar_wait(uint32_t bar, uint32_t parity) {
    asm volatile("{\n\t.reg .pred done;\n"
                 "wait_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                 "@!done bra wait_%=;\n}" :: "r"(bar), "r"(parity) : "memory");
}

__device__ __forceinline__ void bar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}

__device__ __forceinline__ void bar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

extern "C" __global__ void __launch_bounds__(32 * (1 + NCONS))
ws_ring(const float* __restrict__ x, float* __restrict__ out, int nchunks) {
    __shared__ alignas(128) float buf[NBUF][CHUNK];
    __shared__ alignas(8) uint64_t ready[NBUF], empty[NBUF];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    uint32_t ready0 = (uint32_t)__cvta_generic_to_shared(&ready[0]);
    uint32_t empty0 = (uint32_t)__cvta_generic_to_shared(&empty[0]);
    uint32_t buf0 = (uint32_t)__cvta_generic_to_shared(&buf[0][0]);
    if (threadIdx.x == 0) {
        for (int s = 0; s < NBUF; ++s) {
            bar_init(ready0 + 8 * s, 1);
            bar_init(empty0 + 8 * s, NCONS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == 0) {
        if (lane == 0) {
            for (int i = 0; i < nchunks; ++i) {
                int s = i % NBUF;
                uint32_t phase = (i / NBUF) & 1;
                bar_wait(empty0 + 8 * s, phase ^ 1);          // the slot is free
                bar_expect_tx(ready0 + 8 * s, CHUNK * 4);
                bulk_load(buf0 + s * CHUNK * 4, x + (size_t)i * CHUNK, CHUNK * 4, ready0 + 8 * s);
            }
        }
    } else {
        const int c = warp - 1;
        for (int i = 0; i < nchunks; ++i) {
            int s = i % NBUF;
            uint32_t phase = (i / NBUF) & 1;
            bar_wait(ready0 + 8 * s, phase);                 // the slot is full
            float acc = 0.0f;
            for (int k = 0; k < 8; ++k) {
                float v = buf[s][lane * 8 + k];
                acc = c == 0 ? fmaf(v, v, acc) : fmaf(v, (float)(i + k + 1), acc);
            }
            for (int off = 16; off > 0; off >>= 1)
                acc += __shfl_xor_sync(0xffffffffu, acc, off);
            if (lane == 0) out[c * nchunks + i] = acc;
            __syncwarp();
            if (lane == 0) bar_arrive(empty0 + 8 * s);       // hand the slot back
        }
    }
}
