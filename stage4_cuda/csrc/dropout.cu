/* dropout.cu -- dropout (week 16): element i is kept when uniform(seed, i) >= p, from the shared
 * random stream (random.cuh), so the mask equals every other tier's for the same seed; kept
 * elements are scaled by 1 / (1 - p). p stays a double: rounded to float32 it could move across
 * a value of the stream.
 *
 * Forward: reads x, writes y and the mask (12 bytes an element), 4 elements a thread as float4
 * when the arrays are 16-byte aligned (elementwise.cuh says why 4). Backward: dy * mask / (1 - p),
 * elementwise.cuh's zip (12 bytes an element). */
#include "elementwise.cuh"
#include "random.cuh"

#define DROPOUT_THREADS 256

__global__ void dropout_kernel(const float *x, float *y, float *mask, int64_t n, double p,
                               uint64_t seed, int quads);
__device__ float dropout_backward_element(float dy, float mask, float keep_probability);

extern "C" int s2c_cuda_dropout_forward(const float *x, float *y, float *mask, int64_t n, double p,
                                        uint64_t seed)
{
    // BEGIN SOLUTION week 16, task dropout_forward
    int quads = aligned16(x) && aligned16(y) && aligned16(mask);
    int64_t blocks = blocks_for(ceil_div(n, 4), DROPOUT_THREADS);
    launch_overlapped(dropout_kernel, blocks, DROPOUT_THREADS, 0, x, y, mask, n, p, seed, quads);
    LAUNCH_CHECK("dropout_kernel");
    return S2C_CUDA_OK;
}

/* 1 when element i of stream `key` is kept, else 0. */
static inline __device__ float kept(uint64_t key, int64_t i, double p) {
    return stream_uniform(key, i) >= p ? 1.0f : 0.0f;
}

/* Thread t: elements 4t .. 4t + 3, as float4 when `quads` (and all 4 exist), else one by one. */
__global__ void dropout_kernel(const float *x, float *y, float *mask, int64_t n, double p,
                               uint64_t seed, int quads)
{
    wait_for_previous_kernel();
    int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, first = 4 * t;
    if (first >= n) return;
    uint64_t key = stream_key(seed);
    float keep_probability = (float)(1.0 - p);
    if (quads && first + 4 <= n) {
        float4 v = ((const float4 *)x)[t];
        float4 keep = make_float4(kept(key, first, p), kept(key, first + 1, p),
                                  kept(key, first + 2, p), kept(key, first + 3, p));
        ((float4 *)mask)[t] = keep;
        float scale = keep_probability;
        ((float4 *)y)[t] = make_float4(v.x * keep.x / scale, v.y * keep.y / scale,
                                       v.z * keep.z / scale, v.w * keep.w / scale);
        return;
    }
    for (int64_t i = first; i < first + 4 && i < n; i++) {
        float keep = kept(key, i, p);
        mask[i] = keep;
        y[i] = x[i] * keep / keep_probability;
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_dropout_backward(const float *dy, const float *mask, float *dx, int64_t n,
                                         double p)
{
    // BEGIN SOLUTION week 16, task dropout_backward
    return launch_zip<dropout_backward_element>("dropout_backward_element (zip)", dy, mask, dx, n,
                                                n, (float)(1.0 - p));
}

__device__ float dropout_backward_element(float dy, float mask, float keep_probability) {
    return dy * mask / keep_probability;
    // END SOLUTION
}
