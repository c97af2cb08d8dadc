/* checks.cu -- the one argument check that reads device memory: the lowest and highest value of an
 * int64 index array (labels, argmax), which the Python wrappers compare with the valid range
 * before any kernel trusts the indices (nvcc_impl/_checks.py). Given code, not an exercise.
 *
 * One host call: reset two device counters, one launch, one copy of 16 bytes back (the wait for
 * the GPU is the check's only sync). Each thread keeps its extremes over a grid-stride loop, each
 * warp combines its lanes' by shuffles, and each warp's lane 0 folds them into the counters with
 * atomicMin and atomicMax: min and max give the same answer in any order, so the atomics leave the
 * result deterministic. Bytes: 8 an index, read once. */
#include <climits>

#include "common.h"
#include "reduce.cuh"

#define RANGE_THREADS 256
#define RANGE_VALUES_PER_THREAD 16 /* enough work a thread to hide a load's latency */

static __device__ long long index_extremes[2]; /* lowest, highest */

__global__ void index_range_kernel(const int64_t *x, int64_t n)
{
    wait_for_previous_kernel();
    long long lowest = LLONG_MAX, highest = LLONG_MIN;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        lowest = min(lowest, (long long)x[i]);
        highest = max(highest, (long long)x[i]);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        lowest = min(lowest, __shfl_xor_sync(FULL_WARP, lowest, offset));
        highest = max(highest, __shfl_xor_sync(FULL_WARP, highest, offset));
    }
    if (threadIdx.x % 32 == 0) {
        atomicMin(&index_extremes[0], lowest);
        atomicMax(&index_extremes[1], highest);
    }
}

/* extremes[0] = min(x), extremes[1] = max(x) over n int64 values (INT64_MAX and INT64_MIN when
 * n is 0); `extremes` is host memory, filled when the call returns. */
extern "C" int s2c_cuda_index_range(const int64_t *x, int64_t n, int64_t *extremes)
{
    static const long long start[2] = {LLONG_MAX, LLONG_MIN};
    CUDA_CHECK(cudaMemcpyToSymbolAsync(index_extremes, start, sizeof start, 0,
                                       cudaMemcpyHostToDevice, cudaStreamPerThread));
    if (n > 0) {
        int64_t blocks = blocks_for(n, RANGE_THREADS * RANGE_VALUES_PER_THREAD);
        if (blocks > 4 * device_multiprocessors()) blocks = 4 * device_multiprocessors();
        launch_overlapped(index_range_kernel, blocks, RANGE_THREADS, 0, x, n);
        LAUNCH_CHECK("index_range_kernel");
    }
    CUDA_CHECK(cudaMemcpyFromSymbolAsync(extremes, index_extremes, 2 * sizeof(int64_t), 0,
                                         cudaMemcpyDeviceToHost, cudaStreamPerThread));
    CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
    return S2C_CUDA_OK;
}
