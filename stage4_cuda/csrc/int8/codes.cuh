/* int8/codes.cuh -- the int8 code of a value over its scale, shared by quantize_int8 and the
 * GEMM's requantizing epilogue: rounded half to even, plus the zero point, clamped to [low, 127]
 * (low -128, or the zero point for a ReLU); NaN is the zero point. */
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
