/* backward.cu -- conv2d's backward (week 16): from dy [N, K, OH, OW], the gradients of the weights
 * and bias (dw, db), then of the input (dx), each in the file that computes it:
 *
 *     dw, db   backward_dw.cu      a split product, a kernel for shallow windows, or Winograd
 *     dx       backward_dx.cu      a product, Winograd (rung 4 or 6 on dy), or the definition
 *     NaN/Inf  nan_recompute.cu    the definition again where the fast ways would spread a NaN
 *
 * Which way a layer takes is decided once, in dispatch.cu (conv_backward_takes_winograd) and by
 * winograd_block (conv.cuh). Deterministic: no atomics, and every sum in a fixed order.
 *
 * Scratch (s2c_cuda_conv2d_scratch with rung 0): CONV_FLAG_BLOCKS flags for w, as many for x,
 * then the larger of dw's work and dx's, since dx's Winograd reuses dw's once dw is written.
 *
 * Run it: python -m bench.conv_ladder (the backward row of each layer) */
#include "conv.cuh"

int64_t conv_backward_scratch(const conv_geometry &g)
{
    int64_t weights = conv_weight_gradient_scratch(g), inputs = conv_input_gradient_scratch(g);
    return 2 * CONV_FLAG_BLOCKS + (weights > inputs ? weights : inputs);
}

extern "C" int s2c_cuda_conv2d_backward(const float *x, const float *w, const float *dy, float *dx,
                                        float *dw, float *db, float *scratch,
                                        const conv_geometry *g)
{
    // BEGIN SOLUTION week 16, task conv2d_backward
    float *w_flags = scratch, *x_flags = w_flags + CONV_FLAG_BLOCKS;
    float *work = x_flags + CONV_FLAG_BLOCKS;
    int status = conv_weight_gradient(x, dy, dw, db, work, x_flags, *g);
    if (status != S2C_CUDA_OK || dx == NULL) return status;
    return conv_input_gradient(w, dy, dx, work, w_flags, *g);
    // END SOLUTION
}
