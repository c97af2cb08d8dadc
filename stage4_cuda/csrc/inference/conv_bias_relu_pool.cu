/* inference/conv_bias_relu_pool.cu -- inference's fused convolution (week 16): conv + bias +
 * ReLU, then max-pooling over pool x pool windows at stride pool, in ONE kernel that keeps
 * nothing for a backward: no argmax, no [n, k, oh, ow] activation in device memory, only the
 * pooled output y [n, k, oh / pool, ow / pool] written (pool 1: no pooling).
 *
 * The bias and ReLU are applied after the max: rounding v + b is monotone in v, as ReLU is, so
 * both commute with the max (and a NaN wins the max, then stays NaN), which does them once per
 * window instead of once per output.
 *
 * Two kernels, one launch each:
 *
 * - tiled (the fast path): a block takes one image, FILTERS_PER_BLOCK filters and a tile of the
 *   convolution's output aligned to the pooling windows (at most 256 positions, a thread each).
 *   Channels arrive in chunks: the chunk's input patch (zero where the padding is) and weights
 *   go to shared memory, and each thread adds the chunk's products for its position into one
 *   register per filter (a pixel read from shared memory feeds FILTERS_PER_BLOCK FMAs; the
 *   weights are the same for the whole warp: a broadcast). The finished sums go to shared
 *   memory, and the threads then take the tile's pooling windows, max, + bias, ReLU, and write y.
 * - direct (any geometry the tiled kernel's shared memory does not hold: huge images or pooling
 *   windows): a thread per output of y, summing its window's convolution outputs from global
 *   memory, the definition as it is written.
 *
 * Padding reads as zero and is still multiplied, so a NaN weight gives NaN there, as in PyTorch.
 * Run it on a GPU: python -m grader --stage 4 --variant nvcc --ops conv2d_bias_relu_pool */
#include "../conv/conv.cuh"

#define FILTERS_PER_BLOCK 8
#define TILE_POSITIONS 256        /* the most convolution outputs a tiled block computes */
#define TILE_SHARED_FLOATS 12288  /* 48 KB: what any GPU gives a block without asking */
#define DIRECT_THREADS 256

/* What the launcher decides for the tiled kernel. */
struct fused_tile {
    int64_t tile_h, tile_w;     /* the tile of convolution outputs, multiples of pool */
    int64_t patch_h, patch_w;   /* the input a tile reads, per channel */
    int64_t chunk;              /* channels per shared-memory chunk */
    int64_t tiles_h, tiles_w;   /* tiles per image plane */
};

__global__ void conv_bias_relu_pool_tiled_kernel(const float *x, const float *w, const float *b,
                                                 float *y, conv_geometry g, int64_t pool,
                                                 fused_tile t);
__global__ void conv_bias_relu_pool_direct_kernel(const float *x, const float *w, const float *b,
                                                  float *y, conv_geometry g, int64_t pool);

/* The tiled kernel's plan for g, or false when its shared memory cannot hold one channel's
 * patch with the weights and the sums (the direct kernel then runs). */
static inline bool plan_tiles(const conv_geometry &g, int64_t pool, fused_tile *t)
{
    int64_t ph = g.out_height / pool, pw = g.out_width / pool;
    if (pool * pool > TILE_POSITIONS || ceil_div(g.filters, FILTERS_PER_BLOCK) > 65535)
        return false; /* a window more than a block, or filter groups more than a grid's y */
    /* windows side by side in tile rows of at most 32 outputs (a warp) */
    int64_t windows_w = pw < 32 / pool ? pw : 32 / pool;
    windows_w = windows_w < TILE_POSITIONS / (pool * pool) ? windows_w
                                                           : TILE_POSITIONS / (pool * pool);
    int64_t windows_h = TILE_POSITIONS / (pool * pool * windows_w);
    windows_h = windows_h < ph ? windows_h : ph;
    t->tile_h = windows_h * pool;
    t->tile_w = windows_w * pool;
    t->patch_h = (t->tile_h - 1) * g.stride + g.kh;
    t->patch_w = (t->tile_w - 1) * g.stride + g.kw;
    t->tiles_h = ceil_div(ph, windows_h);
    t->tiles_w = ceil_div(pw, windows_w);
    int64_t sums = FILTERS_PER_BLOCK * t->tile_h * t->tile_w;
    int64_t per_channel = t->patch_h * t->patch_w + FILTERS_PER_BLOCK * g.kh * g.kw;
    int64_t room = TILE_SHARED_FLOATS - sums;
    if (room < per_channel) return false;
    t->chunk = room / per_channel < g.channels ? room / per_channel : g.channels;
    return true;
}

extern "C" int s2c_cuda_conv2d_bias_relu_pool(const float *x, const float *w, const float *b,
                                              float *y, const struct s2c_conv_geometry *g,
                                              int64_t pool)
{
    // BEGIN SOLUTION week 16, task conv2d_bias_relu_pool
    if (pool < 1 || g->out_height < pool || g->out_width < pool) return S2C_CUDA_BAD_ARGUMENT;
    fused_tile t;
    if (plan_tiles(*g, pool, &t)) {
        dim3 grid((unsigned)(g->n * t.tiles_h * t.tiles_w),
                  (unsigned)ceil_div(g->filters, FILTERS_PER_BLOCK));
        size_t shared = TILE_SHARED_FLOATS * sizeof(float);
        launch_overlapped(conv_bias_relu_pool_tiled_kernel, grid, (unsigned)(t.tile_h * t.tile_w),
                          shared, x, w, b, y, *g, pool, t);
        LAUNCH_CHECK("conv_bias_relu_pool_tiled_kernel");
        return S2C_CUDA_OK;
    }
    int64_t outputs = g->n * g->filters * (g->out_height / pool) * (g->out_width / pool);
    launch_overlapped(conv_bias_relu_pool_direct_kernel, blocks_for(outputs, DIRECT_THREADS),
                      DIRECT_THREADS, 0, x, w, b, y, *g, pool);
    LAUNCH_CHECK("conv_bias_relu_pool_direct_kernel");
    return S2C_CUDA_OK;
}

__global__ void conv_bias_relu_pool_tiled_kernel(const float *x, const float *w, const float *b,
                                                 float *y, conv_geometry g, int64_t pool,
                                                 fused_tile t)
{
    wait_for_previous_kernel();
    extern __shared__ __align__(16) float shared[];
    const int64_t tiles = t.tiles_h * t.tiles_w, ph = g.out_height / pool, pw = g.out_width / pool;
    const int64_t image = blockIdx.x / tiles, tile = blockIdx.x % tiles;
    const int64_t first_filter = (int64_t)blockIdx.y * FILTERS_PER_BLOCK;
    const int64_t top = tile / t.tiles_w * t.tile_h, left = tile % t.tiles_w * t.tile_w;
    const int64_t taps = g.kh * g.kw, patch = t.patch_h * t.patch_w;
    const int ly = threadIdx.x / t.tile_w, lx = threadIdx.x % t.tile_w;
    float *sums = shared;                                          /* [filters][tile_h * tile_w] */
    float *patches = sums + FILTERS_PER_BLOCK * t.tile_h * t.tile_w; /* [chunk][patch] */
    float *weights = patches + t.chunk * patch;                    /* [filters][chunk][taps] */
    const float *pixels = x + image * g.channels * g.height * g.width;
    float total[FILTERS_PER_BLOCK];
    for (int f = 0; f < FILTERS_PER_BLOCK; f++) total[f] = 0.0f;

    for (int64_t c0 = 0; c0 < g.channels; c0 += t.chunk) {
        int64_t chunk = g.channels - c0 < t.chunk ? g.channels - c0 : t.chunk;
        __syncthreads(); /* the previous chunk's reads are done */
        for (int64_t i = threadIdx.x; i < chunk * patch; i += blockDim.x) {
            int64_t c = i / patch, row = i % patch / t.patch_w, col = i % t.patch_w;
            int64_t h = top * g.stride - g.padding + row, v = left * g.stride - g.padding + col;
            bool inside = 0 <= h && h < g.height && 0 <= v && v < g.width;
            patches[i] = inside ? pixels[((c0 + c) * g.height + h) * g.width + v] : 0.0f;
        }
        for (int64_t i = threadIdx.x; i < FILTERS_PER_BLOCK * chunk * taps; i += blockDim.x) {
            int64_t f = i / (chunk * taps), rest = i % (chunk * taps);
            int64_t filter = first_filter + f;
            /* a filter past the last one computes zeros, never written */
            weights[i] = filter < g.filters ? w[(filter * g.channels + c0) * taps + rest] : 0.0f;
        }
        __syncthreads();
        for (int64_t c = 0; c < chunk; c++)
            for (int64_t r = 0; r < g.kh; r++)
                for (int64_t s = 0; s < g.kw; s++) {
                    float pixel = patches[c * patch + (ly * g.stride + r) * t.patch_w +
                                          lx * g.stride + s];
                    const float *tap = weights + (c * g.kh + r) * g.kw + s;
                    for (int f = 0; f < FILTERS_PER_BLOCK; f++)
                        total[f] = fmaf(pixel, tap[f * chunk * taps], total[f]);
                }
    }
    for (int f = 0; f < FILTERS_PER_BLOCK; f++)
        sums[f * blockDim.x + threadIdx.x] = total[f];
    __syncthreads();

    const int64_t windows_w = t.tile_w / pool, windows = t.tile_h / pool * windows_w;
    for (int64_t i = threadIdx.x; i < FILTERS_PER_BLOCK * windows; i += blockDim.x) {
        int64_t f = i / windows, window = i % windows;
        int64_t wy = window / windows_w, wx = window % windows_w;
        int64_t py = top / pool + wy, px = left / pool + wx, filter = first_filter + f;
        if (filter >= g.filters || py >= ph || px >= pw) continue;
        const float *plane = sums + f * blockDim.x;
        float best = plane[wy * pool * t.tile_w + wx * pool];
        for (int64_t di = 0; di < pool; di++)
            for (int64_t dj = 0; dj < pool; dj++)
                best = nan_max(best, plane[(wy * pool + di) * t.tile_w + wx * pool + dj]);
        float value = best + b[filter];
        y[((image * g.filters + filter) * ph + py) * pw + px] = value <= 0.0f ? 0.0f : value;
    }
    // END SOLUTION
}

__global__ void conv_bias_relu_pool_direct_kernel(const float *x, const float *w, const float *b,
                                                  float *y, conv_geometry g, int64_t pool)
{
    wait_for_previous_kernel();
    // BEGIN SOLUTION week 16, task conv2d_bias_relu_pool
    int64_t ph = g.out_height / pool, pw = g.out_width / pool;
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.n * g.filters * ph * pw) return;
    int64_t image = i / (g.filters * ph * pw), filter = i / (ph * pw) % g.filters;
    int64_t py = i / pw % ph, px = i % pw;
    const float *pixels = x + image * g.channels * g.height * g.width;
    const float *kernel = w + filter * conv_rows(g);
    float best = 0.0f;
    for (int64_t oy = py * pool; oy < py * pool + pool; oy++)
        for (int64_t ox = px * pool; ox < px * pool + pool; ox++) {
            float sum = 0.0f;
            for (int64_t c = 0; c < g.channels; c++)
                for (int64_t r = 0; r < g.kh; r++)
                    for (int64_t s = 0; s < g.kw; s++) {
                        int64_t h = oy * g.stride - g.padding + r, v = ox * g.stride - g.padding + s;
                        bool inside = 0 <= h && h < g.height && 0 <= v && v < g.width;
                        float pixel = inside ? pixels[(c * g.height + h) * g.width + v] : 0.0f;
                        sum = fmaf(pixel, kernel[(c * g.kh + r) * g.kw + s], sum);
                    }
            best = oy == py * pool && ox == px * pool ? sum : nan_max(best, sum);
        }
    float value = best + b[filter];
    y[i] = value <= 0.0f ? 0.0f : value;
    // END SOLUTION
}
