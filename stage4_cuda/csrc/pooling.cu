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
 * from window (ch, cw), with no division. The first version used a thread per input and found
 * its windows by 64-bit divisions (a software routine on the GPU): the instructions, not the
 * memory, set its speed (avgpool2d_backward 1.6 ms where the traffic takes 0.25). Bytes at
 * k = stride = 2: dy read once (the 4 inputs of a window are one thread's), dx written, and for
 * maxpool the argmax read once: 1 + 4 (+ 2) floats' worth per window.
 *
 * Index arithmetic uses index_div (common.h): 32-bit divisions where the sizes allow. */
#include "common.h"

#define POOL_THREADS 256

typedef struct s2c_pool_geometry pool_geometry;

__global__ void maxpool_kernel(const float *x, float *y, int64_t *argmax, pool_geometry g);
__global__ void maxpool_backward_kernel(const float *dy, const int64_t *argmax, float *dx,
                                        pool_geometry g);
__global__ void avgpool_kernel(const float *x, float *y, pool_geometry g);
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

extern "C" int s2c_cuda_maxpool2d_forward(const float *x, float *y, int64_t *argmax,
                                          const pool_geometry *g)
{
    // BEGIN SOLUTION week 16, task maxpool2d_forward
    maxpool_kernel<<<blocks_for(outputs(g), POOL_THREADS), POOL_THREADS>>>(x, y, argmax, *g);
    LAUNCH_CHECK("maxpool_kernel");
    return S2C_CUDA_OK;
}

/* Thread i: output i = (plane, oh, ow); ties keep the first maximum, and a NaN wins (torch). */
__global__ void maxpool_kernel(const float *x, float *y, int64_t *argmax, pool_geometry g) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.planes * g.out_height * g.out_width) return;
    int64_t plane, oh, ow;
    split(i, g.out_height, g.out_width, &plane, &oh, &ow);
    const float *in = x + plane * g.height * g.width;
    int64_t best_index = oh * g.stride * g.width + ow * g.stride;
    float best = in[best_index];
    for (int64_t di = 0; di < g.k; di++)
        for (int64_t dj = 0; dj < g.k; dj++) {
            int64_t index = (oh * g.stride + di) * g.width + ow * g.stride + dj;
            float value = in[index];
            if (value > best || (value != value && best == best)) {
                best = value;
                best_index = index;
            }
        }
    y[i] = best;
    argmax[i] = best_index;
    // END SOLUTION
}

extern "C" int s2c_cuda_maxpool2d_backward(const float *dy, const int64_t *argmax, float *dx,
                                           const pool_geometry *g)
{
    // BEGIN SOLUTION week 16, task maxpool2d_backward
    maxpool_backward_kernel<<<blocks_for(cells(g), POOL_THREADS), POOL_THREADS>>>(dy, argmax, dx,
                                                                                  *g);
    LAUNCH_CHECK("maxpool_backward_kernel");
    return S2C_CUDA_OK;
}

/* Thread i: cell i = (plane, ch, cw). Each input (h, w) of the cell adds the dy of every window
 * covering it whose argmax it is: windows oh <= ch (a window starts at or before the cell) with
 * oh * stride + k > h, walked back from min(ch, OH - 1); likewise ow. */
__global__ void maxpool_backward_kernel(const float *dy, const int64_t *argmax, float *dx,
                                        pool_geometry g)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= cells(&g)) return;
    int64_t plane, ch, cw;
    split(i, ceil_div(g.height, g.stride), ceil_div(g.width, g.stride), &plane, &ch, &cw);
    const float *plane_dy = dy + plane * g.out_height * g.out_width;
    const int64_t *plane_argmax = argmax + plane * g.out_height * g.out_width;
    float *plane_dx = dx + plane * g.height * g.width;
    int64_t last_oh = ch < g.out_height ? ch : g.out_height - 1;
    int64_t last_ow = cw < g.out_width ? cw : g.out_width - 1;
    for (int64_t h = ch * g.stride; h < (ch + 1) * g.stride && h < g.height; h++)
        for (int64_t w = cw * g.stride; w < (cw + 1) * g.stride && w < g.width; w++) {
            float total = 0.0f;
            for (int64_t oh = last_oh; oh >= 0 && oh * g.stride + g.k > h; oh--)
                for (int64_t ow = last_ow; ow >= 0 && ow * g.stride + g.k > w; ow--) {
                    int64_t window = oh * g.out_width + ow;
                    if (plane_argmax[window] == h * g.width + w) total += plane_dy[window];
                }
            plane_dx[h * g.width + w] = total;
        }
    // END SOLUTION
}

extern "C" int s2c_cuda_avgpool2d_forward(const float *x, float *y, const pool_geometry *g) {
    // BEGIN SOLUTION week 16, task avgpool2d_forward
    avgpool_kernel<<<blocks_for(outputs(g), POOL_THREADS), POOL_THREADS>>>(x, y, *g);
    LAUNCH_CHECK("avgpool_kernel");
    return S2C_CUDA_OK;
}

__global__ void avgpool_kernel(const float *x, float *y, pool_geometry g) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.planes * g.out_height * g.out_width) return;
    int64_t plane, oh, ow;
    split(i, g.out_height, g.out_width, &plane, &oh, &ow);
    const float *in = x + plane * g.height * g.width;
    float total = 0.0f;
    for (int64_t di = 0; di < g.k; di++)
        for (int64_t dj = 0; dj < g.k; dj++)
            total += in[(oh * g.stride + di) * g.width + ow * g.stride + dj];
    y[i] = total / (float)(g.k * g.k);
    // END SOLUTION
}

extern "C" int s2c_cuda_avgpool2d_backward(const float *dy, float *dx, const pool_geometry *g) {
    // BEGIN SOLUTION week 16, task avgpool2d_backward
    avgpool_backward_kernel<<<blocks_for(cells(g), POOL_THREADS), POOL_THREADS>>>(dy, dx, *g);
    LAUNCH_CHECK("avgpool_backward_kernel");
    return S2C_CUDA_OK;
}

/* Thread i: cell i = (plane, ch, cw); each input of the cell adds dy / k^2 of every window
 * covering it (found as in maxpool_backward_kernel). */
__global__ void avgpool_backward_kernel(const float *dy, float *dx, pool_geometry g) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= cells(&g)) return;
    int64_t plane, ch, cw;
    split(i, ceil_div(g.height, g.stride), ceil_div(g.width, g.stride), &plane, &ch, &cw);
    const float *plane_dy = dy + plane * g.out_height * g.out_width;
    float *plane_dx = dx + plane * g.height * g.width;
    int64_t last_oh = ch < g.out_height ? ch : g.out_height - 1;
    int64_t last_ow = cw < g.out_width ? cw : g.out_width - 1;
    for (int64_t h = ch * g.stride; h < (ch + 1) * g.stride && h < g.height; h++)
        for (int64_t w = cw * g.stride; w < (cw + 1) * g.stride && w < g.width; w++) {
            float total = 0.0f;
            for (int64_t oh = last_oh; oh >= 0 && oh * g.stride + g.k > h; oh--)
                for (int64_t ow = last_ow; ow >= 0 && ow * g.stride + g.k > w; ow--)
                    total += plane_dy[oh * g.out_width + ow];
            plane_dx[h * g.width + w] = total / (float)(g.k * g.k);
        }
    // END SOLUTION
}
