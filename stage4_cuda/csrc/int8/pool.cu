/* int8/pool.cu -- max-pooling of int8 codes (week 19): x [planes, h, w] -> y [planes, oh, ow], no
 * padding, one thread an output. A code's order is its value's (x = scale * (q - zero), scale >
 * 0), so the largest code is the code of the largest value; no argmax is kept (inference). */
#include "../common.h"

#define POOL_THREADS 256

__global__ void maxpool2d_int8_kernel(const int8_t *x, int8_t *y, int64_t planes, int64_t h,
                                      int64_t w, int64_t k, int64_t stride, int64_t oh,
                                      int64_t ow);

extern "C" int s2c_cuda_maxpool2d_int8(const int8_t *x, int8_t *y, int64_t planes, int64_t h,
                                       int64_t w, int64_t k, int64_t stride)
{
    if (planes < 1 || h < 1 || w < 1 || k < 1 || stride < 1 || k > h || k > w)
        return S2C_CUDA_BAD_ARGUMENT;
    // BEGIN SOLUTION week 19, task maxpool2d_int8
    const int64_t oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;
    launch_overlapped(maxpool2d_int8_kernel, dim3((unsigned)blocks_for(planes * oh * ow,
                                                                       POOL_THREADS)),
                      dim3(POOL_THREADS), 0, x, y, planes, h, w, k, stride, oh, ow);
    LAUNCH_CHECK("maxpool2d_int8_kernel");
    return S2C_CUDA_OK;
}

__global__ void maxpool2d_int8_kernel(const int8_t *x, int8_t *y, int64_t planes, int64_t h,
                                      int64_t w, int64_t k, int64_t stride, int64_t oh,
                                      int64_t ow)
{
    wait_for_previous_kernel();
    const int64_t at = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (at >= planes * oh * ow)
        return;
    /* 32-bit divisions where the sizes allow (index_div): three 64-bit ones would cost more
     * than the thread's loads */
    const int64_t plane = index_div(at, oh * ow), pixel = at - plane * oh * ow;
    const int64_t oy = index_div(pixel, ow), ox = pixel - oy * ow;
    const int8_t *corner = x + (plane * h + oy * stride) * w + ox * stride;
    int8_t largest = -128;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++)
            largest = corner[i * w + j] > largest ? corner[i * w + j] : largest;
    y[at] = largest;
    // END SOLUTION
}
