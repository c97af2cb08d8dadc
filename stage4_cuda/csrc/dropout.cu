/* dropout.cu -- dropout (week 16): element i is kept when uniform(seed, i) >= p, from the shared
 * random stream (random.cuh), so the mask equals every other tier's for the same seed; kept
 * elements are scaled by 1 / (1 - p). p stays a double: rounded to float32 it could move across
 * a value of the stream. */
#include "random.cuh"

#define DROPOUT_THREADS 256

__global__ void dropout_kernel(const float *x, float *y, float *mask, int64_t n, double p,
                               uint64_t seed);
__global__ void dropout_backward_kernel(const float *dy, const float *mask, float *dx, int64_t n,
                                        double p);

extern "C" int s2c_cuda_dropout_forward(const float *x, float *y, float *mask, int64_t n, double p,
                                        uint64_t seed)
{
    // BEGIN SOLUTION week 16, task dropout_forward
    dropout_kernel<<<blocks_for(n, DROPOUT_THREADS), DROPOUT_THREADS>>>(x, y, mask, n, p, seed);
    LAUNCH_CHECK("dropout_kernel");
    return S2C_CUDA_OK;
}

__global__ void dropout_kernel(const float *x, float *y, float *mask, int64_t n, double p,
                               uint64_t seed)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float keep = stream_uniform(stream_key(seed), i) >= p ? 1.0f : 0.0f;
        mask[i] = keep;
        y[i] = x[i] * keep / (float)(1.0 - p);
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_dropout_backward(const float *dy, const float *mask, float *dx, int64_t n,
                                         double p)
{
    // BEGIN SOLUTION week 16, task dropout_backward
    int64_t blocks = blocks_for(n, DROPOUT_THREADS);
    dropout_backward_kernel<<<blocks, DROPOUT_THREADS>>>(dy, mask, dx, n, p);
    LAUNCH_CHECK("dropout_backward_kernel");
    return S2C_CUDA_OK;
}

__global__ void dropout_backward_kernel(const float *dy, const float *mask, float *dx, int64_t n,
                                        double p)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) dx[i] = dy[i] * mask[i] / (float)(1.0 - p);
    // END SOLUTION
}
