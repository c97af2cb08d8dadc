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
 * Given here: the shared-memory tree (rungs 1 and 2), the row held in registers (rungs 4 and 5).
 * The exercise: the online statistics (task softmax_online), which rungs 4 and 5 call. */
#ifndef S2C_SOFTMAX_CUH
#define S2C_SOFTMAX_CUH

#include "../reduce.cuh"

#include <type_traits>

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
 * seen: {-inf, 0}. Rungs 4 and 5 take exp as __expf, the hardware's 2^x (ex2.approx) of x log2(e):
 * two instructions against about ten for expf, within a few units of 2^-23 of it relative, and
 * still exp(-inf) = 0, exp(NaN) = NaN. With expf the first pass would spend more time computing
 * than reading. */
struct RowStats {
    float max, sum;
};

__device__ inline void stats_add(RowStats &stats, float x);
__device__ inline void stats_add_quad(RowStats &stats, float4 v);
__device__ inline void stats_merge(RowStats &stats, RowStats other);
__device__ inline RowStats block_stats(RowStats stats);

/* Add element x: when x is a new maximum, the sum so far was relative to the old one, and
 * exp(old - x) rescales it (Milakov and Gimelshein, "Online normalizer calculation for softmax",
 * 2018): one pass over the row instead of a pass for the maximum and another for the sum. */
__device__ inline void stats_add(RowStats &stats, float x)
{
    // BEGIN SOLUTION week 14, task softmax_online
    if (x > stats.max) { /* x's own term is exp(x - x): 1, or NaN for x = +inf (inf - inf) */
        stats.sum = stats.sum * __expf(stats.max - x) + (isinf(x) ? NAN : 1.0f);
        stats.max = x;
    } else {
        stats.sum += x == -INFINITY ? 0.0f : __expf(x - stats.max); /* a NaN x: the sum NaN */
    }
}

/* Add four elements at once: their own statistics, relative to the largest of the four, merged
 * in. One rescaling for four elements, and no branch between them. */
__device__ inline void stats_add_quad(RowStats &stats, float4 v)
{
    float top = nan_max(nan_max(v.x, v.y), nan_max(v.z, v.w));
    if (top == -INFINITY) /* four -inf add nothing (and -inf - -inf would be NaN) */
        return;
    stats_merge(stats, {top, (__expf(v.x - top) + __expf(v.y - top)) +
                                 (__expf(v.z - top) + __expf(v.w - top))});
}

/* Merge the statistics of two sets of elements: both sums rescaled to the larger maximum. */
__device__ inline void stats_merge(RowStats &stats, RowStats other)
{
    float top = nan_max(stats.max, other.max);
    if (top == -INFINITY) { /* both empty or only -inf: sums of 0, or NaN if a NaN was added */
        stats.sum += other.sum;
        return;
    }
    float mine = stats.max == top ? 1.0f : __expf(stats.max - top);
    float theirs = other.max == top ? 1.0f : __expf(other.max - top);
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

/* --- rungs 4 and 5: the row held in registers ------------------------------------------------- */

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

/* A block of up to ONLINE_THREADS threads per row, one block per multiprocessor at most: each
 * thread then has 64 registers (65,536 a multiprocessor), and HELD_MAX float4s take 48 of them.
 * So a block holds rows of up to 1024 x 12 x 4 = 49,152 floats in registers; of a row of
 * GPT-2's vocabulary (50,257) it reads the last 2% twice. With 13 float4s (53,248 floats, all of
 * it) ptxas has too few registers left and spills one float4 to local memory; that store waits
 * for its load, and the loads after it wait too, which costs more than the 2% read twice. */
#ifndef ONLINE_THREADS /* tests/test_softmax_cuda.py also builds the rungs with 64 */
#define ONLINE_THREADS 1024
#endif
#define HELD_MAX 12

/* A block's copy of one row, in its registers: thread t holds the row's float4s t, t + stride,
 * t + 2 stride, ..., HELD of them, all loaded before the first is used (HELD 16-byte loads in
 * flight a thread: device memory's latency is hidden by bytes in flight). The outputs are then
 * computed from the registers: device memory sees the row read once and its outputs written
 * once, the bytes of a copy, with no second pass over the row. What registers do not hold is
 * read where it lies, and read again for the outputs (from L2, evict-first): the head and tail
 * floats (split_row), and, in a row longer than HELD float4s a thread, the float4s past those.
 * Holding the row in registers beats keeping it in shared memory between the passes, and a
 * persistent block copying the next row in with cp.async (csrc/softmax/README.md compares
 * them). */
template <int HELD>
struct HeldRow {
    const float *row;
    RowSplit split;
    float4 held[HELD];

    __device__ HeldRow(const float *row_, int64_t cols) : row(row_), split(split_row(row_, cols))
    {
        /* past the row's end, four -inf: they add nothing to the statistics (stats_add_quad) */
        const float4 none = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        const float4 *mine = quads() + threadIdx.x;
        int64_t left = split.quads - threadIdx.x;
#pragma unroll
        for (int k = 0; k < HELD; k++)
            held[k] = k * stride() < left ? __ldg(mine + k * stride()) : none;
    }

    /* The threads of the block: ONLINE_THREADS whenever a thread holds more than one float4
     * (held_launch), known at compile time so that the HELD loads take constant offsets from one
     * address. With blockDim.x there, each load would take an address register of its own, and
     * ptxas would spill held float4s to local memory. */
    __device__ int64_t stride() const { return HELD == 1 ? blockDim.x : ONLINE_THREADS; }
    /* The index of this thread's k-th float4 in the row's float4s. */
    __device__ int64_t quad(int64_t k) const { return threadIdx.x + k * stride(); }
    __device__ const float4 *quads() const { return (const float4 *)(row + split.head); }
    /* The first float after the row's float4s: the tail's. */
    __device__ int64_t tail() const { return split.head + 4 * split.quads; }

    /* The statistics of this thread's elements. */
    __device__ RowStats stats() const
    {
        RowStats stats = {-INFINITY, 0.0f};
        for (int64_t j = threadIdx.x; j < split.head; j += blockDim.x)
            stats_add(stats, __ldg(row + j));
        for (int64_t j = tail() + threadIdx.x; j < tail() + split.tail; j += blockDim.x)
            stats_add(stats, __ldg(row + j));
        for (int64_t q = quad(HELD); q < split.quads; q += stride())
            stats_add_quad(stats, __ldg(quads() + q));
#pragma unroll
        for (int k = 0; k < HELD; k++)
            stats_add_quad(stats, held[k]);
        return stats;
    }

    /* out[j] = f(j, row[j]) for this thread's elements. Writes stream past L2 (__stcs): nothing
     * reads them again here. `out` is written 16 bytes at a time when it lies as the row does
     * (the same offset from a 16-byte boundary: rows of two arrays of one shape), else float by
     * float. */
    template <typename F>
    __device__ void map(float *out, F f) const
    {
        bool aligned = (uintptr_t)out % 16 == (uintptr_t)row % 16;
        auto put = [&](int64_t q, float4 v) {
            int64_t j = split.head + 4 * q;
            float4 o = make_float4(f(j, v.x), f(j + 1, v.y), f(j + 2, v.z), f(j + 3, v.w));
            if (aligned) {
                __stcs((float4 *)(out + j), o);
            } else {
                __stcs(out + j, o.x);
                __stcs(out + j + 1, o.y);
                __stcs(out + j + 2, o.z);
                __stcs(out + j + 3, o.w);
            }
        };
#pragma unroll
        for (int k = 0; k < HELD; k++)
            if (quad(k) < split.quads)
                put(quad(k), held[k]);
        for (int64_t q = quad(HELD); q < split.quads; q += stride())
            put(q, __ldcs(quads() + q));
        for (int64_t j = threadIdx.x; j < split.head; j += blockDim.x)
            __stcs(out + j, f(j, __ldcs(row + j)));
        for (int64_t j = tail() + threadIdx.x; j < tail() + split.tail; j += blockDim.x)
            __stcs(out + j, f(j, __ldcs(row + j)));
    }
};

/* How a rung-4 or rung-5 kernel is launched for rows of `cols` floats: `held`, the fewest float4s
 * a thread of ONLINE_THREADS holds for the block to hold the row (1, 2, 4, 8 or HELD_MAX: the
 * kernels compiled), and `threads`: ONLINE_THREADS, or for a row that takes one float4 a thread,
 * the warps that cover it. */
struct HeldLaunch {
    int held, threads;
};

static inline HeldLaunch held_launch(int64_t cols)
{
    int64_t quads = cols / 4; /* the most float4s a row of cols floats has */
    int held = HELD_MAX;
    for (int choice : {8, 4, 2, 1})
        if (choice * (int64_t)ONLINE_THREADS >= quads)
            held = choice;
    int64_t warps = ceil_div(quads > 0 ? quads : 1, 32);
    return {held, held == 1 ? (int)(32 * warps) : ONLINE_THREADS};
}

/* launch(HELD) for the HELD that held_launch chose, as a compile-time constant
 * (std::integral_constant<int, HELD>: a template argument) that the launcher passes to its kernel
 * template. Returns what launch returns. */
template <typename Launch>
static inline int with_held(int held, Launch launch)
{
    switch (held) {
    case 1: return launch(std::integral_constant<int, 1>{});
    case 2: return launch(std::integral_constant<int, 2>{});
    case 4: return launch(std::integral_constant<int, 4>{});
    case 8: return launch(std::integral_constant<int, 8>{});
    default: return launch(std::integral_constant<int, HELD_MAX>{});
    }
}

#endif
