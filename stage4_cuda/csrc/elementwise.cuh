/* elementwise.cuh -- the two kernels every elementwise op is made of (week 14): map, y = f(x, s),
 * and zip, y = f(a, b, s), each applied to a per-element device function given as a template
 * argument (relu_element, add_element, ...); s is the op's scalar (leaky_relu's alpha, scale's
 * factor) or an unused 0.
 *
 * An elementwise op moves bytes and computes almost nothing, so its speed is how many bytes the
 * device keeps in flight. A thread that loads one float and waits for it leaves the memory system
 * idle part of the time. So each thread loads 4 elements before it stores any: as one float4 (a 16-byte load)
 * when every pointer is 16-byte aligned and the sizes are multiples of 4, else as 4 floats spaced
 * a grid apart (a warp still reads 32 neighbours at a time). The loads must come first because the
 * compiler cannot move a load of x above a store to y: y might be x. */
#ifndef S2C_CUDA_ELEMENTWISE_CUH
#define S2C_CUDA_ELEMENTWISE_CUH

#include "common.h"

#define ELEMENTWISE_THREADS 256 /* a block: enough warps to fill a multiprocessor's schedulers */
#define PER_THREAD 4            /* elements a thread loads before it stores any */

typedef float (*map_function)(float x, float s);
typedef float (*zip_function)(float a, float b, float s);

/* Whether a pointer may be read or written as float4 (16-byte aligned). */
static inline bool aligned16(const void *pointer) { return (uintptr_t)pointer % 16 == 0; }

/* Element i's index in b, of b_n elements: i itself, or i % b_n for a row repeated along a (in
 * 32 bits where i fits: a 64-bit % for every element made add's broadcast compute-bound). */
static inline __device__ int64_t broadcast_index(int64_t i, int64_t n, int64_t b_n)
{
    return b_n == n ? i : i - index_div(i, b_n) * b_n;
}

template <map_function F>
__global__ void map_kernel(const float *x, float *y, int64_t n, float s);
template <map_function F>
__global__ void map_kernel_float4(const float4 *x, float4 *y, int64_t quads, float s);
template <zip_function F>
__global__ void zip_kernel(const float *a, const float *b, float *y, int64_t n, int64_t b_n,
                           float s);
template <zip_function F>
__global__ void zip_kernel_float4(const float4 *a, const float4 *b, float4 *y, int64_t quads,
                                  int64_t b_quads, float s);

/* y[i] = F(x[i], s) for i < n; `kernel` names the op in an error message. */
template <map_function F>
int launch_map(const char *kernel, const float *x, float *y, int64_t n, float s) {
    // BEGIN SOLUTION week 14, task map
    if (aligned16(x) && aligned16(y) && n % 4 == 0) {
        int64_t quads = n / 4;
        launch_overlapped(map_kernel_float4<F>, blocks_for(quads, ELEMENTWISE_THREADS),
                          ELEMENTWISE_THREADS, 0, (const float4 *)x, (float4 *)y, quads, s);
    } else {
        int64_t per_block = ELEMENTWISE_THREADS * PER_THREAD;
        launch_overlapped(map_kernel<F>, blocks_for(n, per_block), ELEMENTWISE_THREADS, 0, x, y, n,
                          s);
    }
    LAUNCH_CHECK(kernel);
    return S2C_CUDA_OK;
}

template <map_function F>
__global__ void map_kernel(const float *x, float *y, int64_t n, float s) {
    wait_for_previous_kernel();
    int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t grid = (int64_t)gridDim.x * blockDim.x;
    float values[PER_THREAD];
    for (int e = 0; e < PER_THREAD; e++) { /* every load first: PER_THREAD in flight */
        int64_t i = first + e * grid;
        if (i < n) values[e] = x[i];
    }
    for (int e = 0; e < PER_THREAD; e++) {
        int64_t i = first + e * grid;
        if (i < n) y[i] = F(values[e], s);
    }
}

template <map_function F>
__global__ void map_kernel_float4(const float4 *x, float4 *y, int64_t quads, float s) {
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < quads) {
        float4 v = x[i]; /* one 16-byte load: 4 elements in flight */
        y[i] = make_float4(F(v.x, s), F(v.y, s), F(v.z, s), F(v.w, s));
    }
    // END SOLUTION
}

/* y[i] = F(a[i], b[i or i % b_n], s) for i < n: b has n elements, or is one row of b_n elements
 * repeated along a (add's and mul's broadcasting). */
template <zip_function F>
int launch_zip(const char *kernel, const float *a, const float *b, float *y, int64_t n, int64_t b_n,
               float s)
{
    // BEGIN SOLUTION week 14, task zip
    if (aligned16(a) && aligned16(b) && aligned16(y) && n % 4 == 0 && b_n % 4 == 0) {
        int64_t quads = n / 4;
        launch_overlapped(zip_kernel_float4<F>, blocks_for(quads, ELEMENTWISE_THREADS),
                          ELEMENTWISE_THREADS, 0, (const float4 *)a, (const float4 *)b, (float4 *)y,
                          quads, b_n / 4, s);
    } else {
        int64_t per_block = ELEMENTWISE_THREADS * PER_THREAD;
        launch_overlapped(zip_kernel<F>, blocks_for(n, per_block), ELEMENTWISE_THREADS, 0, a, b, y,
                          n, b_n, s);
    }
    LAUNCH_CHECK(kernel);
    return S2C_CUDA_OK;
}

template <zip_function F>
__global__ void zip_kernel(const float *a, const float *b, float *y, int64_t n, int64_t b_n,
                           float s)
{
    wait_for_previous_kernel();
    int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t grid = (int64_t)gridDim.x * blockDim.x;
    float a_values[PER_THREAD], b_values[PER_THREAD];
    for (int e = 0; e < PER_THREAD; e++) {
        int64_t i = first + e * grid;
        if (i < n) {
            a_values[e] = a[i];
            b_values[e] = b[broadcast_index(i, n, b_n)];
        }
    }
    for (int e = 0; e < PER_THREAD; e++) {
        int64_t i = first + e * grid;
        if (i < n) y[i] = F(a_values[e], b_values[e], s);
    }
}

template <zip_function F>
__global__ void zip_kernel_float4(const float4 *a, const float4 *b, float4 *y, int64_t quads,
                                  int64_t b_quads, float s)
{
    wait_for_previous_kernel();
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < quads) {
        float4 u = a[i], v = b[broadcast_index(i, quads, b_quads)];
        y[i] = make_float4(F(u.x, v.x, s), F(u.y, v.y, s), F(u.z, v.z, s), F(u.w, v.w, s));
    }
    // END SOLUTION
}

#endif
