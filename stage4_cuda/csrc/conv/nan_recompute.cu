/* nan_recompute.cu -- conv2d's backward where a NaN or an Inf must reach only what the definition
 * reaches (week 16).
 *
 * The fast ways of backward_dx.cu and backward_dw.cu multiply values the definition never pairs:
 * the product and Winograd's dx take every tap of every pixel, 0 from dy where no window covers
 * it, and Winograd's dw carries a pixel of x into taps whose coefficient is exactly 0. 0 x NaN is
 * NaN, so a NaN or an Inf in w (for dx) or x (for Winograd's dw) would spread where PyTorch's does
 * not. Blocks first flag the non-finite values they find (conv_flag_nonfinite: a flag a block,
 * in scratch); then a pass of the definition recomputes the result when any flag is set, and
 * returns at once otherwise, as nearly always. Both run on the device: no wait for the host, and
 * a CUDA graph captures them. */
#include "conv.cuh"

#define RECOMPUTE_THREADS 256

__global__ void nonfinite_flags_kernel(const float *values, int64_t count, float *flags);
__global__ void input_gradient_by_taps_kernel(const float *w, const float *dy, float *dx,
                                              const float *flags, conv_geometry g);
__global__ void weight_gradient_by_taps_kernel(const float *x, const float *dy, float *dw,
                                               const float *flags, int64_t flag_count,
                                               conv_geometry g);

/* flags[0 .. CONV_FLAG_BLOCKS) = whether each block's share of values[0 .. count) holds a NaN or
 * an Inf. */
int conv_flag_nonfinite(const float *values, int64_t count, float *flags)
{
    // BEGIN SOLUTION week 16, task conv2d_backward
    launch_overlapped(nonfinite_flags_kernel, CONV_FLAG_BLOCKS, RECOMPUTE_THREADS, 0, values, count,
                      flags);
    LAUNCH_CHECK("nonfinite_flags_kernel");
    return S2C_CUDA_OK;
}

/* flags[block] = 1 when the block's share of values[0 .. count) (a grid stride) holds a NaN or an Inf,
 * else 0. */
__global__ void nonfinite_flags_kernel(const float *values, int64_t count, float *flags)
{
    wait_for_previous_kernel();
    int bad = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        bad |= !isfinite(values[i]);
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0)
        flags[blockIdx.x] = bad ? 1.0f : 0.0f;
    // END SOLUTION
}

/* dx again by its definition when one of the CONV_FLAG_BLOCKS flags (w's) is set. */
int conv_recompute_input_gradient(const float *w, const float *dy, float *dx, const float *flags,
                                  const conv_geometry &g)
{
    // BEGIN SOLUTION week 16, task conv2d_backward
    int64_t blocks = blocks_for(g.n * g.channels * g.height * g.width, RECOMPUTE_THREADS);
    launch_overlapped(input_gradient_by_taps_kernel, by_definition_blocks(blocks),
                      RECOMPUTE_THREADS, 0, w, dy, dx, flags, g);
    LAUNCH_CHECK("input_gradient_by_taps_kernel");
    return S2C_CUDA_OK;
}

/* When a flag is set: dx[n, c, h, w] = the sum over the taps (k, r, s) whose window covers the
 * pixel, of w[k, c, r, s] * dy[n, k, oh, ow] (the definition); otherwise nothing. */
__global__ void input_gradient_by_taps_kernel(const float *w, const float *dy, float *dx,
                                              const float *flags, conv_geometry g)
{
    wait_for_previous_kernel();
    if (!any_flag_set(flags, CONV_FLAG_BLOCKS))
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
    // END SOLUTION
}

/* dw again by its definition when one of the flag_count flags (x's) is set. */
int conv_recompute_weight_gradient(const float *x, const float *dy, float *dw, const float *flags,
                                   int64_t flag_count, const conv_geometry &g)
{
    // BEGIN SOLUTION week 16, task conv2d_backward
    int64_t blocks = blocks_for(g.filters * conv_rows(g), RECOMPUTE_THREADS);
    launch_overlapped(weight_gradient_by_taps_kernel, by_definition_blocks(blocks),
                      RECOMPUTE_THREADS, 0, x, dy, dw, flags, flag_count, g);
    LAUNCH_CHECK("weight_gradient_by_taps_kernel");
    return S2C_CUDA_OK;
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
    // END SOLUTION
}
