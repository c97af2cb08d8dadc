/* 06_winograd_4x4.cu -- rung 6: Winograd's F(4x4, 3x3), rung 4 with 4x4 blocks of outputs.
 *
 * What it changes: rung 4 spends 16 multiplications on each 2x2 block of outputs of a channel
 * pair, 4 an output. A 4x4 block sits on a 6x6 patch, and the same minimal filtering (Lavin and
 * Gray, 2015; interpolation points 0, +-1, +-2 and infinity) spends 36 on it, 2.25 an output:
 *
 *     Y (4x4) = A^T [ (G g G^T) * (B^T d B) ] A          (* elementwise, over the 6x6 entries)
 *
 *     B^T = [4  0 -5  0  1  0]     G = [ 1/4     0     0]     A^T = [1  1  1  1  1  0]
 *           [0 -4 -4  1  1  0]         [-1/6  -1/6  -1/6]           [0  1 -1  2 -2  0]
 *           [0  4 -4 -1  1  0]         [-1/6   1/6  -1/6]           [0  1  1  4  4  0]
 *           [0 -2 -1  2  1  0]         [1/24  1/12   1/6]           [0  1 -1  8 -8  1]
 *           [0  2 -1 -2  1  0]         [1/24 -1/12   1/6]
 *           [0  4  0 -5  0  1]         [   0     0     1]
 *
 * so 36 products (tiled_product.cuh), M[xi][k, t] = sum over c of U[xi][k, c] V[xi][c, t], over
 * T = N ceil(OH/4) ceil(OW/4) blocks. On the Fashion CNN's 11x11 conv2 that is 9 blocks an image
 * where rung 4 has 36: 36 x 9 = 324 products of a channel pair against 16 x 36 = 576, and the
 * transformed tiles V and M hold 36 floats for 16 outputs where rung 4's hold 16 for 4.
 *
 * What it costs: the transforms are no longer additions alone (entries up to 8, and 1/6 and 1/24
 * round), so the result rounds further from the exact sum than rung 4's does; the bound is in
 * stage4_cuda/conv_accuracy.py. And a block past the output's edge is computed and dropped: 13x13
 * outputs take 16 blocks of 16 (256 outputs for 169), where rung 4's 49 blocks compute 196. The
 * rule of which to take, where 36 x rung 6's blocks is fewer than 16 x rung 4's, is
 * winograd_block (conv.cuh); "best" and the backward follow it.
 *
 * The backward takes it too: dx (backward_dx.cu) as dy through the turned filters
 * (conv_winograd_4x4 with `turned`, as rung 4), and dw (backward_dw.cu) by the transpose of the
 * same algorithm, F(3x3, 4x4): for dy's 4x4 block e over the patch d,
 *
 *     dw[k, c] = G^T [ sum over blocks of (A e A^T) * (B^T d B) ] G
 *
 * (gradient_transform_4x4_kernel, this file's input transform tile-major, 36 products along the
 * blocks, weights_4x4_kernel), and db = the sum over blocks of entry 7, (A e A^T)[1][1], the sum of
 * e's 16 values.
 *
 * NaN and Inf in x: the transforms carry a pixel into every output of its patch's block (a row of
 * A^T adds five of B^T's rows, which reach the whole patch), where PyTorch's correlation reaches
 * only the outputs whose window covers it. So the input transform flags a non-finite pixel, and
 * when one is, a last kernel recomputes y by the definition (forward_by_taps_kernel), on the
 * device: no wait for the host, and a CUDA graph captures it. (Rung 4's transforms carry a pixel
 * only where a window covers it: its B^T and A^T rows are that sparse.)
 *
 * Cost model: 2 * 36 K C T FLOPs in the products (0.34 GFLOP for the Fashion CNN's conv2 at batch
 * 64, against rung 4's 0.60); device memory: V and M written and read once, 4 * 36 (C + K) T bytes
 * (16 MB there, against rung 4's 28).
 *
 * Run it: python -m bench.conv_ladder --kernel winograd_4x4 */
#include "../tiled_product.cuh"
#include "conv.cuh"

#define TRANSFORM_THREADS 256
#define SIDE 6 /* a transformed tile's side: 4 outputs + 3 taps - 1 */
#define PAIRS_A_BLOCK 8 /* weights_4x4_kernel's block: 8 pairs x 36 entries */
#define STAGED_TILES 256 /* the staged output transform's threads a block, at most */

/* The input transform's blocks: each sets a flag when its patches hold a NaN or an Inf. */
int64_t winograd_4x4_input_transform_blocks(const conv_geometry &g)
{
    return blocks_for(g.channels * winograd_tiles(g, 4).tiles, TRANSFORM_THREADS);
}

/* U [36, K, C], then V [36, C, T], then M [36, K, T], then the input transform's flags. */
int64_t conv_winograd_4x4_scratch(const conv_geometry &g)
{
    int64_t tiles = winograd_tiles(g, 4).tiles;
    return WINOGRAD_4X4_ENTRIES * (g.filters * g.channels + g.channels * tiles + g.filters * tiles) +
           winograd_4x4_input_transform_blocks(g);
}

extern "C" int s2c_cuda_conv2d_winograd_4x4(const float *x, const float *w, const float *b,
                                            float *y, float *scratch, const conv_geometry *g)
{
    // BEGIN SOLUTION week 16, task conv_winograd_4x4
    if (g->kh != 3 || g->kw != 3 || g->stride != 1) return S2C_CUDA_BAD_ARGUMENT;
    return conv_winograd_4x4(x, w, b, y, scratch, *g, false);
}

/* The 1-D transforms, each a function object from IN values to OUT: a tile's 2-D transform
 * applies one to each column, then to each row of the result (transform_2d). */
struct InputRows { /* B^T d */
    static constexpr int IN = 6, OUT = 6;
    __device__ void operator()(const float *d, float *o) const
    {
        o[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
        o[1] = d[3] + d[4] - 4.0f * (d[1] + d[2]);
        o[2] = d[4] - d[3] + 4.0f * (d[1] - d[2]);
        o[3] = d[4] - d[2] + 2.0f * (d[3] - d[1]);
        o[4] = d[4] - d[2] - 2.0f * (d[3] - d[1]);
        o[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
    }
};
struct FilterRows { /* G g */
    static constexpr int IN = 3, OUT = 6;
    __device__ void operator()(const float *g, float *o) const
    {
        o[0] = 0.25f * g[0];
        o[1] = -(g[0] + g[1] + g[2]) / 6.0f;
        o[2] = -(g[0] - g[1] + g[2]) / 6.0f;
        o[3] = (g[0] + 2.0f * g[1] + 4.0f * g[2]) / 24.0f;
        o[4] = (g[0] - 2.0f * g[1] + 4.0f * g[2]) / 24.0f;
        o[5] = g[2];
    }
};
struct OutputRows { /* A^T m */
    static constexpr int IN = 6, OUT = 4;
    __device__ void operator()(const float *m, float *o) const
    {
        float plus = m[1] + m[2], minus = m[1] - m[2], far_plus = m[3] + m[4];
        float far_minus = m[3] - m[4];
        o[0] = m[0] + plus + far_plus;
        o[1] = minus + 2.0f * far_minus;
        o[2] = plus + 4.0f * far_plus;
        o[3] = minus + 8.0f * far_minus + m[5];
    }
};
struct GradientRows4x4 { /* A e, for the weight gradient */
    static constexpr int IN = 4, OUT = 6;
    __device__ void operator()(const float *e, float *o) const
    {
        float even = e[0] + e[2], odd = e[1] + e[3];
        o[0] = e[0];
        o[1] = even + odd;
        o[2] = even - odd;
        o[3] = e[0] + 2.0f * e[1] + 4.0f * e[2] + 8.0f * e[3];
        o[4] = e[0] - 2.0f * e[1] + 4.0f * e[2] - 8.0f * e[3];
        o[5] = e[3];
    }
};
struct WeightRows { /* G^T m, for the weight gradient */
    static constexpr int IN = 6, OUT = 3;
    __device__ void operator()(const float *m, float *o) const
    {
        float plus = m[1] + m[2], far_plus = m[3] + m[4];
        o[0] = 0.25f * m[0] - plus / 6.0f + far_plus / 24.0f;
        o[1] = (m[2] - m[1]) / 6.0f + (m[3] - m[4]) / 12.0f;
        o[2] = (far_plus - plus) / 6.0f + m[5];
    }
};

/* t = T s T^T for a square tile s (IN x IN) and a 1-D transform T (IN -> OUT). */
template <class Transform>
static __device__ void transform_2d(const float s[Transform::IN][Transform::IN],
                                    float t[Transform::OUT][Transform::OUT])
{
    constexpr int IN = Transform::IN, OUT = Transform::OUT;
    float half[OUT][IN]; /* T s */
#pragma unroll
    for (int j = 0; j < IN; j++) {
        float column[IN], out[OUT];
#pragma unroll
        for (int i = 0; i < IN; i++) column[i] = s[i][j];
        Transform()(column, out);
#pragma unroll
        for (int i = 0; i < OUT; i++) half[i][j] = out[i];
    }
#pragma unroll
    for (int i = 0; i < OUT; i++) Transform()(half[i], t[i]);
}

__global__ void filter_transform_4x4_kernel(const float *w, float *u, int64_t filters,
                                            int64_t channels, bool turned);
__global__ void input_transform_4x4_kernel(const float *x, float *v, float *flags,
                                           conv_geometry g, winograd_shape shape, bool tile_major);
__global__ void output_transform_4x4_kernel(const float *m, const float *b, float *y,
                                            conv_geometry g, winograd_shape shape);
__global__ void output_transform_4x4_staged_kernel(const float *m, const float *b, float *y,
                                                   conv_geometry g, winograd_shape shape,
                                                   fast_divider plane_size);
__global__ void forward_by_taps_kernel(const float *x, const float *w, const float *b, float *y,
                                       const float *flags, int64_t flag_count, conv_geometry g,
                                       bool turned);
static __device__ bool patch_4x4(const float *x, float *v, const conv_geometry &g,
                                 winograd_shape shape, bool tile_major, int64_t i);

/* y = the output transform of M (+ b), by the staged kernel where a block holds whole planes of
 * y (an image's blocks number STAGED_TILES or fewer), else by the one that stores each output
 * where it belongs. */
static int output_transform_4x4(const float *m, const float *b, float *y, const conv_geometry &g,
                                winograd_shape shape)
{
    int64_t per_image = shape.tiles_high * shape.tiles_wide, planes = g.filters * g.n;
    if (per_image > STAGED_TILES) {
        int64_t blocks = blocks_for(planes * per_image, TRANSFORM_THREADS);
        launch_overlapped(output_transform_4x4_kernel, blocks, TRANSFORM_THREADS, 0, m, b, y, g,
                          shape);
        LAUNCH_CHECK("output_transform_4x4_kernel");
        return S2C_CUDA_OK;
    }
    int64_t planes_a_block = STAGED_TILES / per_image, blocks = blocks_for(planes, planes_a_block);
    int threads = (int)(planes_a_block * per_image);
    fast_divider plane_size((int)(g.out_height * g.out_width));
    launch_overlapped(output_transform_4x4_staged_kernel, blocks, threads, 0, m, b, y, g, shape,
                      plane_size);
    LAUNCH_CHECK("output_transform_4x4_staged_kernel");
    return S2C_CUDA_OK;
}

/* conv_winograd's contract (conv.cuh) with 4x4 blocks. */
int conv_winograd_4x4(const float *x, const float *w, const float *b, float *y, float *scratch,
                      const conv_geometry &g, bool turned)
{
    winograd_shape shape = winograd_tiles(g, 4);
    int64_t k = g.filters, c = g.channels, t = shape.tiles;
    float *u = scratch, *v = u + WINOGRAD_4X4_ENTRIES * k * c, *m = v + WINOGRAD_4X4_ENTRIES * c * t;
    float *flags = m + WINOGRAD_4X4_ENTRIES * k * t;
    launch_overlapped(filter_transform_4x4_kernel, blocks_for(k * c, TRANSFORM_THREADS),
                      TRANSFORM_THREADS, 0, w, u, k, c, turned);
    LAUNCH_CHECK("filter_transform_4x4_kernel");
    int status = winograd_4x4_input_transform(x, v, flags, g, false);
    if (status != S2C_CUDA_OK) return status;
    /* product xi: M[xi] [k, t] = U[xi] [k, c] @ V[xi] [c, t], batched along z */
    StridedOperand rows = {u, k * c, c, 1}, columns = {v, c * t, 1, t};
    status = launch_tiled_product("conv winograd_4x4 tiled_product_kernel", rows, columns,
                                  StridedResult{m, NULL, k * t, t}, k, t, c, WINOGRAD_4X4_ENTRIES,
                                  0);
    if (status != S2C_CUDA_OK) return status;
    status = output_transform_4x4(m, b, y, g, shape);
    if (status != S2C_CUDA_OK) return status;
    int64_t outputs = g.n * k * conv_positions(g), blocks = blocks_for(outputs, TRANSFORM_THREADS);
    launch_overlapped(forward_by_taps_kernel, by_definition_blocks(blocks), TRANSFORM_THREADS, 0, x,
                      w, b, y, flags, winograd_4x4_input_transform_blocks(g), g, turned);
    LAUNCH_CHECK("forward_by_taps_kernel");
    return S2C_CUDA_OK;
}

/* U[xi] = G g G^T for filter pair (k, c): g = w[k, c], or, `turned`, w[c, k] rotated by 180
 * degrees (as rung 4's filter_transform_kernel). */
__global__ void filter_transform_4x4_kernel(const float *w, float *u, int64_t filters,
                                            int64_t channels, bool turned)
{
    wait_for_previous_kernel();
    int64_t pair = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; /* k * C + c */
    if (pair >= filters * channels) return;
    const float *g = w + (turned ? pair % channels * filters + pair / channels : pair) * 9;
    float taps[3][3], t[SIDE][SIDE];
    for (int i = 0; i < 9; i++) taps[i / 3][i % 3] = turned ? g[8 - i] : g[i];
    transform_2d<FilterRows>(taps, t);
    for (int xi = 0; xi < WINOGRAD_4X4_ENTRIES; xi++)
        u[xi * filters * channels + pair] = t[xi / SIDE][xi % SIDE];
}

int winograd_4x4_input_transform(const float *x, float *v, float *flags, const conv_geometry &g,
                                 bool tile_major)
{
    launch_overlapped(input_transform_4x4_kernel, winograd_4x4_input_transform_blocks(g),
                      TRANSFORM_THREADS, 0, x, v, flags, g, winograd_tiles(g, 4), tile_major);
    LAUNCH_CHECK("input_transform_4x4_kernel");
    return S2C_CUDA_OK;
}

/* V[xi][c, t] = B^T d B for the 6x6 patch d of channel c under block t = (n, th, tw), or with
 * `tile_major` V[xi][t, c]. Pixels outside the image read as zero. Unless flags is NULL,
 * flags[block] = 1 when the block's patches hold a NaN or an Inf, else 0. */
__global__ void input_transform_4x4_kernel(const float *x, float *v, float *flags,
                                           conv_geometry g, winograd_shape shape, bool tile_major)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; /* c * T + t, or t * C + c */
    bool nonfinite = i < g.channels * shape.tiles && patch_4x4(x, v, g, shape, tile_major, i);
    if (flags == NULL) return;
    nonfinite = __syncthreads_or(nonfinite); /* every thread of the block is here */
    if (threadIdx.x == 0) flags[blockIdx.x] = nonfinite ? 1.0f : 0.0f;
}

/* input_transform_4x4_kernel's work for thread i; whether the patch holds a NaN or an Inf. */
static __device__ bool patch_4x4(const float *x, float *v, const conv_geometry &g,
                                 winograd_shape shape, bool tile_major, int64_t i)
{
    winograd_patch at = winograd_patch_of(i, g.channels, shape, 4, tile_major);
    int64_t top = at.top - g.padding, left = at.left - g.padding;
    const float *plane = x + (at.n * g.channels + at.c) * g.height * g.width;
    float d[SIDE][SIDE], transformed[SIDE][SIDE];
    bool nonfinite = false;
#pragma unroll
    for (int a = 0; a < SIDE; a++)
#pragma unroll
        for (int e = 0; e < SIDE; e++) {
            int64_t h = top + a, w = left + e;
            bool inside = 0 <= h && h < g.height && 0 <= w && w < g.width;
            d[a][e] = inside ? plane[h * g.width + w] : 0.0f;
            nonfinite |= !isfinite(d[a][e]);
        }
    transform_2d<InputRows>(d, transformed);
    int64_t entry = g.channels * shape.tiles; /* the distance between entries xi and xi+1 */
#pragma unroll
    for (int xi = 0; xi < WINOGRAD_4X4_ENTRIES; xi++)
        v[xi * entry + i] = transformed[xi / SIDE][xi % SIDE];
    return nonfinite;
}

/* When a flag is set: y[n, k, oh, ow] = b[k] (0 when b is NULL) + the sum over c, r, s of
 * w[k, c, r, s] x[n, c, oh + r - padding, ow + s - padding], the taps inside x only (the
 * definition; `turned` reads w as conv_winograd_4x4 does); otherwise nothing. */
__global__ void forward_by_taps_kernel(const float *x, const float *w, const float *b, float *y,
                                       const float *flags, int64_t flag_count, conv_geometry g,
                                       bool turned)
{
    wait_for_previous_kernel();
    if (!any_flag_set(flags, flag_count)) return;
    int64_t positions = conv_positions(g), count = g.n * g.filters * positions;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t n = i / (g.filters * positions), k = i / positions % g.filters;
        int64_t oh = i % positions / g.out_width, ow = i % g.out_width;
        float sum = b ? b[k] : 0.0f;
        for (int64_t c = 0; c < g.channels; c++)
            for (int r = 0; r < 3; r++)
                for (int s = 0; s < 3; s++) {
                    int64_t h = oh + r - g.padding, col = ow + s - g.padding;
                    if (h < 0 || h >= g.height || col < 0 || col >= g.width) continue;
                    float weight = turned ? w[(c * g.filters + k) * 9 + 8 - (r * 3 + s)]
                                          : w[(k * g.channels + c) * 9 + r * 3 + s];
                    sum += weight * x[((n * g.channels + c) * g.height + h) * g.width + col];
                }
        y[i] = sum;
    }
}

/* y's 4x4 block t of filter k = A^T M A + b[k] (+ 0 when b is NULL), the outputs past y's edge
 * dropped. */
__global__ void output_transform_4x4_kernel(const float *m, const float *b, float *y,
                                            conv_geometry g, winograd_shape shape)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; /* k * T + t */
    if (i >= g.filters * shape.tiles) return;
    winograd_patch at = winograd_patch_of(i, g.filters, shape, 4, false);
    int64_t k = at.c, top = at.top, left = at.left;
    int64_t entry = g.filters * shape.tiles;
    float entries[SIDE][SIDE], out[4][4];
#pragma unroll
    for (int xi = 0; xi < WINOGRAD_4X4_ENTRIES; xi++)
        entries[xi / SIDE][xi % SIDE] = m[xi * entry + i];
    transform_2d<OutputRows>(entries, out);
    float *plane = y + (at.n * g.filters + k) * g.out_height * g.out_width, bias = b ? b[k] : 0.0f;
#pragma unroll
    for (int a = 0; a < 4; a++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            if (top + a < g.out_height && left + e < g.out_width)
                plane[(top + a) * g.out_width + left + e] = out[a][e] + bias;
}

/* output_transform_4x4_kernel for whole planes a block: thread (plane p, block t of the plane)
 * transforms its block into shared memory, where the block's planes lie as they will in y, and
 * the threads then copy them out in order: each plane is one run of OH * OW floats in y. The
 * kernel above stores a thread's 16 outputs where they belong: a warp's store then spreads over
 * about 16 sectors of 32 bytes (the neighbouring thread's block is 4 outputs along), far below
 * the memory's speed. */
__global__ void output_transform_4x4_staged_kernel(const float *m, const float *b, float *y,
                                                   conv_geometry g, winograd_shape shape,
                                                   fast_divider plane_size)
{
    wait_for_previous_kernel();
    __shared__ float staged[STAGED_TILES * 16];  /* the block's planes of y, one after another */
    __shared__ int64_t plane_start[STAGED_TILES]; /* where each of them starts in y */
    int per_image = (int)(shape.tiles_high * shape.tiles_wide);
    int planes_a_block = blockDim.x / per_image, local = threadIdx.x / per_image;
    int64_t plane = blockIdx.x * (int64_t)planes_a_block + local; /* k * N + n */
    int64_t planes = g.filters * g.n, entry = planes * per_image;
    if (plane < planes) {
        int64_t k = plane / g.n, n = plane % g.n, i = plane * per_image + threadIdx.x % per_image;
        int tile = threadIdx.x % per_image, width = (int)g.out_width;
        int top = tile / (int)shape.tiles_wide * 4, left = tile % (int)shape.tiles_wide * 4;
        float entries[SIDE][SIDE], out[4][4];
#pragma unroll
        for (int xi = 0; xi < WINOGRAD_4X4_ENTRIES; xi++)
            entries[xi / SIDE][xi % SIDE] = m[xi * entry + i];
        transform_2d<OutputRows>(entries, out);
        float bias = b ? b[k] : 0.0f, *mine = staged + local * plane_size.divisor;
#pragma unroll
        for (int a = 0; a < 4; a++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (top + a < g.out_height && left + e < width)
                    mine[(top + a) * width + left + e] = out[a][e] + bias;
        if (tile == 0) plane_start[local] = (n * g.filters + k) * plane_size.divisor;
    }
    __syncthreads();
    int64_t here = planes - blockIdx.x * (int64_t)planes_a_block; /* planes in this block */
    int floats = (int)(here < planes_a_block ? here : planes_a_block) * plane_size.divisor;
    for (int j = threadIdx.x; j < floats; j += blockDim.x) {
        int p = plane_size.quotient(j);
        y[plane_start[p] + j - p * plane_size.divisor] = staged[j];
    }
}

__global__ void gradient_transform_4x4_kernel(const float *dy, float *e, conv_geometry g,
                                              winograd_shape shape);
__global__ void weights_4x4_kernel(const float *partial, float *dw, int64_t pieces,
                                   int64_t pairs);

int winograd_4x4_gradient_transform(const float *dy, float *e, const conv_geometry &g)
{
    winograd_shape shape = winograd_tiles(g, 4);
    int64_t blocks = g.filters * shape.tiles;
    launch_overlapped(gradient_transform_4x4_kernel, blocks_for(blocks, TRANSFORM_THREADS),
                      TRANSFORM_THREADS, 0, dy, e, g, shape);
    LAUNCH_CHECK("gradient_transform_4x4_kernel");
    return S2C_CUDA_OK;
}

int winograd_4x4_weights(const float *partial, float *dw, int64_t pieces, int64_t pairs)
{
    int threads = PAIRS_A_BLOCK * WINOGRAD_4X4_ENTRIES;
    launch_overlapped(weights_4x4_kernel, blocks_for(pairs, PAIRS_A_BLOCK), threads, 0, partial, dw,
                      pieces, pairs);
    LAUNCH_CHECK("weights_4x4_kernel");
    return S2C_CUDA_OK;
}

/* E[xi][k, t] = (A e A^T)[xi] for e = dy[n, k, 4th .. 4th + 3, 4tw .. 4tw + 3] (0 past the
 * edge), t = (n, th, tw). */
__global__ void gradient_transform_4x4_kernel(const float *dy, float *e, conv_geometry g,
                                              winograd_shape shape)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; /* k * T + t */
    if (i >= g.filters * shape.tiles) return;
    float block[4][4], transformed[SIDE][SIDE];
    winograd_gradient_block<4>(dy, g, shape, i, block);
    transform_2d<GradientRows4x4>(block, transformed);
    int64_t entry = g.filters * shape.tiles;
#pragma unroll
    for (int xi = 0; xi < WINOGRAD_4X4_ENTRIES; xi++)
        e[xi * entry + i] = transformed[xi / SIDE][xi % SIDE];
}

/* dw[k, c] = G^T M[.][k, c] G for the block's PAIRS_A_BLOCK pairs i = k * C + c, M[xi] the sum of
 * its pieces (product xi's piece at z = xi * pieces + piece), added in order: thread (xi, pair)
 * adds one entry's pieces, then a thread per pair transforms its 36 entries. */
__global__ void weights_4x4_kernel(const float *partial, float *dw, int64_t pieces, int64_t pairs)
{
    wait_for_previous_kernel();
    __shared__ float m[PAIRS_A_BLOCK][WINOGRAD_4X4_ENTRIES + 1];
    int64_t i = winograd_sum_pieces<PAIRS_A_BLOCK, WINOGRAD_4X4_ENTRIES>(partial, pieces, pairs, m);
    if (i < 0) return;
    float entries[SIDE][SIDE], out[3][3];
#pragma unroll
    for (int e = 0; e < WINOGRAD_4X4_ENTRIES; e++)
        entries[e / SIDE][e % SIDE] = m[i % PAIRS_A_BLOCK][e];
    transform_2d<WeightRows>(entries, out);
#pragma unroll
    for (int r = 0; r < 3; r++)
#pragma unroll
        for (int s = 0; s < 3; s++) dw[i * 9 + r * 3 + s] = out[r][s];
    // END SOLUTION
}
