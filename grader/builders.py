"""Argument builders of the ops: (rng, size) -> {name: value}, in the op's argument order.

Sizes are tuples read by the builder, e.g. `(n, k, m)` for matmul (grader/ops.py gives each op's
sizes, grader/ladders.py its speed sizes). Every float array is fresh float32 (grader/inputs.py).
"""

import math

import numpy as np

import contract

from . import inputs

EXTREME = 1e3  # a scale this large asks for inputs.extremes: values up to +-1000, both ends exact


class _Default:
    """The value DEFAULT of a case's size: leave this optional argument out of the call."""

    def __repr__(self):
        return "DEFAULT"


DEFAULT = _Default()


class Args(dict):
    """A case's arguments {name: value}; `defaulted` names the optional ones the call leaves out,
    so that the op's own default applies (their values here are the contract's defaults)."""

    defaulted = frozenset()


def keep_defaulted(built, chosen):
    """`chosen` (some of the arguments `built`, or others) as Args, leaving out what `built`
    leaves out."""
    args = Args(chosen)
    args.defaulted = getattr(built, "defaulted", frozenset()) & set(chosen)
    return args


def with_defaults(args, *ops):
    """`args` as Args: each DEFAULT value becomes the contract's default for `ops` and is named
    in `defaulted`."""
    defaults = {}
    for op in ops:
        defaults |= contract.OPS[op].defaults
    resolved = Args({name: defaults[name] if value is DEFAULT else value
                     for name, value in args.items()})  # fmt: skip
    resolved.defaulted = frozenset(name for name, value in args.items() if value is DEFAULT)
    return resolved


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
    """Builder for elementwise activations: size = (shape, scale[, alpha]); large scales test
    stability.

    kind: "smooth" (sigmoid, tanh), "kinked" (relu) or "leaky" (leaky_relu, with alpha: 0.1
    unless the size gives it).
    """

    def build(rng, size):
        shape, scale, *alpha = size
        if kind == "smooth":
            return {"x": spread(rng, shape, scale)}
        x = inputs.away_from_zero(rng, shape, scale)  # the kink at 0 would spoil the gradient
        return {"x": x, "alpha": (alpha or [0.1])[0]} if kind == "leaky" else {"x": x}

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
    """size = (n, c, margin[, scale]): margin may be DEFAULT; scale (default 2): how far scores
    spread. Margins keep 0.01 from the hinge's kink, less in rows too long for every one to."""
    n, c, margin, *scale = size
    labels = inputs.labels(rng, n, c)
    args = with_defaults({"scores": None, "labels": labels, "margin": margin}, "hinge_loss")
    gap = min(0.01, 1 / c)
    args["scores"] = inputs.hinge_scores(rng, labels, c, args["margin"], *scale, gap=gap)
    return args


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
    """size = (n, c, h, w, k, r, s, stride, padding[, need_dx]); stride, padding and need_dx
    (conv2d_backward's) may be DEFAULT, and need_dx is left out unless given."""
    n, c, h, w, k, r, s, stride, padding, *need_dx = size
    args = {
        "x": inputs.normal(rng, (n, c, h, w)),
        "w": inputs.normal(rng, (k, c, r, s), scale=1 / math.sqrt(c * r * s)),
        "b": inputs.normal(rng, k),
        "stride": stride,
        "padding": padding,
        "need_dx": (need_dx or [DEFAULT])[0],
    }
    return with_defaults(args, "conv2d_backward")


def build_conv_bias_relu_pool(rng, size):
    """size = (n, c, h, w, k, r, s, stride, padding, pool); stride, padding and pool may be
    DEFAULT. The bias spreads as widely as the convolution's sums, so that many outputs change
    sign with it (ReLU applied before the bias differs from the right order)."""
    n, c, h, w, k, r, s, stride, padding, pool = size
    args = {
        "x": inputs.normal(rng, (n, c, h, w)),
        "w": inputs.normal(rng, (k, c, r, s), scale=1 / math.sqrt(c * r * s)),
        "b": inputs.normal(rng, k),
        "stride": stride,
        "padding": padding,
        "pool": pool,
    }
    return with_defaults(args, "conv2d_bias_relu_pool")


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
    """size = (shape, training, momentum[, eps[, spread]]): momentum and eps may be DEFAULT (eps
    is unless given); x spreads by `spread` (default 2) around 0.75 * spread, and the running
    variances by the same scale squared, so that an eps near spread**2 weighs on every channel.
    The mean in proportion to the spread keeps x - mean as well conditioned at every scale: around
    a fixed 1.5, a spread of 0.01 left float32 two fewer digits than float64 has."""
    shape, training, momentum, *rest = size
    eps = rest[0] if rest else DEFAULT
    spread_ = rest[1] if len(rest) > 1 else 2.0
    c = shape[1]
    args = {
        "x": inputs.normal(rng, shape, scale=spread_, offset=0.75 * spread_),
        "gamma": inputs.normal(rng, c),
        "beta": inputs.normal(rng, c),
        "running_mean": inputs.normal(rng, c),
        # a variance is positive
        "running_var": inputs.uniform(rng, c, 0.125 * spread_**2, 0.5 * spread_**2),
        "training": training,
        "momentum": momentum,
        "eps": eps,
    }
    return with_defaults(args, "batchnorm_forward")


def build_dropout(rng, size):
    shape, p = size
    return {"x": inputs.normal(rng, shape), "p": p, "seed": inputs.seed(rng)}



def build_layernorm(rng, size):
    """size = (shape, eps[, spread]): x [N, D] or [N, T, D]; eps may be DEFAULT. x spreads by
    `spread` (default 2) around 0.75 * spread, as batchnorm's: an eps near spread**2 weighs on
    every row, and the mean in proportion keeps x - mean as well conditioned at every scale."""
    shape, eps, *rest = size
    spread_ = rest[0] if rest else 2.0
    d = shape[-1]
    args = {
        "x": inputs.normal(rng, shape, scale=spread_, offset=0.75 * spread_),
        "gamma": inputs.normal(rng, d),
        "beta": inputs.normal(rng, d),
        "eps": eps,
    }
    return with_defaults(args, "layernorm")


def build_attention(rng, size):
    """size = (b, h, n, m, d, causal, scale[, spread]): q [B, H, N, D], k and v [B, H, M, D];
    causal and scale may be DEFAULT. q and k spread by `spread` (default 1): at 8 the scores
    reach hundreds, where exp(S) overflows float32 (past 88) unless shifted by the row's largest
    score."""
    b, h, n, m, d, causal, scale, *rest = size
    spread_ = rest[0] if rest else 1.0
    args = {
        "q": inputs.normal(rng, (b, h, n, d), scale=spread_),
        "k": inputs.normal(rng, (b, h, m, d), scale=spread_),
        "v": inputs.normal(rng, (b, h, m, d)),
        "causal": causal,
        "scale": scale,
    }
    return with_defaults(args, "attention")


def build_gelu(rng, size):
    """size = (shape, scale, approximate): x as the smooth activations' (scale EXTREME: values
    up to +-1000); approximate "none", "tanh" or DEFAULT."""
    shape, scale, approximate = size
    args = {"x": spread(rng, shape, scale), "approximate": approximate}
    return with_defaults(args, "gelu", "gelu_backward")

# Hyper-parameters of each optimizer case (size = (shape, variant)): every optional one left at
# its default, then each away from its default, then at the edges of its domain (a decay of 0 or
# 1, a weight decay that dominates the gradient, an eps as large as the root it is added to).
OPTIMIZER_VARIANTS = {
    "sgd_step": (
        {"lr": 0.1, "weight_decay": DEFAULT},
        {"lr": 0.05, "weight_decay": 0.01},
        {"lr": 1.0, "weight_decay": 2.0},
    ),
    "momentum_step": (
        {"lr": 0.1, "momentum": 0.9, "nesterov": DEFAULT, "weight_decay": DEFAULT},
        {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.01},
        {"lr": 0.5, "momentum": 1.0, "nesterov": False, "weight_decay": 2.0},
    ),
    "rmsprop_step": (
        {"lr": 0.01, "alpha": DEFAULT, "eps": DEFAULT, "weight_decay": DEFAULT},
        {"lr": 0.02, "alpha": 0.9, "eps": 1e-6, "weight_decay": 0.01},
        {"lr": 0.1, "alpha": 0.0, "eps": 0.5, "weight_decay": 2.0},
    ),
    "adam_step": (
        {
            "t": 1,
            "lr": 0.001,
            "beta1": DEFAULT,
            "beta2": DEFAULT,
            "eps": DEFAULT,
            "weight_decay": DEFAULT,
        },
        {"t": 7, "lr": 0.01, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "weight_decay": 0.01},
        {"t": 1000, "lr": 0.1, "beta1": 0.0, "beta2": 0.5, "eps": 0.5, "weight_decay": 2.0},
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
        return with_defaults(args | OPTIMIZER_VARIANTS[name][variant], name)

    return build


def build_init(rng, size):
    return {"shape": tuple(size), "seed": inputs.seed(rng)}


# --- int8 inference (quantize_int8, int8_linear, int8_conv2d) ----------------------------------
# Their results are exact in every tier: the sums are integers, and the float rescaling is made
# exact by the inputs (scales powers of two, biases multiples of them, sums below 2^24), so a
# result either matches stage 1's to the last bit or has a bug (ops.py gives them tol=0).


def int8_codes(rng, shape):
    """int8 codes spread over the whole range [-128, 127]."""
    return rng.integers(-128, 128, shape).astype(np.int8)


def exact_rescale(rng, m):
    """scale [M] (powers of two, 2^-10 to 2^-6) and b [M] (multiples of them): float32 arrays
    with which scale * acc + b is exact in float32 for any |acc| < 2^23."""
    scale = np.exp2(-rng.integers(6, 11, m)).astype(np.float32)
    return scale, (scale * rng.integers(-1000, 1001, m)).astype(np.float32)


def build_quantize(rng, size):
    """size = (shape, zero_point, ties): values a code's width beyond [-128, 127] on both sides;
    `ties` puts exact halves (x / scale = k + 0.5 under a power-of-two scale: round half to
    even), else a random scale and fractions at least 0.02 from a half, so that float32 and
    float64 round alike."""
    shape, zero_point, ties = size
    whole = rng.integers(-200, 201, shape)
    if ties:
        scale = float(2.0 ** -int(rng.integers(2, 8)))
        fraction = rng.choice([0.0, 0.25, 0.5, 0.5, 0.75], shape)
    else:
        scale = inputs.real(rng, 0.01, 0.1)
        fraction = rng.uniform(0.02, 0.48, shape) + 0.5 * rng.integers(0, 2, shape)
    x = ((whole + fraction) * scale).astype(np.float32)
    return {"x": x, "scale": scale, "zero_point": zero_point}


def build_int8_linear(rng, size):
    """size = (n, k, m, x_zero)."""
    n, k, m, x_zero = size
    scale, b = exact_rescale(rng, m)
    return {"x": int8_codes(rng, (n, k)), "x_zero": x_zero, "w": int8_codes(rng, (m, k)),
            "scale": scale, "b": b}  # fmt: skip


def build_int8_conv2d(rng, size):
    """size = (n, c, h, w, m, r, s, stride, padding[, x_zero]): stride and padding may be
    DEFAULT; x_zero is drawn when not given (the speed ladders' conv layers)."""
    n, c, h, w, m, r, s, stride, padding, *x_zero = size
    scale, b = exact_rescale(rng, m)
    args = {
        "x": int8_codes(rng, (n, c, h, w)),
        "x_zero": x_zero[0] if x_zero else int(rng.integers(-128, 128)),
        "w": int8_codes(rng, (m, c, r, s)),
        "scale": scale,
        "b": b,
        "stride": stride,
        "padding": padding,
    }
    return with_defaults(args, "int8_conv2d")


def requantizing_rescale(rng, args, k, bound):
    """Put scale [M] and b [M] of a _to_int8 op in `args`: scale 2^-e per channel, e >= 1 chosen
    so that scale * sum spans about the codes' range (some saturate), b a whole multiple of
    scale: every v = scale * sum + b is then exact, and e as small as 1 (short sums of small
    weights) makes many of them exact halves, where rounding half to even is seen."""
    m = args["w"].shape[0]
    spread_x = math.hypot(74.0, args["x_zero"] + 0.5)  # RMS of x - x_zero, x uniform int8
    spread_sum = math.sqrt(k) * spread_x * max(bound, 1) * 0.6
    e = max(1, round(math.log2(3 * spread_sum / 128)))
    exponents = e + (np.arange(m) + rng.integers(0, 3)) % 3  # channels' scales differ
    scale = np.exp2(-exponents).astype(np.float32)
    args["scale"] = scale
    whole = rng.choice(np.arange(-40, 41), m, replace=m > 81)  # b / scale: distinct where it can
    args["b"] = (scale * whole * np.exp2(exponents)).astype(np.float32)
    return args


def build_int8_linear_to_int8(rng, size):
    """size = (n, k, m, x_zero, y_zero, relu, bound): weights in [-bound, bound]; relu may be
    DEFAULT."""
    n, k, m, x_zero, y_zero, relu, bound = size
    args = {"x": int8_codes(rng, (n, k)), "x_zero": x_zero,
            "w": rng.integers(-bound, bound + 1, (m, k)).astype(np.int8)}  # fmt: skip
    requantizing_rescale(rng, args, k, bound)
    args |= {"y_zero": y_zero, "relu": relu}
    return with_defaults(args, "int8_linear_to_int8")


def build_int8_conv2d_to_int8(rng, size):
    """size = (n, c, h, w, m, r, s, stride, padding, x_zero, y_zero, relu, bound); stride,
    padding and relu may be DEFAULT."""
    n, c, h, w, m, r, s, stride, padding, x_zero, y_zero, relu, bound = size
    args = {"x": int8_codes(rng, (n, c, h, w)), "x_zero": x_zero,
            "w": rng.integers(-bound, bound + 1, (m, c, r, s)).astype(np.int8)}  # fmt: skip
    requantizing_rescale(rng, args, c * r * s, bound)
    args |= {"y_zero": y_zero, "stride": stride, "padding": padding, "relu": relu}
    return with_defaults(args, "int8_conv2d_to_int8")


def build_maxpool_int8(rng, size):
    """size = (n, c, h, w, k, stride): codes over the whole range, so windows hold ties too."""
    n, c, h, w, k, stride = size
    return {"x": int8_codes(rng, (n, c, h, w)), "k": k, "stride": stride}
