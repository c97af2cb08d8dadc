"""Layer norm over the last dimension and GELU (week 22).

Layer norm sees x [N, D] or [N, T, D] as [rows, D]: a block reduces a row's D values (a tree in
shared memory, reduce.py's block_sum) to the row's mean and variance, then writes the row's y,
and takes the next row a grid further (the whole block together: block_sum's barriers need every
thread) until the rows run out. The backward's dx is the same shape of work (two sums per row,
then the row); its dgamma and dbeta are sums down the rows, in two levels: a block of 32
features by ROW_LANES rows adds a chunk of CHUNK_ROWS rows into partial sums (neighbouring threads
read neighbouring features: coalesced), then a thread per feature adds its column of them, in the
same order on every run. One thread per feature walking every row alone would leave the GPU
nearly idle (768 features: 768 threads for 50,000 rows).

Scaled dot-product attention: see the section below.

GELU is elementwise: a per-element function made into a kernel by elementwise.py's `map_kernel`
(forward) or `zip_kernel` (backward), one kernel per form.
"""

import math

import numpy as np
from numba import cuda, float32, int32

from ..runtime import device
from ..runtime.checks import checks, kernel_name
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
# dgamma and dbeta's partial sums: a block of FEATURE_LANES features by ROW_LANES rows at a time,
# over CHUNK_ROWS rows (the simulator: fewer threads, and chunks short enough to have several)
FEATURE_LANES = 32
ROW_LANES = 2 if SIMULATOR else 8
CHUNK_ROWS = 16 if SIMULATOR else 256


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
def _layernorm_partial_sums(dy, x, rows, d, mean, invstd, partial):
    # Block (features, chunk): thread (lane, y) adds dy and dy * x_hat of feature j over rows y,
    # y + ROW_LANES, ... of the chunk; thread y = 0 adds the ROW_LANES sums of j in order into
    # partial[0, chunk, j] (dbeta's terms) and partial[1, chunk, j] (dgamma's).
    # BEGIN SOLUTION week 22, task layernorm_backward
    sums = cuda.shared.array((2, ROW_LANES, FEATURE_LANES), float32)
    lane, y, chunk = cuda.threadIdx.x, cuda.threadIdx.y, cuda.blockIdx.y
    j = cuda.blockIdx.x * FEATURE_LANES + lane
    sum_dy, sum_dy_xhat = float32(0), float32(0)
    if j < d:
        for r in range(chunk * CHUNK_ROWS + y, min(rows, (chunk + 1) * CHUNK_ROWS), ROW_LANES):
            g = dy[r * d + j]
            sum_dy += g
            sum_dy_xhat += g * ((x[r * d + j] - mean[r]) * invstd[r])
    sums[0, y, lane] = sum_dy
    sums[1, y, lane] = sum_dy_xhat
    cuda.syncthreads()
    if y == 0 and j < d:
        for other in range(1, ROW_LANES):
            sum_dy += sums[0, other, lane]
            sum_dy_xhat += sums[1, other, lane]
        partial[0, chunk, j] = sum_dy
        partial[1, chunk, j] = sum_dy_xhat
    # END SOLUTION


@cuda.jit
def _layernorm_feature_sums(partial, chunks, d, dgamma, dbeta):
    # Thread j: dbeta[j] and dgamma[j], the sums of feature j's partial sums, chunk by chunk.
    # BEGIN SOLUTION week 22, task layernorm_backward
    j = cuda.grid(1)
    if j < d:
        sum_dy, sum_dy_xhat = float32(0), float32(0)
        for c in range(chunks):
            sum_dy += partial[0, c, j]
            sum_dy_xhat += partial[1, c, j]
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
    chunks = (rows + CHUNK_ROWS - 1) // CHUNK_ROWS
    partial = device.scratch((2, chunks, d))
    launch(_layernorm_partial_sums, (blocks_for(d, FEATURE_LANES), chunks),
           (FEATURE_LANES, ROW_LANES), flat(dy), flat(x), rows, d, flat(mean), flat(invstd),
           partial)  # fmt: skip
    launch(_layernorm_feature_sums, blocks_for(d), BLOCK, partial, chunks, d, dgamma, dbeta)
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


# --- scaled dot-product attention --------------------------------------------------------------
#
# q [B, H, N, D], k and v [B, H, M, D] are seen as heads = B H slices, each row-major: query i of
# head h is q[(h N + i) D : ... + D]. A masked score (causal, key j > query i) is S + (-inf), as
# PyTorch's math backend adds its mask (-inf, or NaN for a NaN or +inf score), and every key
# counts, masked or not, unless every input of the head is finite (then the tiled rung skips the
# tiles a causal mask hides: their terms are exp(-inf) = 0 times finite values). A row whose
# every score is -inf gets P = 0 and lse = -inf (PyTorch's safe softmax).

INF = float32(math.inf)
ATTENTION_KERNELS = ("naive", "tiled")  # the rungs, slowest first
BEST_ATTENTION = "tiled"
# Queries (a thread each) of a tiled block, and keys of a shared-memory tile; the simulator runs
# a Python thread per GPU thread, so there a few.
TILE = 8 if SIMULATOR else 32
MAX_D = 128  # the head dimension the tiled rung's rows hold


@cuda.jit(device=True)
def _nan_max(a, b):
    """max(a, b) that keeps a NaN, as PyTorch's max does."""
    return a if a > b or a != a else b


@cuda.jit(device=True)
def _masked(dot, scale, i, j, causal):
    """The score of query i and key j, whose dot product is `dot`: scaled, then masked."""
    s = dot * scale
    if causal and j > i:
        return s - INF
    return s


@cuda.jit(device=True)
def _shift(lse):
    """What exp(S - lse) subtracts: +inf for a row of -inf scores (lse -inf), so that its P is
    exp(-inf) = 0 where -inf - -inf would be NaN."""
    return INF if lse == -INF else lse


@cuda.jit(device=True)
def _log_sum(top, total):
    """lse from a row's maximum and its sum of exp(S - maximum): -inf for a sum of 0."""
    if total == 0:
        return -INF
    return top + math.log(total)


@cuda.jit
def _mark_nonfinite(x, per_head, first, flags):
    # Block h: flags[h] = (first ? 0 : flags[h]) | whether x's slice h holds a NaN or an inf.
    found = cuda.shared.array(1, int32)
    h, t = cuda.blockIdx.x, cuda.threadIdx.x
    if t == 0:
        found[0] = 0 if first else flags[h]
    cuda.syncthreads()
    for e in range(t, per_head, cuda.blockDim.x):
        value = x[h * per_head + e]
        if value != value or value == INF or value == -INF:
            found[0] = 1
    cuda.syncthreads()
    if t == 0:
        flags[h] = found[0]


def _nonfinite_flags(heads, *arrays):
    """An int32 flag per head: 1 where a slice of `arrays` (each [heads, ...]) is not finite."""
    flags = device.scratch((heads,), np.int32)
    for number, x in enumerate(arrays):
        launch(_mark_nonfinite, heads, BLOCK, flat(x), x.size // heads, number == 0, flags)
    return flags


@cuda.jit(device=True)
def _load_rows(tile, x, start, first, rows, d):
    """Rows first .. first + TILE - 1 of a head's [rows, d] slice of x (from row `start` of x
    seen as [..., d]) into the shared tile [TILE, MAX_D], 0 past `rows`: the block's TILE threads
    take its elements in turn (neighbours read neighbours)."""
    for e in range(cuda.threadIdx.x, TILE * d, TILE):
        r = e // d
        c = e - r * d
        tile[r, c] = x[(start + first + r) * d + c] if first + r < rows else float32(0)


@cuda.jit
def _scores(q, k, s, heads, n, m, d, causal, scale):
    # Thread e: S[h, i, j] for e = (h n + i) m + j, a dot product of a row of q and one of k.
    e = cuda.grid(1)
    if e < heads * n * m:
        row = e // m
        j, h = e - row * m, row // n
        dot = float32(0)
        for c in range(d):
            dot += q[row * d + c] * k[(h * m + j) * d + c]
        s[e] = _masked(dot, scale, row - h * n, j, causal)


@cuda.jit
def _softmax_rows(s, lse, rows, m):
    # Thread r: row r of S becomes P in place, in three passes (maximum, sum, outputs); lse[r].
    r = cuda.grid(1)
    if r < rows:
        top = -INF
        for j in range(m):
            top = _nan_max(top, s[r * m + j])
        shift, total = _shift(top), float32(0)
        for j in range(m):
            total += math.exp(s[r * m + j] - shift)
        inverse = float32(0) if total == 0 else ONE / total
        for j in range(m):
            s[r * m + j] = math.exp(s[r * m + j] - shift) * inverse
        lse[r] = _log_sum(top, total)


@cuda.jit
def _weighted_values(p, v, y, heads, n, m, d):
    # Thread e: y[h, i, c] = sum over j of P[h, i, j] v[h, j, c], for e = (h n + i) d + c.
    e = cuda.grid(1)
    if e < heads * n * d:
        row = e // d
        c, h = e - row * d, row // n
        total = float32(0)
        for j in range(m):
            total += p[row * m + j] * v[(h * m + j) * d + c]
        y[e] = total


def _attention_naive(q, k, v, y, lse, heads, n, m, d, causal, scale):
    """Rung 1: S [heads, n, m] in device memory, softmax in place, then P v: three kernels."""
    s = device.scratch((heads * n * m,))
    launch(_scores, blocks_for(heads * n * m), BLOCK, flat(q), flat(k), s, heads, n, m, d,
           causal, scale)  # fmt: skip
    launch(_softmax_rows, blocks_for(heads * n), BLOCK, s, flat(lse), heads * n, m)
    launch(_weighted_values, blocks_for(heads * n * d), BLOCK, s, flat(v), flat(y), heads, n, m,
           d)  # fmt: skip


@cuda.jit
def _tiled_forward(q, k, v, y, lse, nonfinite, n, m, d, causal, scale):
    # Block (h, query tile): thread t owns query i = first + t; tiles of TILE keys (k and v) pass
    # through shared memory; each query keeps its running maximum `top`, its sum of
    # exp(S - top) and its output row (in local memory), rescaled by exp(old - new) when the
    # maximum grows; divided by the sum once at the end. No n x m buffer.
    k_tile = cuda.shared.array((TILE, MAX_D), float32)
    v_tile = cuda.shared.array((TILE, MAX_D), float32)
    q_row = cuda.local.array(MAX_D, float32)
    out = cuda.local.array(MAX_D, float32)
    scores = cuda.local.array(TILE, float32)
    query_tiles = (n + TILE - 1) // TILE
    h, t = cuda.blockIdx.x // query_tiles, cuda.threadIdx.x
    first = (cuda.blockIdx.x % query_tiles) * TILE
    i = first + t
    key_tiles = (m + TILE - 1) // TILE
    if causal and nonfinite[h] == 0:  # the keys past the tile's last query are masked for all
        key_tiles = min(key_tiles, first // TILE + 1)
    for c in range(d):
        q_row[c] = q[(h * n + i) * d + c] if i < n else float32(0)
        out[c] = float32(0)
    top, total = -INF, float32(0)
    for kt in range(key_tiles):
        cuda.syncthreads()  # the last tile is read
        _load_rows(k_tile, k, h * m, kt * TILE, m, d)
        _load_rows(v_tile, v, h * m, kt * TILE, m, d)
        cuda.syncthreads()
        if i < n:
            new_top = top
            for r in range(TILE):
                key, score = kt * TILE + r, -INF
                if key < m:
                    dot = float32(0)
                    for c in range(d):
                        dot += q_row[c] * k_tile[r, c]
                    score = _masked(dot, scale, i, key, causal)
                scores[r] = score
                new_top = _nan_max(new_top, score)
            empty = new_top == -INF  # every score so far -inf: nothing to rescale, P 0
            alpha = ONE if empty else math.exp(top - new_top)
            for c in range(d):
                out[c] *= alpha
            row = float32(0)
            for r in range(TILE):
                p = float32(0) if empty else math.exp(scores[r] - new_top)
                row += p
                for c in range(d):
                    out[c] += p * v_tile[r, c]
            total = total * alpha + row
            top = new_top
    if i < n:
        inverse = float32(0) if total == 0 else ONE / total
        for c in range(d):
            y[(h * n + i) * d + c] = out[c] * inverse
        lse[h * n + i] = _log_sum(top, total)


def _attention_tiled(q, k, v, y, lse, heads, n, m, d, causal, scale):
    """Rung 2: one kernel, tiles of keys streamed past a block of queries, the online softmax."""
    nonfinite = _nonfinite_flags(heads, q, k, v) if causal else device.scratch((1,), np.int32)
    launch(_tiled_forward, heads * ((n + TILE - 1) // TILE), TILE, flat(q), flat(k), flat(v),
           flat(y), flat(lse), nonfinite, n, m, d, causal, scale)  # fmt: skip


_ATTENTION = {"naive": _attention_naive, "tiled": _attention_tiled}


def _heads(q, k):
    """(heads, n, m, d) of q [B, H, N, D] and k [B, H, M, D]."""
    b, h, n, d = q.shape  # unpacked: the simulator's shapes take no negative index
    return b * h, n, k.shape[2], d


def attention(q, k, v, causal=False, scale=None, kernel="best"):
    """softmax(scale q k^T, causal: key j masked for query i when j > i) v -> (y, (lse,)).

    q [B, H, N, D], k and v [B, H, M, D] (D <= 128); scale None: 1 / sqrt(D). y [B, H, N, D];
    lse [B, H, N], each row's log-sum-exp of its scores (the backward's input). `kernel` picks a
    rung of ATTENTION_KERNELS by name or number 1-2.
    """
    q, k, v, causal, scale = checks.attention(q, k, v, causal, scale)
    name = kernel_name("attention", kernel, ATTENTION_KERNELS, BEST_ATTENTION)
    heads, n, m, d = _heads(q, k)
    if d > MAX_D:
        raise ValueError(f"attention: the numba variant holds D <= {MAX_D}, got D = {d}")
    # BEGIN SOLUTION week 22, task attention
    y, lse = device.empty(q.shape), device.empty(q.shape[:3])
    _ATTENTION[name](q, k, v, y, lse, heads, n, m, d, causal, float32(scale))
    return y, (lse,)
    # END SOLUTION


@cuda.jit
def _row_dots(dy, y, dsum, rows, d):
    # Thread r: Dsum[r] = dy_r . y_r (the row sums of P * dP).
    r = cuda.grid(1)
    if r < rows:
        total = float32(0)
        for c in range(d):
            total += dy[r * d + c] * y[r * d + c]
        dsum[r] = total


@cuda.jit
def _key_gradients(dy, q, k, v, lse, dsum, nonfinite, dk, dv, n, m, d, causal, scale):
    # Block (h, key tile): thread t owns key j; every tile of queries (q, dy, lse, Dsum) that
    # sees it passes through shared memory: P and dS recomputed a score at a time,
    # dv_j += P_ij dy_i and dk_j += dS_ij q_i in local memory, in query order (deterministic).
    q_tile = cuda.shared.array((TILE, MAX_D), float32)
    dy_tile = cuda.shared.array((TILE, MAX_D), float32)
    shift_tile = cuda.shared.array(TILE, float32)
    dsum_tile = cuda.shared.array(TILE, float32)
    k_row = cuda.local.array(MAX_D, float32)
    v_row = cuda.local.array(MAX_D, float32)
    dk_row = cuda.local.array(MAX_D, float32)
    dv_row = cuda.local.array(MAX_D, float32)
    key_tiles = (m + TILE - 1) // TILE
    h, t = cuda.blockIdx.x // key_tiles, cuda.threadIdx.x
    kt = cuda.blockIdx.x % key_tiles
    j = kt * TILE + t
    for c in range(d):
        k_row[c] = k[(h * m + j) * d + c] if j < m else float32(0)
        v_row[c] = v[(h * m + j) * d + c] if j < m else float32(0)
        dk_row[c] = float32(0)
        dv_row[c] = float32(0)
    first_tile = kt if causal and nonfinite[h] == 0 else 0  # earlier queries mask every key here
    for qt in range(first_tile, (n + TILE - 1) // TILE):
        cuda.syncthreads()  # the last tile is read
        _load_rows(q_tile, q, h * n, qt * TILE, n, d)
        _load_rows(dy_tile, dy, h * n, qt * TILE, n, d)
        if qt * TILE + t < n:
            shift_tile[t] = _shift(lse[h * n + qt * TILE + t])
            dsum_tile[t] = dsum[h * n + qt * TILE + t]
        cuda.syncthreads()
        if j < m:
            for r in range(min(TILE, n - qt * TILE)):
                dot, dp = float32(0), float32(0)
                for c in range(d):
                    dot += q_tile[r, c] * k_row[c]
                    dp += dy_tile[r, c] * v_row[c]
                p = math.exp(_masked(dot, scale, qt * TILE + r, j, causal) - shift_tile[r])
                ds = p * (dp - dsum_tile[r])
                for c in range(d):
                    dv_row[c] += p * dy_tile[r, c]
                    dk_row[c] += ds * q_tile[r, c]
    if j < m:
        for c in range(d):
            dk[(h * m + j) * d + c] = dk_row[c] * scale
            dv[(h * m + j) * d + c] = dv_row[c]


@cuda.jit
def _query_gradients(dy, q, k, v, lse, dsum, nonfinite, dq, n, m, d, causal, scale):
    # Block (h, query tile): thread t owns query i; every tile of keys it sees passes through
    # shared memory: dq_i += dS_ij k_j, in key order (deterministic, no atomics).
    k_tile = cuda.shared.array((TILE, MAX_D), float32)
    v_tile = cuda.shared.array((TILE, MAX_D), float32)
    q_row = cuda.local.array(MAX_D, float32)
    dy_row = cuda.local.array(MAX_D, float32)
    dq_row = cuda.local.array(MAX_D, float32)
    query_tiles = (n + TILE - 1) // TILE
    h, t = cuda.blockIdx.x // query_tiles, cuda.threadIdx.x
    qt = cuda.blockIdx.x % query_tiles
    i = qt * TILE + t
    for c in range(d):
        q_row[c] = q[(h * n + i) * d + c] if i < n else float32(0)
        dy_row[c] = dy[(h * n + i) * d + c] if i < n else float32(0)
        dq_row[c] = float32(0)
    shift = _shift(lse[h * n + i]) if i < n else float32(0)
    row_dsum = dsum[h * n + i] if i < n else float32(0)
    key_tiles = (m + TILE - 1) // TILE
    if causal and nonfinite[h] == 0:  # the keys past the tile's last query are masked for all
        key_tiles = min(key_tiles, qt + 1)
    for kt in range(key_tiles):
        cuda.syncthreads()  # the last tile is read
        _load_rows(k_tile, k, h * m, kt * TILE, m, d)
        _load_rows(v_tile, v, h * m, kt * TILE, m, d)
        cuda.syncthreads()
        if i < n:
            for r in range(min(TILE, m - kt * TILE)):
                dot, dp = float32(0), float32(0)
                for c in range(d):
                    dot += q_row[c] * k_tile[r, c]
                    dp += dy_row[c] * v_tile[r, c]
                p = math.exp(_masked(dot, scale, i, kt * TILE + r, causal) - shift)
                ds = p * (dp - row_dsum)
                for c in range(d):
                    dq_row[c] += ds * k_tile[r, c]
    if i < n:
        for c in range(d):
            dq[(h * n + i) * d + c] = dq_row[c] * scale


def attention_backward(dy, q, k, v, y, saved, causal=False, scale=None):
    """Gradients of attention -> (dq, dk, dv), of q's, k's and v's shapes: P recomputed tile by
    tile from q, k and saved = (lse,), never an N x M buffer; every sum in a fixed order."""
    dy, q, k, v, y, (lse,), causal, scale = checks.attention_backward(
        dy, q, k, v, y, saved, causal, scale
    )
    heads, n, m, d = _heads(q, k)
    if d > MAX_D:
        raise ValueError(f"attention_backward: the numba variant holds D <= {MAX_D}, got D = {d}")
    scale = float32(scale)
    # BEGIN SOLUTION week 22, task attention_backward
    dq, dk, dv = device.empty(q.shape), device.empty(k.shape), device.empty(v.shape)
    dsum = device.scratch((heads * n,))
    launch(_row_dots, blocks_for(heads * n), BLOCK, flat(dy), flat(y), dsum, heads * n, d)
    if causal:
        nonfinite = _nonfinite_flags(heads, dy, q, k, v, y, lse)
    else:
        nonfinite = device.scratch((1,), np.int32)
    args = (flat(dy), flat(q), flat(k), flat(v), flat(lse), dsum, nonfinite)
    launch(_key_gradients, heads * ((m + TILE - 1) // TILE), TILE, *args, flat(dk), flat(dv), n,
           m, d, causal, scale)  # fmt: skip
    launch(_query_gradients, heads * ((n + TILE - 1) // TILE), TILE, *args, flat(dq), n, m, d,
           causal, scale)  # fmt: skip
    return dq, dk, dv
    # END SOLUTION
