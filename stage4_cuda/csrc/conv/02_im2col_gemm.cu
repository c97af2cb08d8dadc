/* 02_im2col_gemm.cu -- rung 2: im2col into a buffer, then one product by the SGEMM ladder's best
 * rung (../sgemm/08_cp_async.cu).
 *
 * What it changes: rung 1 computes each output from scratch; here convolving becomes a matrix
 * product, the operation the SGEMM ladder made fast. im2col (im2col.cu) copies every receptive
 * field into a column of cols [C*R*S, N*OH*OW] (the batch last: the whole batch is ONE product,
 * large enough to fill the GPU), the weights seen as [K, C*R*S] multiply it into
 * product [K, N*OH*OW], and a last kernel moves that to y's [N, K, OH, OW] adding the bias.
 *
 * Why it is not the end: the columns repeat each pixel R*S times, so the buffer is R*S times the
 * input (9x or 25x), written once and read back once through device memory, and the product's
 * result takes a second trip for the layout. Rung 3 computes the same product without either.
 *
 * Cost model: 2 K (C R S) (N OH OW) FLOPs; device memory besides the product's own traffic:
 * cols written and read, 8 (C R S)(N OH OW) bytes, the product written and read, 8 K N OH OW
 * (Fashion-CNN conv2 at batch 64: 1.14 GFLOP; 36 MB of columns and 8 MB of product).
 *
 * Run it: python -m bench.conv_ladder --kernel im2col */
#include "../sgemm/sgemm.h"
#include "conv.cuh"

#define LAYOUT_THREADS 256

__global__ void from_batch_last_kernel(const float *product, const float *b, float *y,
                                       conv_geometry g);

/* cols [C*R*S, N*OH*OW], then product [K, N*OH*OW]. */
int64_t conv_im2col_scratch(const conv_geometry &g)
{
    return (conv_rows(g) + g.filters) * g.n * conv_positions(g);
}

extern "C" int s2c_cuda_conv2d_im2col(const float *x, const float *w, const float *b, float *y,
                                      float *scratch, const conv_geometry *g)
{
    // BEGIN SOLUTION week 16, task conv_im2col
    int64_t columns = g->n * conv_positions(*g), outputs = g->filters * columns;
    float *cols = scratch, *product = scratch + conv_rows(*g) * columns;
    int status = s2c_cuda_im2col(x, cols, g, 1);
    if (status == S2C_CUDA_OK)
        status = s2c_sgemm_cp_async(w, cols, product, g->filters, conv_rows(*g), columns);
    if (status != S2C_CUDA_OK) return status;
    launch_overlapped(from_batch_last_kernel, blocks_for(outputs, LAYOUT_THREADS), LAYOUT_THREADS,
                      0, product, b, y, *g);
    LAUNCH_CHECK("from_batch_last_kernel");
    return S2C_CUDA_OK;
}

/* y [N, K, P] = product [K, N*P] + b[k]: back to the contract's layout, with the bias. */
__global__ void from_batch_last_kernel(const float *product, const float *b, float *y,
                                       conv_geometry g)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t positions = conv_positions(g);
    if (i >= g.n * g.filters * positions) return;
    int64_t n = i / (g.filters * positions), k = i / positions % g.filters, p = i % positions;
    y[i] = product[k * g.n * positions + n * positions + p] + b[k];
    // END SOLUTION
}
