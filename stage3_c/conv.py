"""Convolution (week 13, csrc/conv.c): im2col, col2im, and conv2d forward and backward, either
through im2col + GEMM (the default, fast) or through direct loops (the definition, for teaching:
`algorithm="direct"`). Layouts: x [N, C, H, W], w [K, C, R, S], b [K], y [N, K, OH, OW] with
OH = (H + 2*padding - R) // stride + 1 (likewise OW); cross-correlation, as F.conv2d."""

import argcheck

from ._checks import checks, new_output
from ._native import call, pointer

ALGORITHMS = ("im2col", "direct")


def im2col(x, kh, kw, stride, padding):
    """x [N, C, H, W] -> cols [N, C*kh*kw, OH*OW]: row c*kh*kw + i*kw + j, column oh*OW + ow
    (torch.nn.functional.unfold, zero padding)."""
    op = "im2col"
    x, kh, kw, stride, padding, oh, ow = checks.im2col(x, kh, kw, stride, padding)
    n, c, h, w = x.shape
    cols = new_output(op, (n, c * kh * kw, oh * ow))
    call("s2c_im2col", pointer(x), pointer(cols), n, c, h, w, kh, kw, stride, padding)
    return cols


def col2im(cols, x_shape, kh, kw, stride, padding):
    """cols [N, C*kh*kw, OH*OW] -> [N, C, H, W] (x_shape), summing overlapping patches: the
    adjoint of im2col (torch.nn.functional.fold)."""
    op = "col2im"
    cols, (n, c, h, w), kh, kw, stride, padding, _, _ = checks.col2im(
        cols, x_shape, kh, kw, stride, padding
    )
    x = new_output(op, (n, c, h, w))
    call("s2c_col2im", pointer(cols), pointer(x), n, c, h, w, kh, kw, stride, padding)
    return x


def _conv_sizes(x, w, stride, padding, oh, ow):
    """The sizes C takes (n, c, h, w, k, r, s, stride, padding) and y's shape [N, K, OH, OW]."""
    (n, c, h, width), (k, _, r, s) = x.shape, w.shape
    return (n, c, h, width, k, r, s, stride, padding), (n, k, oh, ow)


def _suffix(op, algorithm):
    """The C function's suffix for `algorithm`: "" for im2col, "_direct" for direct."""
    return "" if argcheck.choice(op, "algorithm", algorithm, ALGORITHMS) == "im2col" else "_direct"


def conv2d_forward(x, w, b, stride=1, padding=0, algorithm="im2col"):
    """x [N, C, H, W], w [K, C, R, S], b [K] -> y [N, K, OH, OW]."""
    op = "conv2d_forward"
    suffix = _suffix(op, algorithm)
    x, w, b, stride, padding, oh, ow = checks.conv2d_forward(x, w, b, stride, padding)
    sizes, y_shape = _conv_sizes(x, w, stride, padding, oh, ow)
    y = new_output(op, y_shape)
    call(f"s2c_conv2d_forward{suffix}", pointer(x), pointer(w), pointer(b), pointer(y), *sizes)
    return y


def conv2d_backward(x, w, dy, stride=1, padding=0, need_dx=True, algorithm="im2col"):
    """x [N, C, H, W], w [K, C, R, S], dy [N, K, OH, OW] -> (dx [N, C, H, W], dw [K, C, R, S],
    db [K]); need_dx=False skips dx (None in its place; the C code gets a NULL pointer)."""
    op = "conv2d_backward"
    suffix = _suffix(op, algorithm)
    x, w, dy, stride, padding, need_dx, oh, ow = checks.conv2d_backward(
        x, w, dy, stride, padding, need_dx
    )
    sizes, _ = _conv_sizes(x, w, stride, padding, oh, ow)
    dx = new_output(op, x.shape) if need_dx else None
    dw = new_output(op, w.shape)
    db = new_output(op, (w.shape[0],))
    call(f"s2c_conv2d_backward{suffix}", *map(pointer, (x, w, dy, dx, dw, db)), *sizes)
    return dx, dw, db
