/* 07_shallow.cu -- rung 7: the direct convolution again, for shallow layers (C*R*S <= 32).
 *
 * What it changes: rung 1 gives each thread one output and reads its C*R*S pixels and weights
 * for it alone. Here a thread takes one output position (n, oh, ow), loads the window under it
 * into registers once, and applies every filter of its block's group to it, the group's filters
 * staged in shared memory and read 4 weights at a time (every thread of a warp reads the same
 * weights: one broadcast). The sums are rung 1's, in its order: the same numbers.
 *
 * Why it exists: a first layer (C = 1, a depth of 9 or 25) leaves rung 3's product little to
 * reuse. Its tile pads the depth to one step of 16 and each block loads, waits and stores once,
 * far below the memory's speed, and rung 1 is slower still (a 64-bit division or two and twice
 * the loads for every FMA). Here the stores of y set the speed. The window must fit in
 * registers: S2C_CUDA_SHALLOW_DEPTH weights or fewer a filter, so deeper layers are refused
 * (dispatch.cu runs implicit_gemm for them, as it does for Winograd on layers that are not 3x3).
 *
 * Cost model: 2 N K OH OW C R S FLOPs; device memory x, w and y once: 4 (N C H W + K C R S +
 * N K OH OW) bytes (Fashion-CNN conv1 at batch 256: 0.2 GFLOP, 45 MB: bound by its stores).
 *
 * Run it: python -m bench.conv_ladder --kernel shallow */
#include "conv.cuh"

#define SHALLOW_THREADS 256 /* output positions a block */
#define SHALLOW_FILTERS 32  /* filters a block applies to each window */
#define SHALLOW_NARROW 12   /* the window of a 3x3 layer of one channel (9 taps), rounded up to 4 */

/* The window's C*R*S pixels in registers, DEPTH of them (C*R*S rounded up to 4, zeros after);
 * KH x KW known at compile time, or 0 x 0 for kh, kw at run time (with_kernel_size). */
template <int DEPTH, int KH, int KW>
__global__ void conv_shallow_kernel(const float *x, const float *w, const float *b, float *y,
                                    conv_geometry g);

extern "C" int s2c_cuda_conv2d_shallow(const float *x, const float *w, const float *b, float *y,
                                       float *scratch, const conv_geometry *g)
{
    // BEGIN SOLUTION week 16, task conv_shallow
    (void)scratch; /* none needed */
    if (conv_rows(*g) > S2C_CUDA_SHALLOW_DEPTH) return S2C_CUDA_BAD_ARGUMENT;
    int64_t groups = blocks_for(g->filters, SHALLOW_FILTERS);
    if (groups > 65535) return S2C_CUDA_BAD_ARGUMENT; /* the grid's y */
    int64_t positions = blocks_for(g->n * conv_positions(*g), SHALLOW_THREADS);
    dim3 blocks((unsigned)positions, (unsigned)groups);
    bool narrow = conv_rows(*g) <= SHALLOW_NARROW;
    return with_kernel_size(*g, [&](auto kh, auto kw) {
        auto kernel = narrow ? conv_shallow_kernel<SHALLOW_NARROW, kh.value, kw.value>
                             : conv_shallow_kernel<S2C_CUDA_SHALLOW_DEPTH, kh.value, kw.value>;
        launch_overlapped(kernel, blocks, SHALLOW_THREADS, 0, x, w, b, y, *g);
        LAUNCH_CHECK("conv_shallow_kernel");
        return S2C_CUDA_OK;
    });
}

template <int DEPTH, int KH, int KW>
__global__ void __launch_bounds__(SHALLOW_THREADS)
    conv_shallow_kernel(const float *x, const float *w, const float *b, float *y, conv_geometry g)
{
    wait_for_previous_kernel();
    __shared__ __align__(16) float filters[SHALLOW_FILTERS][DEPTH];
    __shared__ float biases[SHALLOW_FILTERS];
    const int depth = (int)conv_rows(g), first = blockIdx.y * SHALLOW_FILTERS;
    const int group = min(SHALLOW_FILTERS, (int)g.filters - first);
    for (int e = threadIdx.x; e < SHALLOW_FILTERS * DEPTH; e += blockDim.x) {
        int f = e / DEPTH, j = e % DEPTH;
        filters[f][j] = f < group && j < depth ? w[(int64_t)(first + f) * depth + j] : 0.0f;
    }
    if (threadIdx.x < SHALLOW_FILTERS)
        biases[threadIdx.x] = (int)threadIdx.x < group ? b[first + threadIdx.x] : 0.0f;
    __syncthreads();

    int64_t positions = conv_positions(g), col = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (col >= g.n * positions) return;
    int64_t n = index_div(col, positions);
    int p = (int)(col - n * positions), ow = p % (int)g.out_width;
    int top = (p / (int)g.out_width) * (int)g.stride - (int)g.padding;
    int left = ow * (int)g.stride - (int)g.padding;
    const int height = (int)g.height, width = (int)g.width;
    const int kh = KH ? KH : (int)g.kh, kw = KW ? KW : (int)g.kw;
    const float *image = x + n * g.channels * height * width;

    float window[DEPTH];
#pragma unroll
    for (int j = 0; j < DEPTH; j++) { /* tap j = (c, r, s); padding reads as zero */
        int c = j / (kh * kw), r = j / kw % kh, s = j % kw, h = top + r, v = left + s;
        bool inside = j < depth && 0 <= h && h < height && 0 <= v && v < width;
        window[j] = inside ? __ldg(image + ((int64_t)c * height + h) * width + v) : 0.0f;
    }
    float *out = y + (n * g.filters + first) * positions + p;
    for (int f = 0; f < group; f++) /* rung 1's sum, then the bias */
        out[f * positions] = window_dot(window, filters[f]) + biases[f];
    // END SOLUTION
}
