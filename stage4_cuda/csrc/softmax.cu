/* softmax.cu -- row-wise softmax and log_softmax and their gradients (week 14): a block per row,
 * reduced with warp shuffles (reduce.cuh).
 *
 * Each row needs two reductions (its maximum, then the sum of exp(x - maximum)) before the pass
 * that writes it: two passes of reading and one of writing, 12 bytes per element. ROW_THREADS
 * threads stride along the row, so neighbouring threads read neighbouring floats (coalesced). */
#include "reduce.cuh"

#define ROW_THREADS 128 /* rows of a few hundred elements keep a block busy */

__global__ void softmax_kernel(const float *x, float *y, int64_t cols, int log);
__global__ void softmax_backward_kernel(const float *y, const float *dy, float *dx, int64_t cols,
                                        int log);

extern "C" int s2c_cuda_softmax(const float *x, float *y, int64_t rows, int64_t cols, int log) {
    if (rows == 0) return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task softmax
    softmax_kernel<<<rows, ROW_THREADS>>>(x, y, cols, log);
    LAUNCH_CHECK("softmax_kernel");
    return S2C_CUDA_OK;
}

/* y = exp(x - max) / sum(exp(x - max)), or x - max - log(sum(...)) when `log`. */
__global__ void softmax_kernel(const float *x, float *y, int64_t cols, int log) {
    const float *in = x + blockIdx.x * cols;
    float *out = y + blockIdx.x * cols;
    float top = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) top = nan_max(top, in[j]);
    top = block_max(top);
    float total = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) total += expf(in[j] - top);
    total = block_sum(total);
    float log_total = logf(total);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        out[j] = log ? in[j] - top - log_total : expf(in[j] - top) / total;
    // END SOLUTION
}

extern "C" int s2c_cuda_softmax_backward(const float *y, const float *dy, float *dx, int64_t rows,
                                         int64_t cols, int log)
{
    if (rows == 0) return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task softmax_backward
    softmax_backward_kernel<<<rows, ROW_THREADS>>>(y, dy, dx, cols, log);
    LAUNCH_CHECK("softmax_backward_kernel");
    return S2C_CUDA_OK;
}

/* softmax: dx = y * (dy - sum(dy * y)); log_softmax (y the log-probabilities):
 * dx = dy - exp(y) * sum(dy). */
__global__ void softmax_backward_kernel(const float *y, const float *dy, float *dx, int64_t cols,
                                        int log)
{
    int64_t offset = blockIdx.x * cols;
    float partial = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        partial += log ? dy[offset + j] : dy[offset + j] * y[offset + j];
    float total = block_sum(partial);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        int64_t i = offset + j;
        dx[i] = log ? dy[i] - expf(y[i]) * total : y[i] * (dy[i] - total);
    }
    // END SOLUTION
}
