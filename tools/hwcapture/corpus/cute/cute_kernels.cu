// CuTe kernels for the corpus, written against the CUTLASS headers (include path: CUTLASS_DIR).
// Built twice: `nvcc -ptx` gives the PTX the corpus stores; the same file built for the host prints the bytes of
// every aggregate kernel argument (CuTe shapes, strides, layouts, tiled MMAs/copies), as the host passes them.
#include <cute/tensor.hpp>
#include <cstdio>
#include <cstring>

using namespace cute;

// 1. Tile a 2D tensor over CTAs and threads; layouts come in as kernel arguments (dynamic M, N).
template <class Shape, class Stride, class Tiler, class ThrLayout>
__global__ void cute_scale_copy(float const *in, float *out, Shape shape, Stride stride, Tiler tiler, ThrLayout thr) {
    Tensor mIn = make_tensor(make_gmem_ptr(in), shape, stride);
    Tensor mOut = make_tensor(make_gmem_ptr(out), shape, stride);
    Tensor gIn = local_tile(mIn, tiler, make_coord(blockIdx.x, blockIdx.y));
    Tensor gOut = local_tile(mOut, tiler, make_coord(blockIdx.x, blockIdx.y));
    Tensor tIn = local_partition(gIn, thr, threadIdx.x);
    Tensor tOut = local_partition(gOut, thr, threadIdx.x);
    Tensor frag = make_tensor_like(tIn);
    copy(tIn, frag);
    CUTE_UNROLL
    for (int i = 0; i < size(frag); ++i) frag(i) = frag(i) * 2.0f + 1.0f;
    copy(frag, tOut);
}

// 2. A plain shared-memory GEMM on CuTe tensors: C(M,N) = A(M,K) * B(N,K)^T, one thread per C element group.
template <class MNK, class DA, class DB, class DC, class SA, class SB, class TThr>
__global__ void cute_sgemm_nt(MNK mnk, float const *A, DA dA, float const *B, DB dB, float *C, DC dC,
                              SA sA_layout, SB sB_layout, TThr tC) {
    auto tiler = make_shape(Int<32>{}, Int<32>{}, Int<8>{});
    Tensor mA = make_tensor(make_gmem_ptr(A), select<0, 2>(mnk), dA);
    Tensor mB = make_tensor(make_gmem_ptr(B), select<1, 2>(mnk), dB);
    Tensor mC = make_tensor(make_gmem_ptr(C), select<0, 1>(mnk), dC);
    auto coord = make_coord(blockIdx.x, blockIdx.y, _);
    Tensor gA = local_tile(mA, tiler, coord, Step<_1, X, _1>{});
    Tensor gB = local_tile(mB, tiler, coord, Step<X, _1, _1>{});
    Tensor gC = local_tile(mC, tiler, coord, Step<_1, _1, X>{});
    __shared__ float smA[cosize_v<SA>];
    __shared__ float smB[cosize_v<SB>];
    Tensor sA = make_tensor(make_smem_ptr(smA), sA_layout);
    Tensor sB = make_tensor(make_smem_ptr(smB), sB_layout);
    auto tA = Layout<Shape<_32, _8>>{};
    Tensor tAgA = local_partition(gA, tA, threadIdx.x);
    Tensor tAsA = local_partition(sA, tA, threadIdx.x);
    Tensor tBgB = local_partition(gB, tA, threadIdx.x);
    Tensor tBsB = local_partition(sB, tA, threadIdx.x);
    Tensor tCsA = local_partition(sA, tC, threadIdx.x, Step<_1, X>{});
    Tensor tCsB = local_partition(sB, tC, threadIdx.x, Step<X, _1>{});
    Tensor tCgC = local_partition(gC, tC, threadIdx.x, Step<_1, _1>{});
    Tensor tCrC = make_tensor_like(tCgC);
    clear(tCrC);
    for (int k = 0; k < size<2>(tAgA); ++k) {
        copy(tAgA(_, _, k), tAsA);
        copy(tBgB(_, _, k), tBsB);
        __syncthreads();
        gemm(tCsA, tCsB, tCrC);
        __syncthreads();
    }
    axpby(1.0f, tCrC, 0.0f, tCgC);
}

// 3. Tensor cores the CuTe way: cp.async global->shared, ldmatrix shared->registers, mma.sync m16n8k16.
template <class TiledMma, class G2S, class SmemA, class SmemB>
__global__ void cute_hgemm_tn(half_t const *A, half_t const *B, float *C, int M, int N, int K, TiledMma mma,
                              G2S g2s) {
    Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(K, Int<1>{}));
    Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(K, Int<1>{}));
    Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, Int<1>{}));
    auto tiler = make_shape(Int<64>{}, Int<64>{}, Int<32>{});
    auto coord = make_coord(blockIdx.x, blockIdx.y, _);
    Tensor gA = local_tile(mA, tiler, coord, Step<_1, X, _1>{});
    Tensor gB = local_tile(mB, tiler, coord, Step<X, _1, _1>{});
    Tensor gC = local_tile(mC, tiler, coord, Step<_1, _1, X>{});
    __shared__ alignas(128) half_t smA[cosize_v<SmemA>];
    __shared__ alignas(128) half_t smB[cosize_v<SmemB>];
    Tensor sA = make_tensor(make_smem_ptr(smA), SmemA{});
    Tensor sB = make_tensor(make_smem_ptr(smB), SmemB{});
    auto thr_g2s = g2s.get_slice(threadIdx.x);
    Tensor tAgA = thr_g2s.partition_S(gA);
    Tensor tAsA = thr_g2s.partition_D(sA);
    Tensor tBgB = thr_g2s.partition_S(gB);
    Tensor tBsB = thr_g2s.partition_D(sB);
    auto thr_mma = mma.get_slice(threadIdx.x);
    Tensor tCgC = thr_mma.partition_C(gC);
    Tensor tCrA = thr_mma.partition_fragment_A(sA);
    Tensor tCrB = thr_mma.partition_fragment_B(sB);
    Tensor tCrC = thr_mma.make_fragment_C(tCgC);
    clear(tCrC);
    auto s2r_a = make_tiled_copy_A(Copy_Atom<SM75_U32x4_LDSM_N, half_t>{}, mma);
    auto s2r_b = make_tiled_copy_B(Copy_Atom<SM75_U32x4_LDSM_N, half_t>{}, mma);
    auto thr_a = s2r_a.get_slice(threadIdx.x);
    auto thr_b = s2r_b.get_slice(threadIdx.x);
    Tensor tXsA = thr_a.partition_S(sA);
    Tensor tXrA = thr_a.retile_D(tCrA);
    Tensor tXsB = thr_b.partition_S(sB);
    Tensor tXrB = thr_b.retile_D(tCrB);
    for (int k = 0; k < size<3>(tAgA); ++k) {
        copy(g2s, tAgA(_, _, _, k), tAsA);
        copy(g2s, tBgB(_, _, _, k), tBsB);
        cp_async_fence();
        cp_async_wait<0>();
        __syncthreads();
        copy(s2r_a, tXsA, tXrA);
        copy(s2r_b, tXsB, tXrB);
        gemm(mma, tCrA, tCrB, tCrC);
        __syncthreads();
    }
    copy(tCrC, tCgC);
}

// 4. A swizzled shared-memory transpose through ldmatrix/stmatrix-free plain copies (Swizzle<3,3,3>).
template <class SmemLayout>
__global__ void cute_swizzle_transpose(half_t const *in, half_t *out, SmemLayout sl) {
    __shared__ alignas(128) half_t buf[cosize_v<SmemLayout>];
    Tensor s = make_tensor(make_smem_ptr(buf), sl);                              // (64,64) swizzled
    Tensor gi = make_tensor(make_gmem_ptr(in), make_shape(Int<64>{}, Int<64>{}), LayoutRight{});
    Tensor go = make_tensor(make_gmem_ptr(out), make_shape(Int<64>{}, Int<64>{}), LayoutLeft{});
    auto thr = Layout<Shape<_8, _16>, Stride<_16, _1>>{};
    copy(local_partition(gi, thr, threadIdx.x), local_partition(s, thr, threadIdx.x));
    __syncthreads();
    copy(local_partition(s, thr, threadIdx.x), local_partition(go, thr, threadIdx.x));
}

// ---------------------------------------------------------------------------------------------------------
// host side: print the bytes of every kernel argument that is not a pointer or a plain integer

static void hex(void const *p, size_t n) {
    unsigned char const *b = static_cast<unsigned char const *>(p);
    for (size_t i = 0; i < n; ++i) printf("%02x", b[i]);
}
template <class... A>
static void dump(char const *name, A const &...a) {
    printf("%s", name);
    ((printf(" "), hex(&a, sizeof(A))), ...);
    printf("\n");
}

#define M_COPY 96
#define N_COPY 80

int main() {
    {   // 1
        auto shape = make_shape(int(M_COPY), int(N_COPY));
        auto stride = make_stride(Int<1>{}, int(M_COPY));
        auto tiler = make_shape(Int<32>{}, Int<16>{});
        auto thr = Layout<Shape<_8, _16>>{};
        auto k = &cute_scale_copy<decltype(shape), decltype(stride), decltype(tiler), decltype(thr)>;
        (void)k;
        dump("cute_scale_copy", shape, stride, tiler, thr);
    }
    {   // 2
        auto mnk = make_shape(int(64), int(64), int(32));
        auto dA = make_stride(Int<1>{}, int(64));
        auto dB = make_stride(Int<1>{}, int(64));
        auto dC = make_stride(Int<1>{}, int(64));
        auto sA = make_layout(make_shape(Int<32>{}, Int<8>{}));
        auto sB = make_layout(make_shape(Int<32>{}, Int<8>{}));
        auto tC = make_layout(make_shape(Int<16>{}, Int<16>{}));
        auto k = &cute_sgemm_nt<decltype(mnk), decltype(dA), decltype(dB), decltype(dC), decltype(sA), decltype(sB),
                                decltype(tC)>;
        (void)k;
        dump("cute_sgemm_nt", mnk, dA, dB, dC, sA, sB, tC);
    }
    {   // 3
        TiledMMA mma = make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN{}, Layout<Shape<_2, _2>>{}, Tile<_32, _32, _16>{});
        TiledCopy g2s = make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS<uint128_t>, half_t>{},
                                        Layout<Shape<_32, _4>, Stride<_4, _1>>{}, Layout<Shape<_1, _8>>{});
        using SmemA = decltype(composition(Swizzle<2, 3, 3>{},
                                           make_layout(make_shape(Int<64>{}, Int<32>{}), LayoutRight{})));
        auto k = &cute_hgemm_tn<decltype(mma), decltype(g2s), SmemA, SmemA>;
        (void)k;
        dump("cute_hgemm_tn", mma, g2s);
    }
    {   // 4
        auto sl = composition(Swizzle<3, 3, 3>{}, make_layout(make_shape(Int<64>{}, Int<64>{}), LayoutRight{}));
        auto k = &cute_swizzle_transpose<decltype(sl)>;
        (void)k;
        dump("cute_swizzle_transpose", sl);
    }
    return 0;
}
