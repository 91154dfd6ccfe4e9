// Indirect control flow as nvcc compiles it: function-pointer tables, virtual calls, switches, and a
// CUTLASS-style "invalid control path" branch that ends in brkpt and is never taken.
#include <cstdio>

typedef float (*unary_t)(float, int);
__device__ __noinline__ float op_scale(float x, int k) { return x * 2.0f + k; }
__device__ __noinline__ float op_sub(float x, int k) { return x - k; }
__device__ __noinline__ float op_square(float x, int k) { return x * x + 0.25f; }
__device__ __noinline__ float op_rsqrt(float x, int k) { return rsqrtf(fabsf(x) + 1.0f) * k; }
__device__ unary_t op_table[4] = {op_scale, op_sub, op_square, op_rsqrt};

// a function pointer chosen per thread from a table in global memory
extern "C" __global__ void fptr_table(const float* x, const int* sel, float* o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unary_t f = op_table[sel[i] & 3];
    o[i] = f(x[i], i & 7);
  }
}

// a function pointer passed down through a non-inlined helper, applied in a loop
__device__ __noinline__ float apply_n(unary_t f, float x, int times) {
  for (int t = 0; t < times; ++t) x = f(x, t);
  return x;
}
extern "C" __global__ void fptr_loop(const float* x, const int* sel, float* o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unary_t f = (sel[i] & 1) ? op_sub : op_scale;
    o[i] = apply_n(f, x[i], (sel[i] >> 1) & 3);
  }
}

// virtual calls through vtables in global memory, objects in local memory
struct Shape {
  __device__ virtual float area(float s) const = 0;
  __device__ virtual int sides() const { return 0; }
};
struct Square : Shape {
  float k;
  __device__ Square(float k) : k(k) {}
  __device__ float area(float s) const override { return k * s * s; }
  __device__ int sides() const override { return 4; }
};
struct Circle : Shape {
  int r;
  __device__ Circle(int r) : r(r) {}
  __device__ float area(float s) const override { return 3.14159265f * (s + r) * (s + r); }
};
struct Tri : Square {
  __device__ Tri(float k) : Square(k) {}
  __device__ float area(float s) const override { return 0.5f * Square::area(s); }
  __device__ int sides() const override { return 3; }
};
extern "C" __global__ void virtual_calls(const float* x, const int* sel, float* o, int* sides, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  Square sq(1.5f);
  Circle ci(i & 3);
  Tri tr(0.75f);
  if (i < n) {
    const Shape* s;
    switch (sel[i] % 3) { case 0: s = &sq; break; case 1: s = &ci; break; default: s = &tr; }
    o[i] = s->area(x[i]);
    sides[i] = s->sides();
  }
}

// a dense switch
extern "C" __global__ void dense_switch(const float* x, const int* sel, float* o, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i], r;
  switch (sel[i] & 15) {
    case 0: r = v + 1; break;
    case 1: r = v * 3; break;
    case 2: r = v - 7; break;
    case 3: r = v * v; break;
    case 4: r = -v; break;
    case 5: r = v * 0.5f; break;
    case 6: r = v + v * v; break;
    case 7: r = 1.0f / v; break;
    case 8: r = v - 1; break;
    case 9: r = v * 9; break;
    case 11: r = __fsqrt_rn(fabsf(v)); break;
    default: r = 42.0f;
  }
  o[i] = r;
}

// CUTLASS's pattern: a dispatch whose impossible arm prints, asserts and executes brkpt; never taken here
__device__ __forceinline__ void invalid_control_path(const char* what) {
  printf("%s\n", what);
  __brkpt();
}
template <int Mode>
__device__ float epilogue(float acc, float c) {
  if constexpr (Mode == 0) return acc;
  else if constexpr (Mode == 1) return acc + c;
  else return fmaxf(acc + c, 0.0f);
}
extern "C" __global__ void brkpt_guarded(const float* a, const float* c, float* o, int n, int mode) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int k = 0; k < 8; ++k) acc = fmaf(a[(i * 8 + k) % n], a[(k * 13 + i) % n], acc);
  float r;
  switch (mode) {
    case 0: r = epilogue<0>(acc, c[i]); break;
    case 1: r = epilogue<1>(acc, c[i]); break;
    case 2: r = epilogue<2>(acc, c[i]); break;
    default: invalid_control_path("invalid epilogue mode"); r = 0.0f;
  }
  if (blockDim.x % 32 != 0) invalid_control_path("block size must be a multiple of 32");
  o[i] = r;
}
