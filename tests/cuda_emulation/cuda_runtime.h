/* cuda_runtime.h for the CPU: just enough of CUDA to run the stage-4 kernels (the SGEMM, conv2d and
 * softmax ladders, the memory-bound kernels) on the calling thread.
 *
 * The tests compile the .cu files with g++ against this header (after turning each
 * `kernel<<<grid, block, shared>>>(args)` into `emulate::Launch(grid, block, shared).run(kernel,
 * args)`: tests/cuda_emulated.py). A launch runs its blocks one after the other. A block's
 * threads are fibers (ucontext): each runs until it reaches a barrier (`__syncthreads()`, or a
 * warp shuffle's barrier of its warp: warp_shuffle.h) or returns, then the next one runs; when
 * every thread that has not returned waits at the block's barrier (or every lane of a warp at
 * the warp's), they go on. The threads run in thread order, and in reverse order after every
 * barrier, so a missing barrier shows up as a wrong result whichever thread writes first, on
 * every run. Threads that no barrier can let go on (some at the block's, the rest at shuffles)
 * stop the program with a message. Fibers, not an OS thread a CUDA thread, created, joined and
 * woken at every barrier by the kernel: the conv ladder's harness took 68 s that way (88 s of
 * CPU time in system calls), 7 s as fibers. `static` stands for `__shared__`: the blocks of a
 * launch share nothing at the same time. Code under `#if __CUDA_ARCH__ >= 800` (cp.async) is not
 * compiled: its fallback path is. */
#ifndef S2C_CUDA_EMULATION_H
#define S2C_CUDA_EMULATION_H

#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
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
struct alignas(16) int4 { int x, y, z, w; };
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
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
} cudaDeviceAttr;
typedef enum { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1 }
    cudaStreamCaptureStatus;
typedef std::chrono::steady_clock::time_point *cudaEvent_t;
typedef void *cudaStream_t;
#define cudaStreamPerThread ((cudaStream_t)0x2)

namespace emulate {
inline std::vector<float4> dynamic_memory;
inline float *dynamic_shared() { return (float *)dynamic_memory.data(); }

/* The threads of the block that runs, as fibers. */
enum class Wait { none, block, warp, returned };
struct Fiber {
    ucontext_t context;
    Wait wait;
    std::unique_ptr<char[]> stack;
};
constexpr size_t FIBER_STACK = 256 * 1024; /* a kernel's locals (register tiles) fit easily */
inline std::vector<Fiber> fibers;          /* kept from launch to launch, with their stacks */
inline ucontext_t scheduler;
inline unsigned running;                   /* the fiber that runs now */
inline std::function<void(unsigned)> thread_body;

/* Leave the running fiber until the barrier it waits at lets it go on. */
inline void wait_at(Wait barrier)
{
    fibers[running].wait = barrier;
    swapcontext(&fibers[running].context, &scheduler);
}

inline void fiber_main(int thread)
{
    thread_body((unsigned)thread);
    fibers[thread].wait = Wait::returned; /* then back to the scheduler: uc_link */
}

/* Run `threads` fibers to their end: each pass resumes every thread that may go on, in thread
 * order or the reverse one (alternately), until it waits or returns; then the barrier that every
 * waiting thread concerned has reached lets those go. */
inline void run_block(unsigned threads, dim3 block)
{
    if (fibers.size() < threads) fibers.resize(threads);
    for (unsigned t = 0; t < threads; t++) {
        Fiber &fiber = fibers[t];
        if (!fiber.stack) fiber.stack.reset(new char[FIBER_STACK]);
        getcontext(&fiber.context);
        fiber.context.uc_stack.ss_sp = fiber.stack.get();
        fiber.context.uc_stack.ss_size = FIBER_STACK;
        fiber.context.uc_link = &scheduler;
        makecontext(&fiber.context, (void (*)())fiber_main, 1, (int)t);
        fiber.wait = Wait::none;
    }
    bool forward = true;
    for (;;) {
        for (unsigned i = 0; i < threads; i++) {
            unsigned t = forward ? i : threads - 1 - i;
            if (fibers[t].wait != Wait::none) continue;
            threadIdx = {t % block.x, t / block.x % block.y, t / (block.x * block.y)};
            running = t;
            swapcontext(&scheduler, &fibers[t].context);
        }
        forward = !forward;
        bool released = false, all_at_block = true, any_left = false;
        for (unsigned warp = 0; warp * 32 < threads; warp++) {
            unsigned first = warp * 32, last = std::min(threads, first + 32);
            bool all_at_warp = true, any = false;
            for (unsigned t = first; t < last; t++) {
                if (fibers[t].wait == Wait::returned) continue;
                any = any_left = true;
                all_at_warp &= fibers[t].wait == Wait::warp;
                all_at_block &= fibers[t].wait == Wait::block;
            }
            if (any && all_at_warp) {
                for (unsigned t = first; t < last; t++)
                    if (fibers[t].wait == Wait::warp) fibers[t].wait = Wait::none;
                released = true;
            }
        }
        if (!any_left) return;
        if (!released && all_at_block) {
            for (unsigned t = 0; t < threads; t++)
                if (fibers[t].wait == Wait::block) fibers[t].wait = Wait::none;
            released = true;
        }
        if (!released) {
            fprintf(stderr, "emulation: block (%u, %u, %u): its threads wait at different "
                    "barriers (a __syncthreads() or a shuffle that some threads skip)\n",
                    blockIdx.x, blockIdx.y, blockIdx.z);
            abort();
        }
    }
}

struct Launch {
    dim3 grid, block;
    size_t shared_bytes;
    Launch(dim3 grid_, dim3 block_, size_t shared_bytes_ = 0)
        : grid(grid_), block(block_), shared_bytes(shared_bytes_) {}

    template <class... Parameters, class... Arguments>
    void run(void (*kernel)(Parameters...), Arguments... arguments)
    {
        dynamic_memory.assign(shared_bytes / sizeof(float4) + 1, float4{});
        blockDim = block;
        gridDim = grid;
        thread_body = [&](unsigned) { kernel(arguments...); };
        for (unsigned bz = 0; bz < grid.z; bz++)
            for (unsigned by = 0; by < grid.y; by++)
                for (unsigned bx = 0; bx < grid.x; bx++) {
                    blockIdx = {bx, by, bz};
                    run_block(block.x * block.y * block.z, block);
                }
        thread_body = nullptr;
    }
};
} // namespace emulate

inline void __syncthreads(void) { emulate::wait_at(emulate::Wait::block); }

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
/* The int8 kernels' intrinsics: IEEE division and addition (rounded to nearest, never fused),
 * and __dp4a, four int8 products added to an int32. */
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline int __dp4a(int a, int b, int c)
{
    for (int byte = 0; byte < 4; byte++)
        c += (int)(int8_t)(a >> (8 * byte)) * (int)(int8_t)(b >> (8 * byte));
    return c;
}

inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
inline const char *cudaGetErrorString(cudaError_t) { return "emulated error"; }
inline const char *cudaGetErrorName(cudaError_t) { return "cudaErrorEmulated"; }
inline cudaError_t cudaGetDevice(int *device) { *device = 0; return cudaSuccess; }
/* An H100's attributes; its 132 multiprocessors unless EMULATED_MULTIPROCESSORS says otherwise
 * (few of them make the launchers that fill the GPU choose their largest tiles at small sizes). */
inline cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attribute, int)
{
    const char *multiprocessors = std::getenv("EMULATED_MULTIPROCESSORS");
    if (attribute == cudaDevAttrMaxSharedMemoryPerBlockOptin)
        *value = 232448;
    else if (attribute == cudaDevAttrComputeCapabilityMajor)
        *value = 9;
    else
        *value = multiprocessors != nullptr ? std::atoi(multiprocessors) : 132;
    return cudaSuccess;
}
/* Overlapped launches (common.h's launch_overlapped): the launch runs at once, as any here. */
typedef enum { cudaLaunchAttributeProgrammaticStreamSerialization = 6 } cudaLaunchAttributeID;
struct cudaLaunchAttribute {
    cudaLaunchAttributeID id;
    struct { unsigned char programmaticStreamSerializationAllowed; } val;
};
struct cudaLaunchConfig_t {
    dim3 gridDim, blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    cudaLaunchAttribute *attrs;
    unsigned numAttrs;
};
template <class... Parameters, class... Arguments>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *config, void (*kernel)(Parameters...),
                               Arguments... arguments)
{
    emulate::Launch(config->gridDim, config->blockDim, config->dynamicSmemBytes)
        .run(kernel, arguments...);
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
