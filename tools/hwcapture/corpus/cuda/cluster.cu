// Thread-block clusters for the corpus (sm_90a): special registers, distributed shared memory (mapa, ld/st/atom/red
// on .shared::cluster and on generic addresses of other CTAs), barrier.cluster, mbarrier arrivals on another
// CTA's barrier, TMA multicast to a subset of the cluster, and a bulk copy into another CTA's shared memory.
#include <cooperative_groups.h>
#include <cuda.h>
#include <cstdint>

namespace cg = cooperative_groups;

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ uint32_t mapa_u32(uint32_t a, uint32_t rank) {
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}

__device__ __forceinline__ uint32_t sreg(int k) {
    uint32_t v = 0;
    switch (k) {
    case 0: asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(v)); break;
    case 1: asm volatile("mov.u32 %0, %%cluster_ctaid.y;" : "=r"(v)); break;
    case 2: asm volatile("mov.u32 %0, %%cluster_ctaid.z;" : "=r"(v)); break;
    case 3: asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(v)); break;
    case 4: asm volatile("mov.u32 %0, %%cluster_nctaid.y;" : "=r"(v)); break;
    case 5: asm volatile("mov.u32 %0, %%cluster_nctaid.z;" : "=r"(v)); break;
    case 6: asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(v)); break;
    case 7: asm volatile("mov.u32 %0, %%clusterid.y;" : "=r"(v)); break;
    case 8: asm volatile("mov.u32 %0, %%clusterid.z;" : "=r"(v)); break;
    case 9: asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(v)); break;
    case 10: asm volatile("mov.u32 %0, %%nclusterid.y;" : "=r"(v)); break;
    case 11: asm volatile("mov.u32 %0, %%nclusterid.z;" : "=r"(v)); break;
    case 12: asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(v)); break;
    case 13: asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(v)); break;
    case 14: asm volatile("{ .reg .pred p; mov.pred p, %%is_explicit_cluster; selp.u32 %0, 1, 0, p; }" : "=r"(v)); break;
    case 15: v = blockIdx.x | (blockIdx.y << 10) | (blockIdx.z << 20); break;
    }
    return v;
}

// Every special register of the cluster, per CTA (launched with and without cluster dimensions), and the
// shared::cluster addresses mapa gives, relative to the CTA's own shared::cta address of the same variable.
extern "C" __global__ void cluster_sregs(uint32_t *out) {
    __shared__ uint32_t var[8];
    uint32_t cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    uint32_t t = threadIdx.x + blockDim.x * threadIdx.y;
    uint32_t *o = out + cta * 32;
    if (t < 16) o[t] = sreg(t);
    if (t == 16) {
        var[0] = 2;
        uint32_t a = smem_u32(&var[3]);
        uint32_t n = sreg(13);
        for (uint32_t r = 0; r < n && r < 8; ++r) o[16 + r] = mapa_u32(a, r) - a;    // the rank's window offset
        uint32_t own;
        asm volatile("getctarank.shared::cluster.u32 %0, %1;" : "=r"(own) : "r"(mapa_u32(a, n - 1)));
        o[24] = own;
        void *g = cg::this_cluster().map_shared_rank(&var[3], n - 1);
        o[25] = (uint32_t)((char *)g - (char *)&var[3]);                          // generic window stride
        o[26] = cg::this_cluster().query_shared_rank(g);
        o[27] = (uint32_t)__isShared(g) | ((uint32_t)__isClusterShared(g) << 1) | ((uint32_t)__isShared(&var[3]) << 2)
                | ((uint32_t)__isClusterShared(&var[3]) << 3);
    }
}

// The raw addresses, for the record (docs/tma.md: the shared::cluster window).
extern "C" __global__ void cluster_addr_probe(unsigned long long *out) {
    __shared__ uint32_t var[64];
    var[threadIdx.x] = threadIdx.x;
    uint32_t n = sreg(13), me = sreg(12);
    unsigned long long *o = out + me * 16;
    if (threadIdx.x == 0) {
        uint32_t a = smem_u32(&var[5]);
        o[0] = a;
        o[1] = (unsigned long long)(&var[5]);
        for (uint32_t r = 0; r < n && r < 4; ++r) {
            o[2 + r] = mapa_u32(a, r);
            o[6 + r] = (unsigned long long)cg::this_cluster().map_shared_rank(&var[5], r);
        }
        unsigned long long gm;
        asm volatile("mapa.u64 %0, %1, %2;" : "=l"(gm) : "l"((unsigned long long)&var[5]), "r"(n - 1));
        o[10] = gm;
        unsigned long long cvt;
        asm volatile("cvta.shared::cluster.u64 %0, %1;" : "=l"(cvt) : "l"((unsigned long long)mapa_u32(a, n - 1)));
        o[11] = cvt;
        asm volatile("cvta.to.shared::cluster.u64 %0, %1;" : "=l"(cvt) : "l"(gm));
        o[12] = cvt;
    }
    cg::this_cluster().sync();
}

__device__ __forceinline__ void mbar_init(uint64_t *b, uint32_t n) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(n));
}

__device__ __forceinline__ void mbar_wait(uint64_t *b, uint32_t parity) {
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n"
                 " @!p bra W;\n}" ::"r"(smem_u32(b)), "r"(parity) : "memory");
}

// A 4-CTA cluster (compile-time dimensions): every CTA writes into its neighbour's shared memory, all CTAs add
// into rank 0's counters, arrive on each other's mbarriers, receive a multicast TMA box and a bulk copy.
extern "C" __global__ void __cluster_dims__(4, 1, 1)
cluster_dsmem(const uint32_t *in, uint32_t *out, const __grid_constant__ CUtensorMap tmap, float *tiles) {
    __shared__ alignas(16) uint32_t buf[256];
    __shared__ uint32_t recv[256];
    __shared__ uint32_t counters[8];
    __shared__ unsigned long long wide[2];
    __shared__ float fsum[4];
    __shared__ alignas(128) float tile[32 * 32];
    __shared__ alignas(16) uint32_t bulk_in[128];
    __shared__ alignas(8) uint64_t bars[3];
    cg::cluster_group cluster = cg::this_cluster();
    uint32_t rank = cluster.block_rank(), n = cluster.num_blocks();
    uint32_t nb = (rank + 1) % n, prev = (rank + n - 1) % n;
    uint32_t t = threadIdx.x;
    uint32_t cid = blockIdx.x / n;
    buf[t] = in[blockIdx.x * 256 + t];
    buf[t + 128] = in[blockIdx.x * 256 + t + 128];
    recv[t] = recv[t + 128] = 0;
    if (t < 8) counters[t] = (t == 3) ? 0xFFFFFFFFu : (t == 5 ? 0x0F0F0F0Fu : 0u);
    if (t < 2) wide[t] = 0;
    if (t < 4) fsum[t] = 0.f;
    if (t == 0) {
        mbar_init(&bars[0], n - 1);        // one arrival from every other CTA
        mbar_init(&bars[1], 1);            // the multicast box
        mbar_init(&bars[2], 1);            // the bulk copy from the previous rank
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster.sync();

    // distributed shared memory: stores into the next rank, loads from the previous one
    uint32_t r_addr = mapa_u32(smem_u32(&recv[t]), nb);
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(r_addr), "r"(buf[t] ^ (rank << 24)) : "memory");
    uint32_t *nrecv = cluster.map_shared_rank(recv, nb);
    nrecv[t + 128] = buf[t + 128] + 7u * rank;
    uint32_t pv;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(pv) : "r"(mapa_u32(smem_u32(&buf[255 - t]), prev)) : "memory");
    uint32_t *pbuf = cluster.map_shared_rank(buf, prev);
    uint32_t pv2 = pbuf[(t * 3) & 255];
    uint2 pv3;
    asm volatile("ld.shared::cluster.v2.u32 {%0, %1}, [%2];" : "=r"(pv3.x), "=r"(pv3.y)
                 : "r"(mapa_u32(smem_u32(&buf[2 * (t & 127)]), nb)) : "memory");

    // atomics and reductions into rank 0's counters (order-independent results only)
    uint32_t c0 = mapa_u32(smem_u32(counters), 0);
    uint32_t v = buf[t];
    asm volatile("red.shared::cluster.add.u32 [%0], %1;" ::"r"(c0), "r"(v & 0xFFFF) : "memory");
    asm volatile("red.shared::cluster.max.u32 [%0+4], %1;" ::"r"(c0), "r"(v) : "memory");
    uint32_t dummy = 0;
    asm volatile("atom.shared::cluster.min.u32 %0, [%1+12], %2;" : "=r"(dummy) : "r"(c0), "r"(v) : "memory");
    (void)dummy;                                             // the old values depend on the order: not recorded
    asm volatile("atom.shared::cluster.or.b32 %0, [%1+16], %2;" : "=r"(dummy) : "r"(c0), "r"(1u << (t & 31)) : "memory");
    asm volatile("red.shared::cluster.and.b32 [%0+20], %1;" ::"r"(c0), "r"(~(1u << ((t & 3) + 4 * rank))) : "memory");
    asm volatile("red.shared::cluster.xor.b32 [%0+24], %1;" ::"r"(c0), "r"(v) : "memory");
    asm volatile("red.shared::cluster.inc.u32 [%0+28], %1;" ::"r"(c0), "r"(0xFFFFFFFFu) : "memory");
    uint32_t *gc = cluster.map_shared_rank(counters, 0);
    atomicAdd(&gc[2], 1u);                                   // generic address of another CTA
    unsigned long long *gw = cluster.map_shared_rank(wide, 0);
    atomicAdd(&gw[0], (unsigned long long)v << 20);
    atomicMax(&gw[1], (unsigned long long)v * 977u);
    float *gf = cluster.map_shared_rank(fsum, prev);
    atomicAdd(&gf[t & 3], (float)(int)(v & 1023) - 300.f);   // small integers: exact in any order
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");

    // mbarrier arrivals on every other CTA's barrier
    if (t == 0) {
        for (uint32_t r = 0; r < n; ++r)
            if (r != rank)
                asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];"
                             ::"r"(mapa_u32(smem_u32(&bars[0]), r)) : "memory");
    }
    mbar_wait(&bars[0], 0);

    // TMA multicast: rank 0 sends a box to ranks {0, 2}, rank 1 another box to ranks {1, 3}
    if (t == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&bars[1])), "r"(4096u)
                     : "memory");
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
    if (t == 0 && rank < 2) {
        uint16_t mask = rank == 0 ? 0x5 : 0xA;
        int y = (int)(cid * 64 + rank * 32);
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                     " [%0], [%1, {%2, %3}], [%4], %5;"
                     ::"r"(smem_u32(tile)), "l"(&tmap), "r"(0), "r"(y), "r"(smem_u32(&bars[1])), "h"(mask) : "memory");
    }
    // bulk copy of this CTA's buf into the next rank's bulk_in, completing on the next rank's barrier
    if (t == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&bars[2])), "r"(512u)
                     : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
    if (t == 0) {
        asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], 512, [%2];"
                     ::"r"(mapa_u32(smem_u32(bulk_in), nb)), "r"(smem_u32(&buf[64])),
                     "r"(mapa_u32(smem_u32(&bars[2]), nb)) : "memory");
    }
    mbar_wait(&bars[1], 0);
    mbar_wait(&bars[2], 0);
    cluster.sync();

    uint32_t *o = out + blockIdx.x * 1024;
    o[t] = recv[t];
    o[t + 128] = recv[t + 128];
    o[t + 256] = pv;
    o[t + 384] = pv2;
    o[t + 512] = pv3.x;
    o[t + 640] = pv3.y;
    o[t + 768] = bulk_in[t];
    if (t < 8) o[896 + t] = counters[t];
    if (t < 2) {
        o[904 + 2 * t] = (uint32_t)wide[t];
        o[905 + 2 * t] = (uint32_t)(wide[t] >> 32);
    }
    if (t < 4) o[908 + t] = __float_as_uint(fsum[t]);
    for (int i = t; i < 32 * 32; i += 128) tiles[blockIdx.x * 1024 + i] = tile[i];
    cluster.sync();           // no CTA leaves while another may still read its shared memory
}
