"""Inference's fused convolution (week 5): conv + bias + ReLU, then max-pooling, in one op.

At inference nothing is differentiated, so an op may keep nothing for a backward (no argmax, no
copy of x) and may hand on only what the next layer reads: the pooled activations.
Output size: the convolution's OH, OW (conv2d_forward), then PH = OH // pool, PW = OW // pool
(windows of pool x pool at stride pool, no padding; the rows and columns a window would overhang
are dropped, as F.max_pool2d drops them). ReLU and max-pooling commute (ReLU never lowers a
value's rank, and keeps NaN, which max-pooling picks), so their order does not matter.
"""

from . import _memory
from ._checks import checks, tensor_shape
from ._tensor import planes
from .conv import conv2d_forward


def conv2d_bias_relu_pool(x, w, b, stride=1, padding=0, pool=1):
    """relu(conv2d(x, w) + b), max-pooled over pool x pool windows: x [N, C, H, W],
    w [K, C, R, S], b [K] -> y [N, K, OH // pool, OW // pool] (pool=1: no pooling)."""
    x, w, b, stride, padding, pool, oh, ow = checks.conv2d_bias_relu_pool(
        x, w, b, stride, padding, pool
    )
    n, k, ph, pw = tensor_shape(x)[0], tensor_shape(w)[0], oh // pool, ow // pool
    # BEGIN SOLUTION week 5, task conv2d_bias_relu_pool
    y = _memory.empty((n, k, ph, pw))  # every element is written below
    biased = conv2d_forward(x, w, b, stride, padding)  # [N, K, OH, OW], the bias added
    for plane, y_plane in zip(planes(biased), planes(y), strict=True):
        for out_y in range(ph):
            for out_x in range(pw):
                best = None
                for in_y in range(out_y * pool, out_y * pool + pool):
                    for in_x in range(out_x * pool, out_x * pool + pool):
                        value = plane[in_y][in_x]
                        value = 0.0 if value <= 0 else value  # ReLU; NaN <= 0 is False: kept
                        # a NaN wins and then stays (NaN > v and v > NaN are both False)
                        if best is None or value > best or value != value:
                            best = value
                y_plane[out_y][out_x] = best
    return y
    # END SOLUTION
