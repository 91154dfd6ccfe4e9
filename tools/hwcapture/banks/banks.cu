// Shared-memory bank-conflict harness: one kernel per shared-memory instruction form, launched once per
// access pattern with the per-lane byte offsets (and active-lane flags) read from global memory, so the
// compiler cannot fold the addresses.  Profile it with Nsight Compute (see run.sh); every launch issues
// exactly one instruction of interest per lane (plus, for cp.async, its commit/wait).
//
//   banks patterns.txt      # each line: <kernel> <mask hex> <addr0> ... <addr31> [<src0> ... <src31>]
//                           # (the 32 global source offsets only for the *_src kernels)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define SMEM_BYTES 32768
#define GSRC_BYTES 8192

struct Args {
  const unsigned *addr;   // byte offset into the shared tile, per lane
  const unsigned *act;    // non-zero: the lane takes part (predicated instructions only)
  unsigned *out;          // keeps results alive
  const unsigned char *gsrc;  // cp.async source (16-byte aligned per lane)
  const unsigned *src;    // per-lane byte offset into gsrc (the *_src cp.async kernels)
};

#define PROLOGUE                                                                          \
  __shared__ __align__(1024) unsigned char smem[SMEM_BYTES];                             \
  unsigned lane = threadIdx.x;                                                             \
  unsigned a = (unsigned)__cvta_generic_to_shared(smem) + a_.addr[lane];                   \
  unsigned p = a_.act[lane];                                                               \
  unsigned r0 = lane, r1 = lane + 1, r2 = lane + 2, r3 = lane + 3;                         \
  (void)p; (void)r1; (void)r2; (void)r3;

#define EPILOGUE a_.out[lane] = r0 ^ r1 ^ r2 ^ r3;

#define PRED(body) "{.reg .pred q; setp.ne.u32 q, %1, 0; @q " body "}"

// ---- ld.shared ------------------------------------------------------------------------------------
__global__ void k_ld_u8(Args a_) { PROLOGUE
  asm volatile(PRED("ld.shared.u8 %0, [%2];") : "+r"(r0) : "r"(p), "r"(a)); EPILOGUE }
__global__ void k_ld_u16(Args a_) { PROLOGUE
  asm volatile(PRED("ld.shared.u16 %0, [%2];") : "+r"(r0) : "r"(p), "r"(a)); EPILOGUE }
__global__ void k_ld_u32(Args a_) { PROLOGUE
  asm volatile(PRED("ld.shared.u32 %0, [%2];") : "+r"(r0) : "r"(p), "r"(a)); EPILOGUE }
__global__ void k_ld_v2(Args a_) { PROLOGUE
  asm volatile("{.reg .pred q; setp.ne.u32 q, %2, 0; @q ld.shared.v2.u32 {%0, %1}, [%3];}"
               : "+r"(r0), "+r"(r1) : "r"(p), "r"(a)); EPILOGUE }
__global__ void k_ld_v4(Args a_) { PROLOGUE
  asm volatile("{.reg .pred q; setp.ne.u32 q, %4, 0; @q ld.shared.v4.u32 {%0, %1, %2, %3}, [%5];}"
               : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3) : "r"(p), "r"(a)); EPILOGUE }

// ---- st.shared ------------------------------------------------------------------------------------
__global__ void k_st_u8(Args a_) { PROLOGUE
  asm volatile("{.reg .pred q; setp.ne.u32 q, %0, 0; @q st.shared.u8 [%1], %2;}" :: "r"(p), "r"(a), "r"(r0) : "memory"); EPILOGUE }
__global__ void k_st_u16(Args a_) { PROLOGUE
  asm volatile("{.reg .pred q; setp.ne.u32 q, %0, 0; @q st.shared.u16 [%1], %2;}" :: "r"(p), "r"(a), "r"(r0) : "memory"); EPILOGUE }
__global__ void k_st_u32(Args a_) { PROLOGUE
  asm volatile("{.reg .pred q; setp.ne.u32 q, %0, 0; @q st.shared.u32 [%1], %2;}" :: "r"(p), "r"(a), "r"(r0) : "memory"); EPILOGUE }
__global__ void k_st_v2(Args a_) { PROLOGUE
  asm volatile("{.reg .pred q; setp.ne.u32 q, %0, 0; @q st.shared.v2.u32 [%1], {%2, %3};}" :: "r"(p), "r"(a), "r"(r0), "r"(r1) : "memory"); EPILOGUE }
__global__ void k_st_v4(Args a_) { PROLOGUE
  asm volatile("{.reg .pred q; setp.ne.u32 q, %0, 0; @q st.shared.v4.u32 [%1], {%2, %3, %4, %5};}" :: "r"(p), "r"(a), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory"); EPILOGUE }

// ---- atom.shared ----------------------------------------------------------------------------------
__global__ void k_atom_add_u32(Args a_) { PROLOGUE
  asm volatile(PRED("atom.shared.add.u32 %0, [%2], 1;") : "+r"(r0) : "r"(p), "r"(a) : "memory"); EPILOGUE }

// ---- ldmatrix / stmatrix (all lanes) ---------------------------------------------------------------
__global__ void k_ldsm_x1(Args a_) { PROLOGUE
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(a)); EPILOGUE }
__global__ void k_ldsm_x2(Args a_) { PROLOGUE
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a)); EPILOGUE }
__global__ void k_ldsm_x4(Args a_) { PROLOGUE
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a)); EPILOGUE }
__global__ void k_ldsm_x1_t(Args a_) { PROLOGUE
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(a)); EPILOGUE }
__global__ void k_ldsm_x2_t(Args a_) { PROLOGUE
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a)); EPILOGUE }
__global__ void k_ldsm_x4_t(Args a_) { PROLOGUE
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a)); EPILOGUE }
__global__ void k_stsm_x1(Args a_) { PROLOGUE
  asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(a), "r"(r0) : "memory"); EPILOGUE }
__global__ void k_stsm_x2(Args a_) { PROLOGUE
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" :: "r"(a), "r"(r0), "r"(r1) : "memory"); EPILOGUE }
__global__ void k_stsm_x4(Args a_) { PROLOGUE
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" :: "r"(a), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory"); EPILOGUE }
__global__ void k_stsm_x1_t(Args a_) { PROLOGUE
  asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};" :: "r"(a), "r"(r0) : "memory"); EPILOGUE }
__global__ void k_stsm_x2_t(Args a_) { PROLOGUE
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" :: "r"(a), "r"(r0), "r"(r1) : "memory"); EPILOGUE }
__global__ void k_stsm_x4_t(Args a_) { PROLOGUE
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" :: "r"(a), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory"); EPILOGUE }

// ---- cp.async (global -> shared) -------------------------------------------------------------------
#define CPASYNC(name, kind, size)                                                                    \
  __global__ void name(Args a_) { PROLOGUE                                                            \
    const unsigned char *src = a_.gsrc + 16 * lane;                                                   \
    asm volatile("{.reg .pred q; setp.ne.u32 q, %0, 0; @q cp.async." kind ".shared.global [%1], [%2], " #size ";}" \
                 :: "r"(p), "r"(a), "l"(src) : "memory");                                             \
    asm volatile("cp.async.commit_group;\ncp.async.wait_all;" ::: "memory");                          \
    EPILOGUE }
CPASYNC(k_cpca_4, "ca", 4)
CPASYNC(k_cpca_8, "ca", 8)
CPASYNC(k_cpca_16, "ca", 16)
CPASYNC(k_cpcg_16, "cg", 16)

// The same copies with the global source offset of each lane given too (the source layout decides how
// the fill into shared memory is grouped).
#define CPASYNC_SRC(name, kind, size)                                                                \
  __global__ void name(Args a_) { PROLOGUE                                                            \
    const unsigned char *src = a_.gsrc + a_.src[lane];                                                \
    asm volatile("{.reg .pred q; setp.ne.u32 q, %0, 0; @q cp.async." kind ".shared.global [%1], [%2], " #size ";}" \
                 :: "r"(p), "r"(a), "l"(src) : "memory");                                             \
    asm volatile("cp.async.commit_group;\ncp.async.wait_all;" ::: "memory");                         \
    EPILOGUE }
CPASYNC_SRC(k_cpca_4_src, "ca", 4)
CPASYNC_SRC(k_cpca_8_src, "ca", 8)
CPASYNC_SRC(k_cpca_16_src, "ca", 16)

// A kernel with no shared-memory instruction at all: the per-kernel baseline of every counter.
__global__ void k_none(Args a_) {
  unsigned lane = threadIdx.x;
  a_.out[lane] = a_.addr[lane] + a_.act[lane];
}

typedef void (*Kern)(Args);
struct Entry { const char *name; Kern k; };
static const Entry kTable[] = {
  {"k_none", k_none},
  {"k_ld_u8", k_ld_u8}, {"k_ld_u16", k_ld_u16}, {"k_ld_u32", k_ld_u32}, {"k_ld_v2", k_ld_v2}, {"k_ld_v4", k_ld_v4},
  {"k_st_u8", k_st_u8}, {"k_st_u16", k_st_u16}, {"k_st_u32", k_st_u32}, {"k_st_v2", k_st_v2}, {"k_st_v4", k_st_v4},
  {"k_atom_add_u32", k_atom_add_u32},
  {"k_ldsm_x1", k_ldsm_x1}, {"k_ldsm_x2", k_ldsm_x2}, {"k_ldsm_x4", k_ldsm_x4},
  {"k_ldsm_x1_t", k_ldsm_x1_t}, {"k_ldsm_x2_t", k_ldsm_x2_t}, {"k_ldsm_x4_t", k_ldsm_x4_t},
  {"k_stsm_x1", k_stsm_x1}, {"k_stsm_x2", k_stsm_x2}, {"k_stsm_x4", k_stsm_x4},
  {"k_stsm_x1_t", k_stsm_x1_t}, {"k_stsm_x2_t", k_stsm_x2_t}, {"k_stsm_x4_t", k_stsm_x4_t},
  {"k_cpca_4", k_cpca_4}, {"k_cpca_8", k_cpca_8}, {"k_cpca_16", k_cpca_16}, {"k_cpcg_16", k_cpcg_16},
  {"k_cpca_4_src", k_cpca_4_src}, {"k_cpca_8_src", k_cpca_8_src}, {"k_cpca_16_src", k_cpca_16_src},
};

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s patterns.txt\n", argv[0]); return 2; }
  FILE *f = fopen(argv[1], "r");
  if (!f) { perror(argv[1]); return 2; }
  unsigned *d_addr, *d_act, *d_out, *d_soff; unsigned char *d_src;
  CK(cudaMalloc(&d_addr, 32 * 4)); CK(cudaMalloc(&d_act, 32 * 4)); CK(cudaMalloc(&d_out, 32 * 4));
  CK(cudaMalloc(&d_soff, 32 * 4));
  CK(cudaMalloc(&d_src, GSRC_BYTES)); CK(cudaMemset(d_src, 0x5a, GSRC_BYTES));
  char kname[64]; unsigned mask; int n = 0;
  while (fscanf(f, "%63s %x", kname, &mask) == 2) {
    unsigned addr[32], act[32], soff[32];
    for (int i = 0; i < 32; i++) {
      if (fscanf(f, "%u", &addr[i]) != 1) { fprintf(stderr, "bad line %d\n", n); return 2; }
      if (addr[i] >= SMEM_BYTES) { fprintf(stderr, "line %d: address %u out of range\n", n, addr[i]); return 2; }
      act[i] = (mask >> i) & 1u;
      soff[i] = 16 * i;
    }
    size_t kl = strlen(kname);
    if (kl > 4 && !strcmp(kname + kl - 4, "_src"))
      for (int i = 0; i < 32; i++)
        if (fscanf(f, "%u", &soff[i]) != 1 || soff[i] + 16 > GSRC_BYTES) { fprintf(stderr, "bad src, line %d\n", n); return 2; }
    Kern k = nullptr;
    for (const Entry &e : kTable) if (!strcmp(e.name, kname)) k = e.k;
    if (!k) { fprintf(stderr, "unknown kernel %s\n", kname); return 2; }
    CK(cudaMemcpy(d_addr, addr, sizeof addr, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_act, act, sizeof act, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_soff, soff, sizeof soff, cudaMemcpyHostToDevice));
    Args a{d_addr, d_act, d_out, d_src, d_soff};
    k<<<1, 32>>>(a);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    n++;
  }
  printf("launched %d patterns\n", n);
  return 0;
}
