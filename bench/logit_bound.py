"""How far two float32 runs of one network may differ, per logit: a probabilistic error bound.

Two implementations of a layer (one of our tiers, ONNX Runtime) add the same products in other
orders, with or without fused multiply-adds, and a runtime may fold a BatchNorm into the conv
before it; each rounds in its own way. The bound follows every example through the network (run
on the numpy tier, in evaluation mode) with three arrays the shape of each layer's output:

    x  the values themselves;
    a  the magnitudes behind them: |W| |x| + |b| for a Conv or a Linear, |x| for most others;
    v  the variance of |ours - theirs|, in the model of independent roundings.

A sum of n products rounded in float32 lies within a standard deviation of (sqrt(n) + 1) * u * a
of the exact sum (u the unit roundoff): its n roundings of the running sum, each at most u times
the sum of magnitudes, drift like a random walk (the grader's model, grader/tolerance.py); the +1
is the products' own rounding. Both implementations round: twice the variance. A difference in
the inputs of variance v reaches the output through W as W^2 v. So, per layer:

    Conv, Linear (n = C*k*k, in)  v' = W^2 v + 2 ((sqrt(n) + 1) u a')^2,  a' = |W| |x| + |b|
    AvgPool (n = k*k)             v' = avg v + 2 ((sqrt(n) + 1) u a')^2,   a' = avg |x|
    BatchNorm (s = g/sqrt(V+eps)) v' = s^2 v + 2 (6 u a')^2,  a' = |s| (a + |mu|) + |beta|
    MaxPool                       v' = max v over the window (the largest a window can pass on)
    ReLU, Dropout, Flatten        v' = v (ReLU is 1-Lipschitz)
    LeakyReLU                     v' = v + 2 (u x')^2
    Tanh, Sigmoid                 v' = L^2 v + 2 (ACTIVATION_ULPS u)^2   (L = 1, 1/4)
    Residual                      v' = (sd_body + sd_skip)^2 + 2 (u x')^2

BatchNorm's 6 roundings: the variance plus eps, its square root, gamma over it, the mean's
subtraction, the product and the shift; its a' starts from the conv's a, not |x|, because folded
into the conv the rounding of each folded weight lands on every product, |W s| |x|. The input
starts at v = 2 (4 u (|x| + |mean|) / std)^2: the pixel's / 255 rounded by the user and by our
normalizer (x * (1/255), two roundings), then the Sub and the Div. Runtimes evaluate tanh and the
logistic with vectorized approximations accurate to a few ulps of their output, which is at most
1: ACTIVATION_ULPS leaves room.

The bound of a logit is SUM_DRIFT standard deviations (grader/tolerance.py's count), times MARGIN
for the float32 arithmetic of the bound itself.
"""

import math

import numpy as np

from grader.tolerance import SUM_DRIFT, UNIT_ROUNDOFF
from nn.layers import (
    AvgPool2d,
    BatchNorm,
    Conv2d,
    Dropout,
    Flatten,
    LeakyReLU,
    Linear,
    MaxPool2d,
    ReLU,
    Residual,
    Sequential,
    Sigmoid,
    Tanh,
)

U = UNIT_ROUNDOFF[32]
IMPLEMENTATIONS = 2  # ours and theirs each round
BATCHNORM_ROUNDINGS = 6
INPUT_ROUNDINGS = 4
ACTIVATION_ULPS = 64
MARGIN = 1.01


def rounding_variance(n, magnitude):
    """The variance of the difference of two float32 sums of n products of `magnitude`."""
    return IMPLEMENTATIONS * ((math.sqrt(n) + 1) * U * magnitude) ** 2


BOUND_RULES = {}  # {layer class: rule(tier, layer, x, a, v) -> (x', a', v')}


def bounds(*layer_classes):
    def register(rule):
        for layer_class in layer_classes:
            BOUND_RULES[layer_class] = rule
        return rule

    return register


def logit_bound(model, normalizer, inputs, batch=500):
    """[N, outputs] float64: how far two float32 implementations of `model` (built on the numpy
    tier, in evaluation mode) may differ on raw `inputs` (uint8 images or float points),
    normalized by `normalizer` inside each; `batch` examples at a time."""
    model.eval()
    return np.concatenate([
        batch_bound(model, normalizer, inputs[start:start + batch])
        for start in range(0, len(inputs), batch)
    ])


def batch_bound(model, normalizer, inputs):
    shape = (1, -1, 1, 1) if normalizer.is_image else (1, -1)
    pixels = np.abs(inputs.astype(np.float32))
    if normalizer.is_image:
        pixels = pixels / np.float32(255)
    mean = np.abs(normalizer.mean).astype(np.float32).reshape(shape)
    std = np.abs(normalizer.std).astype(np.float32).reshape(shape)
    x = normalizer(inputs)
    a = (pixels + mean) / std
    v = IMPLEMENTATIONS * (INPUT_ROUNDINGS * U * a) ** 2
    x, a, v = propagate(model.tier, model.net, x, a, v)
    return SUM_DRIFT * np.sqrt(v.astype(np.float64)) * MARGIN


def propagate(tier, layer, x, a, v):
    """(values, magnitudes, variances) after `layer`."""
    rule = BOUND_RULES.get(type(layer))
    if rule is None:
        raise ValueError(f"no error bound for layer {layer.describe()}")
    return rule(tier, layer, x, a, v)


def weights(tier, layer):
    """(|W|, W^2, |b|) of a Conv or Linear layer."""
    weight = tier.to_numpy(layer.params["weight"].value)
    return np.abs(weight), weight * weight, np.abs(tier.to_numpy(layer.params["bias"].value))


@bounds(Sequential)
def through_sequential(tier, layer, x, a, v):
    for child in layer.layers:
        x, a, v = propagate(tier, child, x, a, v)
    return x, a, v


@bounds(Residual)
def through_residual(tier, layer, x, a, v):
    x_body, _, v_body = propagate(tier, layer.body, x, a, v)
    x_skip, v_skip = (x, v) if layer.shortcut is None else \
        propagate(tier, layer.shortcut, x, a, v)[::2]
    x_out = tier.add(x_body, x_skip)
    v_out = (np.sqrt(v_body) + np.sqrt(v_skip)) ** 2 + rounding_variance(0, x_out)
    return x_out, np.abs(x_out), v_out


@bounds(Conv2d)
def through_conv(tier, layer, x, a, v):
    magnitude, square, bias = weights(tier, layer)
    a_out = tier.conv2d_forward(np.abs(x), magnitude, bias, layer.stride, layer.padding)
    v_out = tier.conv2d_forward(v, square, np.zeros_like(bias), layer.stride, layer.padding)
    n = magnitude[0].size + 1
    return layer.forward(x), a_out, v_out + rounding_variance(n, a_out)


@bounds(Linear)
def through_linear(tier, layer, x, a, v):
    magnitude, square, bias = weights(tier, layer)
    a_out = tier.linear_forward(np.abs(x), magnitude, bias)
    v_out = tier.linear_forward(v, square, np.zeros_like(bias))
    n = magnitude.shape[1] + 1
    return layer.forward(x), a_out, v_out + rounding_variance(n, a_out)


@bounds(BatchNorm)
def through_batchnorm(tier, layer, x, a, v):
    shape = (1, -1, 1, 1) if x.ndim == 4 else (1, -1)
    gamma = tier.to_numpy(layer.params["gamma"].value).astype(np.float64)
    variance = tier.to_numpy(layer.running_var).astype(np.float64)
    scale = np.abs(gamma / np.sqrt(variance + layer.eps)).astype(np.float32).reshape(shape)
    mean = np.abs(tier.to_numpy(layer.running_mean)).reshape(shape)
    beta = np.abs(tier.to_numpy(layer.params["beta"].value)).reshape(shape)
    a_out = scale * (a + mean) + beta
    v_out = scale**2 * v + IMPLEMENTATIONS * (BATCHNORM_ROUNDINGS * U * a_out) ** 2
    return layer.forward(x), a_out, v_out


@bounds(MaxPool2d)
def through_maxpool(tier, layer, x, a, v):
    x_out = layer.forward(x)
    return x_out, np.abs(x_out), tier.maxpool2d_forward(v, layer.kernel_size, layer.stride)[0]


@bounds(AvgPool2d)
def through_avgpool(tier, layer, x, a, v):
    a_out = tier.avgpool2d_forward(np.abs(x), layer.kernel_size, layer.stride)
    v_out = tier.avgpool2d_forward(v, layer.kernel_size, layer.stride)
    return layer.forward(x), a_out, v_out + rounding_variance(layer.kernel_size**2, a_out)


@bounds(ReLU, Dropout, Flatten)
def through_lipschitz(tier, layer, x, a, v):
    x_out = layer.forward(x)  # ReLU is 1-Lipschitz; Dropout (in evaluation) and Flatten move
    return x_out, np.abs(x_out), v.reshape(x_out.shape)


@bounds(LeakyReLU)
def through_leaky_relu(tier, layer, x, a, v):
    x_out = layer.forward(x)
    return x_out, np.abs(x_out), v + rounding_variance(0, x_out)


@bounds(Tanh, Sigmoid)
def through_squashing(tier, layer, x, a, v):
    slope = 1.0 if isinstance(layer, Tanh) else 0.25
    x_out = layer.forward(x)
    v_out = slope**2 * v + IMPLEMENTATIONS * (ACTIVATION_ULPS * U) ** 2
    return x_out, np.abs(x_out), v_out.astype(np.float32)
