/* 04_online.cu -- rung 4: online softmax, the row's maximum and sum in one pass.
 *
 * What it changes: rungs 1-3 read a row three times (maximum, sum, outputs). Here each thread
 * keeps the running maximum of its elements and their sum of exp(x - running maximum), rescaling
 * the sum by exp(old - new) whenever the maximum grows (softmax.cuh, stats_add; Milakov and
 * Gimelshein 2018). The threads' statistics merge by warp shuffles (block_stats), and a second
 * pass writes the outputs. Device memory sees the row read once and written once, as a copy
 * does, by these changes:
 *   - the whole row held in the block's registers (softmax.cuh, HeldRow): thread t loads the
 *     row's float4s t, t + 1024, ... (12 at most: rows of up to 49,152 floats) all at once, and
 *     computes its outputs from them, so the second pass reads nothing;
 *   - 16-byte loads and stores (float4) for the part of each row that lies on 16-byte
 *     boundaries: a quarter of the load instructions;
 *   - exp as __expf (two instructions) and the statistics added four elements at a time
 *     (stats_add_quad): with expf and an element at a time, the first pass computed longer than
 *     it read;
 *   - outputs streamed past L2 (__stcs): nothing reads them again here.
 *
 * Cost model (R = 4 rows cols bytes; [4096, 32768]: R = 512 MiB):
 *   bytes  from device memory R read + R written, the same as a copy of x. A row longer than
 *          49,152 floats reads what registers do not hold a second time (from L2).
 *   FLOPs  an exp an element for the statistics, another for the output (softmax).
 *   so     the target is the copy bandwidth: R + R bytes in the time a copy of R takes.
 *
 * Run it: python -m bench.softmax_ladder --rungs online */
#include "softmax.cuh"

template <int HELD>
__global__ void softmax_online_kernel(const float *x, float *y, int64_t cols, int log);

extern "C" int s2c_cuda_softmax_online(const float *x, float *y, float *, int64_t rows,
                                       int64_t cols, int log)
{
    if (rows == 0)
        return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task softmax_online
    HeldLaunch launch = held_launch(cols);
    return with_held(launch.held, [&](auto held) {
        launch_overlapped(softmax_online_kernel<held>, rows, launch.threads, 0, x, y, cols, log);
        LAUNCH_CHECK("softmax_online_kernel");
        return S2C_CUDA_OK;
    });
}

template <int HELD>
__global__ void __launch_bounds__(ONLINE_THREADS, 1)
softmax_online_kernel(const float *x, float *y, int64_t cols, int log)
{
    wait_for_previous_kernel();
    HeldRow<HELD> row(x + blockIdx.x * cols, cols);
    RowStats stats = block_stats(row.stats());
    float top = stats.max, inverse = 1.0f / stats.sum, log_total = logf(stats.sum);
    float *out = y + blockIdx.x * cols;
    if (log)
        row.map(out, [=](int64_t, float value) { return value - top - log_total; });
    else
        row.map(out, [=](int64_t, float value) { return __expf(value - top) * inverse; });
    // END SOLUTION
}
