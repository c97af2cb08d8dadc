/* 01_three_pass.cu -- rung 1: softmax as three kernels, one per pass over the rows.
 *
 * What it does: the definition, one step per kernel. Kernel 1 finds each row's maximum and writes
 * it to device memory; kernel 2 reads the row again and sums exp(x - max); kernel 3 reads it a
 * third time and writes the outputs. A block of SOFTMAX_THREADS threads owns a row in each kernel:
 * its threads stride along the row (neighbouring threads read neighbouring floats: coalesced), and
 * kernels 1 and 2 combine their partial results with softmax.cuh's shared-memory tree.
 *
 * Cost model (rows x cols floats, R = 4 rows cols bytes; [4096, 32768]: R = 512 MiB):
 *   bytes  x read three times, y written once: 4 R (and 8 bytes a row of statistics). A kernel
 *          ends before the next begins, so at sizes far beyond L2 (50 MiB on an H100) each
 *          re-read comes from device memory: the cost is 4 R where a copy costs 2 R.
 *   FLOPs  2 exps and a few operations an element: nothing beside the bytes.
 *   so     at best half the copy bandwidth (counting R read and R written), the baseline for
 *          the online rung, which reads the row twice, once from L2.
 *
 * Run it: python -m bench.softmax_ladder --rungs three_pass */
#include "softmax.cuh"

__global__ void row_max_kernel(const float *x, float *row_max, int64_t cols);
__global__ void row_sum_kernel(const float *x, const float *row_max, float *row_sum, int64_t cols);
__global__ void normalize_kernel(const float *x, const float *row_max, const float *row_sum,
                                 float *y, int64_t cols, int log);

extern "C" int s2c_cuda_softmax_three_pass(const float *x, float *y, float *scratch, int64_t rows,
                                           int64_t cols, int log)
{
    if (rows == 0)
        return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task softmax_three_pass
    float *row_max = scratch, *row_sum = scratch + rows;
    launch_overlapped(row_max_kernel, rows, SOFTMAX_THREADS, 0, x, row_max, cols);
    LAUNCH_CHECK("row_max_kernel");
    launch_overlapped(row_sum_kernel, rows, SOFTMAX_THREADS, 0, x, row_max, row_sum, cols);
    LAUNCH_CHECK("row_sum_kernel");
    launch_overlapped(normalize_kernel, rows, SOFTMAX_THREADS, 0, x, row_max, row_sum, y, cols,
                      log);
    LAUNCH_CHECK("normalize_kernel");
    return S2C_CUDA_OK;
}

/* Pass 1: row_max[row] = max(x[row]) (a NaN wins). */
__global__ void row_max_kernel(const float *x, float *row_max, int64_t cols)
{
    wait_for_previous_kernel();
    const float *row = x + blockIdx.x * cols;
    float top = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        top = nan_max(top, row[j]);
    top = tree_reduce(top, MaxOp());
    if (threadIdx.x == 0)
        row_max[blockIdx.x] = top;
}

/* Pass 2: row_sum[row] = sum(exp(x[row] - row_max[row])). */
__global__ void row_sum_kernel(const float *x, const float *row_max, float *row_sum, int64_t cols)
{
    wait_for_previous_kernel();
    const float *row = x + blockIdx.x * cols;
    float top = row_max[blockIdx.x], total = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        total += expf(row[j] - top);
    total = tree_reduce(total, SumOp());
    if (threadIdx.x == 0)
        row_sum[blockIdx.x] = total;
}

/* Pass 3: y = exp(x - max) / sum, or x - max - log(sum). */
__global__ void normalize_kernel(const float *x, const float *row_max, const float *row_sum,
                                 float *y, int64_t cols, int log)
{
    wait_for_previous_kernel();
    int64_t offset = blockIdx.x * cols;
    float top = row_max[blockIdx.x], total = row_sum[blockIdx.x];
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        y[offset + j] = softmax_output(x[offset + j], top, total, log);
    // END SOLUTION
}
