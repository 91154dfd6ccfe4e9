// DeepGEMM's SM90 GEMMs. The fp8 one (deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh, the kernel its JIT builds
// for fp8_gemm_nt on an H100: e4m3 A and B, K-major, per-token fp32 scales for A over 128 columns of K, per-block
// 128x128 fp32 scales for B, bf16 D), instantiated here as its JIT's generated source does, compiled with the
// JIT's flags, launched from its PTX with the four tensor maps its host code encodes (make_tma_2d_desc).
//     dg_fp8 PTX OUTDIR
#include <deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh>
#include <deep_gemm/impls/sm90_bf16_gemm.cuh>
#include "capture.cuh"

using namespace deep_gemm;

static CUtensorMapSwizzle swizzle(int mode) {
    return mode == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : mode == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
         : mode == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
}
// DeepGEMM's make_tma_2d_desc: inner/outer global dims, the box (inner dim = swizzle bytes / element size when
// swizzled), the outer stride in elements, L2 promotion 256B, no OOB fill
static CUtensorMap tma_2d(CUtensorMapDataType dt, int esize, void *p, int inner, int outer, int box_inner,
                          int box_outer, int stride, int swz) {
    if (swz) box_inner = swz / esize;
    CUtensorMap m;
    cuuint64_t dims[2] = {cuuint64_t(inner), cuuint64_t(outer)}, strides[1] = {cuuint64_t(stride) * esize};
    cuuint32_t box[2] = {cuuint32_t(box_inner), cuuint32_t(box_outer)}, es[2] = {1, 1};
    CAP_CHECK(cuTensorMapEncodeTiled(&m, dt, 2, p, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle(swz),
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return m;
}

// MC CTAs per cluster share their A tiles (ONA, the cluster spans N blocks) or their B tiles by TMA multicast
template <uint32_t N, uint32_t K, uint32_t BM, uint32_t BN, uint32_t SWD, uint32_t SMS, uint32_t MC = 1, bool ONA = false>
static void dg_case(const char *ptx, const char *out, const char *name, uint32_t M, const std::string &entry) {
    capture::Case c(ptx, out, name);
    auto kern = &sm90_fp8_gemm_1d2d_impl<cute::UMMA::Major::K, 0, N, K, 1, BM, BN, 128, 128, 128, SWD, 4, 128,
                                         (BM <= 64 ? 128 : 256), MC, ONA, SMS, GemmType::Normal, cutlass::bfloat16_t,
                                         epilogue::transform::EpilogueIdentity>;
    c.keep((const void *)kern);
    const uint32_t ks = K / 128, ns = (N + 127) / 128, m_al = (M + 3) / 4 * 4;   // TMA-aligned M for fp32 scales
    uint8_t *a, *b; float *sfa, *sfb; __nv_bfloat16 *d;
    CAP_CHECK(cudaMalloc(&a, size_t(M) * K)); CAP_CHECK(cudaMalloc(&b, size_t(N) * K));
    CAP_CHECK(cudaMalloc(&sfa, size_t(ks) * m_al * 4)); CAP_CHECK(cudaMalloc(&sfb, size_t(ns) * ks * 4));
    CAP_CHECK(cudaMalloc(&d, size_t(M) * N * 2));
    auto fp8 = [](uint64_t seed, size_t n) {      // any e4m3 byte but NaN
        std::vector<uint8_t> v(n);
        for (size_t i = 0; i < n; i++) { uint8_t x = uint8_t(capture::splitmix(seed * 1000003 + i)); v[i] = (x & 0x7f) == 0x7f ? x ^ 1 : x; }
        return v;
    };
    auto h8 = fp8(21, size_t(M) * K); CAP_CHECK(cudaMemcpy(a, h8.data(), h8.size(), cudaMemcpyHostToDevice));
    h8 = fp8(22, size_t(N) * K); CAP_CHECK(cudaMemcpy(b, h8.data(), h8.size(), cudaMemcpyHostToDevice));
    std::vector<float> hf(size_t(ks) * m_al);
    for (size_t i = 0; i < hf.size(); i++) hf[i] = capture::uniform(23, i, 1.f / 512, 1.f / 64);
    CAP_CHECK(cudaMemcpy(sfa, hf.data(), hf.size() * 4, cudaMemcpyHostToDevice));
    hf.resize(size_t(ns) * ks);
    for (size_t i = 0; i < hf.size(); i++) hf[i] = capture::uniform(24, i, 1.f / 512, 1.f / 64);
    CAP_CHECK(cudaMemcpy(sfb, hf.data(), hf.size() * 4, cudaMemcpyHostToDevice));
    CAP_CHECK(cudaMemset(d, 0xff, size_t(M) * N * 2));
    CUtensorMap ta = tma_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, a, K, M, 128, BM, K, 128);
    CUtensorMap tb = tma_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, b, K, N, 128, BN, K, 128);
    CUtensorMap td = tma_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d, N, M, BN, BM, N, SWD);
    CUtensorMap tsfa = tma_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, sfa, m_al, ks, BM, 1, m_al, 0);
    c.array("a", a, size_t(M) * K, "uint8", {M, K}, false);
    c.array("b", b, size_t(N) * K, "uint8", {N, K}, false);
    c.array("sfa", sfa, size_t(ks) * m_al * 4, "float32", {ks, m_al}, false);
    c.array("sfb", sfb, size_t(ns) * ks * 4, "float32", {ns, ks}, false);
    c.array("d", d, size_t(M) * N * 2, "bfloat16", {M, N}, true);
    c.param(sfb); c.param((int *)nullptr); c.param(M); c.param(N); c.param(K);
    c.param(ta); c.param(tb); c.param(td); c.param(tsfa);
    c.origin = "DeepGEMM deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh sm90_fp8_gemm_1d2d_impl (M=" + std::to_string(M)
               + ", N=" + std::to_string(N) + ", K=" + std::to_string(K) + ", BLOCK_M=" + std::to_string(BM) + ", BLOCK_N="
               + std::to_string(BN) + ", 4 stages, " + std::to_string(SMS) + " SMs"
               + (MC > 1 ? std::string(", clusters of ") + std::to_string(MC) + " with TMA multicast of " + (ONA ? "A" : "B") : "")
               + ")";
    c.run(entry, dim3(SMS), dim3(128 + (BM <= 64 ? 128 : 256)), 232448, dim3(MC, 1, 1));
    cudaFree(a); cudaFree(b); cudaFree(sfa); cudaFree(sfb); cudaFree(d);
}

// DeepGEMM's SM90 bf16 GEMM (impls/sm90_bf16_gemm.cuh, what its JIT builds for bf16_gemm_nt): A (M x K) and B
// (N x K) K-major, bf16 D, BLOCK_K 64 (128-byte swizzle), 4 stages
static void bf16_case(const char *ptx, const char *out) {
    constexpr uint32_t M = 128, N = 256, K = 512, BM = 64, BN = 128, SMS = 2;
    capture::Case c(ptx, out, "nvcc_deepgemm_bf16_128x256x512");
    auto kern = &sm90_bf16_gemm_impl<cute::UMMA::Major::K, cute::UMMA::Major::K, 0, N, K, 1, BM, BN, 64, 128, 128, 128,
                                     4, 128, 128, 1, false, SMS, GemmType::Normal, false, cutlass::bfloat16_t>;
    c.keep((const void *)kern);
    __nv_bfloat16 *a, *b, *d;
    CAP_CHECK(cudaMalloc(&a, size_t(M) * K * 2)); CAP_CHECK(cudaMalloc(&b, size_t(N) * K * 2));
    CAP_CHECK(cudaMalloc(&d, size_t(M) * N * 2));
    std::vector<__nv_bfloat16> h(size_t(M) * K);
    for (size_t i = 0; i < h.size(); i++) h[i] = __float2bfloat16(capture::uniform(41, i, -1.f, 1.f));
    CAP_CHECK(cudaMemcpy(a, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    h.resize(size_t(N) * K);
    for (size_t i = 0; i < h.size(); i++) h[i] = __float2bfloat16(capture::uniform(42, i, -1.f, 1.f));
    CAP_CHECK(cudaMemcpy(b, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    CAP_CHECK(cudaMemset(d, 0xff, size_t(M) * N * 2));
    CUtensorMap ta = tma_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, a, K, M, 64, BM, K, 128);
    CUtensorMap tb = tma_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, b, K, N, 64, BN, K, 128);
    CUtensorMap td = tma_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d, N, M, BN, BM, N, 128);
    c.array("a", a, size_t(M) * K * 2, "bfloat16", {M, K}, false);
    c.array("b", b, size_t(N) * K * 2, "bfloat16", {N, K}, false);
    c.array("d", d, size_t(M) * N * 2, "bfloat16", {M, N}, true);
    c.param((int *)nullptr); c.param(M); c.param(N); c.param(K); c.param(ta); c.param(tb); c.param(td);
    c.origin = "DeepGEMM deep_gemm/include/deep_gemm/impls/sm90_bf16_gemm.cuh sm90_bf16_gemm_impl (M=128, N=256, K=512, "
               "BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, 4 stages, 2 SMs)";
    c.run("sm90_bf16_gemm_impl", dim3(SMS), dim3(256), 232448);
    cudaFree(a); cudaFree(b); cudaFree(d);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: dg_fp8 PTX OUTDIR\n"); return 2; }
    CAP_CHECK(cudaFree(0));
    dg_case<256, 512, 64, 128, 128, 2>(argv[1], argv[2], "nvcc_deepgemm_fp8_1d2d_128x256x512", 128,
        "1d2d_implILN4cute4UMMA5MajorE0ELj0ELj256ELj512ELj1ELj64ELj128ELj128ELj128ELj128ELj128ELj4ELj128ELj128ELj1ELb0E");
    // BLOCK_N = 112: the second N block straddles two 128-wide B scale blocks (the num_former_iters path)
    dg_case<224, 512, 64, 112, 32, 2>(argv[1], argv[2], "nvcc_deepgemm_fp8_1d2d_128x224x512_bn112", 128, "Lj0ELj224ELj512E");
    // BLOCK_M = 128: two math warpgroups
    dg_case<256, 512, 128, 128, 128, 2>(argv[1], argv[2], "nvcc_deepgemm_fp8_1d2d_256x256x512_bm128", 256,
        "1d2d_implILN4cute4UMMA5MajorE0ELj0ELj256ELj512ELj1ELj128ELj128E");
    // 2-CTA clusters: the pair shares A (it covers two N blocks of one M block) or B, by TMA multicast
    dg_case<256, 512, 64, 128, 128, 4, 2, true>(argv[1], argv[2], "nvcc_deepgemm_fp8_1d2d_256x256x512_mcast_a", 256,
                                                "Lj0ELj256ELj512ELj1ELj64ELj128ELj128ELj128ELj128ELj128ELj4ELj128ELj128ELj2ELb1E");
    dg_case<256, 512, 64, 128, 128, 4, 2, false>(argv[1], argv[2], "nvcc_deepgemm_fp8_1d2d_256x256x512_mcast_b", 256,
                                                 "Lj0ELj256ELj512ELj1ELj64ELj128ELj128ELj128ELj128ELj128ELj4ELj128ELj128ELj2ELb0E");
    bf16_case(argv[1], argv[2]);
    return 0;
}
