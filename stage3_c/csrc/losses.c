/* losses.c -- the four losses and their gradients (week 12).
 * Each loss is a mean, summed in double (a float32 sum of many terms drifts); each backward is
 * the gradient of that mean w.r.t. its first argument, so it carries the 1 / count. */
#include <math.h>

#include "internal.h"

int s2c_mse_loss(const float *pred, const float *target, int64_t size, double *loss)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task mse_loss */
    double total = 0.0;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        reduction(+ : total) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        double difference = (double)pred[i] - target[i];
        total += difference * difference;
    }
    *loss = total / (double)size;
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_mse_loss_backward(const float *pred, const float *target, float *grad, int64_t size)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task mse_loss_backward */
    float factor = (float)(2.0 / (double)size);
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        grad[i] = factor * (pred[i] - target[i]);
    return S2C_OK;
    /* END SOLUTION */
}

/* log(sum_j exp(row[j])) of one row, stable: the max is taken out before exponentiating. */
static inline double log_sum_exp(const float *row, int64_t c)
{
    float max = s2c_row_max(row, c);
    double sum = 0.0;
    for (int64_t j = 0; j < c; j++)
        sum += exp((double)row[j] - max);
    return max + log(sum);
}

int s2c_cross_entropy_loss(const float *logits, const int64_t *labels, int64_t n, int64_t c,
                           double *loss)
{
    S2C_REQUIRE(n >= 1 && c >= 1);
    /* BEGIN SOLUTION week 12, task cross_entropy_loss */
    /* -log_softmax(logits)[i, label] = log_sum_exp(row) - row[label]: fused, no softmax array */
    double total = 0.0;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        reduction(+ : total) if (n * c >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float *row = logits + i * c;
        total += log_sum_exp(row, c) - row[labels[i]];
    }
    *loss = total / (double)n;
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_cross_entropy_loss_backward(const float *logits, const int64_t *labels, float *grad,
                                    int64_t n, int64_t c)
{
    S2C_REQUIRE(n >= 1 && c >= 1);
    /* BEGIN SOLUTION week 12, task cross_entropy_loss_backward */
    /* (softmax(row) - one_hot(label)) / n */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (n * c >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float *row = logits + i * c;
        float *out = grad + i * c;
        double log_sum = log_sum_exp(row, c);
        for (int64_t j = 0; j < c; j++) {
            double probability = exp((double)row[j] - log_sum);
            out[j] = (float)((probability - (j == labels[i])) / (double)n);
        }
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_bce_with_logits_loss(const float *logits, const float *targets, int64_t size,
                             double *loss)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task bce_with_logits_loss */
    /* -(t log sigmoid(z) + (1 - t) log(1 - sigmoid(z))) rewritten so that no exp overflows and
     * no log sees 0: max(z, 0) - z t + log(1 + exp(-|z|)) */
    double total = 0.0;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        reduction(+ : total) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        double z = logits[i], t = targets[i];
        total += fmax(z, 0.0) - z * t + log1p(exp(-fabs(z)));
    }
    *loss = total / (double)size;
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_bce_with_logits_loss_backward(const float *logits, const float *targets, float *grad,
                                      int64_t size)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task bce_with_logits_loss_backward */
    /* (sigmoid(z) - t) / size, with the sigmoid in its overflow-free form for each sign */
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        double z = logits[i];
        double sigmoid = z >= 0.0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
        grad[i] = (float)((sigmoid - targets[i]) / (double)size);
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_hinge_loss(const float *scores, const int64_t *labels, int64_t n, int64_t c,
                   double margin, double *loss)
{
    S2C_REQUIRE(n >= 1 && c >= 1);
    /* BEGIN SOLUTION week 12, task hinge_loss */
    /* sum over the wrong classes j of max(0, s_j - s_label + margin), mean over the batch */
    double total = 0.0;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) \
        reduction(+ : total) if (n * c >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float *row = scores + i * c;
        double correct = row[labels[i]];
        for (int64_t j = 0; j < c; j++) {
            double violation = row[j] - correct + margin;
            if (j != labels[i] && !(violation <= 0.0)) /* a NaN violation counts: NaN out */
                total += violation;
        }
    }
    *loss = total / (double)n;
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_hinge_loss_backward(const float *scores, const int64_t *labels, float *grad,
                            int64_t n, int64_t c, double margin)
{
    S2C_REQUIRE(n >= 1 && c >= 1);
    /* BEGIN SOLUTION week 12, task hinge_loss_backward */
    /* Each violated margin adds 1/n to its class's gradient and takes 1/n from the label's. */
    float share = (float)(1.0 / (double)n);
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (n * c >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float *row = scores + i * c;
        float *out = grad + i * c;
        double correct = row[labels[i]];
        int64_t violations = 0;
        for (int64_t j = 0; j < c; j++) {
            int violated = j != labels[i] && row[j] - correct + margin > 0.0;
            out[j] = violated ? share : 0.0f;
            violations += violated;
        }
        out[labels[i]] = -(float)violations * share;
    }
    return S2C_OK;
    /* END SOLUTION */
}
