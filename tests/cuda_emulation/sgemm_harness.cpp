/* Runs every rung of the SGEMM ladder, and every tile configuration of rung 8, on the CPU emulation
 * of cuda_runtime.h beside this file (tests/test_sgemm_cuda.py builds it), at sizes that are and
 * are not multiples of the tiles, with aligned and misaligned operands. Each product must pass
 * bench.cu's check against a float64 reference: |c - c_ref| <= 16 sqrt(k) 2^-24 (|A| @ |B|).
 * Prints one line per failure and a summary "N passed, N failed"; exits 1 on a failure. */
#include "08_cp_async.cu" /* rung 8 in this translation unit: its CANDIDATES are reachable */

#include <cmath>
#include <random>
#include <vector>

static int passed = 0, failed = 0;

/* Check c against the float64 product of a and b; report under `what`. */
static void check(const char *what, int status, const float *a, const float *b, const float *c,
                  int64_t n, int64_t k, int64_t m)
{
    double bound = 16.0 * std::sqrt((double)std::max<int64_t>(k, 1)) * std::ldexp(1.0, -24);
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            double exact = 0.0, scale = 0.0;
            for (int64_t p = 0; p < k; p++) {
                exact += (double)a[i * k + p] * b[p * m + j];
                scale += std::fabs((double)a[i * k + p] * b[p * m + j]);
            }
            double error = std::fabs(c[i * m + j] - exact);
            double ratio = error == 0.0 ? 0.0 : error / scale;
            worst = std::isnan(ratio) ? INFINITY : std::max(worst, ratio);
        }
    if (status != S2C_CUDA_OK || !(worst <= bound)) {
        printf("FAILED %s at %lld x %lld x %lld: status %d, max error %.3g (bound %.3g)\n", what,
               (long long)n, (long long)k, (long long)m, status, worst, bound);
        failed++;
    } else {
        passed++;
    }
}

typedef int (*Launcher)(const float *, const float *, float *, int64_t, int64_t, int64_t);

static void run_all(int64_t n, int64_t k, int64_t m, int offset, bool every_rung)
{
    std::mt19937 generator((unsigned)(n * 131 + k * 17 + m + offset));
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    /* `offset` floats in front of b and c: 4 bytes off 16-byte alignment when it is 1 */
    std::vector<float4> a_store(n * k / 4 + 2), b_store(k * m / 4 + 2), c_store(n * m / 4 + 2);
    float *a = (float *)a_store.data(), *b = (float *)b_store.data() + offset;
    float *c = (float *)c_store.data() + offset;
    for (int64_t i = 0; i < n * k; i++)
        a[i] = uniform(generator);
    for (int64_t i = 0; i < k * m; i++)
        b[i] = uniform(generator);
    const struct { const char *name; Launcher launch; } rungs[] = {
        {"naive", s2c_sgemm_naive},           {"coalesced", s2c_sgemm_coalesced},
        {"shared_tiles", s2c_sgemm_shared_tiles}, {"register_1d", s2c_sgemm_register_1d},
        {"register_2d", s2c_sgemm_register_2d},   {"vectorized", s2c_sgemm_vectorized},
        {"warp_tiles", s2c_sgemm_warp_tiles},     {"cp_async", s2c_sgemm_cp_async},
    };
    for (const auto &rung : rungs) {
        if (!every_rung && rung.launch != s2c_sgemm_cp_async)
            continue;
        for (int64_t i = 0; i < n * m; i++)
            c[i] = NAN;
        check(rung.name, rung.launch(a, b, c, n, k, m), a, b, c, n, k, m);
    }
    for (int i = 0; i < CANDIDATE_COUNT; i++) {
        for (int64_t j = 0; j < n * m; j++)
            c[j] = NAN;
        check(CANDIDATES[i].describe(), CANDIDATES[i].launch(a, b, c, n, k, m), a, b, c, n, k, m);
    }
}

int main(void)
{
    run_all(1, 1, 1, 0, true);
    run_all(7, 13, 5, 0, true);
    run_all(70, 20, 131, 1, true);    /* edges everywhere, b and c misaligned */
    run_all(128, 64, 128, 0, true);   /* whole 128 x 128 tiles: the fast variants */
    run_all(256, 48, 256, 0, false);  /* whole 128 x 256 tiles too; k a multiple of 16 */
    run_all(256, 48, 256, 1, false);  /* the same sizes, misaligned: the edge variants */
    run_all(64, 0, 64, 0, false);     /* k = 0: C is all zeros */
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
