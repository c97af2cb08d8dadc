/* int8/codes.cuh -- the int8 code of a value over its scale, shared by quantize_int8, the GEMM's
 * requantizing epilogue and inference's fused int8 convolution: rounded half to even, plus the
 * zero point, clamped to [low, 127] (low -128, or the zero point for a ReLU); NaN is the zero
 * point. And the float an int32 sum of codes stands for, written once so that every kernel
 * rounds it alike. */
#pragma once

#define ROUNDING_SHIFT 12582912.0f /* 1.5 * 2^23: adding it rounds to an integer, ties to even */

static __device__ __forceinline__ int8_t int8_code(float ratio, int zero, int low)
{
    ratio = ratio > 256.0f ? 256.0f : ratio;
    ratio = ratio < -256.0f ? -256.0f : ratio;
    ratio = ratio == ratio ? ratio : 0.0f; /* NaN */
    /* __fadd_rn: not contracted or reordered, so the shift does round */
    const int code = (int)(__fadd_rn(ratio, ROUNDING_SHIFT) - ROUNDING_SHIFT) + zero;
    return (int8_t)(code < low ? low : code > 127 ? 127 : code);
}

/* scale * sum_k (x - x_zero) w + b, from the sum of the uncentred codes: sum_k (x - x_zero) w =
 * sum_k x w - x_zero * sum_k w, exact in int64. */
static __device__ __forceinline__ float rescaled_sum(int32_t sum, int x_zero, int32_t weight_sum,
                                                     float scale, float b)
{
    const int64_t centred = (int64_t)sum - (int64_t)x_zero * weight_sum;
    return scale * (float)centred + b;
}
