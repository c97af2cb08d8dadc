/* backward_dx.cu -- conv2d's backward, the input gradient: dx (week 16).
 *
 *   dx[n, c, h, w] = sum over k, r, s of w[k, c, r, s] * dy[n, k, oh, ow]
 *                    where oh*stride + r - padding = h and ow*stride + s - padding = w
 *
 * Three ways, chosen per layer:
 *
 *   - A product of depth K*R*S (tiled_product.cuh): the weights read transposed,
 *     A(c, (k, r, s)) = w[k, c, r, s], and B gathered from dy (zero where no window of that tap
 *     covers the pixel), one column per input pixel (n, h, w). It is rung 3's forward run
 *     backwards: no columns buffer, no col2im, and each dx element written once (no atomics, no
 *     race).
 *   - For stride 1 it is a forward convolution: dy through the filters turned by 180 degrees,
 *     filters and channels swapped, padded by R - 1 - padding (conv_input_gradient_geometry). So
 *     a 3x3 layer with enough channels (conv_backward_takes_winograd, dispatch.cu) takes
 *     Winograd as its forward does, rung 4 (04_winograd.cu) or rung 6 (06_winograd_4x4.cu) by the
 *     blocks winograd_block picks for dx's size: the Fashion CNN's conv2 (13x13 pixels, 16 blocks
 *     of 4x4) spends 2.6 times fewer multiply-adds there (576 against 1521 an image and channel
 *     pair). Rung 6 checks dy for a NaN or an Inf and recomputes dx by the definition when it
 *     holds one (06_winograd_4x4.cu says why).
 *   - A layer of DIRECT_CHANNELS channels or fewer (LeNet-5's conv2: 6) takes neither: the
 *     product's tiles would compute 16 rows for its C, and a kernel of its own sums the
 *     definition instead, a thread per input pixel holding all C channels
 *     (input_gradient_direct_kernel).
 *
 * NaN and Inf in w: the product and Winograd multiply every tap of every pixel, taking 0 from dy
 * where no window covers the pixel, and 0 x NaN is NaN; PyTorch (col2im) adds only the taps that
 * cover a pixel, so a non-finite weight reaches only those pixels. After either, dx is computed
 * again by its definition when w holds a NaN or an Inf (nan_recompute.cu), on the device: no
 * wait for the host, and a CUDA graph captures it.
 *
 * Cost model: 2 N K OH OW C R S FLOPs (with Winograd, the rung's cost model on dy); device memory
 * w and dy once, dx once.
 *
 * Run it: python -m bench.conv_ladder (the backward row of each layer) */
#include "../tiled_product.cuh"
#include "conv.cuh"

/* Few channels: dx by its definition (input_gradient_direct_kernel) when C <= DIRECT_CHANNELS
 * and the filters, staged in shared memory with their channels padded to DIRECT_CHANNELS, fit in
 * 48 KB. There the implicit product has C rows, of which its smallest tile computes 16: most of
 * its work would be wasted (LeNet-5's conv2 has 6 channels). */
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

/* dx's scratch: Winograd's (rung 4's or rung 6's, for dy through the turned filters), else none. */
int64_t conv_input_gradient_scratch(const conv_geometry &g)
{
    if (!conv_backward_takes_winograd(g)) return 0;
    conv_geometry turned = conv_input_gradient_geometry(g);
    return winograd_block(turned) == 4 ? conv_winograd_4x4_scratch(turned)
                                       : conv_winograd_scratch(turned);
}

__global__ void input_gradient_direct_kernel(const float *w, const float *dy, float *dx,
                                             conv_geometry g);
static int implicit_input_gradient(const float *w, const float *dy, float *dx,
                                   const conv_geometry &g);

/* dx by its definition for few channels; else by Winograd where it applies (`winograd`: its
 * scratch, conv_input_gradient_scratch(g) floats), else by the implicit product, and then, when w
 * holds a NaN or an Inf (`flags`: CONV_FLAG_BLOCKS floats), again tap by tap (the definition
 * adds only the taps that cover a pixel: it needs no second pass). */
int conv_input_gradient(const float *w, const float *dy, float *dx, float *winograd, float *flags,
                        const conv_geometry &g)
{
    // BEGIN SOLUTION week 16, task conv2d_backward
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
    conv_geometry turned = conv_input_gradient_geometry(g);
    auto winograd_dx = winograd_block(turned) == 4 ? conv_winograd_4x4 : conv_winograd;
    int status = conv_backward_takes_winograd(g)
                     ? winograd_dx(dy, w, NULL, dx, winograd, turned, true)
                     : implicit_input_gradient(w, dy, dx, g);
    if (status != S2C_CUDA_OK) return status;
    status = conv_flag_nonfinite(w, g.filters * conv_rows(g), flags);
    if (status != S2C_CUDA_OK) return status;
    return conv_recompute_input_gradient(w, dy, dx, flags, g);
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
    // END SOLUTION
}
