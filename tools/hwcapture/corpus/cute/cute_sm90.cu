// A CuTe GEMM on Hopper's warpgroup MMA (wgmma.mma_async, operands in shared memory), sm_90a only.
#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cstdio>
#include <cstring>

using namespace cute;

template <class TiledMma, class SmemA, class SmemB>
__global__ void cute_wgmma_tn(half_t const *A, half_t const *B, float *C, int K, TiledMma mma) {
    // A: (64,K) K-major, B: (64,K) K-major, C: (64,64) row-major; one CTA, one warpgroup
    __shared__ alignas(1024) half_t smA[cosize_v<SmemA>];
    __shared__ alignas(1024) half_t smB[cosize_v<SmemB>];
    Tensor sA = make_tensor(make_smem_ptr(smA), SmemA{});              // (64,64)
    Tensor sB = make_tensor(make_smem_ptr(smB), SmemB{});
    Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(Int<64>{}, K), make_stride(K, Int<1>{}));
    Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(Int<64>{}, K), make_stride(K, Int<1>{}));
    Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(Int<64>{}, Int<64>{}), LayoutRight{});
    auto thr_mma = mma.get_slice(threadIdx.x);
    Tensor tCsA = thr_mma.partition_A(sA);
    Tensor tCsB = thr_mma.partition_B(sB);
    Tensor tCrA = thr_mma.make_fragment_A(tCsA);
    Tensor tCrB = thr_mma.make_fragment_B(tCsB);
    Tensor tCgC = thr_mma.partition_C(mC);
    Tensor acc = thr_mma.make_fragment_C(tCgC);
    clear(acc);
    auto thr = Layout<Shape<_16, _8>, Stride<_8, _1>>{};
    for (int k0 = 0; k0 < K; k0 += 64) {
        Tensor gA = local_tile(mA, make_shape(Int<64>{}, Int<64>{}), make_coord(0, k0 / 64));
        Tensor gB = local_tile(mB, make_shape(Int<64>{}, Int<64>{}), make_coord(0, k0 / 64));
        copy(local_partition(gA, thr, threadIdx.x), local_partition(sA, thr, threadIdx.x));
        copy(local_partition(gB, thr, threadIdx.x), local_partition(sB, thr, threadIdx.x));
        __syncthreads();
        asm volatile("fence.proxy.async.shared::cta;");      // generic-proxy stores, then wgmma reads
        warpgroup_fence_operand(acc);
        warpgroup_arrive();
        gemm(mma, tCrA, tCrB, acc);
        warpgroup_commit_batch();
        warpgroup_wait<0>();
        warpgroup_fence_operand(acc);
        __syncthreads();
    }
    copy(acc, tCgC);
}

int main() {
    TiledMMA mma = make_tiled_mma(SM90_64x64x16_F32F16F16_SS<GMMA::Major::K, GMMA::Major::K>{});
    using SmemA = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<half_t>{}, make_shape(Int<64>{}, Int<64>{})));
    auto k = &cute_wgmma_tn<decltype(mma), SmemA, SmemA>;
    (void)k;
    unsigned char b[sizeof(mma)];
    std::memcpy(b, &mma, sizeof(mma));       // the TiledMMA carries its runtime accumulate flag
    printf("cute_wgmma_tn ");
    for (size_t i = 0; i < sizeof(mma); ++i) printf("%02x", b[i]);
    printf("\n");
    return 0;
}
