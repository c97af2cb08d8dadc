"""Activations and their gradients (week 14): elementwise kernels, and the row-wise softmax and
log_softmax with a reduction ladder.

Each elementwise activation is a function of one element, made into a kernel by
elementwise.py's `map_kernel` (forward: y = f(x, alpha)) or `zip_kernel` (backward:
dx = f(x or y, dy, alpha)); alpha is leaky_relu's, unused (`_`) by the others.
NaN goes through as in PyTorch: each function is written so that a NaN input gives a NaN output
(`max(x, 0)` would not: the GPU's fmaxf drops NaN).
"""

import math

from numba import cuda, float32

from ..runtime import device
from ..runtime.checks import checks, kernel_name
from ..runtime.device import flat
from ..runtime.launch import blocks_for, launch
from .elementwise import UNUSED, launch_map, map_kernel, zip_kernel
from .reduce import HAS_SHUFFLES, ROW_THREADS, block_max, block_sum, warp_max, warp_sum

ZERO = float32(0)
ONE = float32(1)


def _unary(kernel, x, alpha=UNUSED):
    """Launch the map `kernel` (y = f(x, alpha)) over the checked x (any shape), return y."""
    y = device.empty(x.shape)
    launch_map(kernel, x.size, flat(x), flat(y), scalar=alpha)
    return y


def _binary(kernel, first, dy, alpha=UNUSED):
    """Launch the zip `kernel` (dx = f(first, dy, alpha)) over the checked first (x or y) and dy,
    return dx."""
    dx = device.empty(first.shape)
    launch_map(kernel, first.size, flat(first), flat(dy), flat(dx), scalar=alpha)
    return dx


@cuda.jit(device=True)
def relu_element(x, _):
    # BEGIN SOLUTION week 14, task relu
    return ZERO if x <= 0 else x  # NaN <= 0 is false: NaN stays
    # END SOLUTION


@cuda.jit(device=True)
def relu_backward_element(x, dy, _):
    # BEGIN SOLUTION week 14, task relu_backward
    return dy if x > 0 else ZERO
    # END SOLUTION


@cuda.jit(device=True)
def leaky_relu_element(x, alpha):
    # BEGIN SOLUTION week 14, task leaky_relu
    return x if x > 0 else alpha * x
    # END SOLUTION


@cuda.jit(device=True)
def leaky_relu_backward_element(x, dy, alpha):
    # BEGIN SOLUTION week 14, task leaky_relu_backward
    return dy if x > 0 else alpha * dy
    # END SOLUTION


@cuda.jit(device=True)
def sigmoid_element(x, _):
    # exp(-|x|) is in (0, 1]: it never overflows. sigmoid(|x|) = 1 / (1 + e) and
    # sigmoid(-|x|) = e / (1 + e), both accurate.
    # BEGIN SOLUTION week 14, task sigmoid
    e = math.exp(-abs(x))
    positive = ONE / (ONE + e)
    return positive if x >= 0 else e * positive
    # END SOLUTION


@cuda.jit(device=True)
def sigmoid_backward_element(y, dy, _):
    # BEGIN SOLUTION week 14, task sigmoid_backward
    return dy * y * (ONE - y)
    # END SOLUTION


@cuda.jit(device=True)
def tanh_element(x, _):
    # BEGIN SOLUTION week 14, task tanh
    return math.tanh(x)
    # END SOLUTION


@cuda.jit(device=True)
def tanh_backward_element(y, dy, _):
    # BEGIN SOLUTION week 14, task tanh_backward
    return dy * (ONE - y * y)
    # END SOLUTION


_relu = map_kernel(relu_element)
_relu_backward = zip_kernel(relu_backward_element)
_leaky_relu = map_kernel(leaky_relu_element)
_leaky_relu_backward = zip_kernel(leaky_relu_backward_element)
_sigmoid = map_kernel(sigmoid_element)
_sigmoid_backward = zip_kernel(sigmoid_backward_element)
_tanh = map_kernel(tanh_element)
_tanh_backward = zip_kernel(tanh_backward_element)


def relu(x):
    """max(x, 0), any shape."""
    return _unary(_relu, checks.relu(x))


def relu_backward(x, dy):
    """dy where x > 0, else 0 (x is the forward's input)."""
    return _binary(_relu_backward, *checks.relu_backward(x, dy))


def leaky_relu(x, alpha):
    """x where x > 0, else alpha * x, any shape."""
    x, alpha = checks.leaky_relu(x, alpha)
    return _unary(_leaky_relu, x, alpha)


def leaky_relu_backward(x, dy, alpha):
    """dy where x > 0, else alpha * dy (x is the forward's input)."""
    x, dy, alpha = checks.leaky_relu_backward(x, dy, alpha)
    return _binary(_leaky_relu_backward, x, dy, alpha)


def sigmoid(x):
    """1 / (1 + exp(-x)), any shape, without overflow for large |x|."""
    return _unary(_sigmoid, checks.sigmoid(x))


def sigmoid_backward(y, dy):
    """dy * y * (1 - y) (y is the forward's output)."""
    return _binary(_sigmoid_backward, *checks.sigmoid_backward(y, dy))


def tanh(x):
    """tanh(x), any shape."""
    return _unary(_tanh, checks.tanh(x))


def tanh_backward(y, dy):
    """dy * (1 - y^2) (y is the forward's output)."""
    return _binary(_tanh_backward, *checks.tanh_backward(y, dy))


# --- softmax and log_softmax: the reduction ladder --------------------------------------------
# Each row needs two reductions (its maximum, then the sum of exp(x - max)) before a pass that
# writes it: 2 passes of reading and one of writing, 12 bytes per element. One kernel serves
# softmax and log_softmax (`log` picks what the last pass writes), one per rung of the ladder.


@cuda.jit(device=True)
def _write_row(x, y, row, j, top, total, log):
    """y[row, j] from x[row, j], the row's maximum and its sum of exp(x - maximum)."""
    if log:
        y[row, j] = x[row, j] - top - math.log(total)
    else:
        y[row, j] = math.exp(x[row, j] - top) / total


@cuda.jit
def _softmax_naive(x, y, log):
    # One thread per row does all three passes alone: N threads (a batch of 64 keeps 64 of a
    # GPU's hundred thousand busy), and neighbouring threads read addresses C*4 bytes apart.
    # BEGIN SOLUTION week 14, task softmax
    row = cuda.grid(1)
    if row < x.shape[0]:
        top = x[row, 0]
        for j in range(1, x.shape[1]):
            top = max(top, x[row, j])
        total = ZERO
        for j in range(x.shape[1]):
            total += math.exp(x[row, j] - top)
        for j in range(x.shape[1]):
            _write_row(x, y, row, j, top, total, log)
    # END SOLUTION


@cuda.jit
def _softmax_tree(x, y, log):
    # One block per row: ROW_THREADS threads stride along it (neighbours read neighbours), and
    # each reduction ends with a tree in shared memory.
    # BEGIN SOLUTION week 14, task softmax
    cache = cuda.shared.array(ROW_THREADS, float32)
    row, t = cuda.blockIdx.x, cuda.threadIdx.x
    top = float32(-math.inf)
    for j in range(t, x.shape[1], ROW_THREADS):
        top = max(top, x[row, j])
    top = block_max(cache, top)
    total = ZERO
    for j in range(t, x.shape[1], ROW_THREADS):
        total += math.exp(x[row, j] - top)
    total = block_sum(cache, total)
    for j in range(t, x.shape[1], ROW_THREADS):
        _write_row(x, y, row, j, top, total, log)
    # END SOLUTION


WARPS_PER_BLOCK = 4  # the shuffle rung: one warp per row, four rows per block


@cuda.jit
def _softmax_shuffle(x, y, log):
    # One warp per row: the 32 lanes stride along it and reduce with register shuffles, with no
    # shared memory and no barrier. Rows of up to a few thousand elements keep a warp busy.
    # BEGIN SOLUTION week 14, task softmax
    lane = cuda.threadIdx.x % 32
    row = cuda.blockIdx.x * WARPS_PER_BLOCK + cuda.threadIdx.x // 32
    if row < x.shape[0]:  # the same for the whole warp, so every lane reaches the shuffles
        top = float32(-math.inf)
        for j in range(lane, x.shape[1], 32):
            top = max(top, x[row, j])
        top = warp_max(top)
        total = ZERO
        for j in range(lane, x.shape[1], 32):
            total += math.exp(x[row, j] - top)
        total = warp_sum(total)
        for j in range(lane, x.shape[1], 32):
            _write_row(x, y, row, j, top, total, log)
    # END SOLUTION


# name -> (kernel, rows -> (blocks, threads)), slowest first.
SOFTMAX_LADDER = {
    "naive": (_softmax_naive, lambda n: (blocks_for(n, 32), 32)),
    "tree": (_softmax_tree, lambda n: (n, ROW_THREADS)),
    "shuffle": (_softmax_shuffle, lambda n: (blocks_for(n, WARPS_PER_BLOCK), 32 * WARPS_PER_BLOCK)),
}
SOFTMAX_KERNELS = tuple(SOFTMAX_LADDER)
BEST_SOFTMAX = "shuffle" if HAS_SHUFFLES else "tree"


def _rowwise(op, x, kernel, log):
    """x checked by the caller; `kernel` names the rung of the ladder."""
    name = kernel_name(op, kernel, SOFTMAX_KERNELS, BEST_SOFTMAX)
    if name == "shuffle" and not HAS_SHUFFLES:
        raise NotImplementedError(
            f"{op}: kernel 'shuffle' uses warp shuffles, which the CUDA simulator does not have; "
            "run it on a GPU (NUMBA_ENABLE_CUDASIM=0)"
        )
    y = device.empty(x.shape)
    function, geometry = SOFTMAX_LADDER[name]
    launch(function, *geometry(x.shape[0]), x, y, log)
    return y


def softmax(x, kernel="best"):
    """Row-wise softmax of x [N, C], stable (the row maximum is subtracted first).

    `kernel` picks a rung of the reduction ladder (SOFTMAX_KERNELS): "naive", "tree", "shuffle".
    """
    return _rowwise("softmax", checks.softmax(x), kernel, False)


def log_softmax(x, kernel="best"):
    """Row-wise log(softmax(x)) of x [N, C], as x - max - log(sum(exp(x - max)))."""
    return _rowwise("log_softmax", checks.log_softmax(x), kernel, True)


@cuda.jit
def _softmax_backward(y, dy, dx, log):
    # softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) * sum(dy). One block
    # per row, a tree for the sum.
    # BEGIN SOLUTION week 14, task softmax_backward
    cache = cuda.shared.array(ROW_THREADS, float32)
    row, t = cuda.blockIdx.x, cuda.threadIdx.x
    partial = ZERO
    for j in range(t, y.shape[1], ROW_THREADS):
        partial += dy[row, j] if log else dy[row, j] * y[row, j]
    total = block_sum(cache, partial)
    for j in range(t, y.shape[1], ROW_THREADS):
        if log:
            dx[row, j] = dy[row, j] - math.exp(y[row, j]) * total
        else:
            dx[row, j] = y[row, j] * (dy[row, j] - total)
    # END SOLUTION


def _rowwise_backward(y, dy, log):
    """y and dy checked by the caller."""
    dx = device.empty(y.shape)
    launch(_softmax_backward, y.shape[0], ROW_THREADS, y, dy, dx, log)
    return dx


def softmax_backward(y, dy):
    """y * (dy - sum_j(dy * y)) per row (y is the forward's output), [N, C]."""
    return _rowwise_backward(*checks.softmax_backward(y, dy), False)


def log_softmax_backward(y, dy):
    """dy - exp(y) * sum_j(dy) per row (y is the forward's output, log-probabilities), [N, C]."""
    return _rowwise_backward(*checks.log_softmax_backward(y, dy), True)
