// ThunderKittens' H100 attention forward (kernels/attention/mha_h100/mha_h100.cu, fwd_attend_ker<D, causal>:
// one producer and three consumer warpgroups, K/V streamed by TMA through mbarrier stages, online softmax
// with wgmma), launched from its PTX with the fwd_globals struct its host code builds (five gl<> with TMA
// descriptors, the sequence length and the head ratio).
//     tk_attn PTX OUTDIR
// mha_h100.cu is compiled next to an empty harness.impl (its standalone benchmark driver is left out).
#include "mha_h100.cu"
#include "capture.cuh"

template<int D, bool causal>
static void attn_case(const char *ptx, const char *out, const char *name, int B, int H, int HKV, int N) {
    capture::Case c(ptx, out, name);
    c.keep((const void *)fwd_attend_ker<D, causal>);          // instantiates the kernel for the PTX
    size_t nq = size_t(B) * H * N * D, nkv = size_t(B) * HKV * N * D, nl = size_t(B) * H * N;
    bf16 *q, *k, *v, *o; float *l;
    CAP_CHECK(cudaMalloc(&q, nq * 2)); CAP_CHECK(cudaMalloc(&k, nkv * 2)); CAP_CHECK(cudaMalloc(&v, nkv * 2));
    CAP_CHECK(cudaMalloc(&o, nq * 2)); CAP_CHECK(cudaMalloc(&l, nl * 4));
    std::vector<bf16> h(nq);
    for (size_t i = 0; i < nq; i++) h[i] = __float2bfloat16(capture::uniform(11, i, -2.f, 2.f));
    CAP_CHECK(cudaMemcpy(q, h.data(), nq * 2, cudaMemcpyHostToDevice));
    h.resize(nkv);
    for (size_t i = 0; i < nkv; i++) h[i] = __float2bfloat16(capture::uniform(12, i, -2.f, 2.f));
    CAP_CHECK(cudaMemcpy(k, h.data(), nkv * 2, cudaMemcpyHostToDevice));
    for (size_t i = 0; i < nkv; i++) h[i] = __float2bfloat16(capture::uniform(13, i, -1.f, 1.f));
    CAP_CHECK(cudaMemcpy(v, h.data(), nkv * 2, cudaMemcpyHostToDevice));
    CAP_CHECK(cudaMemset(o, 0xff, nq * 2)); CAP_CHECK(cudaMemset(l, 0xff, nl * 4));
    using globals = fwd_globals<D>;
    typename globals::q_gl qg{q, (unsigned)B, (unsigned)H, (unsigned)N, (unsigned)D};
    typename globals::k_gl kg{k, (unsigned)B, (unsigned)HKV, (unsigned)N, (unsigned)D};
    typename globals::v_gl vg{v, (unsigned)B, (unsigned)HKV, (unsigned)N, (unsigned)D};
    typename globals::l_gl lg{l, (unsigned)B, (unsigned)H, 1U, (unsigned)N};
    typename globals::o_gl og{o, (unsigned)B, (unsigned)H, (unsigned)N, (unsigned)D};
    globals g{qg, kg, vg, lg, og, N, H / HKV};
    c.array("q", q, nq * 2, "bfloat16", {size_t(B), size_t(H), size_t(N), size_t(D)}, false);
    c.array("k", k, nkv * 2, "bfloat16", {size_t(B), size_t(HKV), size_t(N), size_t(D)}, false);
    c.array("v", v, nkv * 2, "bfloat16", {size_t(B), size_t(HKV), size_t(N), size_t(D)}, false);
    c.array("l", l, nl * 4, "float32", {size_t(B), size_t(H), size_t(N)}, true);
    c.array("o", o, nq * 2, "bfloat16", {size_t(B), size_t(H), size_t(N), size_t(D)}, true);
    c.param(g);
    c.origin = std::string("ThunderKittens kernels/attention/mha_h100/mha_h100.cu fwd_attend_ker<") + std::to_string(D)
               + (causal ? ", true" : ", false") + "> (B=" + std::to_string(B) + ", heads " + std::to_string(H) + "/"
               + std::to_string(HKV) + ", N=" + std::to_string(N) + ")";
    // the kernel's launch: grid (N / 192, heads, batch), 16 warps, all but 1 KiB of shared memory
    dim3 grid(N / (CONSUMER_WARPGROUPS * kittens::TILE_ROW_DIM<bf16> * 4), H, B);
    c.run(causal ? "fwd_attend_kerILi" + std::to_string(D) + "ELb1E" : "fwd_attend_kerILi" + std::to_string(D) + "ELb0E",
          grid, dim3(32 * NUM_WORKERS), kittens::MAX_SHARED_MEMORY - 1024);
    cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o); cudaFree(l);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: tk_attn PTX OUTDIR\n"); return 2; }
    CAP_CHECK(cudaFree(0));
    attn_case<64, false>(argv[1], argv[2], "nvcc_tk_attn_fwd_d64_n384", 1, 1, 1, 384);
    attn_case<64, true>(argv[1], argv[2], "nvcc_tk_attn_fwd_causal_d64_n384", 1, 1, 1, 384);
    attn_case<64, false>(argv[1], argv[2], "nvcc_tk_attn_fwd_gqa_d64_n384", 1, 2, 1, 384);
    attn_case<128, false>(argv[1], argv[2], "nvcc_tk_attn_fwd_d128_n384", 1, 1, 1, 384);
    attn_case<128, true>(argv[1], argv[2], "nvcc_tk_attn_fwd_causal_d128_n384", 1, 1, 1, 384);
    return 0;
}
