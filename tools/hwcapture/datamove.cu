// Hardware capture of the data-movement instructions that feed the tensor cores:
// ldmatrix / stmatrix (.x1/.x2/.x4, with and without .trans) and cp.async (.ca 4/8/16, .cg 16,
// with src-size or ignore-src). One warp per case; every case has its own shared-memory image.
//
// Usage: datamove VARIANT NCASES BUF_BYTES IN_DIR OUT_DIR
//   inputs  (IN_DIR/VARIANT.*.bin, little endian, written by datamove_capture.py):
//     smem.bin   NCASES*BUF_BYTES   initial shared-memory image of each case
//     addr.bin   NCASES*32 uint32   per-lane shared byte offset (row address / cp.async destination)
//     regs.bin   NCASES*4*32 uint32 stmatrix source registers (register j of lane l at [case][j][l])
//     gsrc.bin   NCASES*GBYTES      cp.async global source image (GBYTES = BUF_BYTES)
//     gaddr.bin  NCASES*32 uint32   cp.async per-lane global byte offset
//     size.bin   NCASES*32 uint32   cp.async src-size (or ignore-src flag)
//   outputs (OUT_DIR/VARIANT.out.bin): ldmatrix: NCASES*4*32 uint32 registers; others: the shared image after.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(2); } } while (0)

__device__ void load_image(uint8_t* sm, const uint8_t* img, int bytes) {
  for (int i = threadIdx.x; i < bytes / 4; i += 32)
    reinterpret_cast<uint32_t*>(sm)[i] = reinterpret_cast<const uint32_t*>(img)[i];
  __syncwarp();
}

__device__ void store_image(uint8_t* out, const uint8_t* sm, int bytes) {
  __syncwarp();
  for (int i = threadIdx.x; i < bytes / 4; i += 32)
    reinterpret_cast<uint32_t*>(out)[i] = reinterpret_cast<const uint32_t*>(sm)[i];
}

template <int N, bool T>
__global__ void k_ldmatrix(const uint8_t* smem_img, const uint32_t* addr, uint32_t* out, int bytes) {
  extern __shared__ __align__(128) uint8_t sm[];
  const int c = blockIdx.x, l = threadIdx.x;
  load_image(sm, smem_img + (size_t)c * bytes, bytes);
  uint32_t a = (uint32_t)__cvta_generic_to_shared(sm) + addr[c * 32 + l];
  uint32_t r0 = 0, r1 = 0, r2 = 0, r3 = 0;
  if (N == 1 && !T) asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(a));
  if (N == 2 && !T) asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a));
  if (N == 4 && !T) asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
  if (N == 1 && T) asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(a));
  if (N == 2 && T) asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a));
  if (N == 4 && T) asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                                : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
  uint32_t* o = out + (size_t)c * 4 * 32;
  o[0 * 32 + l] = r0; o[1 * 32 + l] = r1; o[2 * 32 + l] = r2; o[3 * 32 + l] = r3;
}

template <int N, bool T>
__global__ void k_stmatrix(const uint8_t* smem_img, const uint32_t* addr, const uint32_t* regs, uint8_t* out, int bytes) {
  extern __shared__ __align__(128) uint8_t sm[];
  const int c = blockIdx.x, l = threadIdx.x;
  load_image(sm, smem_img + (size_t)c * bytes, bytes);
  uint32_t a = (uint32_t)__cvta_generic_to_shared(sm) + addr[c * 32 + l];
  const uint32_t* rg = regs + (size_t)c * 4 * 32;
  uint32_t r0 = rg[l], r1 = rg[32 + l], r2 = rg[64 + l], r3 = rg[96 + l];
  if (N == 1 && !T) asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(a), "r"(r0) : "memory");
  if (N == 2 && !T) asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" :: "r"(a), "r"(r0), "r"(r1) : "memory");
  if (N == 4 && !T) asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                                 :: "r"(a), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
  if (N == 1 && T) asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};" :: "r"(a), "r"(r0) : "memory");
  if (N == 2 && T) asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" :: "r"(a), "r"(r0), "r"(r1) : "memory");
  if (N == 4 && T) asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
                                :: "r"(a), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
  store_image(out + (size_t)c * bytes, sm, bytes);
}

// MODE 0: src-size operand; 1: ignore-src predicate (size.bin != 0 means ignore); 2: no extra operand.
template <int CA, int SZ, int MODE>
__global__ void k_cp_async(const uint8_t* smem_img, const uint32_t* addr, const uint8_t* gsrc, const uint32_t* gaddr,
                           const uint32_t* size, uint8_t* out, int bytes) {
  extern __shared__ __align__(128) uint8_t sm[];
  const int c = blockIdx.x, l = threadIdx.x;
  load_image(sm, smem_img + (size_t)c * bytes, bytes);
  uint32_t d = (uint32_t)__cvta_generic_to_shared(sm) + addr[c * 32 + l];
  const uint8_t* s = gsrc + (size_t)c * bytes + gaddr[c * 32 + l];
  uint32_t n = size[c * 32 + l];
  if (MODE == 0) {
    if (CA && SZ == 4) asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r"(d), "l"(s), "r"(n) : "memory");
    if (CA && SZ == 8) asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" :: "r"(d), "l"(s), "r"(n) : "memory");
    if (CA && SZ == 16) asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" :: "r"(d), "l"(s), "r"(n) : "memory");
    if (!CA) asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;" :: "r"(d), "l"(s), "r"(n) : "memory");
  } else if (MODE == 1) {
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %2, 0;\n"
                 "cp.async.cg.shared.global [%0], [%1], 16, p; }" :: "r"(d), "l"(s), "r"(n) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global.L2::64B [%0], [%1], 16;" :: "r"(d), "l"(s) : "memory");
  }
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
  store_image(out + (size_t)c * bytes, sm, bytes);
}

static std::vector<uint8_t> slurp(const std::string& path, size_t n) {
  std::vector<uint8_t> v(n);
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) { fprintf(stderr, "cannot open %s\n", path.c_str()); exit(2); }
  if (fread(v.data(), 1, n, f) != n) { fprintf(stderr, "short read %s\n", path.c_str()); exit(2); }
  fclose(f);
  return v;
}

template <class T> static T* up(const std::vector<uint8_t>& v) {
  void* p; CK(cudaMalloc(&p, v.size())); CK(cudaMemcpy(p, v.data(), v.size(), cudaMemcpyHostToDevice));
  return reinterpret_cast<T*>(p);
}

int main(int argc, char** argv) {
  if (argc != 6) { fprintf(stderr, "usage: %s VARIANT NCASES BUF_BYTES IN_DIR OUT_DIR\n", argv[0]); return 2; }
  std::string v = argv[1];
  int nc = atoi(argv[2]), bytes = atoi(argv[3]);
  std::string in = std::string(argv[4]) + "/" + v + ".", outp = std::string(argv[5]) + "/" + v + ".out.bin";
  auto img = up<uint8_t>(slurp(in + "smem.bin", (size_t)nc * bytes));
  auto addr = up<uint32_t>(slurp(in + "addr.bin", (size_t)nc * 32 * 4));
  size_t out_bytes = v.rfind("ldmatrix", 0) == 0 ? (size_t)nc * 4 * 32 * 4 : (size_t)nc * bytes;
  uint8_t* out; CK(cudaMalloc(&out, out_bytes)); CK(cudaMemset(out, 0, out_bytes));
  dim3 g(nc), b(32);
  if (v.rfind("ldmatrix", 0) == 0) {
    uint32_t* o = reinterpret_cast<uint32_t*>(out);
    if (v == "ldmatrix_x1") k_ldmatrix<1, false><<<g, b, bytes>>>(img, addr, o, bytes);
    else if (v == "ldmatrix_x2") k_ldmatrix<2, false><<<g, b, bytes>>>(img, addr, o, bytes);
    else if (v == "ldmatrix_x4") k_ldmatrix<4, false><<<g, b, bytes>>>(img, addr, o, bytes);
    else if (v == "ldmatrix_x1_trans") k_ldmatrix<1, true><<<g, b, bytes>>>(img, addr, o, bytes);
    else if (v == "ldmatrix_x2_trans") k_ldmatrix<2, true><<<g, b, bytes>>>(img, addr, o, bytes);
    else if (v == "ldmatrix_x4_trans") k_ldmatrix<4, true><<<g, b, bytes>>>(img, addr, o, bytes);
    else { fprintf(stderr, "unknown variant %s\n", v.c_str()); return 2; }
  } else if (v.rfind("stmatrix", 0) == 0) {
    auto regs = up<uint32_t>(slurp(in + "regs.bin", (size_t)nc * 4 * 32 * 4));
    if (v == "stmatrix_x1") k_stmatrix<1, false><<<g, b, bytes>>>(img, addr, regs, out, bytes);
    else if (v == "stmatrix_x2") k_stmatrix<2, false><<<g, b, bytes>>>(img, addr, regs, out, bytes);
    else if (v == "stmatrix_x4") k_stmatrix<4, false><<<g, b, bytes>>>(img, addr, regs, out, bytes);
    else if (v == "stmatrix_x1_trans") k_stmatrix<1, true><<<g, b, bytes>>>(img, addr, regs, out, bytes);
    else if (v == "stmatrix_x2_trans") k_stmatrix<2, true><<<g, b, bytes>>>(img, addr, regs, out, bytes);
    else if (v == "stmatrix_x4_trans") k_stmatrix<4, true><<<g, b, bytes>>>(img, addr, regs, out, bytes);
    else { fprintf(stderr, "unknown variant %s\n", v.c_str()); return 2; }
  } else {
    auto gsrc = up<uint8_t>(slurp(in + "gsrc.bin", (size_t)nc * bytes));
    auto gaddr = up<uint32_t>(slurp(in + "gaddr.bin", (size_t)nc * 32 * 4));
    auto size = up<uint32_t>(slurp(in + "size.bin", (size_t)nc * 32 * 4));
    if (v == "cp_async_ca_4") k_cp_async<1, 4, 0><<<g, b, bytes>>>(img, addr, gsrc, gaddr, size, out, bytes);
    else if (v == "cp_async_ca_8") k_cp_async<1, 8, 0><<<g, b, bytes>>>(img, addr, gsrc, gaddr, size, out, bytes);
    else if (v == "cp_async_ca_16") k_cp_async<1, 16, 0><<<g, b, bytes>>>(img, addr, gsrc, gaddr, size, out, bytes);
    else if (v == "cp_async_cg_16") k_cp_async<0, 16, 0><<<g, b, bytes>>>(img, addr, gsrc, gaddr, size, out, bytes);
    else if (v == "cp_async_cg_16_ignore_src") k_cp_async<0, 16, 1><<<g, b, bytes>>>(img, addr, gsrc, gaddr, size, out, bytes);
    else if (v == "cp_async_ca_16_full") k_cp_async<1, 16, 2><<<g, b, bytes>>>(img, addr, gsrc, gaddr, size, out, bytes);
    else { fprintf(stderr, "unknown variant %s\n", v.c_str()); return 2; }
  }
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<uint8_t> h(out_bytes);
  CK(cudaMemcpy(h.data(), out, out_bytes, cudaMemcpyDeviceToHost));
  FILE* f = fopen(outp.c_str(), "wb");
  fwrite(h.data(), 1, out_bytes, f);
  fclose(f);
  return 0;
}
