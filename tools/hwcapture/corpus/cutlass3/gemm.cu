// CUTLASS 3 CollectiveBuilder GEMMs for the corpus (tools/hwcapture/corpus/cutlass3.py).
//
// One translation unit per kernel: -DCASE=<n> picks the kernel (the table below). The host program
//   1. runs the GEMM the ordinary CUTLASS way (GemmUniversalAdapter) and checks it against a host reference;
//   2. records the kernel's Params (the __grid_constant__ argument: device pointers and the driver's tensor
//      maps), its grid, block, cluster and dynamic shared memory, and every buffer's device address and bytes;
//   3. loads the PTX of this same translation unit (argv[1]) through the driver and launches it twice with
//      exactly those Params, from freshly reset buffers, and records the outputs (argv[2]: a directory).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <string>
#include <vector>
#include <fstream>
#include <sstream>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/numeric_types.h"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/util/packed_stride.hpp"

using namespace cute;

#define CHECK(x) do { auto _e = (x); if (_e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(_e)); exit(2); } } while (0)

using RowMajor = cutlass::layout::RowMajor;
using ColMajor = cutlass::layout::ColumnMajor;
namespace kern = cutlass::gemm;
namespace epi = cutlass::epilogue;

#ifndef CASE
#define CASE 1
#endif


#if CASE == 1   // warp-specialised, f16 x f16 -> f32
#define NAME "ws_f16_f32out"
using EA = cutlass::half_t; using EB = cutlass::half_t; using EC = float; using ED = float;
using LA = RowMajor; using LB = ColMajor; using LC = RowMajor;
using TileMNK = Shape<_128, _128, _64>; using Cluster = Shape<_1, _1, _1>;
using KSched = kern::KernelTmaWarpSpecialized; using ESched = epi::TmaWarpSpecialized;
constexpr int M = 256, N = 256, K = 256; constexpr float ALPHA = 1.0f, BETA = 0.5f;
#elif CASE == 2 // ping-pong, bf16 (A M-major) -> bf16
#define NAME "pingpong_bf16"
using EA = cutlass::bfloat16_t; using EB = cutlass::bfloat16_t; using EC = cutlass::bfloat16_t; using ED = cutlass::bfloat16_t;
using LA = ColMajor; using LB = ColMajor; using LC = RowMajor;
using TileMNK = Shape<_64, _128, _64>; using Cluster = Shape<_1, _1, _1>;
using KSched = kern::KernelTmaWarpSpecializedPingpong; using ESched = epi::TmaWarpSpecialized;
constexpr int M = 256, N = 256, K = 256; constexpr float ALPHA = 1.0f, BETA = 1.0f;
#elif CASE == 3 // cooperative, f16 -> f16
#define NAME "cooperative_f16"
using EA = cutlass::half_t; using EB = cutlass::half_t; using EC = cutlass::half_t; using ED = cutlass::half_t;
using LA = RowMajor; using LB = ColMajor; using LC = ColMajor;
using TileMNK = Shape<_128, _128, _64>; using Cluster = Shape<_1, _1, _1>;
using KSched = kern::KernelTmaWarpSpecializedCooperative; using ESched = epi::TmaWarpSpecializedCooperative;
constexpr int M = 256, N = 256, K = 512; constexpr float ALPHA = 0.75f, BETA = 0.25f;
#elif CASE == 4 // 2x1 cluster, TMA multicast, cooperative
#define NAME "cluster2x1_f16"
using EA = cutlass::half_t; using EB = cutlass::half_t; using EC = cutlass::half_t; using ED = cutlass::half_t;
using LA = RowMajor; using LB = ColMajor; using LC = RowMajor;
using TileMNK = Shape<_128, _128, _64>; using Cluster = Shape<_2, _1, _1>;
using KSched = kern::KernelTmaWarpSpecializedCooperative; using ESched = epi::TmaWarpSpecializedCooperative;
constexpr int M = 256, N = 256, K = 256; constexpr float ALPHA = 1.0f, BETA = 0.5f;
#elif CASE == 5 // 1x2 cluster, TMA multicast, warp-specialised
#define NAME "cluster1x2_f16"
using EA = cutlass::half_t; using EB = cutlass::half_t; using EC = cutlass::half_t; using ED = cutlass::half_t;
using LA = RowMajor; using LB = RowMajor; using LC = RowMajor;
using TileMNK = Shape<_128, _128, _64>; using Cluster = Shape<_1, _2, _1>;
using KSched = kern::KernelTmaWarpSpecialized; using ESched = epi::TmaWarpSpecialized;
constexpr int M = 256, N = 256, K = 256; constexpr float ALPHA = 1.0f, BETA = 0.5f;
#elif CASE == 6 // fp8 e4m3 x e4m3 -> bf16, cooperative (two-level accumulation)
#define NAME "fp8_e4m3_cooperative"
using EA = cutlass::float_e4m3_t; using EB = cutlass::float_e4m3_t; using EC = cutlass::bfloat16_t; using ED = cutlass::bfloat16_t;
using LA = RowMajor; using LB = ColMajor; using LC = RowMajor;
using TileMNK = Shape<_128, _128, _128>; using Cluster = Shape<_1, _1, _1>;
using KSched = kern::KernelTmaWarpSpecializedCooperative; using ESched = epi::TmaWarpSpecializedCooperative;
constexpr int M = 256, N = 256, K = 512; constexpr float ALPHA = 1.0f, BETA = 0.5f;
#elif CASE == 7 // fp8 e5m2 x e4m3 -> f16, ping-pong, fast accumulation
#define NAME "fp8_e5m2_e4m3_pingpong_fastaccum"
using EA = cutlass::float_e5m2_t; using EB = cutlass::float_e4m3_t; using EC = cutlass::half_t; using ED = cutlass::half_t;
using LA = RowMajor; using LB = ColMajor; using LC = RowMajor;
using TileMNK = Shape<_64, _128, _128>; using Cluster = Shape<_1, _1, _1>;
using KSched = kern::KernelTmaWarpSpecializedPingpongFP8FastAccum; using ESched = epi::TmaWarpSpecialized;
constexpr int M = 256, N = 256, K = 512; constexpr float ALPHA = 1.0f, BETA = 0.5f;
#elif CASE == 8 // stream-K, cooperative, f16 -> f32: 2 workers over 3 tiles of 16 k-blocks (24 k-blocks each)
#define NAME "streamk_f16"
using EA = cutlass::half_t; using EB = cutlass::half_t; using EC = float; using ED = float;
using LA = RowMajor; using LB = ColMajor; using LC = RowMajor;
using TileMNK = Shape<_128, _128, _64>; using Cluster = Shape<_1, _1, _1>;
using KSched = kern::KernelTmaWarpSpecializedCooperative; using ESched = epi::TmaWarpSpecializedCooperative;
#define TS_OVERRIDE kern::StreamKScheduler
constexpr int M = 384, N = 128, K = 1024; constexpr float ALPHA = 1.0f, BETA = 0.5f;
// CUTLASS gives a stream-K unit's piece of a tile to a neighbour when it is under 8 k-blocks: 24 k-blocks per
// unit split the middle tile 8 + 8, so the two CTAs share it and fix it up through the workspace
constexpr int SK_SMS = 2;
#define SK_MODE StreamK
#elif CASE == 9 // fused epilogue: ReLU(alpha * acc + beta * C + per-row bias), TMA store
#define NAME "evt_bias_relu_f16"
using EA = cutlass::half_t; using EB = cutlass::half_t; using EC = cutlass::half_t; using ED = cutlass::half_t;
using LA = RowMajor; using LB = ColMajor; using LC = RowMajor;
using TileMNK = Shape<_128, _128, _64>; using Cluster = Shape<_1, _1, _1>;
using KSched = kern::KernelTmaWarpSpecializedCooperative; using ESched = epi::TmaWarpSpecializedCooperative;
#define FUSION epi::fusion::LinCombPerRowBiasEltAct<cutlass::epilogue::thread::ReLu, ED, float, ED, EC, float>
constexpr int M = 256, N = 256, K = 256; constexpr float ALPHA = 1.0f, BETA = 0.5f;
#elif CASE == 10 // split-K in 3 (the stream-K scheduler's split-K mode), cooperative, f16 -> f16
#define NAME "splitk3_f16"
using EA = cutlass::half_t; using EB = cutlass::half_t; using EC = cutlass::half_t; using ED = cutlass::half_t;
using LA = RowMajor; using LB = ColMajor; using LC = RowMajor;
using TileMNK = Shape<_128, _128, _64>; using Cluster = Shape<_1, _1, _1>;
using KSched = kern::KernelTmaWarpSpecializedCooperative; using ESched = epi::TmaWarpSpecializedCooperative;
#define TS_OVERRIDE kern::StreamKScheduler
constexpr int M = 256, N = 256, K = 768; constexpr float ALPHA = 1.0f, BETA = 0.5f;
#define SK_MODE SplitK
#define SK_SPLITS 3
#endif

#ifdef TS_OVERRIDE
using Sched = TS_OVERRIDE;
#else
using Sched = void;
#endif

using Acc = float;
constexpr int AlA = 128 / cutlass::sizeof_bits<EA>::value;
constexpr int AlB = 128 / cutlass::sizeof_bits<EB>::value;
constexpr int AlC = 128 / cutlass::sizeof_bits<EC>::value;
constexpr int AlD = 128 / cutlass::sizeof_bits<ED>::value;

#ifdef FUSION
using Fusion = FUSION;
#else
using Fusion = epi::fusion::LinearCombination<ED, float, EC, float>;
#endif

using CollectiveEpilogue = typename epi::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileMNK, Cluster, epi::collective::EpilogueTileAuto,
    Acc, float, EC, LC, AlC, ED, LC, AlD, ESched, Fusion>::CollectiveOp;

using CollectiveMainloop = typename kern::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, EA, LA, AlA, EB, LB, AlB, Acc, TileMNK, Cluster,
    kern::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    KSched>::CollectiveOp;

using GemmKernel = kern::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue, Sched>;
using Gemm = kern::device::GemmUniversalAdapter<GemmKernel>;

static uint64_t rng_state = 0x9E3779B97F4A7C15ull ^ (uint64_t)CASE;
static double urand() {   // in [-1, 1)
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return ((rng_state >> 11) * (1.0 / 9007199254740992.0)) * 2.0 - 1.0;
}

struct Buf { std::string name, dtype; void* dev; size_t size; std::vector<uint8_t> init; bool output; };

template <class T> const char* dtype_name();
template <> const char* dtype_name<cutlass::half_t>() { return "float16"; }
template <> const char* dtype_name<cutlass::bfloat16_t>() { return "bfloat16"; }
template <> const char* dtype_name<float>() { return "float32"; }
template <> const char* dtype_name<cutlass::float_e4m3_t>() { return "float8_e4m3fn"; }
template <> const char* dtype_name<cutlass::float_e5m2_t>() { return "float8_e5m2"; }

template <class T>
static std::vector<T> random_vec(size_t n, double scale) {
  std::vector<T> v(n);
  for (auto& x : v) x = T(float(urand() * scale));
  return v;
}

template <class T>
static Buf make_buf(const char* name, std::vector<T> const& host, bool output) {
  Buf b{name, dtype_name<T>(), nullptr, host.size() * sizeof(T), {}, output};
  b.init.resize(b.size);
  memcpy(b.init.data(), host.data(), b.size);
  CHECK(cudaMalloc(&b.dev, b.size));
  CHECK(cudaMemcpy(b.dev, host.data(), b.size, cudaMemcpyHostToDevice));
  return b;
}

static void reset(std::vector<Buf>& bufs) {
  for (auto& b : bufs) CHECK(cudaMemcpy(b.dev, b.init.data(), b.size, cudaMemcpyHostToDevice));
}

static std::vector<uint8_t> fetch(Buf const& b) {
  std::vector<uint8_t> v(b.size);
  CHECK(cudaMemcpy(v.data(), b.dev, b.size, cudaMemcpyDeviceToHost));
  return v;
}

static void write_file(std::string const& path, const void* p, size_t n) {
  FILE* f = fopen(path.c_str(), "wb"); fwrite(p, 1, n, f); fclose(f);
}

template <class PFN> static PFN driver(const char* name) {
  void* fn = nullptr; cudaDriverEntryPointQueryResult q;
  CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q));
  if (!fn) { fprintf(stderr, "no driver entry %s\n", name); exit(2); }
  return reinterpret_cast<PFN>(fn);
}

#define CU(x) do { CUresult _r = (x); if (_r != CUDA_SUCCESS) { fprintf(stderr, "%s:%d %s: CUresult %d\n", \
  __FILE__, __LINE__, #x, (int)_r); exit(3); } } while (0)

int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: %s KERNEL.ptx OUTDIR\n", argv[0]); return 1; }
  std::string outdir = argv[2];
  // A is M x K, B is N x K (CUTLASS's convention: B given as N x K with its own layout), C and D are M x N
  auto hA = random_vec<EA>(size_t(M) * K, std::is_same_v<EA, cutlass::half_t> || std::is_same_v<EA, cutlass::bfloat16_t> ? 1.0 : 4.0);
  auto hB = random_vec<EB>(size_t(N) * K, std::is_same_v<EB, cutlass::half_t> || std::is_same_v<EB, cutlass::bfloat16_t> ? 1.0 : 4.0);
  auto hC = random_vec<EC>(size_t(M) * N, 2.0);
  std::vector<ED> hD(size_t(M) * N);
  for (auto& x : hD) x = ED(-12345.0f);   // a sentinel: every element must be written
  std::vector<Buf> bufs;
  bufs.push_back(make_buf("a", hA, false));
  bufs.push_back(make_buf("b", hB, false));
  bufs.push_back(make_buf("c", hC, false));
  bufs.push_back(make_buf("d", hD, true));
  std::vector<ED> hbias;
#ifdef FUSION
  {
    hbias = random_vec<ED>(M, 1.0);
    bufs.push_back(make_buf("bias", hbias, false));
  }
#endif

  using StrideA = typename Gemm::GemmKernel::StrideA;
  using StrideB = typename Gemm::GemmKernel::StrideB;
  using StrideC = typename Gemm::GemmKernel::StrideC;
  using StrideD = typename Gemm::GemmKernel::StrideD;
  auto sA = cutlass::make_cute_packed_stride(StrideA{}, make_shape(M, K, 1));
  auto sB = cutlass::make_cute_packed_stride(StrideB{}, make_shape(N, K, 1));
  auto sC = cutlass::make_cute_packed_stride(StrideC{}, make_shape(M, N, 1));
  auto sD = cutlass::make_cute_packed_stride(StrideD{}, make_shape(M, N, 1));

  cutlass::KernelHardwareInfo hw;
  hw.device_id = 0;
  hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);

  typename Gemm::Arguments args{kern::GemmUniversalMode::kGemm, {M, N, K, 1},
      {(EA*)bufs[0].dev, sA, (EB*)bufs[1].dev, sB},
      {{}, (EC*)bufs[2].dev, sC, (ED*)bufs[3].dev, sD}, hw};
  args.epilogue.thread.alpha = ALPHA;
  args.epilogue.thread.beta = BETA;
#ifdef FUSION
  args.epilogue.thread.bias_ptr = (ED*)bufs[4].dev;
#endif
#ifdef SK_MODE
  using SKParams = kern::kernel::detail::PersistentTileSchedulerSm90StreamKParams;
#ifdef SK_SPLITS
  args.scheduler.splits = SK_SPLITS;
#else
  args.hw_info.sm_count = SK_SMS;   // fewer workers than tiles, and not a multiple: CTAs share tiles
  args.scheduler.raster_order = SKParams::RasterOrderOptions::AlongN;   // one group of units over every tile
#endif
  args.scheduler.decomposition_mode = SKParams::DecompositionMode::SK_MODE;
  args.scheduler.reduction_mode = SKParams::ReductionMode::Deterministic;
#endif

  Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) { fprintf(stderr, "cannot implement\n"); return 4; }
  size_t ws_size = Gemm::get_workspace_size(args);
  void* ws = nullptr;
  if (ws_size) CHECK(cudaMalloc(&ws, ws_size));
  if (gemm.initialize(args, ws) != cutlass::Status::kSuccess) { fprintf(stderr, "initialize failed\n"); return 5; }
  CHECK(cudaDeviceSynchronize());
  if (ws_size) {   // the workspace as initialize() left it
    Buf w{"workspace", "uint8", ws, ws_size, std::vector<uint8_t>(ws_size), true};
    CHECK(cudaMemcpy(w.init.data(), ws, ws_size, cudaMemcpyDeviceToHost));
    bufs.push_back(w);
  }
  auto const& params = gemm.params();
  std::vector<uint8_t> pbytes(sizeof(params));
  memcpy(pbytes.data(), &params, sizeof(params));
  dim3 grid = GemmKernel::get_grid_shape(params);
  dim3 block = GemmKernel::get_block_shape();
  int smem = GemmKernel::SharedStorageSize;
  int cx = size<0>(Cluster{}), cy = size<1>(Cluster{});

  // 1. the ordinary CUTLASS run (SASS built by nvcc), checked against a host reference
  if (gemm.run() != cutlass::Status::kSuccess) { fprintf(stderr, "run failed\n"); return 6; }
  CHECK(cudaDeviceSynchronize());
  auto d_cutlass = fetch(bufs[3]);
  double maxerr = 0, maxref = 0;
  {
    const ED* got = reinterpret_cast<const ED*>(d_cutlass.data());
    for (int m = 0; m < M; ++m) for (int n = 0; n < N; ++n) {
      double acc = 0;
      for (int k = 0; k < K; ++k) {
        size_t ia = std::is_same_v<LA, RowMajor> ? size_t(m) * K + k : size_t(k) * M + m;
        size_t ib = std::is_same_v<LB, ColMajor> ? size_t(n) * K + k : size_t(k) * N + n;
        acc += double(float(hA[ia])) * double(float(hB[ib]));
      }
      size_t ic = std::is_same_v<LC, RowMajor> ? size_t(m) * N + n : size_t(n) * M + m;
      double ref = ALPHA * acc + BETA * double(float(hC[ic]));
      if (!hbias.empty()) { ref += double(float(hbias[m])); ref = ref > 0 ? ref : 0; }
      maxerr = std::max(maxerr, std::fabs(ref - double(float(got[ic]))));
      maxref = std::max(maxref, std::fabs(ref));
    }
  }
  bool sane = maxerr <= 0.02 * maxref + 1e-3;

  // 2. the PTX of this translation unit, loaded by the driver and launched with the recorded Params
  std::ifstream pf(argv[1]);
  std::stringstream ss; ss << pf.rdbuf();
  std::string ptx = ss.str();
  size_t e = ptx.find(".entry ");
  std::string entry;
  while (e != std::string::npos) {
    size_t s = e + 7, t = ptx.find('(', s);
    std::string nm = ptx.substr(s, t - s);
    while (!nm.empty() && isspace(nm.back())) nm.pop_back();
    if (nm.find("device_kernel") != std::string::npos) { entry = nm; break; }
    e = ptx.find(".entry ", t);
  }
  if (entry.empty()) { fprintf(stderr, "no device_kernel entry in the PTX\n"); return 7; }
  auto cuModuleLoadData_ = driver<PFN_cuModuleLoadData_v2000>("cuModuleLoadData");
  auto cuModuleGetFunction_ = driver<PFN_cuModuleGetFunction_v2000>("cuModuleGetFunction");
  auto cuFuncSetAttribute_ = driver<PFN_cuFuncSetAttribute_v9000>("cuFuncSetAttribute");
  auto cuLaunchKernelEx_ = driver<PFN_cuLaunchKernelEx_v11060>("cuLaunchKernelEx");
  CUmodule mod; CUfunction fn;
  CU(cuModuleLoadData_(&mod, ptx.c_str()));
  CU(cuModuleGetFunction_(&fn, mod, entry.c_str()));
  CU(cuFuncSetAttribute_(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
  std::vector<std::vector<uint8_t>> runs[2];
  for (int r = 0; r < 2; ++r) {
    reset(bufs);
    CHECK(cudaDeviceSynchronize());
    CUlaunchConfig cfg{};
    cfg.gridDimX = grid.x; cfg.gridDimY = grid.y; cfg.gridDimZ = grid.z;
    cfg.blockDimX = block.x; cfg.blockDimY = block.y; cfg.blockDimZ = block.z;
    cfg.sharedMemBytes = smem;
    CUlaunchAttribute at[1];
    at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at[0].value.clusterDim.x = cx; at[0].value.clusterDim.y = cy; at[0].value.clusterDim.z = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    void* kp[1] = {pbytes.data()};
    CU(cuLaunchKernelEx_(&cfg, fn, kp, nullptr));
    CHECK(cudaDeviceSynchronize());
    for (auto& b : bufs) runs[r].push_back(fetch(b));
  }
  bool agree = true;
  for (size_t i = 0; i < bufs.size(); ++i) {
    if (runs[0][i] != runs[1][i]) {
      agree = false;
      size_t nd = 0; for (size_t j = 0; j < runs[0][i].size(); ++j) nd += runs[0][i][j] != runs[1][i][j];
      fprintf(stderr, "%s: buffer %s differs between the two PTX runs in %zu bytes\n", NAME, bufs[i].name.c_str(), nd);
    }
  }
  bool same_as_cutlass = runs[0][3] == d_cutlass;

  // 3. the record
  std::string meta = "{";
  char tmp[16384];   // mangled CUTLASS kernel names run to thousands of characters
  snprintf(tmp, sizeof tmp, "\"name\": \"%s\", \"kernel\": \"%s\", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], "
           "\"cluster\": [%d, %d, 1], \"shared\": %d, \"m\": %d, \"n\": %d, \"k\": %d, \"alpha\": %g, \"beta\": %g, "
           "\"sane\": %s, \"maxerr\": %g, \"maxref\": %g, \"runs_agree\": %s, \"same_as_cutlass_run\": %s, ",
           NAME, entry.c_str(), grid.x, grid.y, grid.z, block.x, block.y, block.z, cx, cy, smem, M, N, K,
           ALPHA, BETA, sane ? "true" : "false", maxerr, maxref, agree ? "true" : "false",
           same_as_cutlass ? "true" : "false");
  meta += tmp;
  meta += "\"params\": \"";
  for (auto b : pbytes) { snprintf(tmp, sizeof tmp, "%02x", b); meta += tmp; }
  meta += "\", \"buffers\": [";
  for (size_t i = 0; i < bufs.size(); ++i) {
    auto& b = bufs[i];
    snprintf(tmp, sizeof tmp, "%s{\"name\": \"%s\", \"dtype\": \"%s\", \"addr\": %llu, \"size\": %zu, \"output\": %s}",
             i ? ", " : "", b.name.c_str(), b.dtype.c_str(), (unsigned long long)b.dev, b.size, b.output ? "true" : "false");
    meta += tmp;
    write_file(outdir + "/" + b.name + ".in", b.init.data(), b.size);
    write_file(outdir + "/" + b.name + ".out", runs[0][i].data(), b.size);
    write_file(outdir + "/" + b.name + ".out2", runs[1][i].data(), b.size);
  }
  meta += "]}\n";
  write_file(outdir + "/meta.json", meta.data(), meta.size());
  printf("%s: grid %u %u %u block %u cluster %dx%d smem %d ws %zu sane %d (maxerr %g of %g) agree %d same_as_cutlass %d\n",
         NAME, grid.x, grid.y, grid.z, block.x, cx, cy, smem, ws_size, sane, maxerr, maxref, agree, same_as_cutlass);
  return 0;
}
