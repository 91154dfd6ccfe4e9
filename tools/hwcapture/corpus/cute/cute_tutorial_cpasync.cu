// Records the launches of CUTLASS's CuTe Hopper tutorial without TMA (examples/cute/tutorial/hopper/wgmma_sm90.cu:
// cp.async into 128-byte-swizzled shared memory, a 3-stage pipeline, GMMA 64x64x16 f16), compiled from the CUTLASS
// checkout itself. Its arguments hold no driver-made bytes, so this runs on any machine, without a GPU: the
// allocations are stand-in addresses and the CUDA runtime calls of the launch path are left out.
//
//   ./dump  M_nt N_nt K_nt  M_tn N_tn K_tn  -> the same lines as cute_tutorial_tma.cu
#include <cstdio>
#define CUTE_CHECK_LAST()
#define CUTE_CHECK_ERROR(e)
#include "cutlass/cluster_launch.hpp"

namespace cutlass {

template <class T>
void record_arg(T const &a) {
    unsigned char const *p = reinterpret_cast<unsigned char const *>(&a);
    printf(" %zu:", sizeof(T));
    for (size_t i = 0; i < sizeof(T); ++i) printf("%02x", p[i]);
}

template <class... Args>
Status record_launch(ClusterLaunchParams const &p, void const *, Args &&...args) {
    printf("launch ? grid %u %u %u block %u %u %u cluster %u %u %u smem %d args", p.grid_dims.x, p.grid_dims.y,
           p.grid_dims.z, p.block_dims.x, p.block_dims.y, p.block_dims.z, p.cluster_dims.x, p.cluster_dims.y,
           p.cluster_dims.z, p.smem_size_in_bytes);
    (record_arg(args), ...);
    printf("\n");
    return Status::kSuccess;
}

}  // namespace cutlass

#define launch_kernel_on_cluster record_launch
#define main cute_tutorial_main
#include "wgmma_sm90.cu"
#undef main

int main(int argc, char **argv) {
    int p[6] = {128, 128, 256, 256, 128, 256};
    for (int i = 0; i < 6 && i + 1 < argc; ++i) sscanf(argv[i + 1], "%d", &p[i]);
    for (int v = 0; v < 2; ++v) {
        int m = p[3 * v], n = p[3 * v + 1], k = p[3 * v + 2];
        unsigned long long base = 0x7f0000000000ull + 0x100000000ull * v;
        cute::half_t *A = (cute::half_t *)base, *B = (cute::half_t *)(base + 0x1000000),
                     *C = (cute::half_t *)(base + 0x2000000);
        printf("ptr A %llx\nptr B %llx\nptr C %llx\n", (unsigned long long)A, (unsigned long long)B,
               (unsigned long long)C);
        cute::half_t alpha = cute::half_t(1.0f), beta = cute::half_t(0.5f);
        if (v == 0)
            gemm('N', 'T', m, n, k, alpha, A, m, B, n, beta, C, m);
        else
            gemm('T', 'N', m, n, k, alpha, A, k, B, k, beta, C, m);
    }
    return 0;
}
