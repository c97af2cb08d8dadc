/* 03_shuffle.cu -- rung 3: rung 2 with the reductions done by warp shuffles.
 *
 * What it changes: the block's partial maxima and sums are combined with __shfl_xor_sync
 * (reduce.cuh, block_max and block_sum) instead of a tree in shared memory. The 32 lanes of a warp
 * exchange registers directly, five butterfly steps with no shared memory and no barrier; only
 * the 8 warps' results meet in shared memory, and one warp combines them with shuffles again:
 * 2 barriers a reduction instead of 8, and every lane ends with the total. A block of 256 threads
 * still owns a row and makes three passes over it, as in rung 2.
 *
 * Cost model (R = 4 rows cols bytes): as rung 2 (R read, R written, the re-reads from L2 or
 * device memory). The shuffles save instructions and barriers, which matter when a row is short
 * and the reductions are a large part of the work ([256, 10], [64, 10]); at [4096, 32768] the
 * bytes decide.
 *
 * Run it: python -m stage4_cuda.softmax_bench --rungs shuffle */
#include "softmax.cuh"

__global__ void softmax_shuffle_kernel(const float *x, float *y, int64_t cols, int log);

extern "C" int s2c_cuda_softmax_shuffle(const float *x, float *y, float *, int64_t rows,
                                        int64_t cols, int log)
{
    if (rows == 0)
        return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task softmax_shuffle
    softmax_shuffle_kernel<<<rows, SOFTMAX_THREADS>>>(x, y, cols, log);
    LAUNCH_CHECK("softmax_shuffle_kernel");
    return S2C_CUDA_OK;
}

__global__ void softmax_shuffle_kernel(const float *x, float *y, int64_t cols, int log)
{
    const float *row = x + blockIdx.x * cols;
    float *out = y + blockIdx.x * cols;
    float top = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        top = nan_max(top, row[j]);
    top = block_max(top);
    float total = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        total += expf(row[j] - top);
    total = block_sum(total);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        out[j] = softmax_output(row[j], top, total, log);
    // END SOLUTION
}
