/* 02_tree.cu -- rung 2: one kernel, a block per row, the row's reductions as a shared-memory tree.
 *
 * What it changes: rung 1's three kernels become one. A block of SOFTMAX_THREADS threads owns a
 * row and makes the same three passes over it (maximum, sum of exp(x - max), outputs), but the
 * maximum and the sum stay in the block (shared memory, then registers) instead of going through
 * device memory, and the row's second and third reads come right after its first: a block has
 * just read those 4 cols bytes, so they may still be in L2. One launch instead of three.
 *
 * The reductions: each thread keeps a partial maximum or sum of the elements it strides over; the
 * block's 256 partials meet in shared memory and are combined as a tree (softmax.cuh,
 * tree_reduce), halving the active threads each step: 8 steps, 8 barriers.
 *
 * Cost model (R = 4 rows cols bytes; [4096, 32768]: R = 512 MiB):
 *   bytes  from device memory: R read, R written, plus whatever of the two re-reads L2 misses:
 *          between R and 3 R more. With 8 blocks of 256 threads on each of an H100's 132
 *          multiprocessors, 1056 rows of 128 KiB are being read at once, about 3x the 50 MiB of
 *          L2: at [4096, 32768] most re-reads miss.
 *   FLOPs  2 exps an element.
 *   so     better than rung 1 when rows are short (they stay in L2), about the same when long.
 *
 * Run it: python -m bench.softmax_ladder --rungs tree */
#include "softmax.cuh"

__global__ void softmax_tree_kernel(const float *x, float *y, int64_t cols, int log);

extern "C" int s2c_cuda_softmax_tree(const float *x, float *y, float *, int64_t rows,
                                     int64_t cols, int log)
{
    if (rows == 0)
        return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task softmax_tree
    launch_overlapped(softmax_tree_kernel, rows, SOFTMAX_THREADS, 0, x, y, cols, log);
    LAUNCH_CHECK("softmax_tree_kernel");
    return S2C_CUDA_OK;
}

__global__ void softmax_tree_kernel(const float *x, float *y, int64_t cols, int log)
{
    wait_for_previous_kernel();
    const float *row = x + blockIdx.x * cols;
    float *out = y + blockIdx.x * cols;
    float top = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        top = nan_max(top, row[j]);
    top = tree_reduce(top, MaxOp());
    float total = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        total += expf(row[j] - top);
    total = tree_reduce(total, SumOp());
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        out[j] = softmax_output(row[j], top, total, log);
    // END SOLUTION
}
