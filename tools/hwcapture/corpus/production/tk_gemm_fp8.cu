// ThunderKittens' H100 fp8 GEMM (kernels/gemm/fp8_h100/fp8_h100_gemm.cu, matmul_template<8>: e4m3 A (M x K) and
// B (N x K), wgmma m64n256k32 into fp32, the result converted to e4m3 in registers and stored by TMA), launched
// from its PTX with the globals struct its host code builds.
//     tk_gemm_fp8 PTX OUTDIR
#define main thunderkittens_benchmark_main
#include "fp8_h100_gemm.cu"
#undef main
#include "capture.cuh"

template<typename mmt>
static void gemm_case(const char *ptx, const char *out, const char *name, int M, int N, int K, int grid_x) {
    capture::Case c(ptx, out, name);
    c.keep((const void *)prototype::lcf::kernel<mmt>);       // instantiates the kernel for the PTX
    fp8e4m3 *A, *B, *C;
    CAP_CHECK(cudaMalloc(&A, size_t(M) * K)); CAP_CHECK(cudaMalloc(&B, size_t(N) * K));
    CAP_CHECK(cudaMalloc(&C, size_t(M) * N));
    std::vector<__nv_fp8_e4m3> h(size_t(M) * K);
    for (size_t i = 0; i < h.size(); i++) h[i] = __nv_fp8_e4m3(capture::uniform(31, i, -1.f, 1.f));
    CAP_CHECK(cudaMemcpy(A, h.data(), h.size(), cudaMemcpyHostToDevice));
    h.resize(size_t(N) * K);
    for (size_t i = 0; i < h.size(); i++) h[i] = __nv_fp8_e4m3(capture::uniform(32, i, -1.f, 1.f));
    CAP_CHECK(cudaMemcpy(B, h.data(), h.size(), cudaMemcpyHostToDevice));
    CAP_CHECK(cudaMemset(C, 0x7f, size_t(M) * N));
    using globals = typename mmt::layout::globals;
    typename mmt::layout::a_layout Ag{A, nullptr, nullptr, size_t(M), size_t(K)};
    typename mmt::layout::b_layout Bg{B, nullptr, nullptr, size_t(N), size_t(K)};
    typename mmt::layout::c_layout Cg{C, nullptr, nullptr, size_t(M), size_t(N)};
    globals G{Ag, Bg, Cg};
    c.array("A", A, size_t(M) * K, "uint8", {size_t(M), size_t(K)}, false);
    c.array("B", B, size_t(N) * K, "uint8", {size_t(N), size_t(K)}, false);
    c.array("C", C, size_t(M) * N, "uint8", {size_t(M), size_t(N)}, true);
    c.param(G);
    c.origin = "ThunderKittens kernels/gemm/fp8_h100/fp8_h100_gemm.cu prototype::lcf::kernel<matmul_template<"
               + std::to_string(mmt::SUPER_M) + ">> (e4m3, M=" + std::to_string(M) + ", N=" + std::to_string(N) + ", K="
               + std::to_string(K) + ", " + std::to_string(grid_x) + " persistent CTAs)";
    c.run("matmul_template", dim3(grid_x), dim3(kittens::prototype::detail::NUM_THREADS_v<mmt>),
          kittens::MAX_SHARED_MEMORY - 1024);
    cudaFree(A); cudaFree(B); cudaFree(C);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: tk_gemm_fp8 PTX OUTDIR\n"); return 2; }
    CAP_CHECK(cudaFree(0));
    gemm_case<matmul_template<8>>(argv[1], argv[2], "nvcc_tk_gemm_fp8_256x512x256_2cta", 256, 512, 256, 2);
    return 0;
}
