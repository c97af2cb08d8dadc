/* cuda_runtime.h for the CPU: just enough of CUDA to run the SGEMM and conv2d ladders' kernels on
 * threads.
 *
 * tests/test_sgemm_cuda.py and tests/test_conv_cuda.py compile the rung files with g++ against
 * this header (after turning
 * each `kernel<<<grid, block, shared>>>(args)` into `emulate::Launch(grid, block, shared).run(
 * kernel, args)`). A launch runs its blocks one after the other; a block runs as blockDim real
 * threads, so `__syncthreads()` is a std::barrier and a missing barrier can show up as a wrong
 * result. `static` stands for `__shared__`: the blocks of a launch share nothing at the same time.
 * Code under `#if __CUDA_ARCH__ >= 800` (cp.async) is not compiled: its fallback path is. */
#ifndef S2C_CUDA_EMULATION_H
#define S2C_CUDA_EMULATION_H

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

struct uint3 { unsigned x, y, z; };
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(16) float4 { float x, y, z, w; };
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
struct alignas(8) float2 { float x, y; };
inline float2 make_float2(float x, float y) { return float2{x, y}; }
using std::fmaf;
using std::isfinite;
using std::max;
using std::min;
template <class T> inline T __ldg(const T *address) { return *address; }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)((uint64_t)a * b >> 32); }

inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

typedef enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorLaunchFailure = 4,
    cudaErrorSharedObjectInitFailed = 302,
    cudaErrorUnknown = 999
} cudaError_t;
typedef enum { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 } cudaFuncAttribute;
typedef enum {
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
} cudaDeviceAttr;
typedef enum { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1 }
    cudaStreamCaptureStatus;
typedef std::chrono::steady_clock::time_point *cudaEvent_t;
typedef void *cudaStream_t;
#define cudaStreamPerThread ((cudaStream_t)0x2)

namespace emulate {
inline thread_local std::barrier<> *block_barrier;
inline std::vector<float4> dynamic_memory;
inline float *dynamic_shared() { return (float *)dynamic_memory.data(); }

struct Launch {
    dim3 grid, block;
    size_t shared_bytes;
    Launch(dim3 grid_, dim3 block_, size_t shared_bytes_ = 0)
        : grid(grid_), block(block_), shared_bytes(shared_bytes_) {}

    template <class... Parameters, class... Arguments>
    void run(void (*kernel)(Parameters...), Arguments... arguments)
    {
        dynamic_memory.assign(shared_bytes / sizeof(float4) + 1, float4{});
        unsigned threads = block.x * block.y * block.z;
        for (unsigned bz = 0; bz < grid.z; bz++)
            for (unsigned by = 0; by < grid.y; by++)
                for (unsigned bx = 0; bx < grid.x; bx++) {
                    std::barrier<> barrier(threads);
                    std::vector<std::thread> team;
                    for (unsigned t = 0; t < threads; t++)
                        team.emplace_back([&, t] {
                            threadIdx = {t % block.x, t / block.x % block.y,
                                         t / (block.x * block.y)};
                            blockIdx = {bx, by, bz};
                            blockDim = block;
                            gridDim = grid;
                            block_barrier = &barrier;
                            kernel(arguments...);
                            barrier.arrive_and_drop(); /* an exited thread waits for no one */
                        });
                    for (std::thread &member : team)
                        member.join();
                }
    }
};
} // namespace emulate

inline void __syncthreads(void) { emulate::block_barrier->arrive_and_wait(); }

/* Whether `predicate` is nonzero in any thread of the block, for every thread. One block runs at
 * a time here, so one flag serves every block: set, read after a barrier, cleared after another,
 * and a third barrier keeps the next call's votes from landing before the clearing. */
namespace emulate {
inline std::atomic<int> block_vote{0};
}
inline int __syncthreads_or(int predicate)
{
    if (predicate)
        emulate::block_vote = 1;
    __syncthreads();
    int any = emulate::block_vote;
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
        emulate::block_vote = 0;
    __syncthreads();
    return any;
}

/* Loads through the read-only or the streaming cache, and streaming stores: plain accesses here
 * (the softmax ladder's, tests/test_softmax_cuda.py). */
template <class T> T __ldcs(const T *pointer) { return *pointer; }
template <class T> void __stcs(T *pointer, T value) { *pointer = value; }

/* The hardware's fast exp (softmax rungs 4 and 5): expf here, within its error bound. */
inline float __expf(float x) { return std::exp(x); }

inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
inline const char *cudaGetErrorString(cudaError_t) { return "emulated error"; }
inline const char *cudaGetErrorName(cudaError_t) { return "cudaErrorEmulated"; }
inline cudaError_t cudaGetDevice(int *device) { *device = 0; return cudaSuccess; }
inline cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attribute, int)
{
    *value = attribute == cudaDevAttrMaxSharedMemoryPerBlockOptin ? 232448 : 132; /* an H100's */
    return cudaSuccess;
}
template <class F> cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) { return cudaSuccess; }
inline cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus *status)
{
    *status = cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    *event = new std::chrono::steady_clock::time_point();
    return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t = 0)
{
    *event = std::chrono::steady_clock::now();
    return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t stop)
{
    *ms = std::chrono::duration<float, std::milli>(*stop - *start).count();
    return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    delete event;
    return cudaSuccess;
}

#endif
