/* nonfinite.cu -- which heads hold a NaN or an infinity (attention.cuh says why the causal rungs
 * and the backward ask). Not a rung: a read of the inputs, 4 (n + m) d bytes a head beside the
 * rungs' 4 n m d FLOPs. */
#include "attention.cuh"

__global__ void nonfinite_kernel(HeadArrays arrays, int *flags);

int attention_nonfinite_flags(HeadArrays arrays, int64_t heads, int *flags)
{
    launch_overlapped(nonfinite_kernel, heads, 512, 0, arrays, flags);
    LAUNCH_CHECK("nonfinite_kernel");
    return S2C_CUDA_OK;
}

int flash_rung_checks(const float *q, const float *k, const float *v, int64_t heads, int64_t n,
                      int64_t m, int64_t d, int causal, int *flags)
{
    if (d > ATTENTION_MAX_D)
        return S2C_CUDA_BAD_ARGUMENT;
    if (!causal)
        return S2C_CUDA_OK;
    return attention_nonfinite_flags({{q, k, v}, {n * d, m * d, m * d}, 3}, heads, flags);
}

/* Whether any of x[0 .. count - 1] is not finite, x read by the block's threads in turn: a float4
 * at a time where x allows (4 bytes a load would leave too few bytes in flight to keep up with
 * the rungs), one float at a time otherwise. */
static __device__ int any_nonfinite(const float *x, int64_t count)
{
    int found = 0;
    if (by_float4(x, count)) {
        const float4 *quads = reinterpret_cast<const float4 *>(x);
#pragma unroll 4
        for (int64_t e = threadIdx.x; e < count / 4; e += blockDim.x) {
            const float4 quad = __ldg(quads + e);
            found |= !isfinite(quad.x) | !isfinite(quad.y) | !isfinite(quad.z) | !isfinite(quad.w);
        }
        return found;
    }
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x)
        found |= !isfinite(x[e]);
    return found;
}

/* Block h: whether slice h of any array holds a value that is not finite. */
__global__ void nonfinite_kernel(HeadArrays arrays, int *flags)
{
    wait_for_previous_kernel();
    int found = 0;
    for (int a = 0; a < arrays.count; a++)
        found |= any_nonfinite(arrays.data[a] + blockIdx.x * arrays.per_head[a], arrays.per_head[a]);
    found = __syncthreads_or(found);
    if (threadIdx.x == 0)
        flags[blockIdx.x] = found;
}
