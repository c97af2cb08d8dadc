"""Inference mode: a trained model rewritten for prediction only.

Training keeps what a backward needs (each layer's input, max-pooling's argmax, batchnorm's saved
statistics) and runs one op per layer. A model that only predicts needs none of it, so
`prepare_for_inference(model)` turns its layers into a chain of steps that:

- fold each BatchNorm into the Conv2d or Linear before it: in evaluation BatchNorm is an affine
  map per channel, y = gamma * (x - mean) / sqrt(var + eps) + beta, so with
  scale = gamma / sqrt(var + eps) the pair is ONE layer with weights w * scale (each output
  channel's row scaled) and bias (b - mean) * scale + beta (`fold_batchnorm`, in float64);
- drop Dropout (the identity in evaluation);
- run a Conv2d, its folded BatchNorm, the ReLU after it and a MaxPool2d(k) around that ReLU
  (before or after it: ReLU and max-pooling commute) as one op, the contract's
  `conv2d_bias_relu_pool(x, w, b, stride, padding, pool=k)`, which keeps no argmax and writes only
  the pooled map; a Conv2d and a ReLU alone take it with pool=1;
- run a Linear (its folded BatchNorm) and the ReLU after it as one call where the tier has the
  extra `linear_relu_forward` (stage 4's nvcc variant: the ReLU in the product's last kernel, one
  launch fewer a layer), else as linear_forward then relu;
- keep nothing between calls: each step's forward returns its output and stores no input.

The numbers are the evaluation-mode model's up to float rounding (the folded weights round once
more; tests/test_inference_mode.py checks it on every tier). A tier without the fused op (a
learner's stub) runs the step as conv2d_forward, relu and maxpool2d_forward instead.
"""

import numpy as np

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
from nn.layers.fusion import MaxPoolReLU
from nn.tensor import reshape, shape_of

FUSED_OP = "conv2d_bias_relu_pool"
LINEAR_RELU_OP = "linear_relu_forward"  # a tier's extra, not an op of the contract


def fold_batchnorm(weight, bias, gamma, beta, mean, var, eps):
    """(weight', bias') of the layer that computes batchnorm(layer(x)) in evaluation.

    weight [K, ...] (a conv's [K, C, R, S] or a linear layer's [K, I]) and every other array [K],
    as NumPy arrays; computed and returned in float64 (the tier's from_numpy rounds them once).
    """
    # BEGIN SOLUTION week 19, task fold_batchnorm
    scale = np.asarray(gamma, np.float64) / np.sqrt(np.asarray(var, np.float64) + eps)
    folded_weight = np.asarray(weight, np.float64) * scale.reshape(-1, *[1] * (weight.ndim - 1))
    folded_bias = (np.asarray(bias, np.float64) - mean) * scale + beta
    # END SOLUTION
    return folded_weight, folded_bias


class Step:
    """One step of an InferenceModel: forward(x) -> y, keeping nothing."""

    def __init__(self, tier):
        self.tier = tier

    def forward(self, x):
        raise NotImplementedError

    def describe(self):
        return type(self).__name__


class ConvStep(Step):
    """A convolution (its BatchNorm folded in), then ReLU and a max-pooling of `pool`, or alone."""

    def __init__(self, tier, conv, weight, bias, relu, pool, folded):
        super().__init__(tier)
        self.weight, self.bias = weight, bias
        self.stride, self.padding = conv.stride, conv.padding
        self.relu, self.pool, self.folded = relu, pool, folded
        self.fused = relu and callable(getattr(tier, FUSED_OP, None))

    def forward(self, x):
        if self.fused:
            try:
                return self.tier.conv2d_bias_relu_pool(
                    x, self.weight, self.bias, self.stride, self.padding, self.pool
                )
            except NotImplementedError:  # a learner's tier that has not written it yet
                self.fused = False
        y = self.tier.conv2d_forward(x, self.weight, self.bias, self.stride, self.padding)
        if self.relu:
            y = self.tier.relu(y)
        if self.pool > 1:
            y = self.tier.maxpool2d_forward(y, self.pool, self.pool)[0]
        return y

    def describe(self):
        folded = " (BatchNorm folded in)" if self.folded else ""
        if not self.relu:
            return f"conv2d_forward{folded}"
        pool = f", pool={self.pool}" if self.pool > 1 else ""
        op = FUSED_OP if self.fused else "conv2d_forward + relu + maxpool2d_forward"
        return f"{op}{pool}{folded}"


class LinearStep(Step):
    """y = x @ weight.T + bias (a BatchNorm after it folded in), then a ReLU when `relu` (taken
    only where the tier has LINEAR_RELU_OP, which does both in one call)."""

    def __init__(self, tier, weight, bias, folded, relu=False):
        super().__init__(tier)
        self.weight, self.bias, self.folded, self.relu = weight, bias, folded, relu
        self.fused = relu

    def forward(self, x):
        if self.fused:
            try:
                return getattr(self.tier, LINEAR_RELU_OP)(x, self.weight, self.bias)
            except NotImplementedError:  # a learner's library that has not written it yet
                self.fused = False
        y = self.tier.linear_forward(x, self.weight, self.bias)
        return self.tier.relu(y) if self.relu else y

    def describe(self):
        if self.fused:
            op = LINEAR_RELU_OP
        else:
            op = "linear_forward + relu" if self.relu else "linear_forward"
        return op + (" (BatchNorm folded in)" if self.folded else "")


class OpStep(Step):
    """One op of the tier on x (and scalar arguments); `first` keeps only its first output."""

    def __init__(self, tier, op, *args, first=False):
        super().__init__(tier)
        self.op, self.args, self.first = op, args, first

    def forward(self, x):
        y = getattr(self.tier, self.op)(x, *self.args)
        return y[0] if self.first else y

    def describe(self):
        return self.op


class FlattenStep(Step):
    def forward(self, x):
        shape = shape_of(x)
        return reshape(self.tier, x, (shape[0], int(np.prod(shape[1:]))))

    def describe(self):
        return "flatten"


class ResidualStep(Step):
    """body(x) + shortcut(x) (the identity when there is no shortcut), each a list of steps."""

    def __init__(self, tier, body, shortcut):
        super().__init__(tier)
        self.body, self.shortcut = body, shortcut

    def forward(self, x):
        return self.tier.add(run(self.body, x), run(self.shortcut, x))

    def describe(self):
        body = ", ".join(step.describe() for step in self.body)
        shortcut = ", ".join(step.describe() for step in self.shortcut) or "identity"
        return f"residual(body: {body}; shortcut: {shortcut})"


def run(steps, x):
    """x through each step in turn."""
    for step in steps:
        x = step.forward(x)
    return x


class InferenceModel:
    """A model's prediction path: `forward(x)` gives the logits the model gives in evaluation."""

    def __init__(self, model, steps):
        self.name, self.tier = model.name, model.tier
        self.input_shape, self.num_classes, self.loss = (
            model.input_shape, model.num_classes, model.loss)  # fmt: skip
        self.steps = steps

    def forward(self, x):
        return run(self.steps, x)

    def describe(self):
        """One line per step."""
        return "\n".join(f"{index}. {step.describe()}" for index, step in enumerate(self.steps))


def prepare_for_inference(model):
    """The InferenceModel of a built Model (nn/network.py), from its current weights."""
    if model.tier is None:
        raise ValueError("prepare_for_inference: the model must be built (model.build(tier, ...))")
    return InferenceModel(model, _steps(model.net.layers, model.tier))


# Layers that map to one op of the tier on x, with their scalar arguments.
def _plain_step(layer, tier):
    if type(layer) is ReLU:
        return OpStep(tier, "relu")
    if type(layer) is LeakyReLU:
        return OpStep(tier, "leaky_relu", layer.alpha)
    if type(layer) is Sigmoid:
        return OpStep(tier, "sigmoid")
    if type(layer) is Tanh:
        return OpStep(tier, "tanh")
    if type(layer) is MaxPool2d:
        return OpStep(tier, "maxpool2d_forward", layer.kernel_size, layer.stride, first=True)
    if type(layer) is AvgPool2d:
        return OpStep(tier, "avgpool2d_forward", layer.kernel_size, layer.stride)
    if type(layer) is Flatten:
        return FlattenStep(tier)
    if type(layer) is BatchNorm:  # one with no Conv2d or Linear before it to fold into
        return OpStep(tier, "batchnorm_forward", *_statistics(layer), False, layer.momentum,
                      layer.eps, first=True)  # fmt: skip
    raise ValueError(f"prepare_for_inference: no inference step for {layer.describe()}")


def _statistics(norm):
    return (norm.params["gamma"].value, norm.params["beta"].value, norm.running_mean,
            norm.running_var)  # fmt: skip


def _steps(layers, tier):
    """The steps of a list of layers (a Sequential's), folding, dropping and fusing."""
    layers = [part for layer in layers if type(layer) is not Dropout for part in _unfused(layer)]
    steps, index = [], 0
    while index < len(layers):
        layer = layers[index]
        norm = _next_of(layers, index, BatchNorm)
        if type(layer) in (Conv2d, Linear):
            weight, bias = _weights(layer, norm, tier)
            index += 1 + (norm is not None)
            if type(layer) is Linear:
                relu = callable(getattr(tier, LINEAR_RELU_OP, None)) and _is_relu(layers, index)
                steps.append(LinearStep(tier, weight, bias, norm is not None, relu))
                index += relu
                continue
            relu, pool, taken = _relu_and_pool(layers[index : index + 2])
            steps.append(ConvStep(tier, layer, weight, bias, relu, pool, norm is not None))
            index += taken
        elif type(layer) is Residual:
            shortcut = [] if layer.shortcut is None else _steps([layer.shortcut], tier)
            steps.append(ResidualStep(tier, _steps(_children(layer.body), tier), shortcut))
            index += 1
        elif type(layer) is Sequential:
            steps.extend(_steps(layer.layers, tier))
            index += 1
        else:
            steps.append(_plain_step(layer, tier))
            index += 1
    return steps


def _unfused(layer):
    """A training-time MaxPoolReLU (nn/layers/fusion.py) as the MaxPool2d and ReLU it stands for,
    which the steps fuse with the convolution before them; any other layer as itself."""
    if type(layer) is MaxPoolReLU:
        return [MaxPool2d(layer.kernel_size, layer.stride), ReLU()]
    return [layer]


def _children(layer):
    return layer.layers if type(layer) is Sequential else [layer]


def _is_relu(layers, index):
    """Whether layers[index] is a ReLU."""
    return index < len(layers) and type(layers[index]) is ReLU


def _next_of(layers, index, kind):
    """layers[index + 1] if it is a `kind`, else None."""
    following = layers[index + 1] if index + 1 < len(layers) else None
    return following if type(following) is kind else None


def _relu_and_pool(following):
    """(relu, pool, layers taken) for the (up to two) layers after a convolution: a ReLU is taken,
    and with it a MaxPool2d whose stride is its window (the fused op's pooling) just before or
    after it; ReLU and max-pooling commute, so either order is the same op."""
    kinds = [type(layer) for layer in following]
    if kinds in ([ReLU, MaxPool2d], [MaxPool2d, ReLU]):
        maxpool = following[kinds.index(MaxPool2d)]
        if maxpool.stride == maxpool.kernel_size:
            return True, maxpool.kernel_size, 2
    if kinds[:1] == [ReLU]:
        return True, 1, 1
    return False, 1, 0


def _weights(layer, norm, tier):
    """The layer's (weight, bias) as the tier's arrays, with `norm` folded in when not None."""
    weight, bias = layer.params["weight"].value, layer.params["bias"].value
    if norm is None:
        return weight, bias
    arrays = [tier.to_numpy(value) for value in (weight, bias, *_statistics(norm))]
    return tuple(tier.from_numpy(a) for a in fold_batchnorm(*arrays, norm.eps))
