/* im2col.cu -- im2col and col2im (week 16).
 *
 * im2col copies every receptive field into a column, so that convolving is a matrix product. The
 * op im2col returns the contract's layout [N, C*kh*kw, OH*OW]; the ladder's rung 2
 * (02_im2col_gemm.cu) uses the same kernel with the batch moved last, [C*kh*kw, N*OH*OW], so
 * that the whole batch is ONE product with the weights seen as [K, C*kh*kw]: a big product fills
 * the GPU, where N small ones would not. A layout reaches the kernels as the strides of its batch
 * and row indices; the position index p = oh*OW + ow always has stride 1 within an image's block.
 *
 * col2im, the adjoint, gathers: one thread per input pixel adds the column entries that came
 * from it (deterministic, unlike a scatter with atomic additions). */
#include "conv.cuh"

#define CONV_THREADS 256

/* (batch stride, row stride) of the columns: [N, rows, P], or [rows, N*P] when batch_last. */
static inline void column_strides(const conv_geometry *g, int batch_last, int64_t *batch,
                                  int64_t *row)
{
    int64_t positions = conv_positions(*g);
    *batch = batch_last ? positions : conv_rows(*g) * positions;
    *row = batch_last ? g->n * positions : positions;
}

__global__ void im2col_kernel(const float *x, float *cols, conv_geometry g, int64_t batch_stride,
                              int64_t row_stride);
__global__ void col2im_kernel(const float *cols, float *x, conv_geometry g, int64_t batch_stride,
                              int64_t row_stride);

extern "C" int s2c_cuda_im2col(const float *x, float *cols, const conv_geometry *g,
                               int batch_last)
{
    // BEGIN SOLUTION week 16, task im2col
    int64_t batch_stride, row_stride, entries = g->n * conv_rows(*g) * conv_positions(*g);
    column_strides(g, batch_last, &batch_stride, &row_stride);
    launch_overlapped(im2col_kernel, blocks_for(entries, CONV_THREADS), CONV_THREADS, 0, x, cols,
                      *g, batch_stride, row_stride);
    LAUNCH_CHECK("im2col_kernel");
    return S2C_CUDA_OK;
}

/* Thread i fills one entry: image n, row (c, di, dj), position p = (oh, ow); zero in padding. */
__global__ void im2col_kernel(const float *x, float *cols, conv_geometry g, int64_t batch_stride,
                              int64_t row_stride)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t positions = g.out_height * g.out_width, rows = g.channels * g.kh * g.kw;
    if (i >= g.n * rows * positions) return;
    int64_t n = i / (rows * positions), row = i / positions % rows, p = i % positions;
    int64_t c = row / (g.kh * g.kw), di = row / g.kw % g.kh, dj = row % g.kw;
    int64_t h = p / g.out_width * g.stride + di - g.padding;
    int64_t w = p % g.out_width * g.stride + dj - g.padding;
    bool inside = 0 <= h && h < g.height && 0 <= w && w < g.width;
    float value = inside ? x[((n * g.channels + c) * g.height + h) * g.width + w] : 0.0f;
    cols[n * batch_stride + row * row_stride + p] = value;
    // END SOLUTION
}

extern "C" int s2c_cuda_col2im(const float *cols, float *x, const conv_geometry *g,
                               int batch_last)
{
    // BEGIN SOLUTION week 16, task col2im
    int64_t batch_stride, row_stride, pixels = g->n * g->channels * g->height * g->width;
    column_strides(g, batch_last, &batch_stride, &row_stride);
    launch_overlapped(col2im_kernel, blocks_for(pixels, CONV_THREADS), CONV_THREADS, 0, cols, x, *g,
                      batch_stride, row_stride);
    LAUNCH_CHECK("col2im_kernel");
    return S2C_CUDA_OK;
}

/* Thread i sums, for input pixel (n, c, h, w), every column entry whose window covered it. */
__global__ void col2im_kernel(const float *cols, float *x, conv_geometry g, int64_t batch_stride,
                              int64_t row_stride)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.n * g.channels * g.height * g.width) return;
    int64_t n = i / (g.channels * g.height * g.width), c = i / (g.height * g.width) % g.channels;
    int64_t h = i / g.width % g.height, w = i % g.width;
    float total = 0.0f;
    for (int64_t di = 0; di < g.kh; di++)
        for (int64_t dj = 0; dj < g.kw; dj++) {
            int64_t top = h + g.padding - di, left = w + g.padding - dj; /* oh*stride, ow*stride */
            if (top < 0 || left < 0 || top % g.stride != 0 || left % g.stride != 0) continue;
            int64_t oh = top / g.stride, ow = left / g.stride;
            if (oh >= g.out_height || ow >= g.out_width) continue;
            int64_t row = (c * g.kh + di) * g.kw + dj;
            total += cols[n * batch_stride + row * row_stride + oh * g.out_width + ow];
        }
    x[i] = total;
    // END SOLUTION
}
