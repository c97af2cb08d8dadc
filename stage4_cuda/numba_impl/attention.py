"""Layer norm over the last dimension and GELU (week 22).

Layer norm sees x [N, D] or [N, T, D] as [rows, D]: a block reduces a row's D values (a tree in
shared memory, reduce.py's block_sum) to the row's mean and variance, then writes the row's y,
and takes the next row a grid further (the whole block together: block_sum's barriers need every
thread) until the rows run out. The backward's dx is the same shape of work (two sums per row,
then the row); its dgamma and dbeta are sums down the rows, one thread per feature walking every
row (neighbouring threads read neighbouring features: coalesced).

GELU is elementwise: a per-element function made into a kernel by elementwise.py's `map_kernel`
(forward) or `zip_kernel` (backward), one kernel per form.
"""

import math

from numba import cuda, float32

from ..runtime import device
from ..runtime.checks import checks
from ..runtime.device import SIMULATOR, flat
from ..runtime.launch import BLOCK, blocks_for, launch
from .elementwise import launch_map, map_kernel, zip_kernel
from .reduce import ROW_THREADS, block_sum

ONE = float32(1)
HALF = float32(0.5)
SQRT_HALF = float32(math.sqrt(0.5))  # erf(x / sqrt(2)) = erf(x * SQRT_HALF)
NORMAL_DENSITY = float32(1 / math.sqrt(2 * math.pi))  # the standard normal density at 0
TANH_SCALE = float32(math.sqrt(2 / math.pi))  # the tanh form: tanh(TANH_SCALE * (x + c * x^3))
TANH_CUBIC = float32(0.044715)
# Blocks of the row kernels: a grid this large keeps a GPU busy; the simulator runs a Python thread
# per GPU thread, so there a few blocks walk the rows.
MAX_ROW_BLOCKS = 8 if SIMULATOR else 65535


@cuda.jit
def _layernorm_rows(x, rows, d, gamma, beta, eps, y, mean, invstd):
    # BEGIN SOLUTION week 22, task layernorm
    cache = cuda.shared.array(ROW_THREADS, float32)
    t = cuda.threadIdx.x
    for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
        start = r * d
        partial = float32(0)
        for j in range(t, d, cuda.blockDim.x):
            partial += x[start + j]
        m = block_sum(cache, partial) / float32(d)
        partial = float32(0)  # two passes, mean then squared deviations: stable
        for j in range(t, d, cuda.blockDim.x):
            deviation = x[start + j] - m
            partial += deviation * deviation
        s = ONE / math.sqrt(block_sum(cache, partial) / float32(d) + eps)
        for j in range(t, d, cuda.blockDim.x):
            y[start + j] = gamma[j] * ((x[start + j] - m) * s) + beta[j]
        if t == 0:
            mean[r] = m
            invstd[r] = s
    # END SOLUTION


def _row_geometry(rows, d):
    """(blocks, threads) of the row kernels: up to ROW_THREADS threads a row, fewer for a short
    row (a power of two, as block_sum's tree needs), and at most MAX_ROW_BLOCKS blocks."""
    return min(rows, MAX_ROW_BLOCKS), min(ROW_THREADS, 1 << (d - 1).bit_length())


def layernorm(x, gamma, beta, eps=1e-5):
    """y = gamma * (x - mean) * invstd + beta, row by row over the last axis -> (y, saved).

    x [N, D] or [N, T, D]; gamma, beta [D]. mean and the biased variance are each row's,
    invstd = 1 / sqrt(var + eps); saved = (mean, invstd), each of x's shape without D.
    """
    x, gamma, beta, eps = checks.layernorm(x, gamma, beta, eps)
    *rows, d = x.shape  # a tuple first: the simulator's shapes take no negative index
    y, mean, invstd = device.empty(x.shape), device.empty(tuple(rows)), device.empty(tuple(rows))
    rows = x.size // d
    launch(_layernorm_rows, *_row_geometry(rows, d), flat(x), rows, d, gamma, beta, float32(eps),
           flat(y), flat(mean), flat(invstd))  # fmt: skip
    return y, (mean, invstd)


@cuda.jit
def _layernorm_input_gradient(dy, x, rows, d, gamma, mean, invstd, dx):
    # g = dy * gamma is x_hat's gradient; dx = invstd * (g - mean(g) - x_hat * mean(g * x_hat)):
    # the two row means are the gradient flowing through the row's mean and variance.
    # BEGIN SOLUTION week 22, task layernorm_backward
    cache = cuda.shared.array(ROW_THREADS, float32)
    t = cuda.threadIdx.x
    for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
        start, m, s = r * d, mean[r], invstd[r]
        sum_g, sum_g_xhat = float32(0), float32(0)
        for j in range(t, d, cuda.blockDim.x):
            g = dy[start + j] * gamma[j]
            sum_g += g
            sum_g_xhat += g * ((x[start + j] - m) * s)
        mean_g = block_sum(cache, sum_g) / float32(d)
        mean_g_xhat = block_sum(cache, sum_g_xhat) / float32(d)
        for j in range(t, d, cuda.blockDim.x):
            x_hat = (x[start + j] - m) * s
            dx[start + j] = s * (dy[start + j] * gamma[j] - mean_g - x_hat * mean_g_xhat)
    # END SOLUTION


@cuda.jit
def _layernorm_feature_sums(dy, x, rows, d, mean, invstd, dgamma, dbeta):
    # dbeta = sum(dy) and dgamma = sum(dy * x_hat) down the rows, one thread per feature j.
    # BEGIN SOLUTION week 22, task layernorm_backward
    j = cuda.grid(1)
    if j < d:
        sum_dy, sum_dy_xhat = float32(0), float32(0)
        for r in range(rows):
            g = dy[r * d + j]
            sum_dy += g
            sum_dy_xhat += g * ((x[r * d + j] - mean[r]) * invstd[r])
        dbeta[j] = sum_dy
        dgamma[j] = sum_dy_xhat
    # END SOLUTION


def layernorm_backward(dy, x, gamma, saved):
    """Gradients of layernorm -> (dx (x's shape), dgamma [D], dbeta [D]).

    dy and x [N, D] or [N, T, D]; gamma [D]; saved = (mean, invstd) from layernorm.
    """
    dy, x, gamma, (mean, invstd) = checks.layernorm_backward(dy, x, gamma, saved)
    d = x.shape[len(x.shape) - 1]  # the simulator's shapes take no negative index
    rows = x.size // d
    dx, dgamma, dbeta = device.empty(x.shape), device.empty((d,)), device.empty((d,))
    launch(_layernorm_input_gradient, *_row_geometry(rows, d), flat(dy), flat(x), rows, d, gamma,
           flat(mean), flat(invstd), flat(dx))  # fmt: skip
    launch(_layernorm_feature_sums, blocks_for(d), BLOCK, flat(dy), flat(x), rows, d,
           flat(mean), flat(invstd), dgamma, dbeta)  # fmt: skip
    return dx, dgamma, dbeta


@cuda.jit(device=True)
def _sigmoid_halves(v):
    """(s, 1 - s) for gelu's tanh form: s = (1 + tanh(u)) / 2 with u = sqrt(2 / pi) * (v +
    0.044715 * v^3), computed as sigmoid(2u) = 1 / (1 + exp(-2u)) from exp(-|2u|), which never
    overflows: 1 + tanh(u) and 1 - tanh(u)^2 cancel to a few digits where tanh(u) is near -1 or 1
    (an error of 1e-6 in gelu' at x = -5), the sigmoid's two halves do not. Given to the learner:
    week 21 wrote it in Python (a launch finds an exercise stub in a kernel or its element
    function, not in a helper they call)."""
    z = float32(2) * TANH_SCALE * (v + TANH_CUBIC * v * v * v)
    e = math.exp(-abs(z))
    p = ONE / (ONE + e)
    if z >= 0:
        return p, e * p
    return e * p, p  # NaN fails z >= 0: both NaN


@cuda.jit(device=True)
def gelu_element(x, _):
    # BEGIN SOLUTION week 22, task gelu
    return HALF * x * (ONE + math.erf(x * SQRT_HALF))
    # END SOLUTION


@cuda.jit(device=True)
def gelu_tanh_element(x, _):
    # BEGIN SOLUTION week 22, task gelu
    return x * _sigmoid_halves(x)[0]
    # END SOLUTION


@cuda.jit(device=True)
def gelu_backward_element(x, dy, _):
    # gelu'(x) = Phi(x) + x * phi(x), phi the normal density
    # BEGIN SOLUTION week 22, task gelu_backward
    phi = NORMAL_DENSITY * math.exp(-HALF * x * x)
    return dy * (HALF * (ONE + math.erf(x * SQRT_HALF)) + x * phi)
    # END SOLUTION


@cuda.jit(device=True)
def gelu_tanh_backward_element(x, dy, _):
    # with s = (1 + tanh(u)) / 2: gelu'(x) = s * (1 + 2x * (1 - s) * du/dx)
    # BEGIN SOLUTION week 22, task gelu_backward
    s, one_minus_s = _sigmoid_halves(x)
    du = TANH_SCALE * (ONE + float32(3) * TANH_CUBIC * x * x)
    return dy * (s * (ONE + float32(2) * x * one_minus_s * du))
    # END SOLUTION


# {approximate: kernel}, one per form
_GELU = {"none": map_kernel(gelu_element), "tanh": map_kernel(gelu_tanh_element)}
_GELU_BACKWARD = {"none": zip_kernel(gelu_backward_element),
                  "tanh": zip_kernel(gelu_tanh_backward_element)}  # fmt: skip


def gelu(x, approximate="none"):
    """x * Phi(x) elementwise (Phi the normal distribution function), any shape; approximate
    "none" (erf) or "tanh" (PyTorch's tanh form)."""
    x, approximate = checks.gelu(x, approximate)
    y = device.empty(x.shape)
    launch_map(_GELU[approximate], x.size, flat(x), flat(y))
    return y


def gelu_backward(x, dy, approximate="none"):
    """dy * gelu'(x) (x is the forward's input), of the form `approximate` names."""
    x, dy, approximate = checks.gelu_backward(x, dy, approximate)
    dx = device.empty(x.shape)
    launch_map(_GELU_BACKWARD[approximate], x.size, flat(x), flat(dy), flat(dx))
    return dx
