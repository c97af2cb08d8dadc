/* warp_shuffle.h -- __shfl_xor_sync for tests/cuda_emulation/cuda_runtime.h (included after it):
 * the 32 lanes of a warp, real threads there, exchange values through a slot each and a barrier of
 * the warp's threads. Every lane of a warp must make the same shuffles (as on a GPU with a full
 * mask); the warps of a block need not. tests/test_stage4_nvcc_emulated.py runs the reductions of
 * the memory-bound kernels (reduce.cuh) with it. */
#ifndef S2C_CUDA_EMULATION_WARP_SHUFFLE_H
#define S2C_CUDA_EMULATION_WARP_SHUFFLE_H

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace emulate {
struct Warp {
    std::barrier<> barrier;
    uint64_t slots[32];
    explicit Warp(std::ptrdiff_t lanes) : barrier(lanes) {}
};

using WarpKey = std::tuple<unsigned, unsigned, unsigned, unsigned, unsigned>;

/* The warp of the calling thread (by block, block size and warp), made by its first lane to ask. */
inline Warp &this_warp()
{
    static std::mutex lock;
    static std::map<WarpKey, std::unique_ptr<Warp>> warps;
    unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned threads = blockDim.x * blockDim.y * blockDim.z, warp = thread / 32;
    std::lock_guard<std::mutex> guard(lock);
    auto &found = warps[{blockIdx.x, blockIdx.y, blockIdx.z, threads, warp}];
    if (!found) found.reset(new Warp(std::min(32u, threads - 32 * warp)));
    return *found;
}
} // namespace emulate

template <typename T> T __shfl_xor_sync(unsigned, T value, int lane_mask)
{
    emulate::Warp &warp = emulate::this_warp();
    unsigned lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32;
    std::memcpy(&warp.slots[lane], &value, sizeof(T));
    warp.barrier.arrive_and_wait(); /* every lane has written */
    T out;
    std::memcpy(&out, &warp.slots[lane ^ lane_mask], sizeof(T));
    warp.barrier.arrive_and_wait(); /* every lane has read, before a next shuffle writes */
    return out;
}

#endif
