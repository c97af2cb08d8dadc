/* optim.c -- the optimizers' update rules, in place (week 12), as torch.optim defines them.
 * weight_decay adds weight_decay * p to the gradient first (L2 regularization). Per-step
 * constants are worked out once in double, 1 - beta included (1.0f - 0.999f in float32 would be
 * 1.3e-5 off, which Adam's division by sqrt(v) then feeds into every step); the per-element
 * arithmetic is float32, as the arrays are. */
#include <math.h>

#include "internal.h"

/* The gradient the update uses: g, plus the weight decay term when there is one (skipped at 0
 * so that an infinite weight does not turn 0 * inf into a NaN). */
static inline float decayed(float g, float p, float weight_decay)
{
    return weight_decay != 0.0f ? g + weight_decay * p : g;
}

int s2c_sgd_step(float *p, const float *g, int64_t size, double lr, double weight_decay)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task sgd_step */
    float rate = (float)lr, decay = (float)weight_decay;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++)
        p[i] -= rate * decayed(g[i], p[i], decay);
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_momentum_step(float *p, const float *g, float *v, int64_t size, double lr,
                      double momentum, int nesterov, double weight_decay)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task momentum_step */
    /* v is a running sum of past gradients, each step weighted by momentum; Nesterov steps with
     * the gradient plus the velocity it is about to have. */
    float rate = (float)lr, mu = (float)momentum, decay = (float)weight_decay;
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        float grad = decayed(g[i], p[i], decay);
        v[i] = mu * v[i] + grad;
        p[i] -= rate * (nesterov ? grad + mu * v[i] : v[i]);
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_rmsprop_step(float *p, const float *g, float *s, int64_t size, double lr, double alpha,
                     double eps, double weight_decay)
{
    S2C_REQUIRE(size >= 1);
    /* BEGIN SOLUTION week 12, task rmsprop_step */
    /* s tracks the mean square of each weight's gradient; dividing by its root gives every
     * weight a step of about lr, however large or small its gradients are. */
    float rate = (float)lr, decay_rate = (float)alpha, epsilon = (float)eps;
    float decay = (float)weight_decay, new_share = (float)(1.0 - alpha);
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        float grad = decayed(g[i], p[i], decay);
        s[i] = decay_rate * s[i] + new_share * (grad * grad);
        p[i] -= rate * grad / (sqrtf(s[i]) + epsilon);
    }
    return S2C_OK;
    /* END SOLUTION */
}

int s2c_adam_step(float *p, const float *g, float *m, float *v, int64_t size, int64_t t,
                  double lr, double beta1, double beta2, double eps, double weight_decay)
{
    S2C_REQUIRE(size >= 1 && t >= 1);
    /* BEGIN SOLUTION week 12, task adam_step */
    /* m and v are running means of g and g^2; both start at 0, so early on they are biased
     * toward 0, and dividing by 1 - beta^t removes that bias. */
    float b1 = (float)beta1, b2 = (float)beta2, epsilon = (float)eps;
    float new_share1 = (float)(1.0 - beta1), new_share2 = (float)(1.0 - beta2);
    float decay = (float)weight_decay;
    float step_size = (float)(lr / (1.0 - pow(beta1, (double)t)));
    float root_correction = (float)sqrt(1.0 - pow(beta2, (double)t));
    #pragma omp parallel for num_threads(s2c_get_num_threads()) if (size >= S2C_PARALLEL_MIN)
    for (int64_t i = 0; i < size; i++) {
        float grad = decayed(g[i], p[i], decay);
        m[i] = b1 * m[i] + new_share1 * grad;
        v[i] = b2 * v[i] + new_share2 * (grad * grad);
        p[i] -= step_size * m[i] / (sqrtf(v[i]) / root_correction + epsilon);
    }
    return S2C_OK;
    /* END SOLUTION */
}
