/* matmul.h -- the matmul ladder (kernels 1..5, each in csrc/matmul.c with what it changes and why;
 * MATMUL.md has the story and the measurements) and the general GEMM that dense and conv layers
 * build on. All matrices are row-major float32; sizes are >= 1 (else S2C_BAD_ARGUMENT). The output
 * is overwritten without being read first, so it may hold NaN (except by s2c_gemm's accumulate).
 * Each function returns an s2c_status; kernels 4, 5 and s2c_gemm may return S2C_OUT_OF_MEMORY. */
#ifndef S2C_MATMUL_H
#define S2C_MATMUL_H

#include <stdint.h>

/* c[n, m] = a[n, k] @ b[k, m] */
int s2c_matmul_naive(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m);      /* 1 */
int s2c_matmul_loop_order(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m); /* 2 */
int s2c_matmul_blocked(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m);    /* 3 */
int s2c_matmul_register(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m);   /* 4 */
int s2c_matmul_simd(const float *a, const float *b, float *c, int64_t n, int64_t k, int64_t m);       /* 5 */

/* c[m, n] = op(a) @ op(b), plus the old c when accumulate != 0. op(a) is [m, k]: a is stored
 * [m, k], or [k, m] when trans_a != 0; op(b) is [k, n]: b is stored [k, n], or [n, k] when
 * trans_b != 0. Kernel 5 (kernel 4's micro-kernel without SIMD), on the OpenMP threads set below;
 * called from inside a parallel region, it runs on the calling thread alone. Thread-safe. */
int s2c_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
             const float *a, const float *b, float *c, int accumulate);

/* The floats per vector register of the micro-kernel that s2c_matmul_simd and s2c_gemm run: 16
 * (AVX-512) or 8 (AVX2 + FMA), the widest that both the build's flags enable and the CPU running
 * it supports; 0 where neither does (they run kernel 4's micro-kernel then). */
int s2c_simd_width(void);

/* OpenMP threads used by kernels 3..5 and s2c_gemm (and by the other ops' parallel loops);
 * n <= 0 restores OpenMP's default (omp_get_max_threads()). Set it between calls, not during. */
void s2c_set_num_threads(int n);
int s2c_get_num_threads(void);

#endif
