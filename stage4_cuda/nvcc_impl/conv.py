"""Convolution (csrc/conv.cu, week 16) as im2col and one product for the whole batch: the
columns are laid out [C*kh*kw, N*OH*OW] (batch last) in a scratch array, the weights [K, C*kh*kw]
multiply them at once, and the product goes back to [N, K, OH, OW] with the bias. The backward's
products read the columns and the weights transposed where they lie; col2im gathers (no
atomics)."""

from ..numba_impl import _device
from ..numba_impl._checks import checks
from ._library import call, geometry


def _geometry(x_shape, filters, kh, kw, stride, padding, oh, ow):
    """The library's convolution geometry."""
    n, c, h, w = x_shape
    return geometry("conv", n=n, channels=c, height=h, width=w, filters=filters, kh=kh, kw=kw,
                    stride=stride, padding=padding, out_height=oh, out_width=ow)


def im2col(x, kh, kw, stride, padding):
    """x [N, C, H, W] -> cols [N, C*kh*kw, OH*OW] (torch.nn.functional.unfold)."""
    x, kh, kw, stride, padding, oh, ow = checks.im2col(x, kh, kw, stride, padding)
    n, c = x.shape[0], x.shape[1]
    cols = _device.empty((n, c * kh * kw, oh * ow))
    call("s2c_cuda_im2col", x, cols, _geometry(x.shape, 0, kh, kw, stride, padding, oh, ow), False)
    return cols


def col2im(cols, x_shape, kh, kw, stride, padding):
    """cols [N, C*kh*kw, OH*OW] summed back into x_shape [N, C, H, W] (torch's fold)."""
    cols, x_shape, kh, kw, stride, padding, oh, ow = checks.col2im(
        cols, x_shape, kh, kw, stride, padding)
    x = _device.empty(x_shape)
    call("s2c_cuda_col2im", cols, x, _geometry(x_shape, 0, kh, kw, stride, padding, oh, ow),
         False)
    return x


def _columns(x_shape, w_shape, oh, ow):
    """A scratch array for the batch-last columns [C*kh*kw, N*OH*OW]."""
    return _device.scratch((w_shape[1] * w_shape[2] * w_shape[3], x_shape[0] * oh * ow))


def conv2d_forward(x, w, b, stride=1, padding=0):
    """x [N, C, H, W], w [K, C, R, S], b [K] -> y [N, K, OH, OW] (cross-correlation)."""
    x, w, b, stride, padding, oh, ow = checks.conv2d_forward(x, w, b, stride, padding)
    n, k = x.shape[0], w.shape[0]
    y = _device.empty((n, k, oh, ow))
    shape = _geometry(x.shape, k, w.shape[2], w.shape[3], stride, padding, oh, ow)
    product = _device.scratch((k, n * oh * ow))
    call("s2c_cuda_conv2d_forward", x, w, b, y, _columns(x.shape, w.shape, oh, ow), product,
         shape)
    return y


def conv2d_backward(x, w, dy, stride=1, padding=0, need_dx=True):
    """-> (dx [N, C, H, W] or None without need_dx, dw [K, C, R, S], db [K]).

    With dy as [K, N*P] and the columns as [C*R*S, N*P]: dw = dy @ cols.T, dcols = w.T @ dy,
    and dx = col2im(dcols).
    """
    x, w, dy, stride, padding, need_dx, oh, ow = checks.conv2d_backward(
        x, w, dy, stride, padding, need_dx)
    n, k = x.shape[0], w.shape[0]
    dx = _device.empty(x.shape) if need_dx else None
    dw, db = _device.empty(w.shape), _device.empty((k,))
    shape = _geometry(x.shape, k, w.shape[2], w.shape[3], stride, padding, oh, ow)
    dy_last = _device.scratch((k, n * oh * ow))
    call("s2c_cuda_conv2d_backward", x, w, dy, dx, dw, db, _columns(x.shape, w.shape, oh, ow),
         dy_last, shape)
    return dx, dw, db
