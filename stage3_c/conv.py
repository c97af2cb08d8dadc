"""Convolution (week 13, csrc/conv.c): im2col, col2im, and conv2d forward and backward, either
through im2col + GEMM (the default, fast) or through direct loops (the definition, for teaching:
`algorithm="direct"`). Layouts: x [N, C, H, W], w [K, C, R, S], b [K], y [N, K, OH, OW] with
OH = (H + 2*padding - R) // stride + 1 (likewise OW); cross-correlation, as F.conv2d."""

from . import _checks as checks
from ._native import call, pointer

ALGORITHMS = ("im2col", "direct")


def _window(op, h, w, kh, kw, stride, padding):
    """Check the window arguments against an input [.., H=h, W=w]; returns them with (oh, ow)."""
    kh = checks.integer(op, "kh", kh, 1)
    kw = checks.integer(op, "kw", kw, 1)
    stride = checks.integer(op, "stride", stride, 1)
    padding = checks.integer(op, "padding", padding, 0)
    oh = checks.window_output(op, "height", h, kh, stride, padding)
    ow = checks.window_output(op, "width", w, kw, stride, padding)
    return kh, kw, stride, padding, oh, ow


def im2col(x, kh, kw, stride, padding):
    """x [N, C, H, W] -> cols [N, C*kh*kw, OH*OW]: row c*kh*kw + i*kw + j, column oh*OW + ow
    (torch.nn.functional.unfold, zero padding)."""
    op = "im2col"
    x = checks.readable(op, "x", x, "[N, C, H, W]")
    n, c, h, w = x.shape
    kh, kw, stride, padding, oh, ow = _window(op, h, w, kh, kw, stride, padding)
    cols = checks.new_output(op, (n, c * kh * kw, oh * ow))
    call("s2c_im2col", pointer(x), pointer(cols), n, c, h, w, kh, kw, stride, padding)
    return cols


def col2im(cols, x_shape, kh, kw, stride, padding):
    """cols [N, C*kh*kw, OH*OW] -> [N, C, H, W] (x_shape), summing overlapping patches: the
    adjoint of im2col (torch.nn.functional.fold)."""
    op = "col2im"
    n, c, h, w = checks.shape_argument(op, "x_shape", x_shape, "[N, C, H, W]")
    kh, kw, stride, padding, oh, ow = _window(op, h, w, kh, kw, stride, padding)
    cols = checks.shaped(op, "cols", cols, "[N, C*kh*kw, OH*OW]", (n, c * kh * kw, oh * ow))
    x = checks.new_output(op, (n, c, h, w))
    call("s2c_col2im", pointer(cols), pointer(x), n, c, h, w, kh, kw, stride, padding)
    return x


def _conv_inputs(op, x, w, stride, padding, algorithm):
    """Check x [N, C, H, W], w [K, C, R, S] and the rest; returns them with the sizes."""
    if algorithm not in ALGORITHMS:
        checks.fail(op, f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    x = checks.readable(op, "x", x, "[N, C, H, W]")
    n, c, h, width = x.shape
    w = checks.readable(op, "w", w, "[K, C, R, S]")
    k, _, r, s = w.shape
    if w.shape[1] != c:
        checks.fail(op, f"w must have shape [K, C={c}, R, S] (C: x's channels), got {w.shape}")
    _, _, stride, padding, oh, ow = _window(op, h, width, r, s, stride, padding)
    # one image's im2col buffer, which the C code allocates per thread
    checks.check_elements(op, "the im2col buffer", (c * r * s, oh * ow))
    sizes = (n, c, h, width, k, r, s, stride, padding)
    suffix = "" if algorithm == "im2col" else "_direct"
    return x, w, sizes, (n, k, oh, ow), suffix


def conv2d_forward(x, w, b, stride=1, padding=0, algorithm="im2col"):
    """x [N, C, H, W], w [K, C, R, S], b [K] -> y [N, K, OH, OW]."""
    op = "conv2d_forward"
    x, w, sizes, y_shape, suffix = _conv_inputs(op, x, w, stride, padding, algorithm)
    b = checks.shaped(op, "b", b, "[K]", (y_shape[1],))
    y = checks.new_output(op, y_shape)
    call(f"s2c_conv2d_forward{suffix}", pointer(x), pointer(w), pointer(b), pointer(y), *sizes)
    return y


def conv2d_backward(x, w, dy, stride=1, padding=0, need_dx=True, algorithm="im2col"):
    """x [N, C, H, W], w [K, C, R, S], dy [N, K, OH, OW] -> (dx [N, C, H, W], dw [K, C, R, S],
    db [K]); need_dx=False skips dx (None in its place; the C code gets a NULL pointer)."""
    op = "conv2d_backward"
    x, w, sizes, y_shape, suffix = _conv_inputs(op, x, w, stride, padding, algorithm)
    dy = checks.shaped(op, "dy", dy, "[N, K, OH, OW]", y_shape)
    need_dx = checks.flag(op, "need_dx", need_dx)
    dx = checks.new_output(op, x.shape) if need_dx else None
    dw = checks.new_output(op, w.shape)
    db = checks.new_output(op, (w.shape[0],))
    call(f"s2c_conv2d_backward{suffix}", *map(pointer, (x, w, dy, dx, dw, db)), *sizes)
    return dx, dw, db
