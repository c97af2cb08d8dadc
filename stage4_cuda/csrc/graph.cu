/* graph.cu -- CUDA graphs of the library's launches, and the one copy a recorded step needs.
 *
 * The library is compiled with `--default-stream per-thread` (nvcc_build.py), so each kernel
 * goes to the calling host thread's default stream (cudaStreamPerThread). That stream still waits
 * for the legacy default stream, where numba's kernels and copies run, and the legacy stream
 * waits for it, so the two variants' work stays in order as if on one stream. Unlike the legacy
 * stream, the per-thread stream can be captured: between s2c_cuda_capture_begin and
 * s2c_cuda_capture_end, the kernels the library launches from this thread are recorded into a
 * graph instead of run, and s2c_cuda_graph_launch then runs them all with one call (a few
 * microseconds of host time, where launching them one by one costs a few microseconds each).
 *
 * What the graph runs is fixed at capture: the same kernels on the same pointers with the same
 * scalars. nn's recorded steps (stage4_cuda/nvcc_impl/recording.py) therefore copy what changes
 * from step to step (the batch's indices) into buffers the graph reads, with s2c_cuda_copy. */
#include "common.h"

extern "C" int s2c_cuda_capture_begin(void)
{
    /* Relaxed: calls that are not stream work (cudaFuncSetAttribute, which common.h's
     * allow_dynamic_shared makes before a launch with more than 48 KB of shared memory: rung 8
     * of the SGEMM ladder, softmax rungs 4 and 5 on long rows) stay allowed; what
     * would break the capture (a synchronization, work on the legacy stream) is still refused. */
    CUDA_CHECK(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeRelaxed));
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_capture_end(void **graph_exec)
{
    cudaGraph_t graph = NULL;
    CUDA_CHECK(cudaStreamEndCapture(cudaStreamPerThread, &graph));
    cudaGraphExec_t exec = NULL;
    cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph); /* the executable graph keeps what it needs */
    if (made != cudaSuccess) {
        s2c_cuda_set_error("cudaGraphInstantiate", made);
        return S2C_CUDA_ERROR;
    }
    *graph_exec = exec;
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_graph_launch(void *graph_exec)
{
    CUDA_CHECK(cudaGraphLaunch((cudaGraphExec_t)graph_exec, cudaStreamPerThread));
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_graph_destroy(void *graph_exec)
{
    CUDA_CHECK(cudaGraphExecDestroy((cudaGraphExec_t)graph_exec));
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_copy(void *destination, const void *source, int64_t bytes)
{
    if (bytes == 0) return S2C_CUDA_OK;
    CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice,
                               cudaStreamPerThread));
    return S2C_CUDA_OK;
}
