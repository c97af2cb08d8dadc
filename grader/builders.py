"""Argument builders of the ops: (rng, size) -> {name: value}, in the op's argument order.

Sizes are tuples read by the builder, e.g. `(n, k, m)` for matmul (grader/ops.py gives each op's
sizes, grader/ladders.py its speed sizes). Every float array is fresh float32 (grader/inputs.py).
"""

import math

from . import inputs

EXTREME = 1e3  # a scale this large asks for inputs.extremes: values up to +-1000, both ends exact


def spread(rng, shape, scale, offset=0.0):
    """Normal values of `scale` around `offset`, or the extremes when scale is EXTREME."""
    if scale >= EXTREME:
        return inputs.extremes(rng, shape, scale)
    return inputs.normal(rng, shape, scale, offset)


def conv_out(size, kernel, stride, padding=0):
    """Output length of a window sliding over `size`: (size + 2*padding - kernel) // stride + 1."""
    return (size + 2 * padding - kernel) // stride + 1


def build_matmul(rng, size):
    n, k, m = size
    return {"a": inputs.normal(rng, (n, k)), "b": inputs.normal(rng, (k, m))}


def build_matrix(name):
    return lambda rng, size: {name: inputs.normal(rng, size)}


def build_broadcast(rng, size):
    shape, row = size  # row: b is one row of length a.shape[-1], added to every row
    return {"a": inputs.normal(rng, shape), "b": inputs.normal(rng, shape[-1:] if row else shape)}


def build_scale(rng, size):
    return {"a": inputs.normal(rng, size), "s": inputs.real(rng, -3.0, 3.0)}


def build_linear(rng, size):
    n, i, o = size
    return {
        "x": inputs.normal(rng, (n, i)),
        "w": inputs.normal(rng, (o, i), scale=1 / math.sqrt(i)),
        "b": inputs.normal(rng, o),
    }


def build_elementwise(kind):
    """Builder for elementwise activations: size = (shape, scale); large scales test stability.

    kind: "smooth" (sigmoid, tanh), "kinked" (relu) or "leaky" (leaky_relu, with alpha).
    """

    def build(rng, size):
        shape, scale = size
        if kind == "smooth":
            return {"x": spread(rng, shape, scale)}
        x = inputs.away_from_zero(rng, shape, scale)  # the kink at 0 would spoil the gradient
        return {"x": x, "alpha": 0.1} if kind == "leaky" else {"x": x}

    return build


def build_logits(name):
    """Builder for row-wise ops: size = (n, classes, scale, offset); offset 1000 overflows exp."""

    def build(rng, size):
        n, c, scale, offset = size
        return {name: spread(rng, (n, c), scale, offset)}

    return build


def build_mse(rng, size):
    shape, scale = size
    return {"pred": spread(rng, shape, scale), "target": inputs.normal(rng, shape)}


def build_cross_entropy(rng, size):
    n, c, scale, offset = size
    return {"logits": spread(rng, (n, c), scale, offset), "labels": inputs.labels(rng, n, c)}


def build_bce(rng, size):
    shape, scale = size  # scale 100: exp(100) overflows float32, so only the stable form passes
    return {"logits": spread(rng, shape, scale), "targets": inputs.uniform(rng, shape, 0, 1)}


def build_hinge(rng, size):
    n, c, margin, *scale = size  # scale (default 2): how far scores spread
    labels = inputs.labels(rng, n, c)
    return {
        "scores": inputs.hinge_scores(rng, labels, c, margin, *scale),
        "labels": labels,
        "margin": margin,
    }


def build_im2col(rng, size):
    n, c, h, w, _, r, s, stride, padding = size
    return {
        "x": inputs.normal(rng, (n, c, h, w)),
        "kh": r,
        "kw": s,
        "stride": stride,
        "padding": padding,
    }


def build_conv(rng, size):
    n, c, h, w, k, r, s, stride, padding = size
    return {
        "x": inputs.normal(rng, (n, c, h, w)),
        "w": inputs.normal(rng, (k, c, r, s), scale=1 / math.sqrt(c * r * s)),
        "b": inputs.normal(rng, k),
        "stride": stride,
        "padding": padding,
    }


def build_pool(kind):
    """Builder for pooling: size = (n, c, h, w, k, stride, ties)."""

    def build(rng, size):
        n, c, h, w, k, stride, ties = size
        if kind == "max":
            x = inputs.with_ties(rng, (n, c, h, w)) if ties else inputs.distinct(rng, (n, c, h, w))
        else:
            x = inputs.normal(rng, (n, c, h, w))
        return {"x": x, "k": k, "stride": stride}

    return build


def build_batchnorm(rng, size):
    shape, training, momentum = size
    c = shape[1]
    return {
        "x": inputs.normal(rng, shape, scale=2.0, offset=1.5),
        "gamma": inputs.normal(rng, c),
        "beta": inputs.normal(rng, c),
        "running_mean": inputs.normal(rng, c),
        "running_var": inputs.uniform(rng, c, 0.5, 2.0),  # a variance is positive
        "training": training,
        "momentum": momentum,
        "eps": 1e-5,
    }


def build_dropout(rng, size):
    shape, p = size
    return {"x": inputs.normal(rng, shape), "p": p, "seed": inputs.seed(rng)}


# Hyper-parameters of each optimizer case (size = (shape, variant)): plain, then with the extras.
OPTIMIZER_VARIANTS = {
    "sgd_step": ({"lr": 0.1, "weight_decay": 0.0}, {"lr": 0.05, "weight_decay": 0.01}),
    "momentum_step": (
        {"lr": 0.1, "momentum": 0.9, "nesterov": False, "weight_decay": 0.0},
        {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.01},
    ),
    "rmsprop_step": (
        {"lr": 0.01, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0},
        {"lr": 0.02, "alpha": 0.9, "eps": 1e-6, "weight_decay": 0.01},
    ),
    "adam_step": (
        {"t": 1, "lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0},
        {"t": 7, "lr": 0.01, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "weight_decay": 0.01},
    ),
}
OPTIMIZER_STATE = {  # state arrays after p and g, in argument order; squares must be >= 0
    "sgd_step": (),
    "momentum_step": (("v", "signed"),),
    "rmsprop_step": (("s", "square"),),
    "adam_step": (("m", "signed"), ("v", "square")),
}


def build_optimizer(name):
    def build(rng, size):
        shape, variant = size
        args = {"p": inputs.normal(rng, shape), "g": inputs.normal(rng, shape)}
        for state, kind in OPTIMIZER_STATE[name]:
            square = kind == "square"
            args[state] = (
                inputs.uniform(rng, shape, 0.01, 0.5) if square else inputs.normal(rng, shape, 0.1)
            )
        return args | OPTIMIZER_VARIANTS[name][variant]

    return build


def build_init(rng, size):
    return {"shape": tuple(size), "seed": inputs.seed(rng)}
