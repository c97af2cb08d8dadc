"""The geometry of sliding windows (convolution, pooling): output sizes, checked the same way in
every tier."""

from .errors import fail
from .limits import check_elements
from .scalars import integer


def window_output(op, axis, size, kernel, stride, padding=None, names=("H", "kh")):
    """The output size along `axis` ("height"/"width"): (size + 2*padding - kernel) // stride + 1,
    which must be >= 1. `names` are the symbols of the input size and the kernel in the message;
    pooling has no padding (None)."""
    pad = padding or 0
    out = (size + 2 * pad - kernel) // stride + 1
    if out < 1:
        dim, window = names
        if padding is None:
            formula, numbers = f"({dim} - {window})", f"({size} - {kernel})"
        else:
            formula = f"({dim} + 2*padding - {window})"
            numbers = f"({size} + 2*{padding} - {kernel})"
        fail(op, f"the output {axis} must be >= 1, got {formula} // stride + 1 = "
                 f"{numbers} // {stride} + 1 = {out}")  # fmt: skip
    return out


def conv_window(op, h, w, kh, kw, stride, padding, kernel_names=("kh", "kw")):
    """Check a convolution's window over an input [.., H=h, W=w]; returns
    (kh, kw, stride, padding, oh, ow) as Python ints. `kernel_names` name kh and kw in messages
    (conv2d takes them from w: R and S)."""
    if kernel_names == ("kh", "kw"):  # im2col, col2im: the window sizes are arguments
        kh = integer(op, "kh", kh, 1)
        kw = integer(op, "kw", kw, 1)
    stride = integer(op, "stride", stride, 1)
    padding = integer(op, "padding", padding, 0)
    oh = window_output(op, "height", h, kh, stride, padding, ("H", kernel_names[0]))
    ow = window_output(op, "width", w, kw, stride, padding, ("W", kernel_names[1]))
    return kh, kw, stride, padding, oh, ow


def pool_window(op, h, w, k, stride):
    """Check a pooling window (square, no padding) over [.., H=h, W=w]; returns
    (k, stride, oh, ow)."""
    k = integer(op, "k", k, 1)
    stride = integer(op, "stride", stride, 1)
    oh = window_output(op, "height", h, k, stride, names=("H", "k"))
    ow = window_output(op, "width", w, k, stride, names=("W", "k"))
    return k, stride, oh, ow


def columns_fit(op, n, c, kh, kw, oh, ow):
    """Refuse an im2col matrix [N, C*kh*kw, OH*OW] too large to allocate: im2col's output, and
    the matrix a convolution may build (a huge padding makes it huge from a small input)."""
    check_elements(op, "the im2col matrix [N, C*kh*kw, OH*OW]", (n, c * kh * kw, oh * ow))
