/* streams.cu -- pinned host memory, a copy stream and events: what overlaps a batch's copy to the
 * GPU with the computation of the batch before it (nn/host_pipeline.py), and what orders NCCL's
 * all-reduces against the kernels (nn/distributed/).
 *
 * A copy from ordinary (pageable) host memory goes through a staging buffer the driver pins for
 * it, and cudaMemcpyAsync from such memory returns only once the data is staged: it cannot overlap
 * anything. From page-locked memory (cudaMallocHost) the copy engine reads the host memory itself,
 * so a copy queued on a stream of its own runs while kernels run on another.
 *
 * Streams. The library's kernels run on the calling thread's default stream (graph.cu), numba's
 * on the legacy default stream, and the two wait for each other. A stream made here is
 * non-blocking: it waits for neither, which is what lets its copies overlap the kernels. Where a
 * function below takes a stream, NULL stands for "the default streams", the ones the kernels of
 * both variants run on: an event recorded there follows the work of both, and a wait there holds
 * back both. */
#include "common.h"

extern "C" int s2c_cuda_host_alloc(void **pointer, int64_t bytes)
{
    *pointer = NULL;
    cudaError_t made = cudaMallocHost(pointer, bytes > 0 ? (size_t)bytes : 1);
    if (made == cudaErrorMemoryAllocation) return S2C_CUDA_OUT_OF_MEMORY;
    CUDA_CHECK(made);
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_host_free(void *pointer)
{
    CUDA_CHECK(cudaFreeHost(pointer));
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_stream_create(void **stream)
{
    CUDA_CHECK(cudaStreamCreateWithFlags((cudaStream_t *)stream, cudaStreamNonBlocking));
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_stream_destroy(void *stream)
{
    CUDA_CHECK(cudaStreamDestroy((cudaStream_t)stream));
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_stream_synchronize(void *stream)
{
    if (stream == NULL) {
        CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
        CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
        return S2C_CUDA_OK;
    }
    CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_event_create(void **event, int timing)
{
    unsigned flags = timing ? cudaEventDefault : cudaEventDisableTiming;
    CUDA_CHECK(cudaEventCreateWithFlags((cudaEvent_t *)event, flags));
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_event_destroy(void *event)
{
    CUDA_CHECK(cudaEventDestroy((cudaEvent_t)event));
    return S2C_CUDA_OK;
}

/* On the default streams, the event is recorded on the legacy stream, which waits for the work
 * already queued on this thread's stream: the event then follows the kernels of both variants. */
extern "C" int s2c_cuda_event_record(void *event, void *stream)
{
    cudaStream_t on = stream == NULL ? cudaStreamLegacy : (cudaStream_t)stream;
    CUDA_CHECK(cudaEventRecord((cudaEvent_t)event, on));
    return S2C_CUDA_OK;
}

/* Work queued on `stream` after this call starts once `event` has happened; the host goes on. */
extern "C" int s2c_cuda_stream_wait_event(void *stream, void *event)
{
    if (stream == NULL) {
        CUDA_CHECK(cudaStreamWaitEvent(cudaStreamPerThread, (cudaEvent_t)event, 0));
        CUDA_CHECK(cudaStreamWaitEvent(cudaStreamLegacy, (cudaEvent_t)event, 0));
        return S2C_CUDA_OK;
    }
    CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0));
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_event_synchronize(void *event)
{
    CUDA_CHECK(cudaEventSynchronize((cudaEvent_t)event));
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_event_elapsed(void *start, void *end, float *milliseconds)
{
    CUDA_CHECK(cudaEventElapsedTime(milliseconds, (cudaEvent_t)start, (cudaEvent_t)end));
    return S2C_CUDA_OK;
}

/* `bytes` from host memory to the device, queued on `stream` (NULL: the default streams); from
 * pinned memory the host goes on at once, from pageable memory it waits until the data is staged. */
extern "C" int s2c_cuda_copy_to_device(void *destination, const void *source, int64_t bytes,
                                       void *stream)
{
    if (bytes == 0) return S2C_CUDA_OK;
    cudaStream_t on = stream == NULL ? cudaStreamPerThread : (cudaStream_t)stream;
    CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyHostToDevice, on));
    return S2C_CUDA_OK;
}
