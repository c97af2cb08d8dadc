/* pooling.cu -- max and average pooling over k x k windows, no padding (week 16), on N*C planes.
 *
 * Forwards: one thread per output, which reads its window (k*k floats) and writes the result
 * (and maxpool's int64 argmax). At k = stride = 2: 4 + 4 bytes an output for avgpool (x read once,
 * y written), 4 + 12 for maxpool.
 *
 * Backwards: gathering, never scattering: each input element is written by one thread, which adds
 * the dy of the windows covering it, instead of each window adding into its inputs (overlapping
 * windows would then need atomic additions, whose order, and so the float rounding, changes from
 * run to run). A thread takes a cell of stride x stride inputs (cell (ch, cw) holds rows
 * ch*stride ... ch*stride + stride - 1, likewise columns): the windows covering an input of the
 * cell are the cell's own window and those before it that still reach it, found by walking back
 * from window (ch, cw), with no division: a thread per input finding its windows by 64-bit
 * divisions (a software routine on the GPU) would be bound by those instructions, not by the
 * memory. Bytes at
 * k = stride = 2: dy read once (the 4 inputs of a window are one thread's), dx written, and for
 * maxpool the argmax read once: 1 + 4 (+ 2) floats' worth per window.
 *
 * Fused with the ReLU after it (a network's MaxPool2d, ReLU; nn/layers/fusion.py), the forward
 * writes relu(max) and the backward passes dy only where that output is positive, as relu's
 * backward would (x > 0 ? dy : 0): one pass each way instead of two, the ReLU's read and write of
 * the pooled map saved.
 *
 * Index arithmetic is 32-bit where the sizes allow: index_div (common.h) splits a flat index,
 * and coordinates within a plane are ints (the Index of each kernel). */
#include "common.h"

#define POOL_THREADS 256

typedef struct s2c_pool_geometry pool_geometry;

/* Each kernel computes coordinates within a plane as Index: int (32 bits) when a plane's
 * indices fit, as they do at any realistic size, else int64_t. 32-bit arithmetic is one
 * instruction where 64-bit takes two to four, and these kernels do several per element. */
template <typename Index>
__global__ void maxpool_kernel(const float *x, float *y, int64_t *argmax, bool relu,
                               pool_geometry g);
template <typename Index>
__global__ void maxpool_backward_kernel(const float *dy, const int64_t *argmax, float *dx,
                                        pool_geometry g);
template <typename Index>
__global__ void maxpool_backward_disjoint_kernel(const float *dy, const int64_t *argmax,
                                                 const float *relu_y, float *dx, bool pairs,
                                                 pool_geometry g);
template <typename Index>
__global__ void avgpool_kernel(const float *x, float *y, pool_geometry g);
template <typename Index>
__global__ void avgpool_backward_kernel(const float *dy, float *dx, pool_geometry g);

static inline int64_t outputs(const pool_geometry *g)
{
    return g->planes * g->out_height * g->out_width;
}

/* The backward's cells: stride x stride inputs each, ceil(H / stride) x ceil(W / stride) of
 * them a plane. */
static inline __host__ __device__ int64_t cells(const pool_geometry *g)
{
    return g->planes * ceil_div(g->height, g->stride) * ceil_div(g->width, g->stride);
}

/* Whether coordinates within a plane fit in an int: h * W + w, and a cell's last input. */
static inline bool plane_fits_int(const pool_geometry *g)
{
    int64_t rows = ceil_div(g->height, g->stride) * g->stride + g->k;
    int64_t cols = ceil_div(g->width, g->stride) * g->stride + g->k;
    return rows * cols <= INT32_MAX;
}

/* Launch kernel<int> or kernel<int64_t> (plane_fits_int) on `threads` threads, then check it. */
#define LAUNCH_POOL(kernel, threads, g, ...)                                                    \
    do {                                                                                        \
        int64_t blocks_ = blocks_for(threads, POOL_THREADS);                                   \
        if (plane_fits_int(g))                                                                  \
            launch_overlapped(kernel<int>, blocks_, POOL_THREADS, 0, __VA_ARGS__, *(g));       \
        else                                                                                    \
            launch_overlapped(kernel<int64_t>, blocks_, POOL_THREADS, 0, __VA_ARGS__, *(g));   \
        LAUNCH_CHECK(#kernel);                                                                  \
    } while (0)

/* Output (or cell) i of planes of rows x cols as (plane, row, col): two divisions, 32-bit ones
 * where i fits. */
static inline __device__ void split(int64_t i, int64_t rows, int64_t cols, int64_t *plane,
                                    int64_t *row, int64_t *col)
{
    int64_t flat_row = index_div(i, cols); /* plane * rows + row */
    *col = i - flat_row * cols;
    *plane = index_div(flat_row, rows);
    *row = flat_row - *plane * rows;
}

/* A backward thread's cell: its plane, its first input row and column (ch * stride, cw * stride),
 * and the last window along each axis that can cover one of its inputs, min(ch, OH - 1) and
 * min(cw, OW - 1) (a window starting after the cell's first row starts after its last). */
template <typename Index>
struct pool_cell {
    int64_t plane;
    Index top, left, last_oh, last_ow;
};

template <typename Index>
static inline __device__ pool_cell<Index> cell_of(int64_t i, const pool_geometry &g)
{
    int64_t plane, ch, cw;
    split(i, ceil_div(g.height, g.stride), ceil_div(g.width, g.stride), &plane, &ch, &cw);
    return {plane, (Index)(ch * g.stride), (Index)(cw * g.stride),
            (Index)(ch < g.out_height ? ch : g.out_height - 1),
            (Index)(cw < g.out_width ? cw : g.out_width - 1)};
}

static int maxpool_forward(const float *x, float *y, int64_t *argmax, bool relu,
                           const pool_geometry *g);
static int maxpool_backward(const float *dy, const int64_t *argmax, const float *relu_y,
                            float *dx, const pool_geometry *g);

extern "C" int s2c_cuda_maxpool2d_forward(const float *x, float *y, int64_t *argmax,
                                          const pool_geometry *g)
{
    return maxpool_forward(x, y, argmax, false, g);
}

extern "C" int s2c_cuda_maxpool2d_relu_forward(const float *x, float *y, int64_t *argmax,
                                               const pool_geometry *g)
{
    return maxpool_forward(x, y, argmax, true, g);
}

static int maxpool_forward(const float *x, float *y, int64_t *argmax, bool relu,
                           const pool_geometry *g)
{
    // BEGIN SOLUTION week 16, task maxpool2d_forward
    LAUNCH_POOL(maxpool_kernel, outputs(g), g, x, y, argmax, relu);
    return S2C_CUDA_OK;
}

/* Thread i: output i = (plane, oh, ow); ties keep the first maximum, and a NaN wins (torch).
 * With `relu`, y holds relu(max) (a NaN stays, as relu keeps it); argmax is the max's either way. */
template <typename Index>
__global__ void maxpool_kernel(const float *x, float *y, int64_t *argmax, bool relu,
                               pool_geometry g) {
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.planes * g.out_height * g.out_width) return;
    int64_t plane, out_row, out_col;
    split(i, g.out_height, g.out_width, &plane, &out_row, &out_col);
    const float *in = x + plane * g.height * g.width;
    Index width = g.width, k = g.k, top = out_row * g.stride, left = out_col * g.stride;
    Index best_index = top * width + left;
    float best = in[best_index];
    for (Index di = 0; di < k; di++)
        for (Index dj = 0; dj < k; dj++) {
            Index index = (top + di) * width + left + dj;
            float value = in[index];
            if (value > best || (value != value && best == best)) {
                best = value;
                best_index = index;
            }
        }
    y[i] = relu && best <= 0.0f ? 0.0f : best;
    argmax[i] = best_index;
    // END SOLUTION
}

extern "C" int s2c_cuda_maxpool2d_backward(const float *dy, const int64_t *argmax, float *dx,
                                           const pool_geometry *g)
{
    return maxpool_backward(dy, argmax, NULL, dx, g);
}

/* relu_y: the fused forward's y; windows that neither overlap nor leave gaps only (k == stride) */
extern "C" int s2c_cuda_maxpool2d_relu_backward(const float *dy, const int64_t *argmax,
                                                const float *relu_y, float *dx,
                                                const pool_geometry *g)
{
    return maxpool_backward(dy, argmax, relu_y, dx, g);
}

static int maxpool_backward(const float *dy, const int64_t *argmax, const float *relu_y,
                            float *dx, const pool_geometry *g)
{
    // BEGIN SOLUTION week 16, task maxpool2d_backward
    if (g->k == g->stride) {
        /* rows of 2 inputs as one float2 store: windows of 2, an even width, dx 8-byte aligned */
        bool pairs = g->stride == 2 && g->width % 2 == 0 && (uintptr_t)dx % 8 == 0;
        LAUNCH_POOL(maxpool_backward_disjoint_kernel, cells(g), g, dy, argmax, relu_y, dx, pairs);
    } else if (relu_y == NULL)
        LAUNCH_POOL(maxpool_backward_kernel, cells(g), g, dy, argmax, dx);
    else
        return S2C_CUDA_BAD_ARGUMENT;
    return S2C_CUDA_OK;
}

/* Thread i: cell i = (plane, ch, cw). Each input (h, w) of the cell adds the dy of every window
 * covering it whose argmax it is: windows oh <= ch (a window starts at or before the cell) with
 * oh * stride + k > h, walked back from min(ch, OH - 1); likewise ow. */
template <typename Index>
__global__ void maxpool_backward_kernel(const float *dy, const int64_t *argmax, float *dx,
                                        pool_geometry g)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= cells(&g)) return;
    pool_cell<Index> cell = cell_of<Index>(i, g);
    int64_t windows = g.out_height * g.out_width;
    const float *plane_dy = dy + cell.plane * windows;
    const int64_t *plane_argmax = argmax + cell.plane * windows;
    float *plane_dx = dx + cell.plane * g.height * g.width;
    Index height = g.height, width = g.width, out_width = g.out_width, k = g.k, s = g.stride;
    for (Index h = cell.top; h < cell.top + s && h < height; h++)
        for (Index w = cell.left; w < cell.left + s && w < width; w++) {
            float total = 0.0f;
            for (Index oh = cell.last_oh; oh >= 0 && oh * s + k > h; oh--)
                for (Index ow = cell.last_ow; ow >= 0 && ow * s + k > w; ow--) {
                    Index window = oh * out_width + ow;
                    if (plane_argmax[window] == h * width + w) total += plane_dy[window];
                }
            plane_dx[h * width + w] = total;
        }
}

/* Windows that neither overlap nor leave gaps (k == stride, as in every network here): the inputs
 * of cell (ch, cw) are window (ch, cw)'s, so each thread loads one argmax and one dy, where the
 * general kernel above reads them again for each input of its cell. A cell past the last window (rows or
 * columns left over) reads the last one (last_oh, last_ow), which holds none of its inputs: its
 * dx is 0. With `pairs`, each row of a 2x2 cell is one 8-byte store where two 4-byte stores
 * would take twice the store instructions, too many to stream at the copy's speed. With relu_y (not NULL: the fused forward's
 * output), the window's dy passes only where relu_y > 0, as relu's backward passes it. */
template <typename Index>
__global__ void maxpool_backward_disjoint_kernel(const float *dy, const int64_t *argmax,
                                                 const float *relu_y, float *dx, bool pairs,
                                                 pool_geometry g)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= cells(&g)) return;
    pool_cell<Index> cell = cell_of<Index>(i, g);
    int64_t window = (cell.plane * g.out_height + cell.last_oh) * g.out_width + cell.last_ow;
    Index chosen = (Index)argmax[window]; /* an index within the plane */
    float gradient = relu_y == NULL || relu_y[window] > 0.0f ? dy[window] : 0.0f;
    float *plane_dx = dx + cell.plane * g.height * g.width;
    Index height = g.height, width = g.width, s = g.stride;
    for (Index h = cell.top; h < cell.top + s && h < height; h++) {
        Index at = h * width + cell.left;
        if (pairs) { /* cell.left is even and below width - 1: both inputs exist */
            *(float2 *)(plane_dx + at) = make_float2(at == chosen ? gradient : 0.0f,
                                                     at + 1 == chosen ? gradient : 0.0f);
            continue;
        }
        for (Index w = cell.left; w < cell.left + s && w < width; w++)
            plane_dx[h * width + w] = h * width + w == chosen ? gradient : 0.0f;
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_avgpool2d_forward(const float *x, float *y, const pool_geometry *g) {
    // BEGIN SOLUTION week 16, task avgpool2d_forward
    LAUNCH_POOL(avgpool_kernel, outputs(g), g, x, y);
    return S2C_CUDA_OK;
}

template <typename Index>
__global__ void avgpool_kernel(const float *x, float *y, pool_geometry g) {
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.planes * g.out_height * g.out_width) return;
    int64_t plane, out_row, out_col;
    split(i, g.out_height, g.out_width, &plane, &out_row, &out_col);
    const float *in = x + plane * g.height * g.width;
    Index width = g.width, k = g.k, top = out_row * g.stride, left = out_col * g.stride;
    float total = 0.0f;
    for (Index di = 0; di < k; di++)
        for (Index dj = 0; dj < k; dj++) total += in[(top + di) * width + left + dj];
    y[i] = total / (float)(g.k * g.k);
    // END SOLUTION
}

extern "C" int s2c_cuda_avgpool2d_backward(const float *dy, float *dx, const pool_geometry *g) {
    // BEGIN SOLUTION week 16, task avgpool2d_backward
    LAUNCH_POOL(avgpool_backward_kernel, cells(g), g, dy, dx);
    return S2C_CUDA_OK;
}

/* Thread i: cell i = (plane, ch, cw); each input of the cell adds dy / k^2 of every window
 * covering it (found as in maxpool_backward_kernel). */
template <typename Index>
__global__ void avgpool_backward_kernel(const float *dy, float *dx, pool_geometry g) {
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= cells(&g)) return;
    pool_cell<Index> cell = cell_of<Index>(i, g);
    const float *plane_dy = dy + cell.plane * g.out_height * g.out_width;
    float *plane_dx = dx + cell.plane * g.height * g.width;
    Index height = g.height, width = g.width, out_width = g.out_width, k = g.k, s = g.stride;
    for (Index h = cell.top; h < cell.top + s && h < height; h++)
        for (Index w = cell.left; w < cell.left + s && w < width; w++) {
            float total = 0.0f;
            for (Index oh = cell.last_oh; oh >= 0 && oh * s + k > h; oh--)
                for (Index ow = cell.last_ow; ow >= 0 && ow * s + k > w; ow--)
                    total += plane_dy[oh * out_width + ow];
            plane_dx[h * width + w] = total / (float)(g.k * g.k);
        }
    // END SOLUTION
}
