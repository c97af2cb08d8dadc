/* norm.cu -- batch normalization over x [N, C] or [N, C, H, W], per channel (week 16), with x
 * seen as [N, C, L] (L = H*W, or 1): channel c's values are N runs of L neighbouring floats, one
 * run per sample, C*L floats apart.
 *
 * Both directions reduce over each channel, then apply the per-channel result elementwise. The
 * reduction is two-level: up to S2C_CUDA_BATCHNORM_BLOCKS (64) blocks per channel each add
 * their share of the channel's values into one partial sum (in double), then one warp per
 * channel adds its partial sums in a fixed order. One block a channel would give the 128
 * channels of [256, 128, 32, 32] about one block per multiprocessor, too few loads in flight to
 * stream. The forward reads x twice (the sums, then y = ...) and writes y:
 * 12 bytes an element; the backward reads dy and x twice and writes dx: 20 bytes an element.
 *
 * The variance is E[x^2] - E[x]^2 from sums in double, in one pass over x: the subtraction loses
 * log2(mean^2 / var) of double's 53 bits, and the float32 result needs 24, so a mean up to about
 * 20,000 standard deviations from zero keeps full accuracy. In float32 the same formula has no
 * bits left at 4,000 (2^12), which is why float code makes a second pass over the squared
 * deviations, reading x once more. */
#include "reduce.cuh"

#define SUM_THREADS 256
#define NORM_THREADS 256

/* Loads for the channel sums: WIDTH 4 reads runs of float4 (16 bytes a load), when every run is
 * a multiple of 4 floats and x 16-byte aligned; WIDTH 1 reads floats. */
template <int WIDTH>
static inline __device__ void load(const float *at, float *values)
{
    if constexpr (WIDTH == 4) {
        float4 quad = *(const float4 *)at;
        values[0] = quad.x, values[1] = quad.y, values[2] = quad.z, values[3] = quad.w;
    } else {
        values[0] = *at;
    }
}

/* The blocks each channel's sums are split into: a function of the sizes alone (the same
 * partial sums, in the same order, on every run), 4096 values a block or more, at most
 * S2C_CUDA_BATCHNORM_BLOCKS (the wrapper's scratch holds that many a channel). */
static inline int64_t blocks_per_channel(int64_t n, int64_t length)
{
    int64_t blocks = ceil_div(n * length, SUM_THREADS * 16);
    return blocks < 1 ? 1 : blocks < S2C_CUDA_BATCHNORM_BLOCKS ? blocks : S2C_CUDA_BATCHNORM_BLOCKS;
}

/* Whether channel runs can be read as float4: runs of a multiple of 4 floats, pointers aligned. */
static inline bool runs_of_quads(int64_t length, const float *a, const float *b)
{
    return length % 4 == 0 && (uintptr_t)a % 16 == 0 && (uintptr_t)b % 16 == 0;
}

/* The channel of element i of [N, C, L]: two divisions, 32-bit ones where i fits. */
static inline __device__ int64_t channel_of(int64_t i, int64_t channels, int64_t length)
{
    int64_t run = index_div(i, length); /* sample * channels + channel */
    return run - index_div(run, channels) * channels;
}

/* Where unit e (of WIDTH floats) of channel c's values starts in x: in sample e / units, unit
 * e % units of its run (units = length / WIDTH a run). */
static inline __device__ int64_t unit_offset(int64_t e, int64_t units, int64_t width,
                                             int64_t channels, int64_t c, int64_t length)
{
    int64_t sample = index_div(e, units);
    return (sample * channels + c) * length + (e - sample * units) * width;
}

/* Level 1's end: partials[c][block] = (first, second), each summed over the block's threads
 * (every thread calls it: block_sum has barriers). */
static inline __device__ void store_block_sums(double *partials, int64_t c, double first,
                                               double second)
{
    first = block_sum(first);
    second = block_sum(second);
    if (threadIdx.x == 0) {
        double *out = partials + 2 * (c * gridDim.y + blockIdx.y);
        out[0] = first;
        out[1] = second;
    }
}

/* Level 2, a warp per channel: (*first, *second) = the sums of channel c's `blocks` partial
 * pairs, for every lane: lane l adds pairs l, l + 32, ... in order, and the lanes' sums meet by
 * shuffles (block_sum's warp step), the same additions in the same order on every run. A thread
 * per channel adding its 64 pairs one after the other would wait 64 times on a load from L2;
 * this takes two loads' latency. */
static inline __device__ void add_block_sums(const double *partials, int64_t c, int64_t blocks,
                                             double *first, double *second)
{
    double a = 0.0, b = 0.0;
    for (int64_t k = threadIdx.x % 32; k < blocks; k += 32) {
        a += partials[2 * (c * blocks + k)];
        b += partials[2 * (c * blocks + k) + 1];
    }
    *first = warp_sum(a);
    *second = warp_sum(b);
}

/* The warps of level 2's launch: one per channel. */
static inline int64_t warps_for(int64_t channels)
{
    return blocks_for(channels * 32, NORM_THREADS);
}

template <int WIDTH>
__global__ void statistics_sums_kernel(const float *x, double *partials, int64_t n,
                                       int64_t channels, int64_t length);
__global__ void statistics_kernel(const double *partials, int64_t blocks, float *running_mean,
                                  float *running_var, float *mean, float *invstd, int64_t count,
                                  int64_t channels, int training, float momentum, float eps);
__global__ void normalize_kernel(const float *x, const float *gamma, const float *beta,
                                 const float *mean, const float *invstd, float *y, int64_t size,
                                 int64_t channels, int64_t length, int quads);
template <int WIDTH>
__global__ void gradient_sums_kernel(const float *dy, const float *x, const float *mean,
                                     const float *invstd, double *partials, int64_t n,
                                     int64_t channels, int64_t length);
__global__ void gradient_totals_kernel(const double *partials, int64_t blocks, float *dgamma,
                                       float *dbeta, int64_t channels);
__global__ void input_gradient_kernel(const float *dy, const float *x, const float *gamma,
                                      const float *mean, const float *invstd, const float *dgamma,
                                      const float *dbeta, float *dx, int64_t size,
                                      int64_t channels, int64_t length, int quads);

extern "C" int s2c_cuda_batchnorm_forward(const float *x, const float *gamma, const float *beta,
                                          float *running_mean, float *running_var, float *y,
                                          float *mean, float *invstd, double *partials, int64_t n,
                                          int64_t channels, int64_t length, int training,
                                          float momentum, float eps)
{
    // BEGIN SOLUTION week 16, task batchnorm_forward
    int64_t size = n * channels * length, blocks = blocks_per_channel(n, length);
    int quads = runs_of_quads(length, x, y);
    if (training) {
        dim3 grid(channels, blocks);
        if (quads)
            launch_overlapped(statistics_sums_kernel<4>, grid, SUM_THREADS, 0, x, partials, n,
                              channels, length);
        else
            launch_overlapped(statistics_sums_kernel<1>, grid, SUM_THREADS, 0, x, partials, n,
                              channels, length);
        LAUNCH_CHECK("statistics_sums_kernel");
    }
    launch_overlapped(statistics_kernel, warps_for(channels), NORM_THREADS, 0, partials, blocks,
                      running_mean, running_var, mean, invstd, n * length, channels, training,
                      momentum, eps);
    LAUNCH_CHECK("statistics_kernel");
    int64_t threads_needed = quads ? size / 4 : size;
    launch_overlapped(normalize_kernel, blocks_for(threads_needed, NORM_THREADS), NORM_THREADS, 0,
                      x, gamma, beta, mean, invstd, y, size, channels, length, quads);
    LAUNCH_CHECK("normalize_kernel");
    return S2C_CUDA_OK;
}

/* Level 1: block (c, b) adds values b * 256 + t, + gridDim.y * 256, ... of channel c (a warp reads
 * neighbours of one run), and their squares, in double: partials[c][b] = (sum, sum of squares). */
template <int WIDTH>
__global__ void statistics_sums_kernel(const float *x, double *partials, int64_t n,
                                       int64_t channels, int64_t length)
{
    wait_for_previous_kernel();
    int64_t c = blockIdx.x, units = length / WIDTH, count = n * units;
    double sum = 0.0, squares = 0.0;
#pragma unroll 4 /* 4 loads in flight before their sums wait for them */
    for (int64_t e = blockIdx.y * (int64_t)blockDim.x + threadIdx.x; e < count;
         e += (int64_t)gridDim.y * blockDim.x) {
        float values[WIDTH];
        load<WIDTH>(x + unit_offset(e, units, WIDTH, channels, c, length), values);
        for (int v = 0; v < WIDTH; v++) {
            sum += values[v];
            squares += (double)values[v] * values[v];
        }
    }
    store_block_sums(partials, c, sum, squares);
}

/* Level 2, a warp per channel (its first lane writes). Training: the batch mean and biased
 * variance from the partial sums, and the running statistics updated with the unbiased
 * variance. Evaluation: the running statistics. Either way mean[c] and
 * invstd[c] = 1 / sqrt(var + eps). */
__global__ void statistics_kernel(const double *partials, int64_t blocks, float *running_mean,
                                  float *running_var, float *mean, float *invstd, int64_t count,
                                  int64_t channels, int training, float momentum, float eps)
{
    wait_for_previous_kernel();
    int64_t c = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; /* the warp's channel */
    if (c >= channels) return; /* the whole warp: its lanes share c */
    double sum = 0.0, squares = 0.0;
    if (training)
        add_block_sums(partials, c, blocks, &sum, &squares);
    if (threadIdx.x % 32 != 0) return;
    float m, var;
    if (training) {
        double batch_mean = sum / (double)count;
        double batch_var = squares / (double)count - batch_mean * batch_mean;
        m = (float)batch_mean;
        var = (float)(batch_var < 0.0 ? 0.0 : batch_var); /* rounding can leave -1e-17; NaN stays */
        running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * m;
        float unbiased = var * (float)((double)count / (double)(count - 1));
        running_var[c] = (1.0f - momentum) * running_var[c] + momentum * unbiased;
    } else {
        m = running_mean[c];
        var = running_var[c];
    }
    mean[c] = m;
    invstd[c] = 1.0f / sqrtf(var + eps);
}

/* y = (x - mean[c]) * gamma[c] * invstd[c] + beta[c]: a thread per float4 (quads: the 4 share a
 * channel, as L % 4 == 0) or per float. Reads x, writes y: 8 bytes an element. */
__global__ void normalize_kernel(const float *x, const float *gamma, const float *beta,
                                 const float *mean, const float *invstd, float *y, int64_t size,
                                 int64_t channels, int64_t length, int quads)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (quads && i < size / 4) {
        int64_t c = channel_of(4 * i, channels, length);
        float scale = gamma[c] * invstd[c], m = mean[c], shift = beta[c];
        float4 v = ((const float4 *)x)[i];
        ((float4 *)y)[i] = make_float4((v.x - m) * scale + shift, (v.y - m) * scale + shift,
                                       (v.z - m) * scale + shift, (v.w - m) * scale + shift);
    } else if (!quads && i < size) {
        int64_t c = channel_of(i, channels, length);
        y[i] = (x[i] - mean[c]) * (gamma[c] * invstd[c]) + beta[c];
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_batchnorm_backward(const float *dy, const float *x, const float *gamma,
                                           const float *mean, const float *invstd, float *dx,
                                           float *dgamma, float *dbeta, double *partials,
                                           int64_t n, int64_t channels, int64_t length)
{
    // BEGIN SOLUTION week 16, task batchnorm_backward
    int64_t size = n * channels * length, blocks = blocks_per_channel(n, length);
    int quads = runs_of_quads(length, dy, x) && (uintptr_t)dx % 16 == 0;
    dim3 grid(channels, blocks);
    if (quads)
        launch_overlapped(gradient_sums_kernel<4>, grid, SUM_THREADS, 0, dy, x, mean, invstd,
                          partials, n, channels, length);
    else
        launch_overlapped(gradient_sums_kernel<1>, grid, SUM_THREADS, 0, dy, x, mean, invstd,
                          partials, n, channels, length);
    LAUNCH_CHECK("gradient_sums_kernel");
    launch_overlapped(gradient_totals_kernel, warps_for(channels), NORM_THREADS, 0, partials,
                      blocks, dgamma, dbeta, channels);
    LAUNCH_CHECK("gradient_totals_kernel");
    int64_t threads_needed = quads ? size / 4 : size;
    launch_overlapped(input_gradient_kernel, blocks_for(threads_needed, NORM_THREADS), NORM_THREADS,
                      0, dy, x, gamma, mean, invstd, dgamma, dbeta, dx, size, channels, length,
                      quads);
    LAUNCH_CHECK("input_gradient_kernel");
    return S2C_CUDA_OK;
}

/* Level 1 of dbeta = sum(dy) and dgamma = sum(dy * x_hat) over each channel's values, as
 * statistics_sums_kernel: partials[c][b] = (sum of dy, sum of dy * x_hat). */
template <int WIDTH>
__global__ void gradient_sums_kernel(const float *dy, const float *x, const float *mean,
                                     const float *invstd, double *partials, int64_t n,
                                     int64_t channels, int64_t length)
{
    wait_for_previous_kernel();
    int64_t c = blockIdx.x, units = length / WIDTH, count = n * units;
    float m = mean[c], s = invstd[c];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
#pragma unroll 4
    for (int64_t e = blockIdx.y * (int64_t)blockDim.x + threadIdx.x; e < count;
         e += (int64_t)gridDim.y * blockDim.x) {
        int64_t at = unit_offset(e, units, WIDTH, channels, c, length);
        float gradients[WIDTH], values[WIDTH];
        load<WIDTH>(dy + at, gradients);
        load<WIDTH>(x + at, values);
        for (int v = 0; v < WIDTH; v++) {
            sum_dy += gradients[v];
            sum_dy_xhat += gradients[v] * (values[v] - m) * s;
        }
    }
    store_block_sums(partials, c, sum_dy, sum_dy_xhat);
}

/* Level 2, a warp per channel: dbeta[c] and dgamma[c] from the partial sums, in a fixed order. */
__global__ void gradient_totals_kernel(const double *partials, int64_t blocks, float *dgamma,
                                       float *dbeta, int64_t channels)
{
    wait_for_previous_kernel();
    int64_t c = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; /* the warp's channel */
    if (c >= channels) return; /* the whole warp: its lanes share c */
    double sum_dy, sum_dy_xhat;
    add_block_sums(partials, c, blocks, &sum_dy, &sum_dy_xhat);
    if (threadIdx.x % 32 != 0) return;
    dbeta[c] = (float)sum_dy;
    dgamma[c] = (float)sum_dy_xhat;
}

/* dx = gamma * invstd * (dy - mean(dy) - x_hat * mean(dy * x_hat)): the two means are the
 * gradient flowing through the batch mean and the batch variance. A thread per float4 or float,
 * as normalize_kernel. Reads dy and x, writes dx: 12 bytes an element. */
static inline __device__ float input_gradient(float dy, float x, float m, float s, float scale,
                                              float mean_dy, float mean_dy_xhat)
{
    return scale * (dy - mean_dy - (x - m) * s * mean_dy_xhat);
}

__global__ void input_gradient_kernel(const float *dy, const float *x, const float *gamma,
                                      const float *mean, const float *invstd, const float *dgamma,
                                      const float *dbeta, float *dx, int64_t size,
                                      int64_t channels, int64_t length, int quads)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    float count = (float)(size / channels);
    if (quads && i < size / 4) {
        int64_t c = channel_of(4 * i, channels, length);
        float m = mean[c], s = invstd[c], scale = gamma[c] * s;
        float mean_dy = dbeta[c] / count, mean_dy_xhat = dgamma[c] / count;
        float4 g = ((const float4 *)dy)[i], v = ((const float4 *)x)[i];
        ((float4 *)dx)[i] = make_float4(
            input_gradient(g.x, v.x, m, s, scale, mean_dy, mean_dy_xhat),
            input_gradient(g.y, v.y, m, s, scale, mean_dy, mean_dy_xhat),
            input_gradient(g.z, v.z, m, s, scale, mean_dy, mean_dy_xhat),
            input_gradient(g.w, v.w, m, s, scale, mean_dy, mean_dy_xhat));
    } else if (!quads && i < size) {
        int64_t c = channel_of(i, channels, length);
        float s = invstd[c];
        dx[i] = input_gradient(dy[i], x[i], mean[c], s, gamma[c] * s, dbeta[c] / count,
                               dgamma[c] / count);
    }
    // END SOLUTION
}
