/* sgemm.h -- what the rungs of the SGEMM ladder (week 16) share.
 *
 * Every rung computes the same row-major product C[n, m] = A[n, k] @ B[k, m] in float32 and
 * exports the same launcher, on the default stream:
 *
 *     extern "C" int s2c_sgemm_<name>(const float *a, const float *b, float *c,
 *                                     int64_t n, int64_t k, int64_t m);
 *
 * returning common.h's status: S2C_CUDA_OK, S2C_CUDA_BAD_ARGUMENT (a negative size, a null
 * pointer, a grid too tall for the GPU), S2C_CUDA_ERROR (the launch was refused; the message names
 * the kernel) or, in a learner's workspace, S2C_CUDA_NOT_IMPLEMENTED. Any sizes work: a rung
 * handles partial tiles at the edges, and the faster rungs switch to a variant without those
 * checks when every size is a multiple of the tile.
 *
 * Each rung also exports s2c_sgemm_<name>_kernel(n, k, m), the kernel its launcher runs for those
 * sizes, so that bench.cu can read its registers and spills (cudaFuncGetAttributes). */
#ifndef S2C_SGEMM_H
#define S2C_SGEMM_H

#include "../common.h"

/* The largest grid.y (and grid.z) a launch may have; grid.x may reach 2^31 - 1. */
#define SGEMM_MAX_GRID_Y 65535

/* S2C_CUDA_OK when the arguments describe a product that can be computed, else
 * S2C_CUDA_BAD_ARGUMENT. Pointers may be null only where their matrix is empty. */
static inline int sgemm_check_arguments(const float *a, const float *b, const float *c, int64_t n,
                                        int64_t k, int64_t m)
{
    if (n < 0 || k < 0 || m < 0)
        return S2C_CUDA_BAD_ARGUMENT;
    if ((n * k > 0 && a == NULL) || (k * m > 0 && b == NULL) || (n * m > 0 && c == NULL))
        return S2C_CUDA_BAD_ARGUMENT;
    return S2C_CUDA_OK;
}

/* The grid of blocks that covers `rows` x `cols` elements with blocks of `block_rows` x
 * `block_cols` elements, columns along x (which may be long) and rows along y; grid.y == 0 when
 * `rows` needs more than SGEMM_MAX_GRID_Y blocks (the launcher then returns BAD_ARGUMENT). */
static inline dim3 sgemm_grid(int64_t rows, int64_t cols, int64_t block_rows, int64_t block_cols)
{
    int64_t y = ceil_div(rows, block_rows);
    return dim3((unsigned)ceil_div(cols, block_cols), y <= SGEMM_MAX_GRID_Y ? (unsigned)y : 0u);
}

/* Whether a pointer may be read or written 16 bytes at a time (float4). */
static inline bool sgemm_aligned16(const void *pointer) { return ((uintptr_t)pointer & 15) == 0; }

/* Whether a rung may run its variant without edge checks: n, m and k multiples of its BM x BN tile
 * and BK step, and the pointers it moves 16 bytes at a time aligned (pass NULL for the others, and
 * for pointers from cudaMalloc, which are). */
static inline bool sgemm_whole_tiles(const float *a, const float *b, const float *c, int64_t n,
                                     int64_t k, int64_t m, int64_t bm, int64_t bn, int64_t bk)
{
    return n % bm == 0 && m % bn == 0 && k % bk == 0 && sgemm_aligned16(a) &&
           sgemm_aligned16(b) && sgemm_aligned16(c);
}

/* The kernel each rung's launcher would run for given sizes, for bench.cu (the launchers
 * themselves are declared in ../s2c_cuda.h, with the library's other functions). */
#define SGEMM_RUNG(name) \
    extern "C" const void *s2c_sgemm_##name##_kernel(int64_t n, int64_t k, int64_t m);
SGEMM_RUNG(naive)
SGEMM_RUNG(coalesced)
SGEMM_RUNG(shared_tiles)
SGEMM_RUNG(register_1d)
SGEMM_RUNG(register_2d)
SGEMM_RUNG(vectorized)
SGEMM_RUNG(warp_tiles)
SGEMM_RUNG(cp_async)
#undef SGEMM_RUNG

/* Rung 8 only: the tile configuration its autotune chose for these sizes on the current device
 * (a description such as "128x128x8, 4 stages, warps 32x64, threads 8x8"). */
extern "C" const char *s2c_sgemm_cp_async_config(int64_t n, int64_t k, int64_t m);

#endif
