/* dispatch.cu -- the conv2d ladder's choices, each made here and nowhere else (week 16; given
 * code, not an exercise):
 *
 *   - the rung that computes a layer: the one asked for, or for "best" the one that suits the
 *     layer (s2c_cuda_conv2d_rung; nvcc_impl/conv.py asks it, and then launches that rung);
 *   - whether the backward takes Winograd for dx and dw, and in which blocks
 *     (conv_backward_takes_winograd, s2c_cuda_conv2d_backward_blocks);
 *   - the scratch each rung and the backward need (s2c_cuda_conv2d_scratch).
 *
 * "best" follows what measured fastest at the curriculum's layers (bench.conv_ladder; the table
 * is curriculum/results/conv-cuda-h100.md): Winograd for 3x3 stride-1 layers deep enough that
 * its transforms cost less than the products they save (S2C_CUDA_WINOGRAD_MIN_CHANNELS input
 * channels), in 4x4 blocks (rung 6) or 2x2 (rung 4) by winograd_block; rung 7 for first layers,
 * whose windows (C*kh*kw <= S2C_CUDA_SHALLOW_DEPTH weights) fit in registers; rung 3 otherwise.
 * A rung asked for on a layer it cannot compute (Winograd on another kernel size or stride,
 * shallow on a deeper window) runs rung 3 instead, so that a network with one 5x5 layer still
 * runs with kernel="winograd". */
#include "conv.cuh"

/* Whether rungs 4 and 6, F(2x2, 3x3) and F(4x4, 3x3), compute this layer: 3x3, stride 1. */
static bool winograd_applies(const conv_geometry &g)
{
    return g.kh == 3 && g.kw == 3 && g.stride == 1;
}

/* Whether rung 7 computes this layer: a window of S2C_CUDA_SHALLOW_DEPTH weights or fewer. */
static bool shallow_applies(const conv_geometry &g)
{
    return conv_rows(g) <= S2C_CUDA_SHALLOW_DEPTH;
}

static int best_rung(const conv_geometry &g)
{
    if (winograd_applies(g) && g.channels >= S2C_CUDA_WINOGRAD_MIN_CHANNELS)
        return winograd_block(g) == 4 ? CONV_WINOGRAD_4X4 : CONV_WINOGRAD;
    if (shallow_applies(g)) return CONV_SHALLOW;
    return CONV_IMPLICIT_GEMM;
}

extern "C" int s2c_cuda_conv2d_rung(const conv_geometry *g, int asked, int *rung)
{
    if (asked < 0 || asked > CONV_SHALLOW) return S2C_CUDA_BAD_ARGUMENT;
    int chosen = asked == 0 ? best_rung(*g) : asked;
    bool winograd = chosen == CONV_WINOGRAD || chosen == CONV_WINOGRAD_4X4;
    if ((winograd && !winograd_applies(*g)) || (chosen == CONV_SHALLOW && !shallow_applies(*g)))
        chosen = CONV_IMPLICIT_GEMM;
    *rung = chosen;
    return S2C_CUDA_OK;
}

bool conv_backward_takes_winograd(const conv_geometry &g)
{
    return winograd_applies(g) && g.padding <= 2 && g.channels >= S2C_CUDA_WINOGRAD_MIN_CHANNELS &&
           g.filters >= S2C_CUDA_WINOGRAD_MIN_CHANNELS;
}

extern "C" int s2c_cuda_conv2d_backward_blocks(const conv_geometry *g, int *dx_block,
                                               int *dw_block)
{
    bool winograd = conv_backward_takes_winograd(*g);
    *dx_block = winograd ? winograd_block(conv_input_gradient_geometry(*g)) : 0;
    *dw_block = winograd ? winograd_block(*g) : 0;
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_conv2d_scratch(const conv_geometry *g, int rung, int64_t *floats)
{
    switch (rung) {
    case CONV_BACKWARD: *floats = conv_backward_scratch(*g); break;
    case CONV_IM2COL: *floats = conv_im2col_scratch(*g); break;
    case CONV_WINOGRAD: *floats = conv_winograd_scratch(*g); break;
    case CONV_FFT: *floats = conv_fft_scratch(*g); break;
    case CONV_WINOGRAD_4X4: *floats = conv_winograd_4x4_scratch(*g); break;
    case CONV_DIRECT:
    case CONV_IMPLICIT_GEMM:
    case CONV_SHALLOW: *floats = 0; break;
    default: return S2C_CUDA_BAD_ARGUMENT;
    }
    return S2C_CUDA_OK;
}
