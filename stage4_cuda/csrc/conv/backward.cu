/* backward.cu -- conv2d's backward: dx, dw and db as implicit products (tiled_product.cuh).
 *
 * Given dy [N, K, OH, OW]:
 *
 *   dx[n, c, h, w] = sum over k, r, s of w[k, c, r, s] * dy[n, k, oh, ow]
 *                    where oh*stride + r - padding = h and ow*stride + s - padding = w
 *     a product of depth K*R*S: the weights read transposed, A(c, (k, r, s)) = w[k, c, r, s],
 *     and B gathered from dy (zero where no window of that tap covers the pixel), one column per
 *     input pixel (n, h, w). It is rung 3's forward run backwards: no columns buffer, no col2im,
 *     and each dx element written once (no atomics, no race). For stride 1 it is a forward
 *     convolution: dy through the filters turned by 180 degrees, filters and channels swapped,
 *     padded by R - 1 - padding. So a 3x3 layer with enough channels takes Winograd as its forward
 *     does, rung 4 (04_winograd.cu) or rung 6 (06_winograd_4x4.cu) by the blocks winograd_block
 *     picks for dx's size: the Fashion CNN's conv2 (13x13 pixels, 16 blocks of 4x4) spends 2.6
 *     times fewer multiply-adds there (576 against 1521 an image and channel pair), and the
 *     transforms' traffic costs less than the products saved.
 *     Rung 6 checks dy for a NaN or an Inf and recomputes dx by the definition when it holds one
 *     (06_winograd_4x4.cu says why).
 *     A layer of 8 channels or fewer (LeNet-5's conv2: 6) takes neither: the product's tiles
 *     would compute 16 rows for its C, and a kernel of its own sums the definition instead, a
 *     thread per input pixel holding all C channels (input_gradient_direct_kernel).
 *
 *   dw[k, c, r, s] = sum over n, oh, ow of dy[n, k, oh, ow] * x[n, c, oh*stride + r - padding, ...]
 *   db[k]          = sum over n, oh, ow of dy[n, k, oh, ow]
 *     one product of depth N*OH*OW (the whole batch), dy as A and the im2col entries gathered from
 *     x as B, with one more column of ones: its sums are db. Its output is small (K x C*R*S+1)
 *     and its depth long (50,176 at LeNet-5's conv1, batch 64), so one block per output tile
 *     would leave the GPU idle (a plain tiled product took 3.3 ms there): the depth is split
 *     into pieces, one block each, enough to give every multiprocessor two blocks, and each
 *     writes its partial sums to scratch; a last kernel adds the pieces in a fixed order.
 *     Deterministic: the same sums in the same order on every run, no atomics.
 *     A one-channel 3x3 layer (a first layer) takes a kernel of its own instead, which reads dy
 *     16 bytes at a time (shallow_weight_gradient_kernel: the Fashion CNN's conv1 at batch 256
 *     in 44 us against the product's 55, on an H100).
 *     A 3x3 stride-1 layer with enough channels takes Winograd instead, as dx does: dw[k, c] is a
 *     sum over dy's 2x2 blocks of the 3x3 correlation of x's 4x4 patch under the block with the
 *     block itself, Winograd's F(3x3, 2x2) (winograd_weight_gradient): 16 products of K x C over
 *     the blocks, 16 multiplications per block and channel pair where the product above spends
 *     36; or over dy's 4x4 blocks and x's 6x6 patches, F(3x3, 4x4), 36 where it spends 144 (the
 *     Fashion CNN's conv2 backward at batch 256 went from 431 to 336 us on an H100, dx taking
 *     4x4 blocks too). Gathered im2col entries cost the product above as many other
 *     instructions as FMAs (ncu: 326 us, 14 TFLOP/s, on the Fashion CNN's conv2 at batch 256 on
 *     an H100).
 *
 *   NaN and Inf in w: the product multiplies every tap of every pixel, taking 0 from dy where no
 *     window covers the pixel, and 0 x NaN is NaN; PyTorch (col2im) adds only the taps that
 *     cover a pixel, so a non-finite weight reaches only those pixels. A kernel checks w for a
 *     non-finite value, each block writing its flag into scratch; when one is set, a last kernel
 *     recomputes dx tap by tap, the taps that cover each pixel only (the definition). Both are
 *     on the device: no wait for the host, and a CUDA graph captures them. Winograd's dw does the
 *     same for x: its transforms carry a pixel into taps whose coefficient is exactly 0 (a pixel
 *     in a patch's second row reaches the tap of row 2), and 0 x NaN is NaN.
 *
 * Cost model: 2 N K OH OW C R S FLOPs for each of dx and dw (with Winograd 2 x E K C T for
 * E = 16 or 36 entries and T = N ceil(OH/b) ceil(OW/b) blocks of b = 2 or 4, in each); device
 * memory x, w, dy, dx, dw once, plus the partial sums (splits x K x (C R S + 1) floats, or
 * E x splits x K x C with Winograd) written and read once, and with Winograd the transformed
 * blocks (E (K + C) T floats for dw, the rung's cost model on dy for dx), written and read once.
 *
 * Run it: python -m grader.conv_bench (the backward row of each layer) */
#include "../reduce.cuh"
#include "../tiled_product.cuh"
#include "conv.cuh"

#define REDUCE_THREADS 256
/* Blocks that look for a NaN or an Inf in w (or x), one flag each: one block alone took 117 us on
 * the Fashion CNN's conv2 (73,728 weights), its threads' loads waiting one after another. */
#define FLAG_BLOCKS REDUCE_THREADS
/* Winograd for dx and dw from this many channels and filters up, as the forward's rule for its
 * input channels (stage4_cuda/nvcc_impl/conv.py): below, its transforms cost more than they
 * save. */
#define WINOGRAD_MIN_CHANNELS 16

__global__ void add_pieces_kernel(const float *partial, float *dw, float *db, int64_t pieces,
                                  int64_t filters, int64_t columns);

/* How the weight gradient's depth N*OH*OW is split (its output is K x (C*R*S + 1)). */
static depth_split weight_split(const conv_geometry &g)
{
    return split_depth(g.filters, conv_rows(g) + 1, g.n * conv_positions(g));
}

/* dx as a forward convolution (stride 1): dy [N, K, OH, OW] through the turned filters, K
 * channels in and C filters out, into [N, C, H, W]. */
static conv_geometry input_gradient_geometry(const conv_geometry &g)
{
    conv_geometry turned = g;
    turned.channels = g.filters, turned.filters = g.channels;
    turned.height = g.out_height, turned.width = g.out_width;
    turned.out_height = g.height, turned.out_width = g.width;
    turned.padding = g.kh - 1 - g.padding;
    return turned;
}

/* Whether dx and dw go through Winograd (3x3, stride 1, enough channels and filters). */
static bool winograd_backward(const conv_geometry &g)
{
    return g.kh == 3 && g.kw == 3 && g.stride == 1 && g.padding <= 2 &&
           g.channels >= WINOGRAD_MIN_CHANNELS && g.filters >= WINOGRAD_MIN_CHANNELS;
}

/* Winograd's weight gradient: its 16 products of K x C, each of depth T (the blocks), in pieces
 * that fill two waves of 128 x 64 blocks, two on every multiprocessor (tiled_product.cuh takes
 * that tile only when there are that many blocks, else 64 x 64). One wave of them is not enough,
 * and a few more than one is a second wave as long as the first: the Fashion CNN's conv2 at batch
 * 256 in 17 pieces (272 blocks for 264 places on an H100) took 244 us, its last 8 blocks running
 * alone, and 162 us in 32 pieces (ncu). */
static depth_split winograd_weight_split(const conv_geometry &g)
{
    int block = winograd_block(g);
    int64_t entries = block == 4 ? WINOGRAD_4X4_ENTRIES : WINOGRAD_ENTRIES;
    int64_t tiles = entries * ceil_div(g.filters, 128) * ceil_div(g.channels, 64);
    int64_t depth = winograd_tiles(g, block).tiles;
    int64_t pieces = 2 * (2 * device_multiprocessors()) / tiles;
    if (pieces < 1) pieces = 1;
    int64_t piece = ceil_div(ceil_div(depth, pieces), PRODUCT_DEPTH) * PRODUCT_DEPTH;
    if (piece < SPLIT_MINIMUM) piece = SPLIT_MINIMUM;
    return {ceil_div(depth, piece), piece};
}

/* The weight gradient of a window of SHALLOW_GRADIENT_TAPS taps or fewer (C*R*S: a one-channel
 * 3x3 layer, the first layer of a CNN, and few others): the product above pads its 10 columns
 * (9 taps and the bias) to a tile of 16 and its depth steps of 16 to one barrier pair each (the
 * Fashion CNN's conv1 at batch 256: 57 us for the product and 8 for adding its pieces, where
 * reading dy's 44 MB takes about 15, on an H100). shallow_weight_gradient_kernel gives a thread
 * 4 neighbouring positions of an image at a time: dy's 4 values for each of its
 * SHALLOW_GRADIENT_FILTERS filters are one 16-byte load (OH*OW a multiple of 4, dy 16-byte
 * aligned), so that enough of dy is on its way to keep the memory busy (a first version, a
 * position and 4 scalar loads at a time, took 70 us there), and it multiplies each pixel of
 * their windows into its SHALLOW_GRADIENT_FILTERS x (SHALLOW_GRADIENT_TAPS + 1) sums. Positions,
 * and pixels within an image, index an int. */
#define SHALLOW_GRADIENT_TAPS 12 /* a 3x3 window of one channel, rounded up to 4 */
#define SHALLOW_GRADIENT_FILTERS 4
#define SHALLOW_GRADIENT_THREADS 256
static bool shallow_weight_gradient_applies(const float *dy, const conv_geometry &g)
{
    return conv_rows(g) <= SHALLOW_GRADIENT_TAPS && conv_positions(g) % 4 == 0 &&
           (uintptr_t)dy % 16 == 0 && g.n * conv_positions(g) <= INT_MAX / 2 &&
           g.channels * g.height * g.width <= INT_MAX;
}
/* The pieces (blocks along x, each a grid stride over the positions, 4 at a time): about four
 * blocks for every multiprocessor, counting the groups of filters, and no more than the
 * positions fill. */
static int64_t shallow_weight_split(const conv_geometry &g)
{
    int64_t groups = ceil_div(g.filters, SHALLOW_GRADIENT_FILTERS);
    int64_t pieces = ceil_div(4 * (int64_t)device_multiprocessors(), groups);
    int64_t most = ceil_div(g.n * conv_positions(g) / 4, SHALLOW_GRADIENT_THREADS);
    pieces = pieces < most ? pieces : most;
    return pieces > 0 ? pieces : 1;
}

/* The weight gradient's scratch: the partial sums, pieces x K x (C*R*S + 1); with Winograd, the
 * transformed blocks of dy [entries, K, T] and of x [entries, T, C], then the partial products
 * [entries x pieces, K, C] (16 entries with 2x2 blocks, 36 with 4x4: winograd_block), and with
 * 4x4 blocks the flags of rung 6's input transform (its blocks that found a NaN or an Inf in x). */
static int64_t weight_part(const conv_geometry &g)
{
    if (!winograd_backward(g)) {
        /* the larger of the two, as dy's alignment is not known here */
        int64_t pieces = weight_split(g).pieces;
        int64_t shallow = conv_rows(g) <= SHALLOW_GRADIENT_TAPS ? shallow_weight_split(g) : 0;
        if (shallow > pieces) pieces = shallow;
        return pieces * g.filters * (conv_rows(g) + 1);
    }
    int block = winograd_block(g);
    int64_t entries = block == 4 ? WINOGRAD_4X4_ENTRIES : WINOGRAD_ENTRIES;
    int64_t tiles = winograd_tiles(g, block).tiles, pieces = winograd_weight_split(g).pieces;
    int64_t x_flags = block == 4 ? winograd_4x4_input_transform_blocks(g) : 0;
    return entries * (g.filters * tiles + tiles * g.channels + pieces * g.filters * g.channels) +
           x_flags;
}

/* dx's scratch with Winograd (rung 4's or rung 6's, for dy through the turned filters). */
static int64_t winograd_part(const conv_geometry &g)
{
    if (!winograd_backward(g)) return 0;
    conv_geometry turned = input_gradient_geometry(g);
    return winograd_block(turned) == 4 ? conv_winograd_4x4_scratch(turned)
                                       : conv_winograd_scratch(turned);
}

/* The flags "this block found a NaN or Inf in w" and "... in x" (FLAG_BLOCKS floats each, 0 or 1),
 * then the weight gradient's scratch, which dx's Winograd reuses once dw is written. */
int64_t conv_backward_scratch(const conv_geometry &g)
{
    int64_t weights = weight_part(g), winograd = winograd_part(g);
    return 2 * FLAG_BLOCKS + (weights > winograd ? weights : winograd);
}

static int input_gradient(const float *w, const float *dy, float *dx, float *winograd,
                          float *flags, const conv_geometry &g);
static int weight_gradient(const float *x, const float *dy, float *dw, float *db, float *partial,
                           const conv_geometry &g);
static int winograd_weight_gradient(const float *x, const float *dy, float *dw, float *db,
                                    float *scratch, float *flags, const conv_geometry &g);

extern "C" int s2c_cuda_conv2d_backward(const float *x, const float *w, const float *dy, float *dx,
                                        float *dw, float *db, float *scratch,
                                        const conv_geometry *g)
{
    // BEGIN SOLUTION week 16, task conv2d_backward
    float *w_flags = scratch, *x_flags = scratch + FLAG_BLOCKS, *work = x_flags + FLAG_BLOCKS;
    int status = winograd_backward(*g)
                     ? winograd_weight_gradient(x, dy, dw, db, work, x_flags, *g)
                     : weight_gradient(x, dy, dw, db, work, *g);
    if (status != S2C_CUDA_OK || dx == NULL) return status;
    return input_gradient(w, dy, dx, work, w_flags, *g);
}

/* A(c, j) = w[k, c, r, s] for j = (k, r, s): the weights transposed where they lie. KH x KW:
 * the kernel size at compile time, or 0 x 0 for kh, kw at run time (with_kernel_size). */
template <int KH, int KW>
struct TransposedFilters {
    const float *w;
    int channels, taps_run_time; /* R*S */
    __device__ float operator()(int, int c, int j) const
    {
        const int taps = KH ? KH * KW : taps_run_time;
        int k = j / taps, rs = j % taps;
        return __ldg(w + ((int64_t)k * channels + c) * taps + rs);
    }
};

/* B(j, col) = dy[n, k, oh, ow] for j = (k, r, s) and the input pixel col = (n, h, w), where
 * oh*stride + r - padding = h (and likewise for w); zero when no such oh, ow exists. */
template <int KH, int KW>
struct GradientWindows {
    const float *dy;
    int filters, kh, kw, stride, padding, height, width, out_height, out_width;
    struct Column {
        const float *image;
        int h, w; /* the pixel, in the padded image */
    };
    __device__ Column column(int, int col) const
    {
        int pixels = height * width, n = col / pixels, p = col % pixels;
        return {dy + (int64_t)n * filters * out_height * out_width, p / width + padding,
                p % width + padding};
    }
    __device__ float operator()(const Column &at, int j) const
    {
        const int taps_wide = KW ? KW : kw, taps = KH ? KH * KW : kh * kw;
        int k = j / taps, rs = j % taps, top = at.h - rs / taps_wide, left = at.w - rs % taps_wide;
        if (top < 0 || left < 0) return 0.0f;
        int oh = top, ow = left;
        if (stride != 1) { /* the usual case skips two divisions */
            if (top % stride != 0 || left % stride != 0) return 0.0f;
            oh = top / stride, ow = left / stride;
        }
        if (oh >= out_height || ow >= out_width) return 0.0f;
        return __ldg(at.image + (k * out_height + oh) * out_width + ow);
    }
};

/* dx[n, c, p] = sum for col = (n, p). */
struct InputPixels {
    float *dx;
    int channels, pixels;
    __device__ void operator()(int, int c, int col, float sum) const
    {
        int n = col / pixels, p = col % pixels;
        dx[((int64_t)n * channels + c) * pixels + p] = sum;
    }
};

__global__ void nonfinite_flags_kernel(const float *w, int64_t count, float *flags);
__global__ void input_gradient_by_taps_kernel(const float *w, const float *dy, float *dx,
                                              const float *flags, conv_geometry g);
__global__ void input_gradient_direct_kernel(const float *w, const float *dy, float *dx,
                                             conv_geometry g);

/* Few channels: dx by its definition (input_gradient_direct_kernel) when C <= DIRECT_CHANNELS
 * and the filters, staged in shared memory with their channels padded to DIRECT_CHANNELS, fit in
 * 48 KB. There the implicit product has C rows, of which its smallest tile computes 16: LeNet-5's
 * conv2 (6 channels) took 100 us at batch 256 on an H100, 2.4 TFLOP/s. */
#define DIRECT_CHANNELS 8
#define DIRECT_THREADS 128
static size_t staged_filters_bytes(const conv_geometry &g)
{
    return (size_t)(g.filters * g.kh * g.kw) * DIRECT_CHANNELS * sizeof(float);
}
static bool direct_input_gradient(const conv_geometry &g)
{
    return g.channels <= DIRECT_CHANNELS && staged_filters_bytes(g) <= 48 * 1024;
}

/* dx as the implicit product of the transposed filters and dy's windows. */
static int implicit_input_gradient(const float *w, const float *dy, float *dx,
                                   const conv_geometry &g)
{
    int taps = (int)(g.kh * g.kw), pixels = (int)(g.height * g.width);
    InputPixels output = {dx, (int)g.channels, pixels};
    return with_kernel_size(g, [&](auto kh, auto kw) {
        TransposedFilters<kh.value, kw.value> filters = {w, (int)g.channels, taps};
        GradientWindows<kh.value, kw.value> windows = {
            dy, (int)g.filters, (int)g.kh, (int)g.kw, (int)g.stride, (int)g.padding,
            (int)g.height, (int)g.width, (int)g.out_height, (int)g.out_width};
        return launch_tiled_product("conv backward (dx) tiled_product_kernel", filters, windows,
                                    output, g.channels, g.n * pixels, g.filters * taps, 1, 0);
    });
}

/* dx by its definition for few channels; else by Winograd where it applies (`winograd`: its
 * scratch), else by the implicit product, and then, when w holds a NaN or an Inf, again tap by
 * tap (the definition adds only the taps that cover a pixel: it needs no second pass). */
static int input_gradient(const float *w, const float *dy, float *dx, float *winograd,
                          float *flags, const conv_geometry &g)
{
    if (direct_input_gradient(g)) {
        int64_t blocks = blocks_for(g.n * g.height * g.width, DIRECT_THREADS);
        int64_t most = 8 * (int64_t)device_multiprocessors(); /* then a grid stride */
        size_t staged = staged_filters_bytes(g);
        blocks = blocks < most ? blocks : most;
        launch_overlapped(input_gradient_direct_kernel, blocks, DIRECT_THREADS, staged, w, dy, dx,
                          g);
        LAUNCH_CHECK("input_gradient_direct_kernel");
        return S2C_CUDA_OK;
    }
    conv_geometry turned = input_gradient_geometry(g);
    auto winograd_dx = winograd_block(turned) == 4 ? conv_winograd_4x4 : conv_winograd;
    int status = winograd_backward(g) ? winograd_dx(dy, w, NULL, dx, winograd, turned, true)
                                      : implicit_input_gradient(w, dy, dx, g);
    if (status != S2C_CUDA_OK) return status;
    launch_overlapped(nonfinite_flags_kernel, FLAG_BLOCKS, REDUCE_THREADS, 0, w,
                      g.filters * conv_rows(g), flags);
    LAUNCH_CHECK("nonfinite_flags_kernel");
    int64_t count = g.n * g.channels * g.height * g.width;
    int64_t blocks = blocks_for(count, REDUCE_THREADS);
    launch_overlapped(input_gradient_by_taps_kernel, by_definition_blocks(blocks), REDUCE_THREADS,
                      0, w, dy, dx, flags, g);
    LAUNCH_CHECK("input_gradient_by_taps_kernel");
    return S2C_CUDA_OK;
}

/* flags[block] = 1 when the block's share of w[0 .. count) (a grid stride) holds a NaN or an Inf,
 * else 0. */
__global__ void nonfinite_flags_kernel(const float *w, int64_t count, float *flags)
{
    wait_for_previous_kernel();
    int bad = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        bad |= !isfinite(w[i]);
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0)
        flags[blockIdx.x] = bad ? 1.0f : 0.0f;
}

/* When a flag is set: dx[n, c, h, w] = the sum over the taps (k, r, s) whose window covers the
 * pixel, of w[k, c, r, s] * dy[n, k, oh, ow] (the definition); otherwise nothing. */
__global__ void input_gradient_by_taps_kernel(const float *w, const float *dy, float *dx,
                                              const float *flags, conv_geometry g)
{
    wait_for_previous_kernel();
    if (!any_flag_set(flags, FLAG_BLOCKS))
        return;
    int64_t pixels = g.height * g.width, count = g.n * g.channels * pixels;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t n = i / (g.channels * pixels), c = i / pixels % g.channels, p = i % pixels;
        int64_t h = p / g.width + g.padding, col = p % g.width + g.padding;
        float sum = 0.0f;
        for (int64_t k = 0; k < g.filters; k++)
            for (int64_t r = 0; r < g.kh; r++)
                for (int64_t s = 0; s < g.kw; s++) {
                    int64_t top = h - r, left = col - s;
                    if (top < 0 || left < 0 || top % g.stride || left % g.stride)
                        continue;
                    int64_t oh = top / g.stride, ow = left / g.stride;
                    if (oh >= g.out_height || ow >= g.out_width)
                        continue;
                    sum += w[((k * g.channels + c) * g.kh + r) * g.kw + s] *
                           dy[((n * g.filters + k) * g.out_height + oh) * g.out_width + ow];
                }
        dx[i] = sum;
    }
}

/* dx[n, :, h, w] for a thread's pixels (n, h, w), all C channels at once: the sum over the taps
 * (k, r, s) whose window covers the pixel of w[k, c, r, s] * dy[n, k, oh, ow], walked r, s, then
 * k, so that the window's tests are made once for all K filters. The block first stages w in
 * shared memory as [k][r][s][DIRECT_CHANNELS] (channels past C are 0): the weights of one tap for
 * every channel are two 16-byte loads, the same address for every thread (a broadcast). A dy
 * value then feeds DIRECT_CHANNELS multiply-adds, and neighbouring threads read neighbouring
 * pixels of dy. */
__global__ void input_gradient_direct_kernel(const float *w, const float *dy, float *dx,
                                             conv_geometry g)
{
    wait_for_previous_kernel();
    extern __shared__ __align__(16) float shared[];
    int taps = (int)(g.kh * g.kw), kh = (int)g.kh, kw = (int)g.kw, stride = (int)g.stride;
    int channels = (int)g.channels, filters = (int)g.filters;
    for (int i = threadIdx.x; i < filters * taps * DIRECT_CHANNELS; i += blockDim.x) {
        int tap = i / DIRECT_CHANNELS, c = i % DIRECT_CHANNELS; /* tap = (k, r, s) */
        int k = tap / taps, rs = tap % taps;
        shared[i] = c < channels ? w[((int64_t)k * channels + c) * taps + rs] : 0.0f;
    }
    __syncthreads();
    int pixels = (int)(g.height * g.width), width = (int)g.width, padding = (int)g.padding;
    int out_height = (int)g.out_height, out_width = (int)g.out_width;
    int64_t plane = (int64_t)out_height * out_width;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < g.n * pixels;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t n = i / pixels;
        int p = (int)(i - n * pixels), h = p / width + padding, col = p % width + padding;
        const float *image = dy + n * filters * plane;
        float sums[DIRECT_CHANNELS] = {};
        for (int r = 0; r < kh; r++) {
            int top = h - r, oh = top / stride;
            if (top < 0 || top % stride != 0 || oh >= out_height) continue;
            for (int s = 0; s < kw; s++) {
                int left = col - s, ow = left / stride;
                if (left < 0 || left % stride != 0 || ow >= out_width) continue;
                const float *at = image + oh * out_width + ow;
                const float4 *weights = (const float4 *)(shared + (r * kw + s) * DIRECT_CHANNELS);
                for (int k = 0; k < filters; k++) {
                    float v = __ldg(at + k * plane);
                    float4 low = weights[2 * k * taps], high = weights[2 * k * taps + 1];
                    sums[0] += low.x * v, sums[1] += low.y * v;
                    sums[2] += low.z * v, sums[3] += low.w * v;
                    sums[4] += high.x * v, sums[5] += high.y * v;
                    sums[6] += high.z * v, sums[7] += high.w * v;
                }
            }
        }
#pragma unroll
        for (int c = 0; c < DIRECT_CHANNELS; c++) /* unrolled: sums stays in registers */
            if (c < channels)
                dx[(n * channels + c) * pixels + p] = sums[c];
    }
}

/* A(k, j) = dy[n, k, p] for j = (n, p): the whole batch along the depth. */
struct GradientRows {
    const float *dy;
    int filters, positions;
    fast_divider by_positions;
    __device__ float operator()(int, int k, int j) const
    {
        int n = by_positions.quotient(j), p = j - n * positions;
        return __ldg(dy + ((int64_t)n * filters + k) * positions + p);
    }
};

/* B(j, col) = x[n, c, oh*stride + r - padding, ow*stride + s - padding] for j = (n, oh, ow) and
 * col = (c, r, s); 1 in the last column (col = C*R*S), whose sums are the bias gradient. */
struct InputTaps {
    const float *x;
    int channels, height, width, kh, kw, stride, padding, out_width, positions;
    fast_divider by_positions, by_out_width;
    struct Column {
        const float *plane; /* channel c of image 0 */
        int r, s;           /* the tap, minus the padding */
        bool ones;
    };
    __device__ Column column(int, int col) const
    {
        int taps = kh * kw, c = col / taps, rs = col % taps;
        return {x + (int64_t)c * height * width, rs / kw - padding, rs % kw - padding,
                col == channels * taps};
    }
    __device__ float operator()(const Column &at, int j) const
    {
        if (at.ones) return 1.0f;
        int n = by_positions.quotient(j), p = j - n * positions;
        int oh = by_out_width.quotient(p), ow = p - oh * out_width;
        int h = oh * stride + at.r, w = ow * stride + at.s;
        bool inside = 0 <= h && h < height && 0 <= w && w < width;
        return inside ? __ldg(at.plane + (int64_t)n * channels * height * width + h * width + w)
                      : 0.0f;
    }
};

template <int KH, int KW, bool PADDED>
__global__ void shallow_weight_gradient_kernel(const float *x, const float *dy, float *partial,
                                               conv_geometry g, fast_divider by_quads,
                                               fast_divider by_out_width);

/* Component e of v (e known at compile time where the loop over it is unrolled). */
static __device__ __forceinline__ float component(float4 v, int e)
{
    return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}

/* dw and db of a shallow layer by shallow_weight_gradient_kernel, into shallow_weight_split(g)
 * pieces of partial sums. */
static int shallow_weight_gradient(const float *x, const float *dy, float *partial,
                                   const conv_geometry &g)
{
    int64_t groups = ceil_div(g.filters, SHALLOW_GRADIENT_FILTERS);
    dim3 blocks((unsigned)shallow_weight_split(g), (unsigned)groups);
    fast_divider by_quads((int)(conv_positions(g) / 4)), by_out_width((int)g.out_width);
    return with_kernel_size(g, [&](auto kh, auto kw) {
        auto kernel = g.padding > 0 ? shallow_weight_gradient_kernel<kh.value, kw.value, true>
                                    : shallow_weight_gradient_kernel<kh.value, kw.value, false>;
        launch_overlapped(kernel, blocks, SHALLOW_GRADIENT_THREADS, 0, x, dy, partial, g, by_quads,
                          by_out_width);
        LAUNCH_CHECK("shallow_weight_gradient_kernel");
        return S2C_CUDA_OK;
    });
}

/* partial[piece, k, j] for the SHALLOW_GRADIENT_FILTERS filters from
 * k = blockIdx.y * SHALLOW_GRADIENT_FILTERS: over the positions (n, p) of piece blockIdx.x (a grid
 * stride over N*OH*OW / 4 quads of 4 positions), the sum of dy[n, k, p] times the window's tap
 * j = (c, r, s) (x[n, c, oh*stride + r - padding, ...], 0 in the padding), and at j = C*R*S the
 * sum of dy[n, k, p] (db). The block then adds its threads' sums, warps by shuffles and the 8
 * warps in order: the same order on every run. KH x KW as in with_kernel_size; without PADDED
 * (padding 0) every tap of a window is inside the image, and its bounds are not checked (the
 * Fashion CNN's conv1 at batch 256: 42.6 us with the checks on an H100, its 9 taps' checks and
 * 64-bit addresses most of the instructions a thread issues). */
template <int KH, int KW, bool PADDED>
__global__ void __launch_bounds__(SHALLOW_GRADIENT_THREADS, 2) /* two blocks a multiprocessor */
    shallow_weight_gradient_kernel(const float *x, const float *dy, float *partial,
                                   conv_geometry g, fast_divider by_quads,
                                   fast_divider by_out_width)
{
    wait_for_previous_kernel();
    /* the window's taps: 9 for a 3x3 layer (of one channel: no other applies), else up to 12 */
    constexpr int TAPS = KH && KH * KW <= SHALLOW_GRADIENT_TAPS ? KH * KW : SHALLOW_GRADIENT_TAPS;
    constexpr int COLUMNS = TAPS + 1, SUMS = SHALLOW_GRADIENT_FILTERS * COLUMNS;
    __shared__ float warp_sums[SHALLOW_GRADIENT_THREADS / 32][SUMS];
    const int depth = (int)conv_rows(g), positions = (int)conv_positions(g);
    const int quads = (int)(g.n * positions / 4), per_image = positions / 4;
    const int first = blockIdx.y * SHALLOW_GRADIENT_FILTERS;
    const int height = (int)g.height, width = (int)g.width;
    const int out_width = (int)g.out_width, stride = (int)g.stride, padding = (int)g.padding;
    const int kh = KH ? KH : (int)g.kh, kw = KW ? KW : (int)g.kw;
    float sums[SHALLOW_GRADIENT_FILTERS][COLUMNS] = {};
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < quads; q += gridDim.x * blockDim.x) {
        int n = by_quads.quotient(q), p0 = (q - n * per_image) * 4;
        float4 gradients[SHALLOW_GRADIENT_FILTERS];
#pragma unroll
        for (int f = 0; f < SHALLOW_GRADIENT_FILTERS; f++) {
            const float *plane = dy + ((int64_t)n * g.filters + first + f) * positions;
            gradients[f] = first + f < g.filters
                               ? __ldg(reinterpret_cast<const float4 *>(plane + p0))
                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
        const float *image = x + (int64_t)n * g.channels * height * width;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int p = p0 + e, oh = by_out_width.quotient(p), ow = p - oh * out_width;
            int top = oh * stride - padding, left = ow * stride - padding;
#pragma unroll
            for (int j = 0; j < TAPS; j++) { /* tap j = (c, r, s), 0 in the padding */
                int c = j / (kh * kw), r = j / kw % kh, s = j % kw, h = top + r, v = left + s;
                bool inside = j < depth &&
                              (!PADDED || (0 <= h && h < height && 0 <= v && v < width));
                float pixel = inside ? __ldg(image + (c * height + h) * width + v) : 0.0f;
#pragma unroll
                for (int f = 0; f < SHALLOW_GRADIENT_FILTERS; f++)
                    sums[f][j] = fmaf(component(gradients[f], e), pixel, sums[f][j]);
            }
#pragma unroll
            for (int f = 0; f < SHALLOW_GRADIENT_FILTERS; f++)
                sums[f][TAPS] += component(gradients[f], e);
        }
    }
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int f = 0; f < SHALLOW_GRADIENT_FILTERS; f++)
#pragma unroll
        for (int j = 0; j < COLUMNS; j++) {
            float total = warp_sum(sums[f][j]);
            if (lane == 0) warp_sums[warp][f * COLUMNS + j] = total;
        }
    __syncthreads();
    int columns = depth + 1; /* partial's: the taps, then db's */
    for (int i = threadIdx.x; i < SHALLOW_GRADIENT_FILTERS * columns; i += blockDim.x) {
        int f = i / columns, j = i % columns;
        if (first + f >= g.filters) continue;
        float total = 0.0f;
        for (int w = 0; w < SHALLOW_GRADIENT_THREADS / 32; w++)
            total += warp_sums[w][f * COLUMNS + (j == depth ? TAPS : j)];
        partial[((int64_t)blockIdx.x * g.filters + first + f) * columns + j] = total;
    }
}

/* dw and db: partial sums of pieces of the depth N*OH*OW, by the shallow kernel or the product,
 * then added in order. */
static int weight_gradient(const float *x, const float *dy, float *dw, float *db, float *partial,
                           const conv_geometry &g)
{
    int64_t columns = conv_rows(g) + 1, pieces;
    int status;
    if (shallow_weight_gradient_applies(dy, g)) {
        pieces = shallow_weight_split(g);
        status = shallow_weight_gradient(x, dy, partial, g);
    } else {
        depth_split split = weight_split(g);
        int positions = (int)conv_positions(g);
        fast_divider by_positions(positions), by_out_width((int)g.out_width);
        GradientRows rows = {dy, (int)g.filters, positions, by_positions};
        InputTaps taps = {x, (int)g.channels, (int)g.height, (int)g.width, (int)g.kh, (int)g.kw,
                          (int)g.stride, (int)g.padding, (int)g.out_width, positions,
                          by_positions, by_out_width};
        /* partial[piece, k, col] = the sum over the piece's depth */
        StridedResult sums = {partial, NULL, g.filters * columns, columns};
        pieces = split.pieces;
        status = launch_tiled_product("conv backward (dw) tiled_product_kernel", rows, taps, sums,
                                      g.filters, columns, g.n * positions, split.pieces,
                                      split.piece);
    }
    if (status != S2C_CUDA_OK) return status;
    int64_t outputs = g.filters * columns;
    launch_overlapped(add_pieces_kernel, pieces_blocks(outputs, pieces), pieces_threads(pieces), 0,
                      partial, dw, db, pieces, g.filters, columns);
    LAUNCH_CHECK("add_pieces_kernel");
    return S2C_CUDA_OK;
}

__global__ void gradient_transform_kernel(const float *dy, float *e, conv_geometry g,
                                          winograd_shape shape);
__global__ void bias_from_blocks_kernel(const float *entry, float *db, int64_t tiles,
                                        float scale);
/* One block per filter adds T blocks' values: 256 threads took 18 us on the Fashion CNN's conv2 at
 * batch 256 (ncu, H100), each thread's 36 loads in nine waits one after another. */
#define BIAS_THREADS 1024
#define PAIRS_A_BLOCK 16 /* weights_from_products_kernel's block: 16 pairs x 16 entries */

/* Piece p of product xi of a stored operand, as product z = xi * pieces + p of depth `piece`: its
 * depth k is the product's p * piece + k (0 past the product's depth). The split products of
 * tiled_product.cuh sum one product's pieces; these are 16 products, each in pieces. */
struct PieceOf {
    StridedOperand whole;
    int pieces, piece, depth;
    __device__ float operator()(int z, int i, int k) const
    {
        int first = z % pieces * piece;
        return first + k < depth ? whole(z / pieces, i, first + k) : 0.0f;
    }
    struct Column {
        const float *at; /* the piece's first element of the column */
        int left;        /* the product's depth left from there */
    };
    __device__ Column column(int z, int i) const
    {
        int first = z % pieces * piece;
        return {whole.column(z / pieces, i) + first * whole.depth_stride, depth - first};
    }
    __device__ float operator()(const Column &at, int k) const
    {
        return k < at.left ? __ldg(at.at + k * whole.depth_stride) : 0.0f;
    }
};
__global__ void weights_from_products_kernel(const float *partial, float *dw, int64_t pieces,
                                             int64_t pairs);
__global__ void weight_gradient_by_taps_kernel(const float *x, const float *dy, float *dw,
                                               const float *flags, int64_t flag_count,
                                               conv_geometry g);

/* dw and db by Winograd's F(3x3, 2x2). For dy's 2x2 block e[k, t] of output block t = (n, th, tw)
 * and x's 4x4 patch d[c, t] under it (rung 4's patch), the block's share of dw[k, c] is the 3x3
 * correlation of d with e, so, with rung 4's B and G' = [1 0; 1/2 1/2; 1/2 -1/2; 0 1],
 * A'^T = [1 1 1 0; 0 1 -1 0; 0 1 1 -1]:
 *
 *     E[xi][k, t] = (G' e[k, t] G'^T)[xi]                   gradient_transform_kernel
 *     V[xi][t, c] = (B^T d[c, t] B)[xi]                     rung 4's input transform, tile-major
 *     M[xi][k, c] = sum over t of E[xi][k, t] V[xi][t, c]   16 products, split along t
 *     dw[k, c]    = A'^T M[.][k, c] A'                      weights_from_products_kernel
 *
 * and db[k] = 4 x the sum over t of E[5][k, t] ((G' e G'^T)[1][1] is a quarter of e's sum). Where
 * winograd_block takes 4x4 blocks, the same with rung 6's 36 entries, F(3x3, 4x4)
 * (06_winograd_4x4.cu), and db the sum of E[7] (e's whole sum). Then, when x holds a NaN or an
 * Inf, dw again by the definition (see the top of this file). */
static int winograd_weight_gradient(const float *x, const float *dy, float *dw, float *db,
                                    float *scratch, float *flags, const conv_geometry &g)
{
    bool large = winograd_block(g) == 4;
    winograd_shape shape = winograd_tiles(g, large ? 4 : 2);
    int64_t k = g.filters, c = g.channels, t = shape.tiles;
    int64_t entries = large ? WINOGRAD_4X4_ENTRIES : WINOGRAD_ENTRIES;
    depth_split split = winograd_weight_split(g);
    float *e = scratch, *v = e + entries * k * t, *partial = v + entries * t * c;
    int status = S2C_CUDA_OK;
    if (large) {
        status = winograd_4x4_gradient_transform(dy, e, g);
    } else {
        launch_overlapped(gradient_transform_kernel, blocks_for(k * t, REDUCE_THREADS),
                          REDUCE_THREADS, 0, dy, e, g, shape);
        LAUNCH_CHECK("gradient_transform_kernel");
    }
    if (status != S2C_CUDA_OK) return status;
    const float *sum_entry = e + (large ? 7 : 5) * k * t;
    launch_overlapped(bias_from_blocks_kernel, (unsigned)k, BIAS_THREADS, 0, sum_entry, db, t,
                      large ? 1.0f : 4.0f);
    LAUNCH_CHECK("bias_from_blocks_kernel");
    /* rung 6's transform flags the blocks of patches that hold a NaN or an Inf as it reads x,
     * where rung 4's leaves it to nonfinite_flags_kernel below */
    float *x_flags = large ? partial + entries * split.pieces * k * c : flags;
    int64_t flag_count = large ? winograd_4x4_input_transform_blocks(g) : FLAG_BLOCKS;
    status = large ? winograd_4x4_input_transform(x, v, x_flags, g, true)
                   : winograd_input_transform(x, v, g, true);
    if (status != S2C_CUDA_OK) return status;
    /* product xi: M[xi] [k, c] = E[xi] [k, t] @ V[xi] [t, c]; its pieces are products of their
     * own (z = xi * pieces + piece), each into partial[z] */
    int pieces = (int)split.pieces, piece = (int)split.piece, depth = (int)t;
    PieceOf rows = {{e, k * t, t, 1}, pieces, piece, depth};
    PieceOf columns = {{v, t * c, 1, c}, pieces, piece, depth};
    StridedResult sums = {partial, NULL, k * c, c};
    status = launch_tiled_product("conv backward (dw) winograd tiled_product_kernel", rows,
                                  columns, sums, k, c, split.piece, entries * split.pieces, 0);
    if (status != S2C_CUDA_OK) return status;
    if (large) {
        status = winograd_4x4_weights(partial, dw, split.pieces, k * c);
        if (status != S2C_CUDA_OK) return status;
    } else {
        int64_t pair_blocks = blocks_for(k * c, PAIRS_A_BLOCK);
        launch_overlapped(weights_from_products_kernel, pair_blocks,
                          PAIRS_A_BLOCK * WINOGRAD_ENTRIES, 0, partial, dw, split.pieces, k * c);
        LAUNCH_CHECK("weights_from_products_kernel");
    }
    if (!large) {
        launch_overlapped(nonfinite_flags_kernel, FLAG_BLOCKS, REDUCE_THREADS, 0, x,
                          g.n * c * g.height * g.width, x_flags);
        LAUNCH_CHECK("nonfinite_flags_kernel");
    }
    int64_t blocks = blocks_for(k * conv_rows(g), REDUCE_THREADS);
    launch_overlapped(weight_gradient_by_taps_kernel, by_definition_blocks(blocks), REDUCE_THREADS,
                      0, x, dy, dw, x_flags, flag_count, g);
    LAUNCH_CHECK("weight_gradient_by_taps_kernel");
    return S2C_CUDA_OK;
}

/* E[xi][k, t] = (G' e G'^T)[xi] for e = dy[n, k, 2th .. 2th + 1, 2tw .. 2tw + 1] (0 past the
 * edge), t = (n, th, tw). */
__global__ void gradient_transform_kernel(const float *dy, float *e, conv_geometry g,
                                          winograd_shape shape)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; /* k * T + t */
    if (i >= g.filters * shape.tiles) return;
    float block[2][2];
    winograd_gradient_block<2>(dy, g, shape, i, block);
    float ge[4][2]; /* G' e */
    for (int b = 0; b < 2; b++) {
        ge[0][b] = block[0][b];
        ge[1][b] = 0.5f * (block[0][b] + block[1][b]);
        ge[2][b] = 0.5f * (block[0][b] - block[1][b]);
        ge[3][b] = block[1][b];
    }
    int64_t entry = g.filters * shape.tiles; /* the distance between entries xi and xi+1 */
    for (int a = 0; a < 4; a++) { /* (G' e) G'^T, row a */
        float h0 = ge[a][0], h1 = ge[a][1];
        float row[4] = {h0, 0.5f * (h0 + h1), 0.5f * (h0 - h1), h1};
        for (int j = 0; j < 4; j++)
            e[(a * 4 + j) * entry + i] = row[j];
    }
}

/* db[k] = scale x the sum over t of entry[k, t]: a block of BIAS_THREADS per filter, its threads'
 * sums added in a fixed order (block_sum: the same bits on every run). */
__global__ void bias_from_blocks_kernel(const float *entry, float *db, int64_t tiles, float scale)
{
    wait_for_previous_kernel();
    float total = 0.0f;
#pragma unroll 4 /* four loads in flight before their additions */
    for (int64_t t = threadIdx.x; t < tiles; t += blockDim.x)
        total += entry[blockIdx.x * tiles + t];
    total = block_sum(total);
    if (threadIdx.x == 0) db[blockIdx.x] = scale * total;
}

/* dw[k, c] = A'^T M[.][k, c] A' for the block's PAIRS_A_BLOCK pairs i = k * C + c, M[xi] the sum
 * of its pieces (product xi's piece at z = xi * pieces + piece), added in order: thread (xi, pair)
 * adds one entry's pieces, then a thread per pair transforms its 16 entries. A thread per pair
 * adding all 16 took 49 us on the Fashion CNN's conv2 at batch 256 (8,192 threads, 272 loads each,
 * on an H100). */
__global__ void weights_from_products_kernel(const float *partial, float *dw, int64_t pieces,
                                             int64_t pairs)
{
    wait_for_previous_kernel();
    __shared__ float m[PAIRS_A_BLOCK][WINOGRAD_ENTRIES + 1];
    int64_t i = winograd_sum_pieces<PAIRS_A_BLOCK, WINOGRAD_ENTRIES>(partial, pieces, pairs, m);
    if (i < 0) return;
    const float *entry = m[i % PAIRS_A_BLOCK];
    float am[3][4]; /* A'^T M */
    for (int e = 0; e < 4; e++) {
        float m0 = entry[e], m1 = entry[4 + e], m2 = entry[8 + e], m3 = entry[12 + e];
        am[0][e] = m0 + m1 + m2;
        am[1][e] = m1 - m2;
        am[2][e] = m1 + m2 - m3;
    }
    for (int r = 0; r < 3; r++) { /* (A'^T M) A', row r */
        float out[3] = {am[r][0] + am[r][1] + am[r][2], am[r][1] - am[r][2],
                        am[r][1] + am[r][2] - am[r][3]};
        for (int s = 0; s < 3; s++)
            dw[i * 9 + r * 3 + s] = out[s];
    }
}

/* When a flag is set: dw[k, c, r, s] = the sum over n, oh, ow of dy[n, k, oh, ow] *
 * x[n, c, oh*stride + r - padding, ow*stride + s - padding], the taps inside the image only (the
 * definition); otherwise nothing. */
__global__ void weight_gradient_by_taps_kernel(const float *x, const float *dy, float *dw,
                                               const float *flags, int64_t flag_count,
                                               conv_geometry g)
{
    wait_for_previous_kernel();
    if (!any_flag_set(flags, flag_count))
        return;
    int64_t count = g.filters * conv_rows(g), taps = g.kh * g.kw;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t k = i / conv_rows(g), c = i / taps % g.channels;
        int64_t r = i % taps / g.kw, s = i % g.kw;
        float sum = 0.0f;
        for (int64_t n = 0; n < g.n; n++)
            for (int64_t oh = 0; oh < g.out_height; oh++)
                for (int64_t ow = 0; ow < g.out_width; ow++) {
                    int64_t h = oh * g.stride + r - g.padding, w = ow * g.stride + s - g.padding;
                    if (h < 0 || h >= g.height || w < 0 || w >= g.width)
                        continue;
                    sum += dy[((n * g.filters + k) * g.out_height + oh) * g.out_width + ow] *
                           x[((n * g.channels + c) * g.height + h) * g.width + w];
                }
        dw[i] = sum;
    }
}

/* dw[k, col] (or db[k] for the last column) = the pieces' sums added in a fixed order. */
__global__ void add_pieces_kernel(const float *partial, float *dw, float *db, int64_t pieces,
                                  int64_t filters, int64_t columns)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    float total = sum_of_pieces(partial, pieces, filters * columns, i);
    if (threadIdx.y != 0 || i >= filters * columns) return;
    int64_t k = i / columns, col = i % columns;
    if (col == columns - 1)
        db[k] = total;
    else
        dw[k * (columns - 1) + col] = total;
    // END SOLUTION
}
