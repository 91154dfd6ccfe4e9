// nvcc -ptx -arch=sm_90 spin.cu -o tests/data/kernels/spin.ptx: spin-waits that finish on the H100 (independent
// thread scheduling) and one that never can (tests/test_robust.py).
// lanes 1..31 spin on a shared flag that lane 0 of the same warp sets
extern "C" __global__ void spin_lanes(int *out) {
    __shared__ volatile int flag;
    int lane = threadIdx.x;
    if (lane == 0) flag = 0;
    __syncwarp();
    if (lane != 0) {
        while (flag == 0) { }
        out[lane] = flag + lane;
    } else {
        out[0] = 7;
        flag = 42;
    }
}

// warp 0 spins on a global flag that warp 1 sets after its work (no barrier between them)
extern "C" __global__ void spin_warps(int *out, volatile int *flag) {
    int t = threadIdx.x;
    if (t < 32) {
        while (*flag == 0) { }
        out[t] = out[t + 32] + 1;
    } else {
        out[t] = t * 3;
        __threadfence();
        if (t == 32) *flag = 1;
    }
}

// the waiting warp naps between polls
extern "C" __global__ void spin_nanosleep(int *out, int *flag) {
    int t = threadIdx.x;
    if (t < 32) {
        while (atomicAdd(flag, 0) == 0) { __nanosleep(100); }
        out[t] = 1;
    } else {
        out[t] = 2;
        if (t == 32) atomicExch(flag, 1);
    }
}

// acquire loads: a flag published with release semantics
extern "C" __global__ void spin_acquire(int *out, int *flag) {
    int t = threadIdx.x;
    if (t >= 32) {
        int v;
        do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag)); } while (v == 0);
        out[t] = out[t - 32] * 2;
    } else {
        out[t] = t + 100;
        if (t == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(flag), "r"(1));
    }
}

// nobody sets the flag: a true deadlock
extern "C" __global__ void spin_forever(int *out, volatile int *flag) {
    int t = threadIdx.x;
    if (t % 32 != 5) {
        while (*flag == 0) { }
    }
    out[t] = 1;
}
