/* 01_direct.cu -- rung 1: a thread per output, the definition as it is written.
 *
 * What it does: thread i computes y[n, k, oh, ow] (i counts in y's layout, so neighbouring threads
 * write neighbouring outputs: coalesced stores), summing C*R*S products of an input pixel and a
 * weight, the pixel read as zero outside the image. No scratch, no product: the starting point.
 *
 * Why it is slow on the large layers: every output reads its C*R*S pixels and weights again from
 * L1/L2 (a warp shares the weights of one filter, broadcast, and overlapping windows of pixels),
 * so it issues 2 loads per FMA where a tiled product (rung 3) issues about a quarter of one; and
 * the index arithmetic of each load costs as much as the FMA. Even on the first layers of the
 * curriculum's networks (C = 1: 9 or 25 products per output), where writing y should set the
 * speed, the arithmetic does: 64-bit divisions to split i, and loads of the same weights for every
 * output (rung 7 keeps a window in registers and the filters in shared memory instead).
 *
 * Cost model: 2 N K OH OW C R S FLOPs; device memory at best x, w and y once: 4 (N C H W + K C R S
 * + N K OH OW) bytes (Fashion-CNN conv1 at batch 64: 50 MFLOP, 11 MB: its stores would bound it,
 * were it not for the arithmetic above).
 *
 * Run it: python -m bench.conv_ladder --kernel direct */
#include "conv.cuh"

#define DIRECT_THREADS 256

__global__ void conv_direct_kernel(const float *x, const float *w, const float *b, float *y,
                                   conv_geometry g);

extern "C" int s2c_cuda_conv2d_direct(const float *x, const float *w, const float *b, float *y,
                                      float *scratch, const conv_geometry *g)
{
    // BEGIN SOLUTION week 16, task conv_direct
    (void)scratch; /* none needed */
    int64_t outputs = g->n * g->filters * conv_positions(*g);
    launch_overlapped(conv_direct_kernel, blocks_for(outputs, DIRECT_THREADS), DIRECT_THREADS, 0, x,
                      w, b, y, *g);
    LAUNCH_CHECK("conv_direct_kernel");
    return S2C_CUDA_OK;
}

__global__ void conv_direct_kernel(const float *x, const float *w, const float *b, float *y,
                                   conv_geometry g)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t positions = conv_positions(g);
    if (i >= g.n * g.filters * positions) return;
    int64_t n = i / (g.filters * positions), k = i / positions % g.filters, p = i % positions;
    int64_t top = p / g.out_width * g.stride - g.padding, left = p % g.out_width * g.stride - g.padding;
    const float *image = x + n * g.channels * g.height * g.width;
    const float *filter = w + k * conv_rows(g);
    float sum = 0.0f;
    for (int64_t c = 0; c < g.channels; c++)
        for (int64_t r = 0; r < g.kh; r++)
            for (int64_t s = 0; s < g.kw; s++) {
                /* padding reads as zero and is still multiplied: a NaN weight gives NaN there, as
                 * in PyTorch */
                int64_t h = top + r, col = left + s;
                bool inside = 0 <= h && h < g.height && 0 <= col && col < g.width;
                float pixel = inside ? image[(c * g.height + h) * g.width + col] : 0.0f;
                sum = fmaf(pixel, filter[(c * g.kh + r) * g.kw + s], sum);
            }
    y[i] = sum + b[k];
    // END SOLUTION
}
