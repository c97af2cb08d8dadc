/* init.cu -- weight initialization (week 14) from the shared random stream (random.cuh): each
 * thread computes its element's number from (seed, index) alone, in double, and stores it as
 * float32, so the weights equal every other tier's for the same seed. The wrapper computes the
 * bound or the standard deviation from the fans. */
#include "random.cuh"

#define INIT_THREADS 256

__global__ void xavier_uniform_kernel(float *w, int64_t n, uint64_t seed, double bound);
__global__ void he_normal_kernel(float *w, int64_t n, uint64_t seed, double std);

extern "C" int s2c_cuda_xavier_uniform(float *w, int64_t n, uint64_t seed, double bound) {
    // BEGIN SOLUTION week 14, task xavier_uniform
    launch_overlapped(xavier_uniform_kernel, blocks_for(n, INIT_THREADS), INIT_THREADS, 0, w, n,
                      seed, bound);
    LAUNCH_CHECK("xavier_uniform_kernel");
    return S2C_CUDA_OK;
}

/* Uniform in [-bound, bound). */
__global__ void xavier_uniform_kernel(float *w, int64_t n, uint64_t seed, double bound) {
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) w[i] = (float)((2.0 * stream_uniform(stream_key(seed), i) - 1.0) * bound);
    // END SOLUTION
}

extern "C" int s2c_cuda_he_normal(float *w, int64_t n, uint64_t seed, double std) {
    // BEGIN SOLUTION week 14, task he_normal
    launch_overlapped(he_normal_kernel, blocks_for(n, INIT_THREADS), INIT_THREADS, 0, w, n, seed,
                      std);
    LAUNCH_CHECK("he_normal_kernel");
    return S2C_CUDA_OK;
}

__global__ void he_normal_kernel(float *w, int64_t n, uint64_t seed, double std) {
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) w[i] = (float)(stream_normal(stream_key(seed), i) * std);
    // END SOLUTION
}
