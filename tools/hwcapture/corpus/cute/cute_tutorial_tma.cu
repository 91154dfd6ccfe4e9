// Records the launches of CUTLASS's CuTe Hopper tutorial with TMA and a 2-CTA cluster
// (examples/cute/tutorial/hopper/wgmma_tma_sm90.cu, compiled from the CUTLASS checkout itself). The tutorial's own
// host code builds every kernel argument, the TMA descriptors included (the driver encodes them); its cluster
// launch is replaced by a printer of the launch configuration and of the bytes of each argument.
//
//   ./dump  M_nt N_nt K_nt  M_tn N_tn K_tn  -> one line per launch:
//   launch <kernel> grid x y z block x y z cluster x y z smem S args <size>:<hex> ...
//   ptr A|B|C <address>  (the device allocations, so that the replay can tell pointers apart)
#include <cstdio>
#include "cutlass/cluster_launch.hpp"

namespace cutlass {

template <class T>
void record_arg(T const &a) {
    unsigned char const *p = reinterpret_cast<unsigned char const *>(&a);
    printf(" %zu:", sizeof(T));
    for (size_t i = 0; i < sizeof(T); ++i) printf("%02x", p[i]);
}

template <class... Args>
Status record_launch(ClusterLaunchParams const &p, void const *kernel, Args &&...args) {
    const char *name = "?";
    if (cudaFuncGetName(&name, kernel) != cudaSuccess) name = "?";
    printf("launch %s grid %u %u %u block %u %u %u cluster %u %u %u smem %d args", name, p.grid_dims.x,
           p.grid_dims.y, p.grid_dims.z, p.block_dims.x, p.block_dims.y, p.block_dims.z, p.cluster_dims.x,
           p.cluster_dims.y, p.cluster_dims.z, p.smem_size_in_bytes);
    (record_arg(args), ...);
    printf("\n");
    return Status::kSuccess;
}

}  // namespace cutlass

#define launch_kernel_on_cluster record_launch
#define main cute_tutorial_main
#include "wgmma_tma_sm90.cu"
#undef main

int main(int argc, char **argv) {
    int p[6] = {256, 256, 256, 256, 128, 320};
    for (int i = 0; i < 6 && i + 1 < argc; ++i) sscanf(argv[i + 1], "%d", &p[i]);
    for (int v = 0; v < 2; ++v) {
        int m = p[3 * v], n = p[3 * v + 1], k = p[3 * v + 2];
        cute::half_t *A, *B, *C;
        cudaMalloc(&A, sizeof(cute::half_t) * m * k);
        cudaMalloc(&B, sizeof(cute::half_t) * n * k);
        cudaMalloc(&C, sizeof(cute::half_t) * m * n);
        printf("ptr A %llx\nptr B %llx\nptr C %llx\n", (unsigned long long)A, (unsigned long long)B,
               (unsigned long long)C);
        cute::half_t alpha = cute::half_t(1.0f), beta = cute::half_t(0.5f);
        if (v == 0)
            gemm('N', 'T', m, n, k, alpha, A, m, B, n, beta, C, m);
        else
            gemm('T', 'N', m, n, k, alpha, A, k, B, k, beta, C, m);
        cudaFree(A);
        cudaFree(B);
        cudaFree(C);
    }
    return 0;
}
