"""Inference's fused convolution (week 16): conv + bias + ReLU, then max-pooling over pool x pool
windows at stride pool, in ONE kernel that keeps nothing for a backward (no argmax, no
[N, K, OH, OW] activation in device memory): x [N, C, H, W], w [K, C, R, S], b [K] ->
y [N, K, OH // pool, OW // pool].

A thread per output of y: it sums the convolution at each position of its window (zero where the
padding is, still multiplied, so a NaN weight gives NaN there as in PyTorch), keeps the max (a
NaN wins and stays), then adds the bias and applies ReLU once: rounding v + b is monotone in v,
as ReLU is, so both commute with the max.
"""

from numba import cuda, float32

from ..runtime import device
from ..runtime.checks import checks
from ..runtime.launch import launch_elementwise


@cuda.jit
def _conv_bias_relu_pool(x, w, b, stride, padding, pool, y):
    # y [N, K, PH, PW]; thread i computes y's element i (row-major)
    # BEGIN SOLUTION week 16, task conv2d_bias_relu_pool
    i = cuda.grid(1)
    n_images, filters, ph, pw = y.shape
    if i < n_images * filters * ph * pw:
        n, k = i // (filters * ph * pw), (i // (ph * pw)) % filters
        py, px = (i // pw) % ph, i % pw
        channels, height, width = x.shape[1], x.shape[2], x.shape[3]
        kh, kw = w.shape[2], w.shape[3]
        best = float32(0)
        for oy in range(py * pool, py * pool + pool):
            for ox in range(px * pool, px * pool + pool):
                total = float32(0)
                for c in range(channels):
                    for r in range(kh):
                        for s in range(kw):
                            h, v = oy * stride - padding + r, ox * stride - padding + s
                            inside = 0 <= h < height and 0 <= v < width
                            pixel = x[n, c, h, v] if inside else float32(0)
                            total += pixel * w[k, c, r, s]
                first = oy == py * pool and ox == px * pool
                if first or total > best or (total != total and best == best):
                    best = total
        value = best + b[k]
        y[n, k, py, px] = float32(0) if value <= 0 else value  # ReLU; NaN <= 0 is False: kept
    # END SOLUTION


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=1):
    """relu(conv2d(x, w) + b), max-pooled over pool x pool windows (pool=1: no pooling)."""
    x, w, b, stride, padding, pool, oh, ow = checks.conv2d_bias_relu_pool(
        x, w, b, stride, padding, pool
    )
    y = device.empty((x.shape[0], w.shape[0], oh // pool, ow // pool))
    launch_elementwise(_conv_bias_relu_pool, y.size, x, w, b, stride, padding, pool, y)
    return y
