// DeepGEMM's SM90 fp8 GEMM (deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh, the kernel its JIT builds
// for fp8_gemm_nt on an H100: e4m3 A and B, K-major, per-token fp32 scales for A over 128 columns of K, per-block
// 128x128 fp32 scales for B, bf16 D), instantiated here as its JIT's generated source does, compiled with the
// JIT's flags, launched from its PTX with the four tensor maps its host code encodes (make_tma_2d_desc).
//     dg_fp8 PTX OUTDIR
#include <deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh>
#include "capture.cuh"

using namespace deep_gemm;

template <uint32_t N, uint32_t K, uint32_t BM, uint32_t BN, uint32_t SWD, uint32_t SMS>
using dg_kernel_t = decltype(&sm90_fp8_gemm_1d2d_impl<cute::UMMA::Major::K, 0, N, K, 1, BM, BN, 128, 128, 128, SWD,
                                                     4, 128, (BM <= 64 ? 128 : 256), 1, false, SMS, GemmType::Normal,
                                                     cutlass::bfloat16_t, epilogue::transform::EpilogueIdentity>);

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

template <uint32_t N, uint32_t K, uint32_t BM, uint32_t BN, uint32_t SWD, uint32_t SMS>
static void dg_case(const char *ptx, const char *out, const char *name, uint32_t M, const std::string &entry) {
    capture::Case c(ptx, out, name);
    auto kern = &sm90_fp8_gemm_1d2d_impl<cute::UMMA::Major::K, 0, N, K, 1, BM, BN, 128, 128, 128, SWD, 4, 128,
                                         (BM <= 64 ? 128 : 256), 1, false, SMS, GemmType::Normal, cutlass::bfloat16_t,
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
               + std::to_string(BN) + ", 4 stages, " + std::to_string(SMS) + " SMs)";
    c.run(entry, dim3(SMS), dim3(128 + (BM <= 64 ? 128 : 256)), 232448);
    cudaFree(a); cudaFree(b); cudaFree(sfa); cudaFree(sfb); cudaFree(d);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: dg_fp8 PTX OUTDIR\n"); return 2; }
    CAP_CHECK(cudaFree(0));
    dg_case<256, 512, 64, 128, 128, 2>(argv[1], argv[2], "nvcc_deepgemm_fp8_1d2d_128x256x512", 128, "Lj0ELj256ELj512E");
    // BLOCK_N = 112: the second N block straddles two 128-wide B scale blocks (the num_former_iters path)
    dg_case<224, 512, 64, 112, 32, 2>(argv[1], argv[2], "nvcc_deepgemm_fp8_1d2d_128x224x512_bn112", 128, "Lj0ELj224ELj512E");
    return 0;
}
