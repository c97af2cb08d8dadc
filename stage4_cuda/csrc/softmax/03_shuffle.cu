/* 03_shuffle.cu -- rung 3: a warp per row, reduced with warp shuffles.
 *
 * What it changes: rung 2's block of 256 threads per row needs shared memory and a barrier at
 * every step of its tree. Here a row belongs to one warp: its 32 lanes stride along the row
 * (coalesced, 128 bytes a load), and combine their partial maximum and sum with __shfl_xor_sync
 * (reduce.cuh, warp_max and warp_sum): five butterfly steps through registers, no shared memory,
 * no barrier, and every lane ends with the total. A block holds ROWS_PER_BLOCK warps, so a block
 * owns that many rows; the three passes over a row are rung 2's.
 *
 * Cost model (R = 4 rows cols bytes; [4096, 32768]: R = 512 MiB):
 *   bytes  R written; x read three times, the re-reads from L2 while it holds the row. With up to
 *          64 warps on each multiprocessor, every row of [4096, 32768] is in flight at once
 *          (512 MiB, ten times L2): most re-reads come from device memory, up to 4 R in all.
 *   FLOPs  2 exps an element.
 *   so     fast for short rows (a row of 10 floats costs one warp, not a block of 256 threads,
 *          and no barrier), no faster than rung 1 for long ones.
 *
 * Run it: python -m bench.softmax_ladder --rungs shuffle */
#include "softmax.cuh"

#define ROWS_PER_BLOCK 8 /* 8 warps, 256 threads a block */

__global__ void softmax_shuffle_kernel(const float *x, float *y, int64_t rows, int64_t cols,
                                       int log);

extern "C" int s2c_cuda_softmax_shuffle(const float *x, float *y, float *, int64_t rows,
                                        int64_t cols, int log)
{
    if (rows == 0)
        return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task softmax_shuffle
    launch_overlapped(softmax_shuffle_kernel, ceil_div(rows, ROWS_PER_BLOCK), 32 * ROWS_PER_BLOCK,
                      0, x, y, rows, cols, log);
    LAUNCH_CHECK("softmax_shuffle_kernel");
    return S2C_CUDA_OK;
}

__global__ void softmax_shuffle_kernel(const float *x, float *y, int64_t rows, int64_t cols,
                                       int log)
{
    wait_for_previous_kernel();
    int lane = threadIdx.x % 32;
    int64_t r = blockIdx.x * (int64_t)ROWS_PER_BLOCK + threadIdx.x / 32;
    if (r >= rows) /* the whole warp leaves together: the shuffles below see all 32 lanes */
        return;
    const float *row = x + r * cols;
    float top = -INFINITY;
    for (int64_t j = lane; j < cols; j += 32)
        top = nan_max(top, row[j]);
    top = warp_max(top);
    float total = 0.0f;
    for (int64_t j = lane; j < cols; j += 32)
        total += expf(row[j] - top);
    total = warp_sum(total);
    float *out = y + r * cols;
    for (int64_t j = lane; j < cols; j += 32)
        out[j] = softmax_output(row[j], top, total, log);
    // END SOLUTION
}
