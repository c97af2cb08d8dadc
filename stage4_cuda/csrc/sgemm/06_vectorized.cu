/* 06_vectorized.cu -- rung 6: 16-byte loads everywhere, A's tile stored transposed.
 *
 * What it changes (same tiles as rung 5: 128 x 128 per block, 8 x 8 per thread, BK = 8):
 *   - Global loads of 16 bytes (float4): one instruction brings 4 neighbours of a row, so a thread
 *     issues one load of A and one of B per step instead of four of each.
 *   - A's tile is stored transposed, tile_at[p][row], as it is written to shared memory: the 8
 *     values of A a thread needs at step p are then neighbours in a row of tile_at, like B's.
 *   - A thread's 8 rows are two runs of 4 neighbours (rows 4 ty .. 4 ty + 3 and the same 64 rows
 *     further), and its 8 columns likewise. Each run is one 16-byte shared load (LDS.128): 4
 *     loads per step instead of 16, and neighbouring threads read neighbouring 16-byte words, so
 *     no two threads of a quarter-warp hit the same bank (rung 5's 4-way conflicts are gone).
 *   - tile_at rows are padded by 4 floats: the 32 threads of a warp transpose 16 rows x 2 groups
 *     of 4 values of p; without the padding both groups would write the same 16 banks.
 *
 * Cost model (n x k x m; 4096^3: 137 GFLOP), BM = BN = 128, BK = 8, TM = TN = 8:
 *   FLOPs  2 n k m.
 *   bytes  device memory (through L2): n k m / 16 as rung 5 (4.3 GB at 4096^3), in float4s.
 *          shared memory: 4 LDS.128 for 64 FMAs (1/16 load instruction per multiply-add).
 *   so     bound by the loads of each step waiting in front of the barrier (nothing else runs
 *          while they are in flight except other blocks): about half to two thirds of cuBLAS.
 * Edges: the 16-byte path needs k and m multiples of 4 and aligned pointers; the EDGES variant
 *   (any size or alignment) loads and stores one float at a time, with bounds checks.
 *
 * Run it: python3 bench/sgemm_ladder.py --rung 6 */
#include "sgemm.h"

#define BM 128
#define BN 128
#define BK 8
#define THREADS 256
#define RUN 4       /* a thread's rows (and columns) come in runs of 4 neighbours ... */
#define RUN_GAP 64  /* ... 64 apart: rows 4 ty + {0..3} and 64 + 4 ty + {0..3} */
#define PAD_A 4     /* tile_at's rows are BM + PAD_A floats long (multiple of 4: float4 reads) */

template <bool EDGES>
__global__ void __launch_bounds__(THREADS) sgemm_vectorized_kernel(
    const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m)
{
    // BEGIN SOLUTION week 16, task sgemm_vectorized
    __shared__ __align__(16) float tile_at[BK][BM + PAD_A]; /* A's tile, transposed: [p][row] */
    __shared__ __align__(16) float tile_b[BK][BN];
    int t = threadIdx.x;
    int tx = t % 16, ty = t / 16; /* the thread's runs: columns 4 tx (+64), rows 4 ty (+64) */
    int a_row = t / 2, a_p = t % 2 * 4;   /* the 4 values of A this thread loads: one float4 */
    int b_p = t / 32, b_col = t % 32 * 4; /* and of B: a warp reads a whole 512-byte row */
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
        tile_at[a_p + 0][a_row] = a4.x; /* transposed as it is stored */
        tile_at[a_p + 1][a_row] = a4.y;
        tile_at[a_p + 2][a_row] = a4.z;
        tile_at[a_p + 3][a_row] = a4.w;
        *(float4 *)&tile_b[b_p][b_col] = b4;
        __syncthreads();
#pragma unroll
        for (int p = 0; p < BK; p++) {
            float4 a_lo = *(const float4 *)&tile_at[p][RUN * ty];
            float4 a_hi = *(const float4 *)&tile_at[p][RUN_GAP + RUN * ty];
            float4 b_lo = *(const float4 *)&tile_b[p][RUN * tx];
            float4 b_hi = *(const float4 *)&tile_b[p][RUN_GAP + RUN * tx];
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
        int64_t row = row0 + i / RUN * RUN_GAP + RUN * ty + i % RUN;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int64_t col = col0 + half * RUN_GAP + RUN * tx;
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

extern "C" const void *s2c_sgemm_vectorized_kernel(int64_t n, int64_t k, int64_t m)
{
    if (sgemm_whole_tiles(NULL, NULL, NULL, n, k, m, BM, BN, BK))
        return (const void *)sgemm_vectorized_kernel<false>;
    return (const void *)sgemm_vectorized_kernel<true>;
}

extern "C" int s2c_sgemm_vectorized(const float *a, const float *b, float *c, int64_t n,
                                    int64_t k, int64_t m)
{
    int status = sgemm_check_arguments(a, b, c, n, k, m);
    if (status != S2C_CUDA_OK || n == 0 || m == 0)
        return status;
    // BEGIN SOLUTION week 16, task sgemm_vectorized
    dim3 grid = sgemm_grid(n, m, BM, BN);
    if (grid.y == 0)
        return S2C_CUDA_BAD_ARGUMENT;
    if (sgemm_whole_tiles(a, b, c, n, k, m, BM, BN, BK))
        sgemm_vectorized_kernel<false><<<grid, THREADS>>>(a, b, c, n, k, m);
    else
        sgemm_vectorized_kernel<true><<<grid, THREADS>>>(a, b, c, n, k, m);
    LAUNCH_CHECK("sgemm_vectorized_kernel");
    return S2C_CUDA_OK;
    // END SOLUTION
}
