/* 07_warp_tiles.cu -- rung 7: a warp tile between the block's tile and the thread's.
 *
 * What it changes: rung 6 lays its 256 threads over the 128 x 128 tile as a 16 x 16 grid, so the
 * 32 threads of a warp own 2 rows of that grid: their outputs span all 128 columns. At each step
 * p the warp then reads all 128 values of B's row (16 distinct 16-byte words per LDS.128, two
 * shared-memory wavefronts) for only 16 values of A. Here each of the 8 warps owns a compact
 * 32 x 64 sub-tile of C (the warp tile: 4 warps down, 2 across), and its 32 lanes a 4 x 8 grid
 * inside it, each lane 2 x 2 runs of 4 x 4 outputs (8 x 8, as before). Per step a warp now reads
 * 32 values of A and 64 of B (4 and 8 distinct 16-byte words: one wavefront per LDS.128), a third
 * fewer shared-memory cycles for the same 64 FMAs per thread. Warp tiles are also the level at
 * which CUTLASS and cuBLAS organize their kernels (and where tensor-core instructions work).
 *
 * Cost model (n x k x m; 4096^3: 137 GFLOP), BM = BN = 128, BK = 8, warp 32 x 64, thread 8 x 8:
 *   FLOPs  2 n k m.
 *   bytes  device memory: n k m / 16 as rungs 5 and 6 (4.3 GB at 4096^3, float4 loads).
 *          shared memory: 4 LDS.128 per 64 FMAs, each one wavefront (rung 6: 6 wavefronts).
 *   so     the load-then-barrier structure of rung 6 remains its limit (rung 8 removes it): about
 *          as fast as rung 6 or somewhat faster.
 * Edges: as rung 6.
 *
 * Run it: python3 bench/sgemm_ladder.py --rung 7 */
#include "sgemm.h"

#define BM 128
#define BN 128
#define BK 8
#define WM 32                                   /* a warp's tile of C: 32 rows ... */
#define WN 64                                   /* ... by 64 columns */
#define WARPS_N (BN / WN)                       /* 2 warps across, 4 down */
#define THREADS (BM / WM * WARPS_N * 32)        /* 256 */
#define LANES_N 8                               /* a warp's lanes: 4 down x 8 across */
#define RUN 4                                   /* a lane's runs of 4 neighbours: 2 x 2 of them */
#define ROW_GAP (WM / 2)                        /* 16: its two runs of rows are 16 apart */
#define COL_GAP (WN / 2)                        /* 32: its two runs of columns, 32 apart */
#define PAD_A 4

template <bool EDGES>
__global__ void __launch_bounds__(THREADS) sgemm_warp_tiles_kernel(
    const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m)
{
    // BEGIN SOLUTION week 16, task sgemm_warp_tiles
    __shared__ __align__(16) float tile_at[BK][BM + PAD_A]; /* A's tile, transposed: [p][row] */
    __shared__ __align__(16) float tile_b[BK][BN];
    int t = threadIdx.x, warp = t / 32, lane = t % 32;
    /* the first row and column of this lane's first run, within the block's tile */
    int lane_row = warp / WARPS_N * WM + lane / LANES_N * RUN;
    int lane_col = warp % WARPS_N * WN + lane % LANES_N * RUN;
    int a_row = t / 2, a_p = t % 2 * 4;   /* global loads exactly as rung 6 */
    int b_p = t / 32, b_col = t % 32 * 4;
    int64_t row0 = (int64_t)blockIdx.y * BM, col0 = (int64_t)blockIdx.x * BN;
    float sum[2 * RUN][2 * RUN] = {{0.0f}};
    for (int64_t p0 = 0; p0 < k; p0 += BK) {
        float4 a4, b4;
        if (!EDGES) {
            a4 = *(const float4 *)&a[(row0 + a_row) * k + p0 + a_p];
            b4 = *(const float4 *)&b[(p0 + b_p) * m + col0 + b_col];
        } else {
            float av[4], bv[4];
            for (int j = 0; j < 4; j++) {
                int64_t r = row0 + a_row, p = p0 + a_p + j;
                av[j] = r < n && p < k ? a[r * k + p] : 0.0f;
                int64_t q = p0 + b_p, col = col0 + b_col + j;
                bv[j] = q < k && col < m ? b[q * m + col] : 0.0f;
            }
            a4 = make_float4(av[0], av[1], av[2], av[3]);
            b4 = make_float4(bv[0], bv[1], bv[2], bv[3]);
        }
        tile_at[a_p + 0][a_row] = a4.x;
        tile_at[a_p + 1][a_row] = a4.y;
        tile_at[a_p + 2][a_row] = a4.z;
        tile_at[a_p + 3][a_row] = a4.w;
        *(float4 *)&tile_b[b_p][b_col] = b4;
        __syncthreads();
#pragma unroll
        for (int p = 0; p < BK; p++) {
            float4 a_lo = *(const float4 *)&tile_at[p][lane_row];
            float4 a_hi = *(const float4 *)&tile_at[p][lane_row + ROW_GAP];
            float4 b_lo = *(const float4 *)&tile_b[p][lane_col];
            float4 b_hi = *(const float4 *)&tile_b[p][lane_col + COL_GAP];
            float a_reg[2 * RUN] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
            float b_reg[2 * RUN] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
            for (int i = 0; i < 2 * RUN; i++)
#pragma unroll
                for (int j = 0; j < 2 * RUN; j++)
                    sum[i][j] += a_reg[i] * b_reg[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2 * RUN; i++) {
        int64_t row = row0 + lane_row + i / RUN * ROW_GAP + i % RUN;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int64_t col = col0 + lane_col + half * COL_GAP;
            const float *run = &sum[i][half * RUN];
            if (!EDGES) {
                *(float4 *)&c[row * m + col] = make_float4(run[0], run[1], run[2], run[3]);
            } else {
                for (int j = 0; j < RUN; j++)
                    if (row < n && col + j < m)
                        c[row * m + col + j] = run[j];
            }
        }
    }
    // END SOLUTION
}

extern "C" const void *s2c_sgemm_warp_tiles_kernel(int64_t n, int64_t k, int64_t m)
{
    if (sgemm_whole_tiles(NULL, NULL, NULL, n, k, m, BM, BN, BK))
        return (const void *)sgemm_warp_tiles_kernel<false>;
    return (const void *)sgemm_warp_tiles_kernel<true>;
}

extern "C" int s2c_sgemm_warp_tiles(const float *a, const float *b, float *c, int64_t n,
                                    int64_t k, int64_t m)
{
    int status = sgemm_check_arguments(a, b, c, n, k, m);
    if (status != S2C_CUDA_OK || n == 0 || m == 0)
        return status;
    // BEGIN SOLUTION week 16, task sgemm_warp_tiles
    dim3 grid = sgemm_grid(n, m, BM, BN);
    if (grid.y == 0)
        return S2C_CUDA_BAD_ARGUMENT;
    if (sgemm_whole_tiles(a, b, c, n, k, m, BM, BN, BK))
        sgemm_warp_tiles_kernel<false><<<grid, THREADS>>>(a, b, c, n, k, m);
    else
        sgemm_warp_tiles_kernel<true><<<grid, THREADS>>>(a, b, c, n, k, m);
    LAUNCH_CHECK("sgemm_warp_tiles_kernel");
    return S2C_CUDA_OK;
    // END SOLUTION
}
