/* reduce.cuh -- sums and maxima over a warp or a block: the reductions of softmax, the losses and
 * the column sums (week 14).
 *
 * A warp's 32 lanes exchange registers with __shfl_xor_sync: five steps, no shared memory, no
 * barrier (the butterfly leaves the total in every lane). A block reduces in two levels: each
 * warp by shuffles, then the warps' results, which meet in shared memory, by the shuffles again.
 * Every thread of the block gets the total. The order of the additions is fixed, so a sum is the
 * same on every run. */
#ifndef S2C_CUDA_REDUCE_CUH
#define S2C_CUDA_REDUCE_CUH

#include "common.h"

#define FULL_WARP 0xffffffffu /* every lane takes part in the shuffle */

template <typename T>
__device__ T warp_sum(T value) {
    for (int offset = 16; offset > 0; offset /= 2)
        value += __shfl_xor_sync(FULL_WARP, value, offset);
    return value;
}

__device__ inline float warp_max(float value) {
    for (int offset = 16; offset > 0; offset /= 2)
        value = nan_max(value, __shfl_xor_sync(FULL_WARP, value, offset));
    return value;
}

/* The sum of `value` over the block (blockDim.x a multiple of 32, at most 1024), for every thread.
 * Every thread of the block must call it (it has barriers). */
template <typename T>
__device__ T block_sum(T value) {
    __shared__ T partial[32]; /* one per warp */
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    value = warp_sum(value);
    if (lane == 0) partial[warp] = value;
    __syncthreads();
    value = warp_sum(lane < warps ? partial[lane] : T(0));
    __syncthreads(); /* everyone has read `partial` before a next call writes it */
    return value;
}

/* The maximum of `value` over the block, for every thread (as block_sum; a NaN wins). */
__device__ inline float block_max(float value) {
    __shared__ float partial[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    value = warp_max(value);
    if (lane == 0) partial[warp] = value;
    __syncthreads();
    value = warp_max(lane < warps ? partial[lane] : -INFINITY);
    __syncthreads();
    return value;
}

#endif
