/* matmul.c -- the matmul ladder: five kernels for c[n, m] = a[n, k] @ b[k, m], each one step
 * faster than the one before, and s2c_gemm, the general GEMM that the dense and conv ops use.
 *
 *   1 naive       three loops, a dot product per output: reads b down its columns (stride m)
 *   2 loop_order  the same loops as i-k-j: every inner access has unit stride, so gcc vectorizes
 *   3 blocked     loop_order on tiles that stay in the caches, one OpenMP thread per row block
 *   4 register    packed panels of a and b and a 6x16 micro-kernel whose accumulators live in
 *                 registers (plain C that gcc vectorizes), OpenMP
 *   5 simd        kernel 4 with its micro-kernel written in intrinsics: AVX-512 or AVX2 + FMA
 *
 * MATMUL.md explains each step and gives the GFLOP/s measured on the course machine. Run one:
 *   stage3_c.matmul(a, b, kernel="blocked")       (from Python; kernel is a MATMUL_KERNELS name)
 *   python -m stage3_c.bench_matmul               (every kernel against NumPy's BLAS)
 *
 * Every function that holds exercise code returns a status, because the exercise tool replaces its
 * body with `return S2C_NOT_IMPLEMENTED;`; helpers that cannot fail simply return S2C_OK.
 * Arguments were checked by the Python wrapper; the checks here only keep bad calls from C safe. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* The SIMD micro-kernels of kernel 5 are compiled when the build's flags enable their instructions
 * (build.py: -march=native by default, so those of the CPU that builds) and used when the CPU that
 * runs the extension has them: a build for another target (-march=x86-64-v2) keeps kernel 4's. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && defined(__FMA__)
#include <immintrin.h>
#if defined(__AVX512F__)
#define S2C_AVX512 1
#endif
#if defined(__AVX2__)
#define S2C_AVX2 1
#endif
#endif

#include "internal.h"

/* ---- given: threads, sizes, scratch memory ------------------------------------------------ */

static int requested_threads = 0; /* 0: OpenMP's default. Set it before calling, not during. */

void s2c_set_num_threads(int n) { requested_threads = n > 0 ? n : 0; }

int s2c_get_num_threads(void)
{
    return requested_threads > 0 ? requested_threads : omp_get_max_threads();
}

static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }
static int64_t round_up(int64_t x, int64_t multiple) { return ceil_div(x, multiple) * multiple; }

/* `count` floats aligned to a cache line (64 bytes), which also suits AVX and AVX-512 loads;
 * NULL when out of memory. Release with free(). */
static float *alloc_floats(size_t count)
{
    void *memory = NULL;
    if (count > SIZE_MAX / sizeof(float) || posix_memalign(&memory, 64, count * sizeof(float)))
        return NULL;
    return memory;
}

/* ---- 1. naive ----------------------------------------------------------------------------- */

/* The definition, as three loops i-j-p: c[i][j] is the dot product of row i of a and column j
 * of b. The inner loop walks b down a column, m floats apart, so every step touches a new cache
 * line and uses 4 bytes of its 64; and the single running sum is one long dependency chain, so
 * the adds wait on each other and the compiler may not vectorize (float addition is not
 * associative). Expect about 1 GFLOP/s, falling further once b no longer fits in the cache. */
int s2c_matmul_naive(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m)
{
    S2C_REQUIRE(n >= 1 && k >= 1 && m >= 1);
    /* BEGIN SOLUTION week 11, task matmul_naive */
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < m; j++) {
            float sum = 0.0f;
            for (int64_t p = 0; p < k; p++)
                sum += a[i * k + p] * b[p * m + j];
            c[i * m + j] = sum;
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* ---- 2. loop order ------------------------------------------------------------------------ */

/* The same arithmetic with the loops reordered i-p-j: for each a[i][p], add a[i][p] * (row p of
 * b) to row i of c. Now the inner loop reads b and c with unit stride (whole cache lines, which
 * the prefetcher sees coming), and its iterations are independent, so gcc turns it into SIMD
 * code: 8 floats per AVX instruction. Single-threaded. Row i of c is set to zero first; c is
 * never read before it is written, so a NaN left in it cannot leak into the result. */
int s2c_matmul_loop_order(const float *a, const float *b, float *c, int64_t n, int64_t k,
                          int64_t m)
{
    S2C_REQUIRE(n >= 1 && k >= 1 && m >= 1);
    /* BEGIN SOLUTION week 11, task matmul_loop_order */
    for (int64_t i = 0; i < n; i++) {
        float *c_row = c + i * m;
        for (int64_t j = 0; j < m; j++)
            c_row[j] = 0.0f;
        for (int64_t p = 0; p < k; p++) {
            const float a_ip = a[i * k + p];
            const float *b_row = b + p * m;
            for (int64_t j = 0; j < m; j++)
                c_row[j] += a_ip * b_row[j];
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* ---- 3. cache blocking -------------------------------------------------------------------- */

/* Kernel 2 streams all of b (k * m floats) from memory once per row of c: for large matrices
 * b does not fit in any cache, so the loads, not the arithmetic, set the pace. Blocking cuts the
 * loops into tiles: a BLOCK_DEPTH x BLOCK_COLS tile of b (128 KiB) stays in the 512 KiB L2 cache
 * while all BLOCK_ROWS rows of a row block use it, and the BLOCK_COLS-float piece of a row of c
 * (1 KiB) stays in the 32 KiB L1 cache while the BLOCK_DEPTH rows of the b tile are added to it.
 * Each thread of an OpenMP team takes whole row blocks: they write disjoint rows of c, so they
 * never need to synchronize. */
enum { BLOCK_ROWS = 32, BLOCK_DEPTH = 128, BLOCK_COLS = 256 };

int s2c_matmul_blocked(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m)
{
    S2C_REQUIRE(n >= 1 && k >= 1 && m >= 1);
    /* BEGIN SOLUTION week 11, task matmul_blocked */
    const int threads = s2c_get_num_threads();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i0 = 0; i0 < n; i0 += BLOCK_ROWS) {
        const int64_t i1 = s2c_min(i0 + BLOCK_ROWS, n);
        memset(c + i0 * m, 0, (size_t)((i1 - i0) * m) * sizeof(float));
        for (int64_t p0 = 0; p0 < k; p0 += BLOCK_DEPTH) {
            const int64_t p1 = s2c_min(p0 + BLOCK_DEPTH, k);
            for (int64_t j0 = 0; j0 < m; j0 += BLOCK_COLS) {
                const int64_t j1 = s2c_min(j0 + BLOCK_COLS, m);
                /* one tile: kernel 2's loops, restricted to rows i0..i1, p0..p1, columns j0..j1 */
                for (int64_t i = i0; i < i1; i++) {
                    float *c_row = c + i * m;
                    for (int64_t p = p0; p < p1; p++) {
                        const float a_ip = a[i * k + p];
                        const float *b_row = b + p * m;
                        for (int64_t j = j0; j < j1; j++)
                            c_row[j] += a_ip * b_row[j];
                    }
                }
            }
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* ---- 4. packing and a register-blocked micro-kernel --------------------------------------- */

/* Kernel 3 still loads and stores c for every multiply-add: two loads and a store per FMA, so
 * the load/store units, not the FMA units, are the limit. The fix (Goto's algorithm, as in BLIS
 * and OpenBLAS) computes c in MR x NR tiles whose MR * NR sums live in registers for the whole
 * dot-product depth: each step p loads MR floats of a and NR floats of b and does MR * NR
 * multiply-adds, and c is touched once per tile.
 *
 * The micro-kernel wants its MR rows of a and NR columns of b next to each other in the order it
 * reads them, so the driver first copies ("packs") blocks of a and b into scratch buffers:
 *   a block of MC rows x KC depth -> micro-panels of MR rows, each stored column by column,
 *   a block of KC depth x NC cols -> micro-panels of NR columns, each stored row by row,
 * padding the last micro-panel with zeros. Packing is where odd sizes and transposes are dealt
 * with, once, so the micro-kernel only ever sees full tiles of contiguous data (the padding only
 * feeds sums that are never written out; zeros keep them free of uninitialized memory). The block sizes
 * follow the caches (as BLIS chooses them for Zen): a KC x NR micro-panel of b (16 KiB) stays in
 * L1 while the micro-kernel sweeps the MC x KC block of a (144 KiB) held in L2; the KC x NC block
 * of b (4 MiB) sits in L3.
 *
 * MR x NR = 6 x 16: 6 rows times two 8-float AVX registers make 12 accumulator registers, and with
 * 2 for b and 1 for a broadcast value that is 15 of the 16 ymm registers. The tile is a property
 * of the micro-kernel (kernel 5's AVX-512 one computes a larger tile), so the driver below takes
 * it from the micro-kernel it is given; MAX_MR x MAX_NR is the largest of them. */
enum { MR = 6, NR = 16, MC = 144, KC = 256, NC = 4096 };
enum { MAX_MR = 12, MAX_NR = 32 };

/* A micro-kernel: c[0:rows, 0:cols] (row stride ldc) = a_panel @ b_panel, plus the old c when
 * add_to_c != 0, for its own tile size rows x cols. a_panel holds depth columns of `rows` floats,
 * b_panel depth rows of `cols` floats. */
typedef int micro_kernel_fn(int64_t depth, const float *a_panel, const float *b_panel, float *c,
                            int64_t ldc, int add_to_c);
struct micro_kernel {
    micro_kernel_fn *run;
    int64_t rows, cols; /* the tile it computes: MR x NR */
    int vector_floats;  /* floats per vector register of its intrinsics; 0: plain C */
};

/* A matrix read through strides: element (i, j) is data[i * row_stride + j * col_stride]. The
 * transpose of a row-major [rows, cols] matrix is the same memory with the strides swapped. */
struct strided_matrix {
    const float *data;
    int64_t row_stride, col_stride;
};

/* Pack rows [row0, row0 + rows) x columns [col0, col0 + depth) of `a` into micro-panels of mr
 * rows: panel q holds element (q * mr + r, p) at packed[q * mr * depth + p * mr + r]. Rows past
 * the end of the last panel are zero. */
static int pack_a(struct strided_matrix a, int64_t row0, int64_t rows, int64_t col0,
                  int64_t depth, int64_t mr, float *packed)
{
    /* BEGIN SOLUTION week 11, task matmul_register */
    for (int64_t panel_row = 0; panel_row < rows; panel_row += mr) {
        const int64_t live_rows = s2c_min(mr, rows - panel_row);
        const float *source = a.data + (row0 + panel_row) * a.row_stride + col0 * a.col_stride;
        for (int64_t p = 0; p < depth; p++) {
            for (int64_t r = 0; r < live_rows; r++)
                packed[r] = source[r * a.row_stride + p * a.col_stride];
            for (int64_t r = live_rows; r < mr; r++)
                packed[r] = 0.0f;
            packed += mr;
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* Pack rows [row0, row0 + depth) x columns [col0, col0 + cols) of `b` into micro-panels of nr
 * columns: panel q holds element (p, q * nr + j) at packed[q * nr * depth + p * nr + j]. Columns
 * past the end of the last panel are zero. */
static int pack_b(struct strided_matrix b, int64_t row0, int64_t depth, int64_t col0,
                  int64_t cols, int64_t nr, float *packed)
{
    /* BEGIN SOLUTION week 11, task matmul_register */
    for (int64_t panel_col = 0; panel_col < cols; panel_col += nr) {
        const int64_t live_cols = s2c_min(nr, cols - panel_col);
        const float *source = b.data + row0 * b.row_stride + (col0 + panel_col) * b.col_stride;
        for (int64_t p = 0; p < depth; p++) {
            for (int64_t j = 0; j < live_cols; j++)
                packed[j] = source[p * b.row_stride + j * b.col_stride];
            for (int64_t j = live_cols; j < nr; j++)
                packed[j] = 0.0f;
            packed += nr;
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* The micro-kernel in plain C. The MR x NR sums are a local array indexed by loop counters whose
 * bounds are constants, and each step p adds a column of a times a row of b to them:
 * sums[r][0:NR] += a[r] * b[0:NR], 16 independent multiply-adds on contiguous floats that gcc turns
 * into SIMD instructions (two 8-float AVX registers per row with -mavx2, four SSE ones on a
 * baseline x86-64 build). Two hints make gcc keep all the sums in registers: unroll the r loop
 * fully, so every sums[r] has a fixed name; and do not unroll the j loop before vectorizing it
 * (gcc 12 at -O3 otherwise unrolls it into 96 scalar statements, fails to re-vectorize them well
 * and keeps the sums in memory: dozens of times slower; MATMUL.md shows how to try it). */
static int micro_kernel_portable(int64_t depth, const float *a_panel, const float *b_panel,
                                 float *c, int64_t ldc, int add_to_c)
{
    /* BEGIN SOLUTION week 11, task matmul_register */
    float sums[MR][NR] = {{0.0f}};
    for (int64_t p = 0; p < depth; p++) {
        const float *a_column = a_panel + p * MR;
        const float *b_row = b_panel + p * NR;
#pragma GCC unroll MR
        for (int r = 0; r < MR; r++) {
#pragma GCC unroll 1
            for (int j = 0; j < NR; j++)
                sums[r][j] += a_column[r] * b_row[j];
        }
    }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++)
            c[r * ldc + j] = add_to_c ? c[r * ldc + j] + sums[r][j] : sums[r][j];
    return S2C_OK;
    /* END SOLUTION */
}

/* The macro-kernel: c[rows, cols] (row stride ldc) = packed_a @ packed_b (plus the old c when
 * add_to_c != 0), one tile of the micro-kernel (MR x NR) at a time. packed_a holds `rows` rows of
 * a block of a packed by pack_a, packed_b `cols` columns of a block of b packed by pack_b, both of
 * depth `depth`. The b micro-panel is the outer loop, so it stays in L1 while every a micro-panel
 * streams past it. Edge tiles (fewer than MR rows or NR columns left) are computed whole, padding
 * included, into a local tile, and only their live part is written to c. */
static int multiply_packed(struct micro_kernel kernel, const float *packed_a,
                           const float *packed_b, int64_t rows, int64_t cols, int64_t depth,
                           float *c, int64_t ldc, int add_to_c)
{
    /* BEGIN SOLUTION week 11, task matmul_register */
    const int64_t mr = kernel.rows, nr = kernel.cols;
    float edge_tile[MAX_MR * MAX_NR];
    for (int64_t j = 0; j < cols; j += nr) {
        const float *b_panel = packed_b + j * depth;
        for (int64_t i = 0; i < rows; i += mr) {
            const float *a_panel = packed_a + i * depth;
            float *c_tile = c + i * ldc + j;
            const int64_t tile_rows = s2c_min(mr, rows - i), tile_cols = s2c_min(nr, cols - j);
            if (tile_rows == mr && tile_cols == nr) {
                kernel.run(depth, a_panel, b_panel, c_tile, ldc, add_to_c);
            } else {
                kernel.run(depth, a_panel, b_panel, edge_tile, nr, 0);
                for (int64_t r = 0; r < tile_rows; r++)
                    for (int64_t t = 0; t < tile_cols; t++)
                        c_tile[r * ldc + t] = add_to_c ? c_tile[r * ldc + t] + edge_tile[r * nr + t]
                                                       : edge_tile[r * nr + t];
            }
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

/* c[rows, cols] (row stride ldc) = a @ b, plus the old c when accumulate != 0; a is [rows, depth]
 * and b [depth, cols], both read through strides. The loops of the BLIS design around the
 * macro-kernel: blocks of NC columns, then slices of KC of the depth (pack that block of b), then
 * blocks of rows (pack that block of a, multiply). The threads of an OpenMP team split the packing
 * of b and the row blocks. Returns S2C_OUT_OF_MEMORY when the scratch buffers cannot be allocated;
 * c is untouched then. */
static int packed_gemm(struct micro_kernel kernel, struct strided_matrix a,
                       struct strided_matrix b, float *c, int64_t ldc, int64_t rows,
                       int64_t cols, int64_t depth, int accumulate)
{
    /* BEGIN SOLUTION week 11, task matmul_register */
    /* No more threads than micro-panels of rows; one thread for small products, where waking a
     * team and meeting at its barriers costs more than the work (measured: a 64 x 676 x 9
     * product, Fashion-CNN conv1 on one image, takes 1.5x longer on two threads than on one),
     * and inside a parallel region (conv2d calls this per group of images from its threads). */
    const int64_t mr = kernel.rows, nr = kernel.cols;
    int threads = (int)s2c_min(s2c_get_num_threads(), ceil_div(rows, mr));
    if ((double)rows * (double)cols * (double)depth < 128.0 * 128.0 * 128.0 || omp_in_parallel())
        threads = 1;
    /* The rows, in micro-panels of mr, are cut into row blocks of at most MC rows, as many as a
     * multiple of the thread count, and as even as possible: block i holds panels
     * [i * panels / row_blocks, (i + 1) * panels / row_blocks), so the threads get equal shares. */
    const int64_t panels = ceil_div(rows, mr);
    const int64_t row_blocks = round_up(ceil_div(panels * mr, MC), threads);
    const int64_t max_depth = s2c_min(KC, depth);
    const int64_t b_block_floats = max_depth * round_up(s2c_min(NC, cols), nr);
    const int64_t a_block_floats = max_depth * ceil_div(panels, row_blocks) * mr;

    /* One packed block of b shared by the team, one packed block of a per thread. */
    float *scratch = alloc_floats((size_t)(b_block_floats + threads * a_block_floats));
    if (scratch == NULL)
        return S2C_OUT_OF_MEMORY;
    float *packed_b = scratch;

#pragma omp parallel num_threads(threads)
    {
        float *packed_a = scratch + b_block_floats + omp_get_thread_num() * a_block_floats;
        /* Every thread runs the two outer loops; the `omp for` loops inside share out the work
         * and end with a barrier, so packed_b is complete before it is used, and no longer used
         * when the next slice replaces it. */
        for (int64_t col0 = 0; col0 < cols; col0 += NC) {
            const int64_t block_cols = s2c_min(NC, cols - col0);
            for (int64_t depth0 = 0; depth0 < depth; depth0 += KC) {
                const int64_t block_depth = s2c_min(KC, depth - depth0);
                /* Only the first slice of the depth may overwrite c; the later ones add to it. */
                const int add_to_c = accumulate || depth0 > 0;
#pragma omp for schedule(static)
                for (int64_t panel = 0; panel < block_cols; panel += nr)
                    pack_b(b, depth0, block_depth, col0 + panel, s2c_min(nr, block_cols - panel),
                           nr, packed_b + panel * block_depth);
#pragma omp for schedule(static)
                for (int64_t block = 0; block < row_blocks; block++) {
                    const int64_t row0 = block * panels / row_blocks * mr;
                    const int64_t row1 = s2c_min((block + 1) * panels / row_blocks * mr, rows);
                    const int64_t live_rows = row1 - row0;
                    pack_a(a, row0, live_rows, depth0, block_depth, mr, packed_a);
                    multiply_packed(kernel, packed_a, packed_b, live_rows, block_cols,
                                    block_depth, c + row0 * ldc + col0, ldc, add_to_c);
                }
            }
        }
    }
    free(scratch);
    return S2C_OK;
    /* END SOLUTION */
}

static struct strided_matrix row_major(const float *data, int64_t cols)
{
    struct strided_matrix matrix = {data, cols, 1};
    return matrix;
}

static const struct micro_kernel PORTABLE = {micro_kernel_portable, MR, NR, 0};

int s2c_matmul_register(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m)
{
    S2C_REQUIRE(n >= 1 && k >= 1 && m >= 1);
    /* BEGIN SOLUTION week 11, task matmul_register */
    return packed_gemm(PORTABLE, row_major(a, k), row_major(b, m), c, m, n, m, k, 0);
    /* END SOLUTION */
}

/* ---- 5. the micro-kernel in intrinsics: AVX2 + FMA, and AVX-512 ----------------------------- */

#ifdef S2C_AVX2
/* c_row[0:16] = left, right (plus the old c_row[0:16] when add_to_c != 0). */
static inline int store_row_avx2(float *c_row, __m256 left, __m256 right, int add_to_c)
{
    /* BEGIN SOLUTION week 11, task matmul_simd */
    if (add_to_c) {
        left = _mm256_add_ps(left, _mm256_loadu_ps(c_row));
        right = _mm256_add_ps(right, _mm256_loadu_ps(c_row + 8));
    }
    _mm256_storeu_ps(c_row, left);
    _mm256_storeu_ps(c_row + 8, right);
    return S2C_OK;
    /* END SOLUTION */
}

/* Kernel 4 with the micro-kernel spelled out in intrinsics, so that nothing is left to the
 * compiler's judgement: 12 named ymm accumulators (6 rows x the two 8-float halves of 16 columns),
 * and per step p two loads of b, six broadcasts of a and twelve fused multiply-adds
 * (vfmadd231ps: 8 multiplies and 8 adds with one rounding). Zen 3 issues two FMAs per cycle with
 * a latency of 4 cycles, so at least 8 independent accumulators are needed to keep both units
 * busy; 12 leave slack for the loads. */
static int micro_kernel_avx2(int64_t depth, const float *a_panel, const float *b_panel, float *c,
                             int64_t ldc, int add_to_c)
{
    /* BEGIN SOLUTION week 11, task matmul_simd */
    __m256 c0_left = _mm256_setzero_ps(), c0_right = _mm256_setzero_ps();
    __m256 c1_left = _mm256_setzero_ps(), c1_right = _mm256_setzero_ps();
    __m256 c2_left = _mm256_setzero_ps(), c2_right = _mm256_setzero_ps();
    __m256 c3_left = _mm256_setzero_ps(), c3_right = _mm256_setzero_ps();
    __m256 c4_left = _mm256_setzero_ps(), c4_right = _mm256_setzero_ps();
    __m256 c5_left = _mm256_setzero_ps(), c5_right = _mm256_setzero_ps();
    /* Ask for the tile of c now, so that its rows (ldc floats apart, usually not in L1) have
     * arrived by the time the loop ends and they are added to or overwritten. */
    for (int r = 0; r < MR; r++) {
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + r * ldc + NR - 1), _MM_HINT_T0);
    }
    for (int64_t p = 0; p < depth; p++) {
        const __m256 b_left = _mm256_loadu_ps(b_panel + p * NR);
        const __m256 b_right = _mm256_loadu_ps(b_panel + p * NR + 8);
        const float *a_column = a_panel + p * MR;
        __m256 a_value = _mm256_broadcast_ss(a_column + 0);
        c0_left = _mm256_fmadd_ps(a_value, b_left, c0_left);
        c0_right = _mm256_fmadd_ps(a_value, b_right, c0_right);
        a_value = _mm256_broadcast_ss(a_column + 1);
        c1_left = _mm256_fmadd_ps(a_value, b_left, c1_left);
        c1_right = _mm256_fmadd_ps(a_value, b_right, c1_right);
        a_value = _mm256_broadcast_ss(a_column + 2);
        c2_left = _mm256_fmadd_ps(a_value, b_left, c2_left);
        c2_right = _mm256_fmadd_ps(a_value, b_right, c2_right);
        a_value = _mm256_broadcast_ss(a_column + 3);
        c3_left = _mm256_fmadd_ps(a_value, b_left, c3_left);
        c3_right = _mm256_fmadd_ps(a_value, b_right, c3_right);
        a_value = _mm256_broadcast_ss(a_column + 4);
        c4_left = _mm256_fmadd_ps(a_value, b_left, c4_left);
        c4_right = _mm256_fmadd_ps(a_value, b_right, c4_right);
        a_value = _mm256_broadcast_ss(a_column + 5);
        c5_left = _mm256_fmadd_ps(a_value, b_left, c5_left);
        c5_right = _mm256_fmadd_ps(a_value, b_right, c5_right);
    }
    store_row_avx2(c + 0 * ldc, c0_left, c0_right, add_to_c);
    store_row_avx2(c + 1 * ldc, c1_left, c1_right, add_to_c);
    store_row_avx2(c + 2 * ldc, c2_left, c2_right, add_to_c);
    store_row_avx2(c + 3 * ldc, c3_left, c3_right, add_to_c);
    store_row_avx2(c + 4 * ldc, c4_left, c4_right, add_to_c);
    store_row_avx2(c + 5 * ldc, c5_left, c5_right, add_to_c);
    return S2C_OK;
    /* END SOLUTION */
}
#endif

#ifdef S2C_AVX512
/* The AVX-512 tile: 12 rows x 32 columns (two 16-float zmm registers per row). */
enum { AVX512_MR = 12, AVX512_NR = 32 };

/* The same micro-kernel for 16-float zmm registers, on a tile twice as wide and twice as high:
 * 24 accumulators (12 rows x two halves of 32 columns), and per step p two loads of b, twelve
 * broadcasts of a and 24 fused multiply-adds of 16 floats. AVX-512 has 32 vector registers, so 24
 * accumulators, 2 for b and 1 for a broadcast value fit; the taller tile also halves the loads of
 * b per multiply-add (its KC x 32 panel of b, 32 KiB, fits the 48 KiB L1 of the AVX-512 Xeons it
 * was measured on). The 24 sums are an array indexed by fully unrolled loops with constant
 * bounds, which gcc keeps in registers as if each had its own name (as kernel 4's sums). */
static int micro_kernel_avx512(int64_t depth, const float *a_panel, const float *b_panel,
                               float *c, int64_t ldc, int add_to_c)
{
    /* BEGIN SOLUTION week 11, task matmul_simd */
    __m512 left[AVX512_MR], right[AVX512_MR];
#pragma GCC unroll 12
    for (int r = 0; r < AVX512_MR; r++) {
        left[r] = _mm512_setzero_ps();
        right[r] = _mm512_setzero_ps();
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0); /* as in the AVX2 kernel */
        _mm_prefetch((const char *)(c + r * ldc + AVX512_NR - 1), _MM_HINT_T0);
    }
    for (int64_t p = 0; p < depth; p++) {
        const __m512 b_left = _mm512_loadu_ps(b_panel + p * AVX512_NR);
        const __m512 b_right = _mm512_loadu_ps(b_panel + p * AVX512_NR + 16);
        const float *a_column = a_panel + p * AVX512_MR;
#pragma GCC unroll 12
        for (int r = 0; r < AVX512_MR; r++) {
            const __m512 a_value = _mm512_set1_ps(a_column[r]);
            left[r] = _mm512_fmadd_ps(a_value, b_left, left[r]);
            right[r] = _mm512_fmadd_ps(a_value, b_right, right[r]);
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < AVX512_MR; r++) {
        float *c_row = c + r * ldc;
        if (add_to_c) {
            left[r] = _mm512_add_ps(left[r], _mm512_loadu_ps(c_row));
            right[r] = _mm512_add_ps(right[r], _mm512_loadu_ps(c_row + 16));
        }
        _mm512_storeu_ps(c_row, left[r]);
        _mm512_storeu_ps(c_row + 16, right[r]);
    }
    return S2C_OK;
    /* END SOLUTION */
}
#endif

/* The widest micro-kernel that this build has and the CPU running it supports, else kernel 4's. */
static struct micro_kernel fastest_micro_kernel(void)
{
#ifdef S2C_AVX512
    if (__builtin_cpu_supports("avx512f")) {
        const struct micro_kernel avx512 = {micro_kernel_avx512, AVX512_MR, AVX512_NR, 16};
        return avx512;
    }
#endif
#ifdef S2C_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        const struct micro_kernel avx2 = {micro_kernel_avx2, MR, NR, 8};
        return avx2;
    }
#endif
    return PORTABLE;
}

int s2c_simd_width(void)
{
    return fastest_micro_kernel().vector_floats;
}

/* Where neither SIMD micro-kernel can run this runs kernel 4's: s2c_simd_width() tells which ran. */
int s2c_matmul_simd(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m)
{
    S2C_REQUIRE(n >= 1 && k >= 1 && m >= 1);
    /* BEGIN SOLUTION week 11, task matmul_simd */
    return packed_gemm(fastest_micro_kernel(), row_major(a, k), row_major(b, m), c, m, n, m, k, 0);
    /* END SOLUTION */
}

/* ---- the general GEMM --------------------------------------------------------------------- */

/* Kernel 5 with transposed operands and accumulation, for the layers: linear_forward computes
 * x @ w.T (trans_b), its backward dy @ w and dy.T @ x (trans_a), conv the same through im2col.
 * A transpose costs nothing extra: it only swaps the strides through which packing reads. */
int s2c_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
             const float *b, float *c, int accumulate)
{
    S2C_REQUIRE(m >= 1 && n >= 1 && k >= 1);
    /* BEGIN SOLUTION week 11, task gemm */
    /* op(a) is [m, k]: a stored [m, k] is row-major, a stored [k, m] is read down its columns. */
    struct strided_matrix op_a = {a, trans_a ? 1 : k, trans_a ? m : 1};
    struct strided_matrix op_b = {b, trans_b ? 1 : n, trans_b ? k : 1};
    return packed_gemm(fastest_micro_kernel(), op_a, op_b, c, n, m, n, k, accumulate);
    /* END SOLUTION */
}
