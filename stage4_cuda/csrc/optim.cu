/* optim.cu -- optimizer steps (week 14), in place: p and each state array are read and written
 * back, g read (12 bytes a parameter for SGD, 20 with momentum or RMSprop, 28 for Adam): bound by
 * memory bandwidth, like an elementwise op.
 *
 * Each step is an update of one parameter, written as a functor (sgd_update, ...), that
 * step_kernel applies to 4 parameters a thread, read as float4 (16-byte loads) when every array
 * is 16-byte aligned, else as floats: one float a thread (12 bytes for SGD) keeps too few bytes
 * in flight to stream at the copy's speed, and 4 a thread keep 4 times as many. Each thread loads every value it needs before it stores any: after a store to s[i] the
 * compiler must load p[i] again (s might be p).
 * `weight_decay` adds weight_decay * p to g first.
 *
 * A network's step updates each of its parameters, one launch each, and a small parameter's
 * launch costs its launch and ramp, not its bytes. s2c_cuda_momentum_step_list updates up to
 * STEP_LIST of them in one launch (PyTorch's foreach optimizers do the same): a block belongs to
 * one parameter, found from the launch's table of where each parameter's blocks start. Recorded steps call it
 * (nvcc_impl/recording.py); each parameter's values are those s2c_cuda_momentum_step gives. */
#include "common.h"

#define STEP_THREADS 256

/* grad + weight_decay * p, or grad itself without decay (0 * p would make an Inf p NaN, where
 * PyTorch keeps the state finite). */
static inline __device__ float decayed(float grad, float p, float weight_decay) {
    return weight_decay != 0.0f ? grad + weight_decay * p : grad;
}

/* Each update changes parameter p given its gradient g and up to two state values a and b (those
 * an optimizer does not have are unused). */
struct sgd_update {
    float lr, weight_decay;
    __device__ void operator()(float &p, float g, float &, float &) const;
};
struct momentum_update {
    float lr, momentum, weight_decay;
    int nesterov;
    __device__ void operator()(float &p, float g, float &v, float &) const;
};
struct rmsprop_update {
    float lr, alpha, eps, weight_decay;
    __device__ void operator()(float &p, float g, float &s, float &) const;
};
struct adam_update {
    float lr, beta1, beta2, eps, weight_decay, correction1, correction2;
    __device__ void operator()(float &p, float g, float &m, float &v) const;
};

template <typename Update>
__global__ void step_kernel(Update update, float *p, const float *g, float *a, float *b, int64_t n,
                            int quads);
template <typename Update>
static __device__ void update_quad(const Update &update, float *p, const float *g, float *a,
                                   float *b, int64_t n, int quads, int64_t t);

/* Whether every array can be read as float4: 16-byte aligned (NULL is). */
static inline int quads_fit(const float *p, const float *g, const float *a, const float *b)
{
    return (uintptr_t)p % 16 == 0 && (uintptr_t)g % 16 == 0 && (uintptr_t)a % 16 == 0 &&
           (uintptr_t)b % 16 == 0;
}

/* Apply `update` to the n parameters p with gradients g and state arrays a and b (NULL when the
 * optimizer has fewer); `kernel` names the step in an error message. */
template <typename Update>
int launch_step(const char *kernel, Update update, float *p, const float *g, float *a, float *b,
                int64_t n)
{
    // BEGIN SOLUTION week 14, task step
    int64_t blocks = blocks_for(ceil_div(n, 4), STEP_THREADS);
    launch_overlapped(step_kernel<Update>, blocks, STEP_THREADS, 0, update, p, g, a, b, n,
                      quads_fit(p, g, a, b));
    LAUNCH_CHECK(kernel);
    return S2C_CUDA_OK;
    // END SOLUTION
}

/* Thread t updates parameters 4t .. 4t + 3 (update_quad). */
template <typename Update>
__global__ void step_kernel(Update update, float *p, const float *g, float *a, float *b, int64_t n,
                            int quads)
{
    wait_for_previous_kernel();
    update_quad(update, p, g, a, b, n, quads, blockIdx.x * (int64_t)blockDim.x + threadIdx.x);
}

/* Parameters 4t .. 4t + 3 of the n: as float4 loads and stores when `quads` (and all 4 exist),
 * else one at a time. */
template <typename Update>
static __device__ void update_quad(const Update &update, float *p, const float *g, float *a,
                                   float *b, int64_t n, int quads, int64_t t)
{
    // BEGIN SOLUTION week 14, task step
    int64_t first = 4 * t;
    if (first >= n) return;
    if (quads && first + 4 <= n) {
        float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        float4 pv = ((float4 *)p)[t], gv = ((const float4 *)g)[t];
        float4 av = a ? ((float4 *)a)[t] : zero, bv = b ? ((float4 *)b)[t] : zero;
        update(pv.x, gv.x, av.x, bv.x);
        update(pv.y, gv.y, av.y, bv.y);
        update(pv.z, gv.z, av.z, bv.z);
        update(pv.w, gv.w, av.w, bv.w);
        ((float4 *)p)[t] = pv;
        if (a) ((float4 *)a)[t] = av;
        if (b) ((float4 *)b)[t] = bv;
        return;
    }
    for (int64_t i = first; i < first + 4 && i < n; i++) {
        float pe = p[i], ge = g[i], ae = a ? a[i] : 0.0f, be = b ? b[i] : 0.0f;
        update(pe, ge, ae, be);
        p[i] = pe;
        if (a) a[i] = ae;
        if (b) b[i] = be;
    }
    // END SOLUTION
}

extern "C" int s2c_cuda_sgd_step(float *p, const float *g, int64_t n, float lr,
                                 float weight_decay)
{
    // BEGIN SOLUTION week 14, task sgd_step
    return launch_step("step_kernel<sgd_update>", sgd_update{lr, weight_decay}, p, g, NULL, NULL,
                       n);
}

/* p -= lr * g */
__device__ void sgd_update::operator()(float &p, float g, float &, float &) const {
    p = p - lr * decayed(g, p, weight_decay);
    // END SOLUTION
}

extern "C" int s2c_cuda_momentum_step(float *p, const float *g, float *v, int64_t n, float lr,
                                      float momentum, int nesterov, float weight_decay)
{
    // BEGIN SOLUTION week 14, task momentum_step
    return launch_step("step_kernel<momentum_update>",
                       momentum_update{lr, momentum, weight_decay, nesterov}, p, g, v, NULL, n);
}

/* v = momentum * v + g; p -= lr * (g + momentum * v if nesterov else v) */
__device__ void momentum_update::operator()(float &p, float g, float &v, float &) const {
    float grad = decayed(g, p, weight_decay);
    v = momentum * v + grad;
    p = p - lr * (nesterov ? grad + momentum * v : v);
    // END SOLUTION
}

/* The parameters of one launch of a list step: tensor i is p[i], g[i], a[i] (its state) of n[i]
 * values, with its own weight decay (a network decays its weights, not its biases); its blocks
 * are first_block[i] .. first_block[i + 1] - 1 of the launch. Passed by value, as a kernel's
 * argument (under 1 KB: a kernel's arguments may take 4 KB). */
#define STEP_LIST 16
struct step_list {
    float *p[STEP_LIST], *a[STEP_LIST];
    const float *g[STEP_LIST];
    int64_t n[STEP_LIST], first_block[STEP_LIST + 1];
    float weight_decay[STEP_LIST];
    int quads[STEP_LIST], count;
};

/* Block b updates part of the tensor whose blocks hold b, with that tensor's weight decay. */
template <typename Update>
__global__ void step_list_kernel(Update update, step_list list)
{
    wait_for_previous_kernel();
    int i = 0;
    while (i + 1 < list.count && blockIdx.x >= list.first_block[i + 1]) i++;
    update.weight_decay = list.weight_decay[i];
    int64_t t = (blockIdx.x - list.first_block[i]) * (int64_t)blockDim.x + threadIdx.x;
    update_quad(update, list.p[i], list.g[i], list.a[i], (float *)NULL, list.n[i], list.quads[i],
                t);
}

/* `update` (its weight decay replaced by each tensor's) on `count` tensors with one state array
 * each, STEP_LIST a launch. */
template <typename Update>
static int launch_step_list(const char *kernel, Update update, float **p, const float **g,
                            float **a, const int64_t *n, const float *weight_decay, int64_t count)
{
    for (int64_t start = 0; start < count; start += STEP_LIST) {
        step_list list = {};
        list.count = (int)(count - start < STEP_LIST ? count - start : STEP_LIST);
        for (int i = 0; i < list.count; i++) {
            int64_t j = start + i;
            list.p[i] = p[j], list.g[i] = g[j], list.a[i] = a[j], list.n[i] = n[j];
            list.weight_decay[i] = weight_decay[j];
            list.quads[i] = quads_fit(p[j], g[j], a[j], NULL);
            list.first_block[i + 1] = list.first_block[i] + blocks_for(ceil_div(n[j], 4),
                                                                       STEP_THREADS);
        }
        launch_overlapped(step_list_kernel<Update>, list.first_block[list.count], STEP_THREADS, 0,
                          update, list);
        LAUNCH_CHECK(kernel);
    }
    return S2C_CUDA_OK;
}

extern "C" int s2c_cuda_momentum_step_list(float **p, const float **g, float **v,
                                           const int64_t *n, const float *weight_decay,
                                           int64_t count, float lr, float momentum, int nesterov)
{
    // BEGIN SOLUTION week 14, task momentum_step
    return launch_step_list("step_list_kernel<momentum_update>",
                            momentum_update{lr, momentum, 0.0f, nesterov}, p, g, v, n,
                            weight_decay, count);
    // END SOLUTION
}

extern "C" int s2c_cuda_rmsprop_step(float *p, const float *g, float *s, int64_t n, float lr,
                                     float alpha, float eps, float weight_decay)
{
    // BEGIN SOLUTION week 14, task rmsprop_step
    return launch_step("step_kernel<rmsprop_update>", rmsprop_update{lr, alpha, eps, weight_decay},
                       p, g, s, NULL, n);
}

/* s = alpha * s + (1 - alpha) * g^2; p -= lr * g / (sqrt(s) + eps) */
__device__ void rmsprop_update::operator()(float &p, float g, float &s, float &) const {
    float grad = decayed(g, p, weight_decay);
    s = alpha * s + (1.0f - alpha) * grad * grad;
    p = p - lr * grad / (sqrtf(s) + eps);
    // END SOLUTION
}

extern "C" int s2c_cuda_adam_step(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                                  float beta1, float beta2, float eps, float weight_decay,
                                  float correction1, float correction2)
{
    // BEGIN SOLUTION week 14, task adam_step
    return launch_step(
        "step_kernel<adam_update>",
        adam_update{lr, beta1, beta2, eps, weight_decay, correction1, correction2}, p, g, m, v, n);
}

/* m and v: running means of g and g^2; the corrections 1 - beta^t come from the host, once per
 * step. */
__device__ void adam_update::operator()(float &p, float g, float &m, float &v) const {
    float grad = decayed(g, p, weight_decay);
    m = beta1 * m + (1.0f - beta1) * grad;
    v = beta2 * v + (1.0f - beta2) * grad * grad;
    p = p - lr * (m / correction1) / (sqrtf(v / correction2) + eps);
    // END SOLUTION
}
