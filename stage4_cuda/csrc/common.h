/* common.h -- what every CUDA C file of stage 4 shares: status codes, error checks, sizes.
 *
 * Every exported function (extern "C", called from Python through the nvcc variant's wrapper)
 * returns a status. A failed CUDA call or launch returns S2C_CUDA_ERROR and leaves a message naming
 * the kernel or call and CUDA's error string in s2c_cuda_error_message(), which the wrapper puts in
 * the Python exception. The status values are stage 3's (stage3_c/csrc/s2c.h), plus one.
 *
 * Exercises. `make exercises` replaces each solution region by
 * `return S2C_CUDA_NOT_IMPLEMENTED;`
 * (tools/exercises.py), so a region must end up inside a function returning a status. A kernel
 * returns void, so an op's region begins inside its exported function (the launch) and ends inside
 * the last kernel or device function it launches, which are declared above the exported function
 * and defined below it: the stub keeps the declarations (the kernels' signatures, given) and an
 * exported function that returns S2C_CUDA_NOT_IMPLEMENTED, which the wrapper turns into
 * NotImplementedError naming the week and task (stage4_cuda/nvcc_impl/_library.py). */
#ifndef S2C_CUDA_COMMON_H
#define S2C_CUDA_COMMON_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

enum s2c_cuda_status {
    S2C_CUDA_OK = 0,
    S2C_CUDA_NOT_IMPLEMENTED = 1, /* an exercise stub: the wrapper raises NotImplementedError */
    S2C_CUDA_BAD_ARGUMENT = 2,    /* a check the wrapper should have made: raises ValueError */
    S2C_CUDA_OUT_OF_MEMORY = 3,   /* an allocation failed: raises MemoryError */
    S2C_CUDA_ERROR = 4            /* a CUDA call or launch failed: raises RuntimeError */
};

#include "s2c_cuda.h" /* every exported function: the compiler checks each definition against it */

/* The last failure's message, per host thread (the wrapper reads it with s2c_cuda_error_message
 * right after the call). */
void s2c_cuda_set_error(const char *what, cudaError_t error);

/* Return S2C_CUDA_ERROR from the calling function when `call` (a CUDA runtime call) fails. */
#define CUDA_CHECK(call)                                \
    do {                                                \
        cudaError_t error_ = (call);                    \
        if (error_ != cudaSuccess) {                    \
            s2c_cuda_set_error(#call, error_);          \
            return S2C_CUDA_ERROR;                      \
        }                                               \
    } while (0)

/* After `kernel<<<...>>>(...)` or launch_overlapped(...): return S2C_CUDA_ERROR when the launch was
 * refused (a bad configuration, too much shared memory). Errors inside the kernel surface at the
 * next sync. */
#define LAUNCH_CHECK(kernel_name)                       \
    do {                                                \
        cudaError_t error_ = cudaGetLastError();        \
        if (error_ != cudaSuccess) {                    \
            s2c_cuda_set_error(kernel_name, error_);    \
            return S2C_CUDA_ERROR;                      \
        }                                               \
    } while (0)

/* Overlapped launches (programmatic dependent launch, sm_90 and later). A kernel launched with
 * `kernel<<<grid, block>>>(...)` starts once the kernel before it in the stream has finished and
 * its writes are visible, and the GPU only then begins to launch it: a hand-over slower than a
 * CUDA graph's. launch_overlapped(kernel, grid, block, shared bytes, arguments...)
 * lets the GPU launch it while the kernel before it finishes (as that kernel's blocks exit); the
 * new kernel's threads then wait in wait_for_previous_kernel() until the previous kernel is done
 * and its writes visible. So every kernel of the library but the SGEMM ladder's (launched the
 * usual way, as week 16 teaches it) calls wait_for_previous_kernel() first, in every thread,
 * before it reads or writes global memory (the build refuses a kernel that does not:
 * stage4_cuda/kernel_waits.py); the wait returns at once where a kernel is launched the usual
 * way. A kernel that starts before the previous one has finished must not touch memory that
 * kernel still reads or writes, hence the wait before anything else. Check the launch with
 * LAUNCH_CHECK, as a `<<<...>>>` one. */
static __device__ __forceinline__ void wait_for_previous_kernel(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* Whether the current device overlaps launches (read once): compute capability 9.0 or later, and
 * the code it runs compiled for 9.0 or later, so that wait_for_previous_kernel() does wait. The
 * code a device runs is the newest of the file's architectures (nvcc's __CUDA_ARCH_LIST__, e.g.
 * 800,900) not newer than the device: a library built for sm_80 alone runs compute_80 code on an
 * H100, whose kernels cannot wait, so its launches must not overlap. */
static inline bool device_overlaps_launches(void)
{
    static int overlaps = -1;
    if (overlaps < 0) {
        int device = 0, major = 0;
        if (cudaGetDevice(&device) != cudaSuccess ||
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
            major = 0;
        overlaps = major >= 9;
#ifdef __CUDA_ARCH_LIST__
        int minor = 0;
        if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
            minor = 0;
        const int built[] = {__CUDA_ARCH_LIST__};
        int runs = 0;
        for (int arch : built)
            if (arch <= major * 100 + minor * 10 && arch > runs)
                runs = arch;
        overlaps = overlaps && runs >= 900;
#endif
    }
    return overlaps;
}

/* launch_overlapped on `stream` rather than this thread's default stream (a pipeline's copy
 * stream: csrc/augment.cu). Only a kernel's launch overlaps the kernel before it: after a copy,
 * the kernel starts once the copy is done, as any launch does. */
template <typename... Parameters, typename... Arguments>
static inline void launch_overlapped_on(cudaStream_t stream, void (*kernel)(Parameters...),
                                        dim3 grid, dim3 block, size_t shared_bytes,
                                        Arguments... arguments)
{
    cudaLaunchAttribute overlap;
    overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    overlap.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = shared_bytes;
    config.stream = stream;
    config.attrs = &overlap;
    config.numAttrs = device_overlaps_launches() ? 1 : 0;
    cudaLaunchKernelEx(&config, kernel, arguments...); /* a failure: the last error (LAUNCH_CHECK) */
}

template <typename... Parameters, typename... Arguments>
static inline void launch_overlapped(void (*kernel)(Parameters...), dim3 grid, dim3 block,
                                     size_t shared_bytes, Arguments... arguments)
{
    launch_overlapped_on(cudaStreamPerThread, kernel, grid, block, shared_bytes, arguments...);
}

static inline __host__ __device__ int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The blocks of `threads` threads covering n work items (at least one: a grid of 0 is an error). */
static inline int64_t blocks_for(int64_t n, int64_t threads)
{
    return n > 0 ? ceil_div(n, threads) : 1;
}

/* The multiprocessors of the current device (read once per file that asks; 1 if unknown): how
 * many blocks fill the GPU, for launchers that split work until it does. */
static inline int device_multiprocessors(void)
{
    static int count = 0;
    if (count == 0) {
        int device = 0;
        if (cudaGetDevice(&device) != cudaSuccess ||
            cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
            count = 1;
    }
    return count;
}

/* Let `kernel` launch with `bytes` of dynamic shared memory: above 48 KB a block's share must be
 * asked for (sm_70 and later). */
template <typename Kernel>
static inline cudaError_t allow_dynamic_shared(Kernel kernel, size_t bytes)
{
    if (bytes <= 48 * 1024)
        return cudaSuccess;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
}

/* a / b for indices a >= 0, b > 0: in 32 bits when a fits, as it almost always does. A 64-bit
 * division is a software routine of dozens of instructions, and a memory-bound kernel that splits
 * a flat index into coordinates with it for every element runs out of instructions before it runs
 * out of bandwidth. */
static inline __device__ int64_t index_div(int64_t a, int64_t b)
{
    if (a <= UINT32_MAX && b <= UINT32_MAX) return (uint32_t)a / (uint32_t)b;
    return a / b;
}

/* max(a, b) that keeps a NaN, as PyTorch does (fmaxf would drop it). */
static inline __device__ float nan_max(float a, float b) { return (a > b || a != a) ? a : b; }

#endif
