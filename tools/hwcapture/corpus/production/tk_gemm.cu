// ThunderKittens' H100 bf16 GEMM (kernels/gemm/bf16_h100/bf16_h100_gemm.cu, matmul_template<2, 4, 8>: one
// producer and two consumer warpgroups, a 4-stage TMA pipeline, wgmma m64n256k16, a persistent tile loop),
// launched from its PTX with the globals struct its host code builds (three gl<> with their TMA descriptors).
//     tk_gemm PTX OUTDIR
// Build (ThunderKittens' own flags): see build_native.sh.
#define main thunderkittens_benchmark_main
#include "bf16_h100_gemm.cu"
#undef main
#include "capture.cuh"

template<typename mmt>
static void gemm_case(const char *ptx, const char *out, const char *name, int M, int N, int K, int grid_x) {
    capture::Case c(ptx, out, name);
    c.keep((const void *)prototype::lcf::kernel<mmt>);       // instantiates the kernel for the PTX
    bf16 *A, *B, *C;
    CAP_CHECK(cudaMalloc(&A, size_t(M) * K * 2)); CAP_CHECK(cudaMalloc(&B, size_t(K) * N * 2));
    CAP_CHECK(cudaMalloc(&C, size_t(M) * N * 2));
    std::vector<bf16> h(size_t(M) * K);
    for (size_t i = 0; i < h.size(); i++) h[i] = __float2bfloat16(capture::uniform(1, i, -1.f, 1.f));
    CAP_CHECK(cudaMemcpy(A, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    h.resize(size_t(K) * N);
    for (size_t i = 0; i < h.size(); i++) h[i] = __float2bfloat16(capture::uniform(2, i, -1.f, 1.f));
    CAP_CHECK(cudaMemcpy(B, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    CAP_CHECK(cudaMemset(C, 0xff, size_t(M) * N * 2));
    using global_layout = typename mmt::layout::global_layout;
    using globals = typename mmt::layout::globals;
    global_layout Ag{A, nullptr, nullptr, size_t(M), size_t(K)};
    global_layout Bg{B, nullptr, nullptr, size_t(K), size_t(N)};
    global_layout Cg{C, nullptr, nullptr, size_t(M), size_t(N)};
    globals G{Ag, Bg, Cg};
    c.array("A", A, size_t(M) * K * 2, "bfloat16", {size_t(M), size_t(K)}, false);
    c.array("B", B, size_t(K) * N * 2, "bfloat16", {size_t(K), size_t(N)}, false);
    c.array("C", C, size_t(M) * N * 2, "bfloat16", {size_t(M), size_t(N)}, true);
    c.param(G);
    c.origin = "ThunderKittens kernels/gemm/bf16_h100/bf16_h100_gemm.cu prototype::lcf::kernel<matmul_template<"
               + std::to_string(mmt::M_BLOCK) + ", " + std::to_string(mmt::N_BLOCK) + ", " + std::to_string(mmt::SUPER_M)
               + ">> (M=" + std::to_string(M) + ", N=" + std::to_string(N) + ", K=" + std::to_string(K) + ", "
               + std::to_string(grid_x) + " persistent CTAs)";
    c.run("matmul_template", dim3(grid_x), dim3(kittens::prototype::detail::NUM_THREADS_v<mmt>),
          kittens::MAX_SHARED_MEMORY - 1024);
    cudaFree(A); cudaFree(B); cudaFree(C);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: tk_gemm PTX OUTDIR\n"); return 2; }
    CAP_CHECK(cudaFree(0));
    // 2x2 output tiles of 128x256 on one persistent CTA, and on two
    gemm_case<matmul_template<2, 4, 8>>(argv[1], argv[2], "nvcc_tk_gemm_bf16_256x512x256_1cta", 256, 512, 256, 1);
    gemm_case<matmul_template<2, 4, 8>>(argv[1], argv[2], "nvcc_tk_gemm_bf16_256x512x128_2cta", 256, 512, 128, 2);
    return 0;
}
