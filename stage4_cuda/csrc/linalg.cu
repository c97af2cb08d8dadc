/* linalg.cu -- add, mul and scale (elementwise.cuh's zip and map), transpose through shared
 * memory, and column sums (week 14). */
#include "elementwise.cuh"

#define TILE 32      /* transpose and column sums: a block covers 32 columns */
#define TILE_ROWS 8  /* transpose: 32 x 8 threads, each copying every 8th row of the tile */
#define SUM_ROWS 32  /* column sums: 32 x 32 threads, each adding every 32nd row: 32 warps keep
                      * enough loads in flight when a few blocks span all the columns */
#define MAX_GRID_Y 65535

__device__ float add_element(float a, float b, float);
__device__ float mul_element(float a, float b, float);
__device__ float scale_element(float a, float s);
__global__ void transpose_kernel(const float *a, float *out, int64_t rows, int64_t cols);
__global__ void sum_rows_kernel(const float *x, float *out, int64_t rows, int64_t cols);
__global__ void swap_middle_axes_kernel(const float *x, float *out, int64_t b, int64_t c,
                                        int64_t d, int64_t n);

extern "C" int s2c_cuda_add(const float *a, const float *b, float *out, int64_t n, int64_t b_n) {
    // BEGIN SOLUTION week 14, task add
    return launch_zip<add_element>("add_element (zip)", a, b, out, n, b_n, 0.0f);
}

__device__ float add_element(float a, float b, float) {
    return a + b;
    // END SOLUTION
}

extern "C" int s2c_cuda_mul(const float *a, const float *b, float *out, int64_t n, int64_t b_n) {
    // BEGIN SOLUTION week 14, task mul
    return launch_zip<mul_element>("mul_element (zip)", a, b, out, n, b_n, 0.0f);
}

__device__ float mul_element(float a, float b, float) {
    return a * b;
    // END SOLUTION
}

extern "C" int s2c_cuda_scale(const float *a, float *out, int64_t n, float s) {
    // BEGIN SOLUTION week 14, task scale
    return launch_map<scale_element>("scale_element (map)", a, out, n, s);
}

__device__ float scale_element(float a, float s) {
    return s * a;
    // END SOLUTION
}

extern "C" int s2c_cuda_transpose(const float *a, float *out, int64_t rows, int64_t cols) {
    if (rows == 0 || cols == 0) return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task transpose
    int64_t row_tiles = ceil_div(rows, TILE);
    dim3 blocks(ceil_div(cols, TILE), row_tiles < MAX_GRID_Y ? row_tiles : MAX_GRID_Y);
    launch_overlapped(transpose_kernel, blocks, dim3(TILE, TILE_ROWS), 0, a, out, rows, cols);
    LAUNCH_CHECK("transpose_kernel");
    return S2C_CUDA_OK;
}

/* A block copies 32 x 32 tiles through shared memory: it reads rows of `a` and writes rows of
 * `out`, both coalesced (a direct out[j][i] = a[i][j] would scatter one of the two). The +1
 * column shifts each row of the tile by one bank, so reading a column has no bank conflicts.
 * The grid's y dimension is limited (65535), so a block strides over the row tiles. */
__global__ void transpose_kernel(const float *a, float *out, int64_t rows, int64_t cols) {
    wait_for_previous_kernel();
    __shared__ float tile[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t j0 = (int64_t)blockIdx.x * TILE;
    for (int64_t i0 = (int64_t)blockIdx.y * TILE; i0 < rows; i0 += (int64_t)gridDim.y * TILE) {
        for (int dy = 0; dy < TILE; dy += TILE_ROWS)
            if (i0 + ty + dy < rows && j0 + tx < cols)
                tile[ty + dy][tx] = a[(i0 + ty + dy) * cols + j0 + tx];
        __syncthreads();
        for (int dy = 0; dy < TILE; dy += TILE_ROWS)
            if (j0 + ty + dy < cols && i0 + tx < rows)
                out[(j0 + ty + dy) * rows + i0 + tx] = tile[tx][ty + dy];
        __syncthreads(); /* the tile is read before the next one overwrites it */
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_swap_middle_axes(const float *x, float *out, int64_t a, int64_t b,
                                         int64_t c, int64_t d) {
    int64_t n = a * b * c * d;
    if (n == 0) return S2C_CUDA_OK;
    // BEGIN SOLUTION week 22, task swap_middle_axes
    launch_overlapped(swap_middle_axes_kernel, blocks_for(n, ELEMENTWISE_THREADS),
                      ELEMENTWISE_THREADS, 0, x, out, b, c, d, n);
    LAUNCH_CHECK("swap_middle_axes_kernel");
    return S2C_CUDA_OK;
}

/* A thread per output element out[i][k][j][e] = x[i][j][k][e] (x [A, B, C, D]): neighbouring
 * threads write neighbouring floats, and read them too within a row of D, so a head's row of
 * D = 32 or more floats moves as whole cache lines both ways. 8 bytes and no FLOPs per element. */
__global__ void swap_middle_axes_kernel(const float *x, float *out, int64_t b, int64_t c,
                                        int64_t d, int64_t n) {
    wait_for_previous_kernel();
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n;
         o += (int64_t)gridDim.x * blockDim.x) {
        int64_t e = o % d, rest = o / d; /* o = ((i * C + k) * B + j) * D + e */
        int64_t j = rest % b;
        rest /= b;
        int64_t k = rest % c, i = rest / c;
        out[o] = x[((i * b + j) * c + k) * d + e];
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_sum_rows(const float *x, float *out, int64_t rows, int64_t cols) {
    if (cols == 0) return S2C_CUDA_OK;
    // BEGIN SOLUTION week 14, task sum_rows
    launch_overlapped(sum_rows_kernel, ceil_div(cols, TILE), dim3(TILE, SUM_ROWS), 0, x, out, rows,
                      cols);
    LAUNCH_CHECK("sum_rows_kernel");
    return S2C_CUDA_OK;
}

/* A block sums 32 columns: thread (tx, ty) adds rows ty, ty + 32, ... of column tx (a warp reads
 * 32 neighbouring floats of a row: coalesced), then the 32 partial sums of each column meet in
 * shared memory and one thread adds them, always in the same order. */
__global__ void sum_rows_kernel(const float *x, float *out, int64_t rows, int64_t cols) {
    wait_for_previous_kernel();
    __shared__ float partial[SUM_ROWS][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t j = (int64_t)blockIdx.x * TILE + tx;
    float total = 0.0f;
    if (j < cols)
        for (int64_t i = ty; i < rows; i += SUM_ROWS) total += x[i * cols + j];
    partial[ty][tx] = total;
    __syncthreads();
    if (ty == 0 && j < cols) {
        for (int r = 1; r < SUM_ROWS; r++) total += partial[r][tx];
        out[j] = total;
    }
    // END SOLUTION
}
