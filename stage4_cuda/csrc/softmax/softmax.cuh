/* softmax.cuh -- what the rungs of the softmax and cross-entropy ladder (week 14) share.
 *
 * Every softmax rung computes, for each row of x [rows, cols] (row-major float32),
 *     y = exp(x - max) / sum(exp(x - max))          or, when `log`,  y = x - max - log(sum(...))
 * and exports the same launcher, on the default stream, returning common.h's status:
 *
 *     extern "C" int s2c_cuda_softmax_<name>(const float *x, float *y, float *scratch,
 *                                            int64_t rows, int64_t cols, int log);
 *
 * `scratch` holds 2 * rows floats for rung 1 (its passes hand the row statistics to each other
 * through device memory); the other rungs take NULL. Rung 5 (05_cross_entropy.cu) computes the
 * cross-entropy terms and gradient from logits with rung 4's row statistics.
 *
 * NaN propagates as in PyTorch: a NaN anywhere in a row makes that row's maximum or sum NaN, and
 * every output of the row NaN. An element of -inf contributes exp(-inf) = 0.
 *
 * Given here: the shared-memory tree (rungs 1 and 2), the 16-byte row traversal (rungs 4 and 5).
 * The exercise: the online statistics (task softmax_online), which rungs 4 and 5 call. */
#ifndef S2C_SOFTMAX_CUH
#define S2C_SOFTMAX_CUH

#include "../reduce.cuh"

#define SOFTMAX_THREADS 256 /* rungs 1-3: a block of 256 threads per row (a power of two) */

/* One output of a row whose maximum is `top` and whose sum of exp(x - top) is `total`. */
static inline __device__ float softmax_output(float x, float top, float total, int log)
{
    return log ? x - top - logf(total) : expf(x - top) / total;
}

/* --- rungs 1 and 2: a block's reduction as a tree in shared memory --------------------------- */

struct MaxOp {
    __device__ float operator()(float a, float b) const { return nan_max(a, b); }
};
struct SumOp {
    __device__ float operator()(float a, float b) const { return a + b; }
};

/* `value` of every thread of the block (blockDim.x == SOFTMAX_THREADS) combined by `op`, for every
 * thread: each step, the first half of the threads combines its slot with the second half's, so
 * SOFTMAX_THREADS values become one in log2(SOFTMAX_THREADS) = 8 steps, a barrier after each. */
template <typename Op>
__device__ float tree_reduce(float value, Op op)
{
    __shared__ float cache[SOFTMAX_THREADS];
    cache[threadIdx.x] = value;
    __syncthreads();
    for (int half = SOFTMAX_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            cache[threadIdx.x] = op(cache[threadIdx.x], cache[threadIdx.x + half]);
        __syncthreads();
    }
    float total = cache[0];
    __syncthreads(); /* everyone has read cache[0] before a next call overwrites it */
    return total;
}

/* --- rungs 4 and 5: the online statistics of a row -------------------------------------------- */

/* The statistics of the elements seen so far: their maximum and sum(exp(x - maximum)). Nothing
 * seen: {-inf, 0}. */
struct RowStats {
    float max, sum;
};

__device__ inline void stats_add(RowStats &stats, float x);
__device__ inline void stats_merge(RowStats &stats, RowStats other);
__device__ inline RowStats block_stats(RowStats stats);

/* Add element x: when x is a new maximum, the sum so far was relative to the old one, and
 * exp(old - x) rescales it (Milakov and Gimelshein, "Online normalizer calculation for softmax",
 * 2018): one pass over the row instead of a pass for the maximum and another for the sum. */
__device__ inline void stats_add(RowStats &stats, float x)
{
    // BEGIN SOLUTION week 14, task softmax_online
    if (x > stats.max) { /* x's own term is exp(x - x): 1, or NaN for x = +inf (inf - inf) */
        stats.sum = stats.sum * expf(stats.max - x) + (isinf(x) ? NAN : 1.0f);
        stats.max = x;
    } else {
        stats.sum += x == -INFINITY ? 0.0f : expf(x - stats.max); /* a NaN x lands here: sum NaN */
    }
}

/* Merge the statistics of two sets of elements: both sums rescaled to the larger maximum. */
__device__ inline void stats_merge(RowStats &stats, RowStats other)
{
    float top = nan_max(stats.max, other.max);
    if (top == -INFINITY) { /* both empty or only -inf: sums of 0, or NaN if a NaN was added */
        stats.sum += other.sum;
        return;
    }
    float mine = stats.max == top ? 1.0f : expf(stats.max - top);
    float theirs = other.max == top ? 1.0f : expf(other.max - top);
    stats = {top, stats.sum * mine + other.sum * theirs};
}

/* The statistics of the whole block's elements, for every thread (blockDim.x a multiple of 32):
 * each warp merges its lanes' by shuffles, the warps' meet in shared memory, and the first warp
 * merges those by shuffles again. Every thread of the block must call it (it has barriers). */
__device__ inline RowStats block_stats(RowStats stats)
{
    __shared__ RowStats partial[32]; /* one per warp */
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int offset = 16; offset > 0; offset /= 2)
        stats_merge(stats, {__shfl_xor_sync(FULL_WARP, stats.max, offset),
                            __shfl_xor_sync(FULL_WARP, stats.sum, offset)});
    if (lane == 0)
        partial[warp] = stats;
    __syncthreads();
    stats = lane < warps ? partial[lane] : RowStats{-INFINITY, 0.0f};
    for (int offset = 16; offset > 0; offset /= 2)
        stats_merge(stats, {__shfl_xor_sync(FULL_WARP, stats.max, offset),
                            __shfl_xor_sync(FULL_WARP, stats.sum, offset)});
    __syncthreads(); /* everyone has read `partial` before a next call writes it */
    return stats;
    // END SOLUTION
}

/* --- rungs 4 and 5: visiting a row 16 bytes at a time ----------------------------------------- */

/* A row of `cols` floats starting at `row`, split so that its middle can be read as float4: `head`
 * floats (0-3) up to the first 16-byte boundary, `quads` float4s, then the `tail` floats left. A
 * row of [8192, 50257] starts at any of the four offsets, so every row has its own split. */
struct RowSplit {
    int64_t head, quads, tail;
};

static inline __device__ RowSplit split_row(const float *row, int64_t cols)
{
    int64_t head = (int64_t)((16 - (uintptr_t)row % 16) % 16 / 4);
    head = head < cols ? head : cols;
    int64_t quads = (cols - head) / 4;
    return {head, quads, cols - head - 4 * quads};
}

/* visit(j, value) for every element j of the row that this thread owns: the block's threads
 * stride over the row's float4s, and over the few floats before and after them. Each thread loads
 * LOADS_IN_FLIGHT float4s before it visits the first, so that many loads wait on device memory at
 * once (its latency is hidden by bytes in flight, not by threads alone). Reads go through the
 * read-only cache (__ldg), and leave the row in L2 for a second pass. With `kept` (kept_row), each
 * value is also stored there, for the second pass to read from shared memory instead. */
#define LOADS_IN_FLIGHT 4
template <typename Visit>
__device__ void for_each_in_row(const float *row, int64_t cols, Visit visit, float *kept)
{
    RowSplit split = split_row(row, cols);
    const float4 *quads = (const float4 *)(row + split.head);
    float4 *kept_quads = (float4 *)(kept + split.head);
    auto take = [&](int64_t j) {
        float value = __ldg(row + j);
        if (kept) kept[j] = value;
        visit(j, value);
    };
    auto take_quad = [&](int64_t q, float4 v) {
        if (kept) kept_quads[q] = v;
        int64_t j = split.head + 4 * q;
        visit(j, v.x);
        visit(j + 1, v.y);
        visit(j + 2, v.z);
        visit(j + 3, v.w);
    };
    for (int64_t j = threadIdx.x; j < split.head; j += blockDim.x)
        take(j);
    int64_t q = threadIdx.x, stride = blockDim.x;
    for (; q + (LOADS_IN_FLIGHT - 1) * stride < split.quads; q += LOADS_IN_FLIGHT * stride) {
        float4 v[LOADS_IN_FLIGHT];
#pragma unroll
        for (int k = 0; k < LOADS_IN_FLIGHT; k++)
            v[k] = __ldg(quads + q + k * stride);
#pragma unroll
        for (int k = 0; k < LOADS_IN_FLIGHT; k++)
            take_quad(q + k * stride, v[k]);
    }
    for (; q < split.quads; q += stride)
        take_quad(q, __ldg(quads + q));
    for (int64_t j = split.head + 4 * split.quads + threadIdx.x; j < cols; j += blockDim.x)
        take(j);
}

/* out[j] = f(j, row[j]) over a row, 16 bytes at a time where `out` has the same alignment as
 * `row` (same offsets from 16-byte boundaries: rows of two arrays of one shape), else float by
 * float. The row is read from `kept` when for_each_in_row kept it, else from device memory (L2)
 * as the last read (evict-first); writes stream past L2 (__stcs): the output is not read again
 * by this kernel. A barrier (block_stats has two) must separate the two passes: with a
 * misaligned `out`, a thread reads values another one kept. */
template <typename F>
__device__ void map_row(const float *row, float *out, int64_t cols, F f, const float *kept)
{
    RowSplit split = split_row(row, cols);
    auto value = [&](int64_t j) { return kept ? kept[j] : __ldcs(row + j); };
    if ((uintptr_t)out % 16 != (uintptr_t)row % 16) {
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
            __stcs(out + j, f(j, value(j)));
        return;
    }
    const float4 *in4 = (const float4 *)(row + split.head);
    const float4 *kept4 = (const float4 *)(kept + split.head);
    float4 *out4 = (float4 *)(out + split.head);
    for (int64_t j = threadIdx.x; j < split.head; j += blockDim.x)
        __stcs(out + j, f(j, value(j)));
#pragma unroll 4
    for (int64_t q = threadIdx.x; q < split.quads; q += blockDim.x) {
        float4 v = kept ? kept4[q] : __ldcs(in4 + q);
        int64_t j = split.head + 4 * q;
        __stcs(out4 + q, make_float4(f(j, v.x), f(j + 1, v.y), f(j + 2, v.z), f(j + 3, v.w)));
    }
    for (int64_t j = split.head + 4 * split.quads + threadIdx.x; j < cols; j += blockDim.x)
        __stcs(out + j, f(j, value(j)));
}

/* Threads for a block that owns a row of `cols` floats (rungs 4 and 5): about 8 floats a thread,
 * a multiple of a warp, at most ONLINE_THREADS. */
#define ONLINE_THREADS 1024
static inline int online_threads(int64_t cols)
{
    int64_t warps = ceil_div(cols, 8 * 32);
    warps = warps < 1 ? 1 : warps > ONLINE_THREADS / 32 ? ONLINE_THREADS / 32 : warps;
    return (int)(32 * warps);
}

/* --- rungs 4 and 5: the row kept in shared memory between the two passes ---------------------- */

/* The second pass reads the row again. It finds it in L2 while the rows in flight fit there: two
 * blocks of 1024 threads per multiprocessor hold 264 rows, 33 MiB of [4096, 32768]'s but 52 MB of
 * [8192, 50257]'s, more than L2's 50 MB, and there some second reads go to device memory. So a
 * row of KEEP_FROM_COLS floats or more (264 of those fill 42 MB) is also stored in the block's
 * shared memory by the first pass, when it fits there (227 KB a block on an H100: 58,000 floats;
 * 163 KB on an A100), and read back from there: device memory sees it read once, whatever L2
 * holds. The price is one block per multiprocessor, whose loads stop while it writes. Measured on
 * an H100 (2026-11-26, softmax-cuda-h100.md): at 50257 columns online went from 75.1% to 78.2% of
 * the copy bandwidth, the fused cross-entropy from 74.6% to 76.5%; at 32768, keeping the row too
 * gave 79% against 92%, hence the threshold. Keeping only as much as two blocks per
 * multiprocessor leave room for (112 KB each, the rest from L2) measured worse still: 70-72%. */
#ifndef KEEP_FROM_COLS /* tests/test_softmax_cuda.py also builds the rungs with 0: rows all kept */
#define KEEP_FROM_COLS 40000
#endif
/* The dynamic shared memory a block keeps its row of `cols` floats in, or 0 when the row is
 * short (KEEP_FROM_COLS) or does not fit. 3 floats more: room to put its float4s on 16-byte
 * boundaries (kept_row). */
static inline size_t kept_row_bytes(int64_t cols)
{
    static int limit = -1;
    if (limit < 0) {
        int device = 0;
        if (cudaGetDevice(&device) != cudaSuccess ||
            cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
                cudaSuccess)
            limit = 0;
    }
    size_t bytes = (size_t)(cols + 3) * sizeof(float);
    return cols >= KEEP_FROM_COLS && bytes <= (size_t)limit ? bytes : 0;
}

/* Where the row lies in the block's dynamic shared memory (`shared`, 16-byte aligned): shifted so
 * that the floats from split_row's head on start a 16-byte boundary, as in device memory; NULL
 * when the launch gave none (`keep` 0). */
static inline __device__ float *kept_row(float *shared, const float *row, int64_t cols, int keep)
{
    return keep ? shared + (4 - split_row(row, cols).head) % 4 : NULL;
}

#endif
