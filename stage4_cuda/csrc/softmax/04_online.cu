/* 04_online.cu -- rung 4: online softmax, the row's maximum and sum in one pass.
 *
 * What it changes: rungs 1-3 read a row three times (maximum, sum, outputs). Here each thread
 * keeps the running maximum of its elements and their sum of exp(x - running maximum), rescaling
 * the sum by exp(old - new) whenever the maximum grows (softmax.cuh, stats_add; Milakov and
 * Gimelshein 2018). The threads' statistics merge by warp shuffles (block_stats), and a second
 * pass writes the outputs: two reads of the row instead of three. The second read follows the
 * first within the same block, so it finds the row in L2, and device memory sees the row read
 * once and written once, as a copy does. Three more changes serve the same end:
 *   - 16-byte loads and stores (float4) for the part of each row that lies on 16-byte
 *     boundaries (softmax.cuh, for_each_in_row and map_row): a quarter of the load instructions;
 *   - blocks of up to 1024 threads, so at most two rows per multiprocessor are in flight (264 on
 *     an H100): 33 MiB of [4096, 32768] rows, which L2 (50 MiB) holds until their second read;
 *   - cache hints: the second read is marked evict-first (__ldcs) and the outputs streamed past
 *     L2 (__stcs), so neither pushes out rows still waiting for their second read;
 *   - where the rows in flight would not fit in L2 ([8192, 50257]), each row kept in shared
 *     memory between the passes instead (softmax.cuh, KEEP_FROM_COLS says when and what it
 *     gained).
 *
 * Cost model (R = 4 rows cols bytes; [4096, 32768]: R = 512 MiB):
 *   bytes  from device memory R read + R written, the same as a copy of x; the second read
 *          comes from L2 (R more through L2, not device memory). At [8192, 50257] two rows of
 *          196 KiB per multiprocessor are 52 MB, about L2's size: some second reads miss.
 *   FLOPs  2 exps an element (one in each pass).
 *   so     the target is the copy bandwidth: R + R bytes in the time a copy of R takes.
 *
 * Run it: python -m stage4_cuda.softmax_bench --rungs online */
#include "softmax.cuh"

__global__ void softmax_online_kernel(const float *x, float *y, int64_t cols, int log, int keep);

extern "C" int s2c_cuda_softmax_online(const float *x, float *y, float *, int64_t rows,
                                       int64_t cols, int log)
{
    if (rows == 0)
        return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task softmax_online
    size_t kept = kept_row_bytes(cols);
    CUDA_CHECK(allow_dynamic_shared(softmax_online_kernel, kept));
    softmax_online_kernel<<<rows, online_threads(cols), kept>>>(x, y, cols, log, kept != 0);
    LAUNCH_CHECK("softmax_online_kernel");
    return S2C_CUDA_OK;
}

__global__ void __launch_bounds__(ONLINE_THREADS)
softmax_online_kernel(const float *x, float *y, int64_t cols, int log, int keep)
{
    extern __shared__ __align__(16) float shared[]; /* the row, when kept (softmax.cuh) */
    const float *row = x + blockIdx.x * cols;
    float *kept = kept_row(shared, row, cols, keep);
    RowStats stats = {-INFINITY, 0.0f};
    for_each_in_row(row, cols, [&](int64_t, float value) { stats_add(stats, value); }, kept);
    stats = block_stats(stats);
    float top = stats.max, inverse = 1.0f / stats.sum, log_total = logf(stats.sum);
    float *out = y + blockIdx.x * cols;
    if (log)
        map_row(row, out, cols, [=](int64_t, float value) { return value - top - log_total; },
                kept);
    else
        map_row(row, out, cols, [=](int64_t, float value) { return expf(value - top) * inverse; },
                kept);
    // END SOLUTION
}
