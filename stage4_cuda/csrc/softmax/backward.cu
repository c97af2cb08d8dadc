/* backward.cu -- the gradients of softmax and log_softmax (week 14): a block per row, reduced with
 * warp shuffles (reduce.cuh). Not a rung of the ladder: one sum per row, then one pass that writes.
 *
 * softmax:      dx = y * (dy - sum(dy * y))
 * log_softmax:  dx = dy - exp(y) * sum(dy)      (y the log-probabilities)
 * Bytes: y and dy read twice (the second time from L2 while the row is fresh), dx written. */
#include "../reduce.cuh"

#define ROW_THREADS 128 /* rows of a few hundred elements keep a block busy */

__global__ void softmax_backward_kernel(const float *y, const float *dy, float *dx, int64_t cols,
                                        int log);

extern "C" int s2c_cuda_softmax_backward(const float *y, const float *dy, float *dx, int64_t rows,
                                         int64_t cols, int log)
{
    if (rows == 0) return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task softmax_backward
    launch_overlapped(softmax_backward_kernel, rows, ROW_THREADS, 0, y, dy, dx, cols, log);
    LAUNCH_CHECK("softmax_backward_kernel");
    return S2C_CUDA_OK;
}

__global__ void softmax_backward_kernel(const float *y, const float *dy, float *dx, int64_t cols,
                                        int log)
{
    wait_for_previous_kernel();
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
