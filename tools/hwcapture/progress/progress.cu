// Spin loops whose registers change, inside one warp: lanes 1-31 wait for a flag that lane 0 sets only
// after the branch that splits them (past the point where the two paths meet). Independent thread
// scheduling must run lane 0 for these kernels to end. Each block is one independent trial.
// out[block * 32 + lane]: what each lane saw; tries[block * 32 + lane]: how many times it polled.

// 1. counting tries while polling a volatile shared flag
extern "C" __global__ void spin_count(unsigned *out, unsigned *tries) {
    __shared__ volatile unsigned flag;
    __shared__ unsigned data;
    unsigned lane = threadIdx.x;
    if (lane == 0) { flag = 0; data = 0; }
    __syncthreads();
    unsigned n = 0;
    if (lane != 0) {
        while (flag == 0) n++;
    }
    if (lane == 0) { data = 1234 + blockIdx.x; __threadfence_block(); flag = 1; }
    out[blockIdx.x * 32 + lane] = lane == 0 ? data : data + lane;
    tries[blockIdx.x * 32 + lane] = n;
}

// 2. polling a global flag with nanosleep backoff (doubling, capped)
extern "C" __global__ void spin_backoff(unsigned *out, unsigned *tries, volatile unsigned *gflag) {
    unsigned lane = threadIdx.x;
    unsigned n = 0, ns = 8;
    if (lane != 0) {
        while (gflag[blockIdx.x] == 0) { __nanosleep(ns); ns = ns < 256 ? 2 * ns : 256; n++; }
    }
    if (lane == 0) { out[blockIdx.x * 32] = 77 + blockIdx.x; __threadfence(); gflag[blockIdx.x] = 1; }
    else out[blockIdx.x * 32 + lane] = gflag[blockIdx.x] + 100 * lane;
    tries[blockIdx.x * 32 + lane] = n;
}

// 3. a timeout: give up after `limit` tries (the H100 never needs it: lane 0 runs)
extern "C" __global__ void spin_timeout(unsigned *out, unsigned *tries, unsigned limit) {
    __shared__ volatile unsigned flag;
    unsigned lane = threadIdx.x;
    if (lane == 0) flag = 0;
    __syncthreads();
    unsigned n = 0, seen = 0;
    if (lane != 0) {
        while (n < limit) { seen = flag; if (seen) break; n++; }
    }
    if (lane == 0) flag = 5 + blockIdx.x;
    out[blockIdx.x * 32 + lane] = lane == 0 ? 1 : seen;          // 0: timed out
    tries[blockIdx.x * 32 + lane] = n;
}

// 4. a ticket counter: the waiting lanes take turns on a shared atomic while lane 0 must publish a value
extern "C" __global__ void spin_atomic(unsigned *out, unsigned *tries) {
    __shared__ unsigned ready, ticket;
    unsigned lane = threadIdx.x;
    if (lane == 0) { ready = 0; ticket = 0; }
    __syncthreads();
    unsigned n = 0;
    if (lane != 0) {
        while (atomicAdd(&ready, 0) == 0) { atomicAdd(&ticket, 1); n++; }
    }
    if (lane == 0) atomicExch(&ready, 9);
    __syncwarp();
    out[blockIdx.x * 32 + lane] = atomicAdd(&ready, 0) + lane;
    tries[blockIdx.x * 32 + lane] = n;
}

// 5. the lanes that wait run first (the loop is written before the setter's code) and lane 0 sets the
// flag only after an atomic every lane executes past the join
extern "C" __global__ void spin_join(unsigned *out, unsigned *tries) {
    __shared__ volatile unsigned flag;
    __shared__ unsigned cnt;
    unsigned lane = threadIdx.x;
    if (lane == 0) { flag = 0; cnt = 0; }
    __syncthreads();
    unsigned n = 0, seen = 1;
    if (lane != 0) {
        do { seen = flag; n++; } while (seen == 0);
    }
    unsigned t = atomicAdd(&cnt, 1);
    if (lane == 0) flag = 200 + blockIdx.x + (t > 99 ? 1 : 0);
    out[blockIdx.x * 32 + lane] = seen;
    tries[blockIdx.x * 32 + lane] = n;
}
