/* int8/quantize.cu -- q = clamp(round_half_even(x / scale) + zero_point, -128, 127), NaN -> the
 * zero point (stage1_python/quantized.py gives the math). One thread an element. */
#include "../common.h"
#include "codes.cuh"

#define QUANTIZE_THREADS 256

__global__ void quantize_int8_kernel(const float *x, int8_t *q, int64_t n, float scale,
                                     int zero_point);

extern "C" int s2c_cuda_quantize_int8(const float *x, int8_t *q, int64_t n, float scale,
                                      int zero_point)
{
    if (n < 1 || !(scale > 0.0f) || zero_point < -128 || zero_point > 127)
        return S2C_CUDA_BAD_ARGUMENT;
    // BEGIN SOLUTION week 19, task quantize_int8
    launch_overlapped(quantize_int8_kernel, dim3((unsigned)blocks_for(n, QUANTIZE_THREADS)),
                      dim3(QUANTIZE_THREADS), 0, x, q, n, scale, zero_point);
    LAUNCH_CHECK("quantize_int8_kernel");
    return S2C_CUDA_OK;
}

__global__ void quantize_int8_kernel(const float *x, int8_t *q, int64_t n, float scale,
                                     int zero_point)
{
    wait_for_previous_kernel();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    q[i] = int8_code(__fdiv_rn(x[i], scale), zero_point, -128); /* IEEE division, as the CPU's */
    // END SOLUTION
}
