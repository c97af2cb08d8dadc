/* warp_shuffle.h -- __shfl_xor_sync for tests/cuda_emulation/cuda_runtime.h (included after it):
 * the 32 lanes of a warp (fibers there) exchange values through a slot each and a barrier of the
 * warp's threads. Every lane of a warp must make the same shuffles (as on a GPU with a full
 * mask); the warps of a block need not. tests/test_stage4_nvcc_emulated.py runs the reductions of
 * the memory-bound kernels (reduce.cuh) with it. */
#ifndef S2C_CUDA_EMULATION_WARP_SHUFFLE_H
#define S2C_CUDA_EMULATION_WARP_SHUFFLE_H

#include <cstring>

namespace emulate {
inline uint64_t warp_slots[32][32]; /* [warp][lane] of the block that runs (1024 threads at most) */
}

template <typename T> T __shfl_xor_sync(unsigned, T value, int lane_mask)
{
    unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    uint64_t *slots = emulate::warp_slots[thread / 32];
    unsigned lane = thread % 32;
    std::memcpy(&slots[lane], &value, sizeof(T));
    emulate::wait_at(emulate::Wait::warp); /* every lane has written */
    T out;
    std::memcpy(&out, &slots[lane ^ lane_mask], sizeof(T));
    emulate::wait_at(emulate::Wait::warp); /* every lane has read, before a next shuffle writes */
    return out;
}

#endif
