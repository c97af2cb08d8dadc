/* pooling.cu -- max and average pooling over k x k windows, no padding (week 16), on N*C planes.
 *
 * Forwards: one thread per output. Backwards: one thread per input element, which gathers from
 * the windows that cover it, instead of each window scattering into its inputs: overlapping
 * windows would then need atomic additions, whose order (and so the float rounding) changes from
 * run to run. */
#include "common.h"

#define POOL_THREADS 256

typedef struct s2c_pool_geometry pool_geometry;

/* The outputs whose windows cover input `position` along one axis: [*first, *last). */
static inline __device__ void covering(int64_t position, int64_t k, int64_t stride, int64_t outputs,
                                int64_t *first, int64_t *last)
{
    int64_t from = (position - k + stride) / stride; /* ceil((position - k + 1) / stride) */
    *first = position - k + stride >= 0 ? from : 0;  /* C division rounds toward zero */
    *last = position / stride + 1 < outputs ? position / stride + 1 : outputs;
}

__global__ void maxpool_kernel(const float *x, float *y, int64_t *argmax, pool_geometry g);
__global__ void maxpool_backward_kernel(const float *dy, const int64_t *argmax, float *dx,
                                        pool_geometry g);
__global__ void avgpool_kernel(const float *x, float *y, pool_geometry g);
__global__ void avgpool_backward_kernel(const float *dy, float *dx, pool_geometry g);

static inline int64_t outputs(const pool_geometry *g)
{
    return g->planes * g->out_height * g->out_width;
}
static inline int64_t inputs(const pool_geometry *g) { return g->planes * g->height * g->width; }

extern "C" int s2c_cuda_maxpool2d_forward(const float *x, float *y, int64_t *argmax,
                                          const pool_geometry *g)
{
    // BEGIN SOLUTION week 16, task maxpool2d_forward
    maxpool_kernel<<<blocks_for(outputs(g), POOL_THREADS), POOL_THREADS>>>(x, y, argmax, *g);
    LAUNCH_CHECK("maxpool_kernel");
    return S2C_CUDA_OK;
}

/* Thread i: output i = (plane, oh, ow); ties keep the first maximum, and a NaN wins (torch). */
__global__ void maxpool_kernel(const float *x, float *y, int64_t *argmax, pool_geometry g) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.planes * g.out_height * g.out_width) return;
    int64_t plane = i / (g.out_height * g.out_width);
    int64_t oh = i / g.out_width % g.out_height, ow = i % g.out_width;
    const float *in = x + plane * g.height * g.width;
    int64_t best_index = oh * g.stride * g.width + ow * g.stride;
    float best = in[best_index];
    for (int64_t di = 0; di < g.k; di++)
        for (int64_t dj = 0; dj < g.k; dj++) {
            int64_t index = (oh * g.stride + di) * g.width + ow * g.stride + dj;
            float value = in[index];
            if (value > best || (value != value && best == best)) {
                best = value;
                best_index = index;
            }
        }
    y[i] = best;
    argmax[i] = best_index;
    // END SOLUTION
}

extern "C" int s2c_cuda_maxpool2d_backward(const float *dy, const int64_t *argmax, float *dx,
                                           const pool_geometry *g)
{
    // BEGIN SOLUTION week 16, task maxpool2d_backward
    maxpool_backward_kernel<<<blocks_for(inputs(g), POOL_THREADS), POOL_THREADS>>>(dy, argmax, dx,
                                                                                   *g);
    LAUNCH_CHECK("maxpool_backward_kernel");
    return S2C_CUDA_OK;
}

/* Thread i: input i = (plane, h, w) adds the dy of every covering window whose argmax it is. */
__global__ void maxpool_backward_kernel(const float *dy, const int64_t *argmax, float *dx,
                                        pool_geometry g)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.planes * g.height * g.width) return;
    int64_t plane = i / (g.height * g.width), h = i / g.width % g.height, w = i % g.width;
    int64_t first_h, last_h, first_w, last_w;
    covering(h, g.k, g.stride, g.out_height, &first_h, &last_h);
    covering(w, g.k, g.stride, g.out_width, &first_w, &last_w);
    int64_t offset = plane * g.out_height * g.out_width;
    float total = 0.0f;
    for (int64_t oh = first_h; oh < last_h; oh++)
        for (int64_t ow = first_w; ow < last_w; ow++)
            if (argmax[offset + oh * g.out_width + ow] == h * g.width + w)
                total += dy[offset + oh * g.out_width + ow];
    dx[i] = total;
    // END SOLUTION
}

extern "C" int s2c_cuda_avgpool2d_forward(const float *x, float *y, const pool_geometry *g) {
    // BEGIN SOLUTION week 16, task avgpool2d_forward
    avgpool_kernel<<<blocks_for(outputs(g), POOL_THREADS), POOL_THREADS>>>(x, y, *g);
    LAUNCH_CHECK("avgpool_kernel");
    return S2C_CUDA_OK;
}

__global__ void avgpool_kernel(const float *x, float *y, pool_geometry g) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.planes * g.out_height * g.out_width) return;
    int64_t plane = i / (g.out_height * g.out_width);
    int64_t oh = i / g.out_width % g.out_height, ow = i % g.out_width;
    const float *in = x + plane * g.height * g.width;
    float total = 0.0f;
    for (int64_t di = 0; di < g.k; di++)
        for (int64_t dj = 0; dj < g.k; dj++)
            total += in[(oh * g.stride + di) * g.width + ow * g.stride + dj];
    y[i] = total / (float)(g.k * g.k);
    // END SOLUTION
}

extern "C" int s2c_cuda_avgpool2d_backward(const float *dy, float *dx, const pool_geometry *g) {
    // BEGIN SOLUTION week 16, task avgpool2d_backward
    avgpool_backward_kernel<<<blocks_for(inputs(g), POOL_THREADS), POOL_THREADS>>>(dy, dx, *g);
    LAUNCH_CHECK("avgpool_backward_kernel");
    return S2C_CUDA_OK;
}

/* Thread i: input i = (plane, h, w) adds dy / k^2 of every window covering it. */
__global__ void avgpool_backward_kernel(const float *dy, float *dx, pool_geometry g) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= g.planes * g.height * g.width) return;
    int64_t plane = i / (g.height * g.width), h = i / g.width % g.height, w = i % g.width;
    int64_t first_h, last_h, first_w, last_w;
    covering(h, g.k, g.stride, g.out_height, &first_h, &last_h);
    covering(w, g.k, g.stride, g.out_width, &first_w, &last_w);
    int64_t offset = plane * g.out_height * g.out_width;
    float total = 0.0f;
    for (int64_t oh = first_h; oh < last_h; oh++)
        for (int64_t ow = first_w; ow < last_w; ow++) total += dy[offset + oh * g.out_width + ow];
    dx[i] = total / (float)(g.k * g.k);
    // END SOLUTION
}
