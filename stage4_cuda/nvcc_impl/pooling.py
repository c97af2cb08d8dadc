"""Pooling (csrc/pooling.cu, week 16): max and average over k x k windows, no padding.
x [N, C, H, W] -> y [N, C, OH, OW] with OH = (H - k) // stride + 1 (likewise OW). Forwards: a
thread per output; backwards: a thread per input element, gathering (no atomics).

An extra of this variant, not an op of the contract: max pooling fused with the ReLU after it
(maxpool2d_relu_forward and _backward), one pass each way where the two ops take two. nn's
MaxPoolReLU layer calls it: a MaxPool2d followed by a ReLU becomes one where the tier has it
(nn/layers/fusion.py)."""

import numpy as np

from argcheck import arrays

from ..runtime import device
from ._checks import TIER, checks
from ._library import call, geometry, int64_indices
from .activations import relu_backward


def _geometry(x_shape, oh, ow, k, stride):
    """The library's pooling geometry: N*C planes of [H, W] -> [OH, OW]."""
    n, c, h, w = x_shape
    return geometry("pool", planes=n * c, height=h, width=w, out_height=oh, out_width=ow, k=k,
                    stride=stride)


def maxpool2d_forward(x, k, stride):
    """x [N, C, H, W] -> (y [N, C, OH, OW], argmax [N, C, OH, OW] int64): argmax holds the flat
    index h*W + w of each window's max within its [H, W] plane (ties: the first)."""
    return _maxpool("s2c_cuda_maxpool2d_forward", *checks.maxpool2d_forward(x, k, stride))


def maxpool2d_relu_forward(x, k, stride):
    """(relu(y), argmax) for (y, argmax) = maxpool2d_forward(x, k, stride), in one pass."""
    return _maxpool("s2c_cuda_maxpool2d_relu_forward", *checks.maxpool2d_forward(x, k, stride))


def _maxpool(function, x, k, stride, oh, ow):
    n, c = x.shape[0], x.shape[1]
    y, argmax = device.empty((n, c, oh, ow)), device.empty((n, c, oh, ow), np.int64)
    call(function, x, y, argmax, _geometry(x.shape, oh, ow, k, stride))
    return y, argmax


def maxpool2d_backward(dy, argmax, x_shape, k, stride):
    """dy [N, C, OH, OW] routed to the argmax of each window -> dx [N, C, H, W] (x_shape).

    argmax must come from maxpool2d_forward: an index outside its own window is not routed.
    """
    checked = checks.maxpool2d_backward(dy, argmax, x_shape, k, stride)
    return _route("maxpool2d_backward", (), *checked)


def maxpool2d_relu_backward(dy, argmax, relu_y, x_shape, k, stride):
    """maxpool2d_backward(relu_backward(relu_y, dy), argmax, x_shape, k, stride), for relu_y the
    output of maxpool2d_relu_forward (relu_y > 0 exactly where the pooled max was): one pass for
    windows that neither overlap nor leave gaps (k == stride), else the two ops."""
    dy, argmax, x_shape, k, stride, oh, ow = checks.maxpool2d_backward(dy, argmax, x_shape, k,
                                                                       stride)
    relu_y = arrays.like(TIER, "maxpool2d_relu_backward", "relu_y", relu_y, "dy", dy.shape)
    if k != stride:
        return maxpool2d_backward(relu_backward(relu_y, dy), argmax, x_shape, k, stride)
    return _route("maxpool2d_relu_backward", (relu_y,), dy, argmax, x_shape, k, stride, oh, ow)


def _route(op, masks, dy, argmax, x_shape, k, stride, oh, ow):
    """dx from library function s2c_cuda_<op>: dy routed to each window's argmax, `masks` (the
    fused op's relu_y, or none) passed between argmax and dx."""
    argmax = int64_indices(op, "argmax", argmax)
    dx = device.empty(x_shape)
    call(f"s2c_cuda_{op}", dy, argmax, *masks, dx, _geometry(x_shape, oh, ow, k, stride))
    return dx


def avgpool2d_forward(x, k, stride):
    """x [N, C, H, W] -> y [N, C, OH, OW], the mean of each k x k window."""
    x, k, stride, oh, ow = checks.avgpool2d_forward(x, k, stride)
    y = device.empty((x.shape[0], x.shape[1], oh, ow))
    call("s2c_cuda_avgpool2d_forward", x, y, _geometry(x.shape, oh, ow, k, stride))
    return y


def avgpool2d_backward(dy, x_shape, k, stride):
    """dy [N, C, OH, OW] spread evenly over each window -> dx [N, C, H, W] (x_shape)."""
    dy, x_shape, k, stride, oh, ow = checks.avgpool2d_backward(dy, x_shape, k, stride)
    dx = device.empty(x_shape)
    call("s2c_cuda_avgpool2d_backward", dy, dx, _geometry(x_shape, oh, ow, k, stride))
    return dx
