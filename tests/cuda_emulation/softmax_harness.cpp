/* Runs every rung of the softmax ladder (softmax and log_softmax) and the fused cross-entropy on
 * the CPU emulation of cuda_runtime.h beside this file (tests/test_softmax_cuda.py builds it):
 * rows at every offset from a 16-byte boundary, logits as large as 1e3, a row holding NaN (every
 * output of that row NaN, the others right), a row holding -inf, and inputs that lie apart from
 * the outputs. Outputs are filled with NaN first; each must be within 1e-5 + 1e-5 |expected| of a
 * float64 reference. Prints one line per failure and a summary "N passed, N failed"; exits 1 on a
 * failure. */
#include "common.h"

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

typedef int (*Rung)(const float *, float *, float *, int64_t, int64_t, int);
static const struct {
    const char *name;
    Rung launch;
} RUNGS[] = {{"three_pass", s2c_cuda_softmax_three_pass},
             {"tree", s2c_cuda_softmax_tree},
             {"shuffle", s2c_cuda_softmax_shuffle},
             {"online", s2c_cuda_softmax_online}};

static int passed = 0, failed = 0;
static std::mt19937 generator(7);

/* n floats from a 64-byte boundary (a device allocation's alignment), filled with NaN. */
static std::vector<float> poisoned(int64_t n) { return std::vector<float>(n + 16, NAN); }
static float *aligned(std::vector<float> &buffer)
{
    return (float *)(((uintptr_t)buffer.data() + 63) & ~(uintptr_t)63);
}

/* Normal logits, the first row scaled so that its largest magnitude is 1e3. */
static void fill(float *x, int64_t rows, int64_t cols)
{
    std::normal_distribution<float> normal;
    for (int64_t i = 0; i < rows * cols; i++)
        x[i] = normal(generator);
    float largest = 1e-3f;
    for (int64_t j = 0; j < cols; j++)
        largest = std::fmax(largest, std::fabs(x[j]));
    for (int64_t j = 0; j < cols; j++)
        x[j] *= 1e3f / largest;
}

/* The log-sum-exp of a row in float64 (NaN when the row holds one). */
static double log_sum_exp(const float *row, int64_t cols)
{
    double top = -INFINITY, total = 0.0;
    for (int64_t j = 0; j < cols; j++)
        top = std::fmax(top, row[j]);
    for (int64_t j = 0; j < cols; j++)
        total += std::exp(row[j] - top);
    return top + std::log(total);
}

/* Whether `got` is `expected` (NaN where expected is NaN, else within the tolerance). */
static bool close(double got, double expected)
{
    if (std::isnan(expected) || std::isinf(expected))
        return std::isnan(expected) ? std::isnan(got) : got == expected;
    return std::fabs(got - expected) <= 1e-5 + 1e-5 * std::fabs(expected);
}

static void report(const std::string &what, int status, int64_t bad, int64_t where)
{
    if (status == S2C_CUDA_OK && bad == 0) {
        passed++;
        return;
    }
    failed++;
    printf("FAILED %s: status %d, %lld wrong outputs (first at %lld)\n", what.c_str(), status,
           (long long)bad, (long long)where);
}

/* Rung `r` on x [rows, cols] (any pointer) against float64. */
static void check_softmax(int r, const float *x, int64_t rows, int64_t cols, int log,
                          const std::string &label)
{
    std::vector<float> y_buffer = poisoned(rows * cols), scratch(2 * rows);
    float *y = aligned(y_buffer);
    int status = RUNGS[r].launch(x, y, scratch.data(), rows, cols, log);
    int64_t bad = 0, where = -1;
    for (int64_t i = 0; i < rows; i++) {
        double lse = log_sum_exp(x + i * cols, cols);
        for (int64_t j = 0; j < cols; j++) {
            double value = x[i * cols + j] - lse;
            if (!close(y[i * cols + j], log ? value : std::exp(value)) && bad++ == 0)
                where = i * cols + j;
        }
    }
    report(std::string(RUNGS[r].name) + (log ? " log_softmax " : " softmax ") + label, status,
           bad, where);
}

/* Rung 5 on logits [rows, cols] with and without each output, against float64. */
static void check_cross_entropy(const float *x, int64_t rows, int64_t cols, const std::string &label)
{
    std::vector<int64_t> labels(rows);
    for (int64_t i = 0; i < rows; i++)
        labels[i] = (int64_t)(generator() % cols);
    for (int outputs = 1; outputs <= 3; outputs++) { /* terms, gradient, both */
        std::vector<float> terms(rows, NAN), grad_buffer = poisoned(rows * cols);
        float *grad = aligned(grad_buffer);
        int status = s2c_cuda_softmax_cross_entropy(x, labels.data(),
                                                    outputs & 1 ? terms.data() : NULL,
                                                    outputs & 2 ? grad : NULL, rows, cols);
        int64_t bad = 0, where = -1;
        for (int64_t i = 0; i < rows; i++) {
            double lse = log_sum_exp(x + i * cols, cols);
            if (outputs & 1 && !close(terms[i], lse - x[i * cols + labels[i]]) && bad++ == 0)
                where = i;
            for (int64_t j = 0; outputs & 2 && j < cols; j++) {
                double expected = (std::exp(x[i * cols + j] - lse) - (j == labels[i])) / rows;
                if (!close(grad[i * cols + j], expected) && bad++ == 0)
                    where = i * cols + j;
            }
        }
        const char *which[] = {"", "terms", "gradient", "terms and gradient"};
        report("cross_entropy " + std::string(which[outputs]) + " " + label, status, bad, where);
    }
}

static void check_all(const float *x, int64_t rows, int64_t cols, const std::string &label)
{
    for (int r = 0; r < 4; r++)
        for (int log = 0; log <= 1; log++)
            check_softmax(r, x, rows, cols, log, label);
    check_cross_entropy(x, rows, cols, label);
}

int main()
{
    const int64_t shapes[][2] = {{1, 1}, {3, 10}, {5, 37}, {4, 1030}, {2, 4099}};
    for (const auto &shape : shapes) {
        int64_t rows = shape[0], cols = shape[1];
        std::string label = "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
        std::vector<float> buffer = poisoned(rows * cols);
        float *x = aligned(buffer);
        fill(x, rows, cols);
        check_all(x, rows, cols, label);
        if (rows > 1) /* rows 1..: inputs 4 cols bytes past the outputs' 16-byte offsets */
            check_all(x + cols, rows - 1, cols, label + " from row 1");
    }
    /* Row 1 holds -inf (it counts as exp(-inf) = 0), row 2 a NaN (every output of the row NaN):
     * in rows of 10, a thread's only element (its statistics {-inf, NaN} until merged). */
    for (int64_t cols : {1030, 10}) {
        std::vector<float> buffer = poisoned(4 * cols);
        float *x = aligned(buffer);
        fill(x, 4, cols);
        x[1 * cols + 5] = -INFINITY;
        x[2 * cols + cols / 2] = NAN;
        x[3 * cols + cols - 1] = INFINITY; /* row 3: exp(inf - inf) is NaN, so the whole row */
        check_all(x, 4, cols,
                  "[4, " + std::to_string(cols) + "] with -inf in row 1, NaN in row 2, +inf in 3");
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
