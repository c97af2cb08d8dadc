"""The op contract (CONTRACT.md) as data: every op, its inputs, outputs, weeks, costs and sizes.

One row of `OPS` per op. A forward op (or any op with no gradient to check) has a `build`
function `(rng, size) -> {argument name: value}` and `cases`, the sizes its correctness is checked
at. A backward op names its `forward` instead; its arguments come from the forward's (see
`SOURCES`), and `grads` pairs each gradient it returns with the forward input it differentiates.

Sizes are tuples read by the op's builder, e.g. `(n, k, m)` for matmul. The correctness cases
include batch 1, odd sizes and sizes that are not multiples of any tile size (8, 16, 32, ...);
the speed ladders (`speed`, `bench`) are keyed by tier class: "python" (tiny), "cpu", "gpu".
"""

import math
import os
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import inputs

# --- weeks ------------------------------------------------------------------------------------

GROUPS = (
    "linear algebra",
    "dense",
    "activations",
    "softmax",
    "losses",
    "optimizers",
    "init",
    "conv",
    "pooling",
    "normalization",
    "regularization",
)


def _weeks(*weeks):
    """{group: week} from one week per group, in GROUPS order."""
    return dict(zip(GROUPS, weeks, strict=True))


# WEEKS[stage][group]: the week that teaches the group's ops in that stage (CONTRACT.md's table).
WEEKS = {
    1: _weeks(1, 2, 2, 3, 3, 4, 4, 5, 6, 6, 6),
    2: _weeks(7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8),
    3: _weeks(11, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13),
    4: _weeks(14, 15, 14, 14, 14, 14, 14, 16, 16, 16, 16),
}
# Ops taught in another week than their group: the numba matmul ladder is week 15's.
WEEK_EXCEPTIONS = {(4, "matmul"): 15}
# Weeks that grade every op of a stage: 17 (training end to end on the GPU), 18 (the capstone).
WHOLE_STAGE_WEEKS = {17: (4,), 18: (1, 2, 3, 4)}

# --- tiers ------------------------------------------------------------------------------------

FLOAT_BITS = {1: 64, 2: 32, 3: 32, 4: 32}  # stage 1 computes in Python floats
TIER_CLASS = {1: "python", 2: "cpu", 3: "cpu", 4: "gpu"}  # which rung of the speed ladders


def tier_class(stage):
    """The ladder a stage is timed on; the CUDA simulator (no GPU) only manages the tiny one."""
    if stage == 4 and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "python"
    return TIER_CLASS[stage]


# --- tolerances -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tolerance:
    """An element passes when |received - expected| <= atol + rtol * |expected|."""

    rtol: float
    atol: float

    def __add__(self, other):
        return Tolerance(self.rtol + other.rtol, self.atol + other.atol)


# Per (graded float bits, reference float bits), for one rounding of O(1) values: a float32 tier
# against float64 sees float32 rounding (eps = 6e-8) several times over; two float32 tiers round
# differently each; stage 1 against float64 differs only by summation order.
BASE_TOLERANCE = {
    (32, 64): Tolerance(rtol=1e-5, atol=1e-6),
    (64, 32): Tolerance(rtol=1e-5, atol=1e-6),
    (32, 32): Tolerance(rtol=2e-5, atol=2e-6),
    (64, 64): Tolerance(rtol=1e-9, atol=1e-11),
}
# Central differences in float64 with step 1e-6 are exact to about 1e-9 relative to the size of
# the objective (rounding: 2e-16 * |L| / 1e-6), added to the graded tier's own rounding.
FINITE_DIFFERENCE_STEP = 1e-6
FINITE_DIFFERENCE_TOLERANCE = Tolerance(rtol=1e-6, atol=1e-7)
GPU_TOLERANCE_FACTOR = 4  # fused multiply-adds and the device's exp/log round differently


def tolerance(op, graded_bits, reference_bits, args, gpu=False):
    """The tolerance for `op` on `args`: the pair's base, widened for long accumulations.

    A sum of n rounded terms drifts like sqrt(n) relative to its size, and its absolute error can
    grow like n when terms cancel (matmul's K, conv's C*R*S, batchnorm's N*H*W); `op.accum`
    gives n for the arguments at hand, `op.tol` widens ill-conditioned ops further.
    """
    base = BASE_TOLERANCE[(graded_bits, reference_bits)]
    n = max(1, op.accum(args))
    factor = op.tol * (GPU_TOLERANCE_FACTOR if gpu else 1)
    return Tolerance(rtol=base.rtol * factor * math.sqrt(n), atol=base.atol * factor * n)


# --- argument builders: (rng, size) -> {name: value}, in the op's argument order --------------


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
            return {"x": inputs.normal(rng, shape, scale)}
        x = inputs.away_from_zero(rng, shape, scale)  # the kink at 0 would spoil the gradient
        return {"x": x, "alpha": 0.1} if kind == "leaky" else {"x": x}

    return build


def build_logits(name):
    """Builder for row-wise ops: size = (n, classes, scale, offset); offset 1000 overflows exp."""

    def build(rng, size):
        n, c, scale, offset = size
        return {name: inputs.normal(rng, (n, c), scale, offset)}

    return build


def build_mse(rng, size):
    return {"pred": inputs.normal(rng, size), "target": inputs.normal(rng, size)}


def build_cross_entropy(rng, size):
    n, c, scale, offset = size
    return {"logits": inputs.normal(rng, (n, c), scale, offset), "labels": inputs.labels(rng, n, c)}


def build_bce(rng, size):
    shape, scale = size  # scale 100: exp(100) overflows float32, so only the stable form passes
    return {"logits": inputs.normal(rng, shape, scale), "targets": inputs.uniform(rng, shape, 0, 1)}


def build_hinge(rng, size):
    n, c, margin = size
    labels = inputs.labels(rng, n, c)
    return {
        "scores": inputs.hinge_scores(rng, labels, c, margin),
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


# --- costs: args -> (flops, bytes moved) for GFLOP/s and GB/s --------------------------------


def _numel(*arrays):
    return sum(int(np.prod(a.shape)) for a in arrays)


def conv_flops(args):
    """Multiply-adds of a convolution, times 2, from its x and w (or dy) arguments."""
    n, c, h, w = args["x"].shape
    k, _, r, s = args["w"].shape
    stride, padding = args["stride"], args["padding"]
    return 2 * n * k * conv_out(h, r, stride, padding) * conv_out(w, s, stride, padding) * c * r * s


def work_matmul(args):
    (n, k), m = args["a"].shape, args["b"].shape[1]
    return 2 * n * k * m, 4 * (n * k + k * m + n * m)


def work_linear(passes):
    def work(args):
        (n, i), o = args["x"].shape, args["w"].shape[0]
        return passes * 2 * n * i * o, 4 * (n * i + o * i + n * o)

    return work


def work_memory(arrays_touched):
    """Bytes-only cost of a memory-bound op: float32 elements read and written."""
    return lambda args: (None, 4 * arrays_touched * _numel(next(iter(args.values()))))


def work_conv(passes):
    return lambda args: (passes * conv_flops(args), 4 * _numel(args["x"], args["w"]))


def work_maxpool(args):
    n, c, h, w = args["x"].shape
    outputs = (
        n * c * conv_out(h, args["k"], args["stride"]) * conv_out(w, args["k"], args["stride"])
    )
    return None, 4 * n * c * h * w + 12 * outputs  # float32 y and int64 argmax


# --- the table ---------------------------------------------------------------------------------

Named = namedtuple("Named", "label size")  # a ladder size with a name, e.g. "LeNet-5 conv1"


@dataclass(frozen=True)
class Op:
    """One op of the contract: how to call it, check it and time it."""

    name: str
    group: str
    params: tuple  # argument names in call order
    outputs: tuple = ("y",)  # the result's structure: a name, or (name, (subnames...)) for a tuple
    build: Callable | None = None  # (rng, size) -> args; None for ops derived from a forward
    cases: tuple = ()  # correctness sizes (for a derived op: sizes given to the forward's builder)
    forward: str | None = None  # the forward op whose arguments and outputs feed this one
    grads: tuple = ()  # (returned gradient, forward input it differentiates)
    grad_cases: tuple = ()  # sizes for the finite-difference check (default: the first two cases)
    inplace: tuple = ()  # arguments the op updates in place (compared after the call)
    accum: Callable = field(default=lambda args: 1)  # the longest sum behind one output element
    tol: float = 1.0  # extra tolerance factor for ill-conditioned ops
    work: Callable | None = None  # args -> (flops or None, bytes)
    speed: dict = field(default_factory=dict)  # tier class -> ladder sizes for `grade`
    bench: dict = field(default_factory=dict)  # tier class -> ladder sizes for `bench`
    dist: tuple = ()  # sizes for the distribution check (init, dropout)


def _backward_of(forward, params, grads, **extra):
    """The fields of a backward op whose arguments derive from the op named `forward`."""
    return dict(forward=forward, params=params, grads=grads, **extra)


def _optimizer(name, **extra):
    """The fields of an optimizer step: p, g, its state arrays (updated in place), then scalars."""
    states = tuple(state for state, _ in OPTIMIZER_STATE[name])
    return dict(
        name=name,
        group="optimizers",
        params=("p", "g", *states, *OPTIMIZER_VARIANTS[name][0]),
        build=build_optimizer(name),
        outputs=(),
        inplace=("p", *states),
        cases=OPTIMIZER_CASES,
        **extra,
    )


ELEMENTWISE_CASES = (((1, 7), 1.0), ((3, 5, 7), 2.0), ((2, 3, 4, 5), 1.0), ((4, 33), 100.0))
KINKED_CASES = (((1, 7), 1.0), ((3, 5, 7), 2.0), ((2, 3, 4, 5), 1.0), ((17, 9), 10.0))
ROWWISE_CASES = ((1, 10, 1.0, 0.0), (7, 13, 3.0, 0.0), (4, 9, 50.0, 1000.0))
CONV_CASES = (  # (n, c, h, w, k, r, s, stride, padding)
    (1, 1, 5, 5, 1, 3, 3, 1, 0),
    (2, 3, 7, 6, 4, 3, 3, 1, 1),
    (2, 2, 10, 8, 3, 3, 2, 2, 1),  # stride 2 leaves a row over: OH = 9 // 2 + 1
    (1, 3, 6, 7, 2, 5, 5, 1, 2),
)
CONV_GRAD_CASES = ((2, 2, 5, 6, 3, 3, 3, 1, 1), (1, 2, 8, 6, 2, 3, 2, 2, 2))
POOL_CASES = (  # (n, c, h, w, k, stride, ties)
    (1, 1, 4, 4, 2, 2, False),
    (2, 3, 7, 6, 2, 2, False),
    (2, 2, 7, 7, 3, 2, False),
    (1, 2, 5, 5, 3, 1, False),
)
MAXPOOL_CASES = POOL_CASES + ((2, 2, 6, 7, 3, 2, True),)  # ties: the first in window order wins
BATCHNORM_CASES = (  # (shape, training, momentum); a batch of 1 needs H*W > 1 for a variance
    ((4, 5), True, 0.1),
    ((2, 3, 4, 5), True, 0.2),
    ((1, 3, 3, 5), True, 0.1),
    ((4, 5), False, 0.1),
    ((3, 2, 5, 3), False, 0.1),
)
OPTIMIZER_CASES = (((7,), 0), ((3, 5), 1), ((2, 3, 4), 0), ((1, 9), 1))
INIT_CASES = ((7, 5), (16, 6, 5, 5), (10,), (3, 1, 3, 3))

LENET_CONV1 = (1, 28, 28, 6, 5, 5, 1, 2)  # (c, h, w, k, r, s, stride, padding) of a layer
LENET_CONV2 = (6, 14, 14, 16, 5, 5, 1, 0)
FASHION_CONV1 = (1, 28, 28, 64, 3, 3, 1, 0)
FASHION_CONV2 = (64, 13, 13, 128, 3, 3, 1, 0)
CONV_LAYERS = {
    "LeNet-5 conv1": LENET_CONV1,
    "LeNet-5 conv2": LENET_CONV2,
    "Fashion-CNN conv1": FASHION_CONV1,
    "Fashion-CNN conv2": FASHION_CONV2,
}


def conv_layers(batch, names):
    """Ladder sizes for the named network layers at `batch` images."""
    return tuple(Named(f"{name}, batch {batch}", (batch, *CONV_LAYERS[name])) for name in names)


CONV_SPEED = {
    "python": conv_layers(1, ["LeNet-5 conv1"]),
    "cpu": conv_layers(1, ["LeNet-5 conv1"]) + conv_layers(64, ["LeNet-5 conv1", "LeNet-5 conv2"]),
    "gpu": conv_layers(64, ["LeNet-5 conv1", "LeNet-5 conv2", "Fashion-CNN conv2"]),
}
CONV_BENCH = {
    "python": conv_layers(1, ["LeNet-5 conv1", "LeNet-5 conv2", "Fashion-CNN conv1"]),
    "cpu": conv_layers(1, ["LeNet-5 conv1", "LeNet-5 conv2", "Fashion-CNN conv1"])
    + conv_layers(64, list(CONV_LAYERS)),
    "gpu": conv_layers(64, list(CONV_LAYERS)) + conv_layers(256, list(CONV_LAYERS)),
}


def _cube(*sizes):
    return tuple((n, n, n) for n in sizes)


# fmt: off
_OPS = [
    # linear algebra
    dict(name="matmul", group="linear algebra", params=("a", "b"), build=build_matmul,
         cases=((1, 7, 5), (5, 3, 7), (17, 33, 9), (33, 65, 17)),
         accum=lambda a: a["a"].shape[1], work=work_matmul,
         speed={"python": _cube(16, 64), "cpu": _cube(64, 256, 1024),
                "gpu": _cube(256, 1024, 4096)},
         bench={"python": _cube(64, 128), "cpu": _cube(64, 256, 512, 1024, 2048),
                "gpu": _cube(1024, 2048, 4096, 8192)}),
    dict(name="transpose", group="linear algebra", params=("a",), build=build_matrix("a"),
         cases=((1, 7), (13, 5), (33, 17))),
    dict(name="add", group="linear algebra", params=("a", "b"), build=build_broadcast,
         cases=(((3, 7), False), ((3, 7), True), ((1, 5), True), ((2, 3, 5), False),
                ((2, 3, 5), True))),
    dict(name="mul", group="linear algebra", params=("a", "b"), build=build_broadcast,
         cases=(((3, 7), False), ((3, 7), True), ((1, 5), True), ((2, 3, 5), False),
                ((2, 3, 5), True))),
    dict(name="scale", group="linear algebra", params=("a", "s"), build=build_scale,
         cases=((1, 7), (13, 5), (2, 3, 5))),
    dict(name="sum_rows", group="linear algebra", params=("x",), build=build_matrix("x"),
         cases=((1, 7), (13, 5), (65, 17)), accum=lambda a: a["x"].shape[0]),
    # dense
    dict(name="linear_forward", group="dense", params=("x", "w", "b"), build=build_linear,
         cases=((1, 7, 3), (5, 13, 9), (17, 33, 10)), accum=lambda a: a["x"].shape[1],
         work=work_linear(1),
         speed={"python": ((8, 784, 128),), "cpu": ((8, 784, 128), (64, 784, 128),
                                                     (256, 3200, 256)),
                "gpu": ((256, 3200, 256), (4096, 4096, 4096))},
         bench={"python": ((8, 784, 128),), "cpu": ((8, 784, 128), (64, 784, 128),
                                                     (256, 3200, 256), (1024, 4096, 1024)),
                "gpu": ((256, 3200, 256), (4096, 4096, 4096))}),
    _backward_of("linear_forward", ("x", "w", "dy"), (("dx", "x"), ("dw", "w"), ("db", "b")),
                 name="linear_backward", group="dense", outputs=("dx", "dw", "db"),
                 accum=lambda a: max(a["dy"].shape), work=work_linear(2)),
    # activations
    dict(name="relu", group="activations", params=("x",), build=build_elementwise("kinked"),
         cases=KINKED_CASES, work=work_memory(2),
         speed={"python": (((256, 256), 1.0),), "cpu": (((256, 256), 1.0), ((1024, 1024), 1.0)),
                "gpu": (((1024, 1024), 1.0), ((4096, 4096), 1.0))}),
    _backward_of("relu", ("x", "dy"), (("dx", "x"),), name="relu_backward",
                 group="activations", outputs=("dx",)),
    dict(name="leaky_relu", group="activations", params=("x", "alpha"),
         build=build_elementwise("leaky"), cases=KINKED_CASES),
    _backward_of("leaky_relu", ("x", "dy", "alpha"), (("dx", "x"),),
                 name="leaky_relu_backward", group="activations", outputs=("dx",)),
    dict(name="sigmoid", group="activations", params=("x",), build=build_elementwise("smooth"),
         cases=ELEMENTWISE_CASES),
    _backward_of("sigmoid", ("y", "dy"), (("dx", "x"),), name="sigmoid_backward",
                 group="activations", outputs=("dx",)),
    dict(name="tanh", group="activations", params=("x",), build=build_elementwise("smooth"),
         cases=ELEMENTWISE_CASES),
    _backward_of("tanh", ("y", "dy"), (("dx", "x"),), name="tanh_backward",
                 group="activations", outputs=("dx",)),
    dict(name="softmax", group="softmax", params=("x",), build=build_logits("x"),
         cases=ROWWISE_CASES, accum=lambda a: a["x"].shape[1], work=work_memory(2),
         speed={"python": ((64, 100, 1.0, 0.0),),
                "cpu": ((64, 100, 1.0, 0.0), (1024, 1000, 1.0, 0.0)),
                "gpu": ((1024, 1000, 1.0, 0.0), (8192, 1000, 1.0, 0.0))}),
    _backward_of("softmax", ("y", "dy"), (("dx", "x"),), name="softmax_backward",
                 group="softmax", outputs=("dx",), accum=lambda a: a["y"].shape[1]),
    dict(name="log_softmax", group="softmax", params=("x",), build=build_logits("x"),
         cases=ROWWISE_CASES, accum=lambda a: a["x"].shape[1]),
    _backward_of("log_softmax", ("y", "dy"), (("dx", "x"),), name="log_softmax_backward",
                 group="softmax", outputs=("dx",), accum=lambda a: a["y"].shape[1]),
    # losses
    dict(name="mse_loss", group="losses", params=("pred", "target"), build=build_mse,
         outputs=("loss",), cases=((1, 5), (7, 3), (2, 3, 4)), accum=lambda a: a["pred"].size),
    _backward_of("mse_loss", ("pred", "target"), (("dpred", "pred"),),
                 name="mse_loss_backward", group="losses", outputs=("dpred",)),
    dict(name="cross_entropy_loss", group="losses", params=("logits", "labels"),
         build=build_cross_entropy, outputs=("loss",), cases=ROWWISE_CASES,
         accum=lambda a: a["logits"].size, work=work_memory(1),
         speed={"python": ((64, 10, 1.0, 0.0),),
                "cpu": ((64, 10, 1.0, 0.0), (4096, 1000, 1.0, 0.0)),
                "gpu": ((4096, 1000, 1.0, 0.0), (16384, 1000, 1.0, 0.0))}),
    _backward_of("cross_entropy_loss", ("logits", "labels"), (("dlogits", "logits"),),
                 name="cross_entropy_loss_backward", group="losses", outputs=("dlogits",),
                 accum=lambda a: a["logits"].shape[1]),
    dict(name="bce_with_logits_loss", group="losses", params=("logits", "targets"),
         build=build_bce, outputs=("loss",),
         cases=(((1, 5), 1.0), ((7, 3), 3.0), ((2, 3, 4), 1.0), ((4, 6), 100.0)),
         accum=lambda a: a["logits"].size),
    _backward_of("bce_with_logits_loss", ("logits", "targets"), (("dlogits", "logits"),),
                 name="bce_with_logits_loss_backward", group="losses", outputs=("dlogits",)),
    dict(name="hinge_loss", group="losses", params=("scores", "labels", "margin"),
         build=build_hinge, outputs=("loss",), cases=((1, 5, 1.0), (7, 10, 1.0), (6, 4, 0.5)),
         accum=lambda a: a["scores"].size),
    _backward_of("hinge_loss", ("scores", "labels", "margin"), (("dscores", "scores"),),
                 name="hinge_loss_backward", group="losses", outputs=("dscores",)),
    # convolution
    dict(name="im2col", group="conv", params=("x", "kh", "kw", "stride", "padding"),
         build=build_im2col, outputs=("cols",), cases=CONV_CASES),
    _backward_of("im2col", ("dy", "x_shape", "kh", "kw", "stride", "padding"), (("dx", "x"),),
                 name="col2im", group="conv", outputs=("dx",),
                 accum=lambda a: a["kh"] * a["kw"]),  # col2im is im2col's adjoint
    dict(name="conv2d_forward", group="conv", params=("x", "w", "b", "stride", "padding"),
         build=build_conv, cases=CONV_CASES, accum=lambda a: int(np.prod(a["w"].shape[1:])),
         work=work_conv(1), speed=CONV_SPEED, bench=CONV_BENCH),
    _backward_of("conv2d_forward", ("x", "w", "dy", "stride", "padding"),
                 (("dx", "x"), ("dw", "w"), ("db", "b")), name="conv2d_backward", group="conv",
                 outputs=("dx", "dw", "db"), grad_cases=CONV_GRAD_CASES,
                 accum=lambda a: max(a["dy"].shape[0] * a["dy"].shape[2] * a["dy"].shape[3],
                                     a["dy"].shape[1] * a["w"].shape[2] * a["w"].shape[3]),
                 work=work_conv(2), speed=CONV_SPEED, bench=CONV_BENCH),
    # pooling
    dict(name="maxpool2d_forward", group="pooling", params=("x", "k", "stride"),
         build=build_pool("max"), outputs=("y", "argmax"), cases=MAXPOOL_CASES,
         work=work_maxpool,
         speed={"python": ((1, 6, 28, 28, 2, 2, False),),
                "cpu": ((1, 6, 28, 28, 2, 2, False), (64, 64, 26, 26, 2, 2, False)),
                "gpu": ((64, 64, 26, 26, 2, 2, False), (256, 128, 64, 64, 2, 2, False))}),
    _backward_of("maxpool2d_forward", ("dy", "argmax", "x_shape", "k", "stride"), (("dx", "x"),),
                 name="maxpool2d_backward", group="pooling", outputs=("dx",), cases=POOL_CASES),
    dict(name="avgpool2d_forward", group="pooling", params=("x", "k", "stride"),
         build=build_pool("avg"), cases=POOL_CASES, accum=lambda a: a["k"] ** 2),
    _backward_of("avgpool2d_forward", ("dy", "x_shape", "k", "stride"), (("dx", "x"),),
                 name="avgpool2d_backward", group="pooling", outputs=("dx",),
                 accum=lambda a: a["k"] ** 2),
    # normalization
    dict(name="batchnorm_forward", group="normalization",
         params=("x", "gamma", "beta", "running_mean", "running_var", "training", "momentum",
                 "eps"),
         build=build_batchnorm, outputs=("y", ("saved", ("mean", "invstd"))),
         inplace=("running_mean", "running_var"), cases=BATCHNORM_CASES,
         accum=lambda a: a["x"].size // a["x"].shape[1], tol=4.0, work=work_memory(3),
         speed={"python": (((16, 32, 8, 8), True, 0.1),),
                "cpu": (((16, 32, 8, 8), True, 0.1), ((64, 64, 16, 16), True, 0.1)),
                "gpu": (((64, 64, 16, 16), True, 0.1), ((256, 128, 32, 32), True, 0.1))}),
    _backward_of("batchnorm_forward", ("dy", "x", "gamma", "saved"),
                 (("dx", "x"), ("dgamma", "gamma"), ("dbeta", "beta")),
                 name="batchnorm_backward", group="normalization",
                 outputs=("dx", "dgamma", "dbeta"), cases=BATCHNORM_CASES[:3],
                 accum=lambda a: a["x"].size // a["x"].shape[1], tol=10.0),
    # regularization
    dict(name="dropout_forward", group="regularization", params=("x", "p", "seed"),
         build=build_dropout, outputs=("y", "mask"),
         cases=(((3, 7), 0.5), ((2, 3, 4, 5), 0.2), ((1, 9), 0.0), ((13, 11), 0.9)),
         dist=(((300, 200), 0.3), ((50, 40), 0.0))),
    _backward_of("dropout_forward", ("dy", "mask", "p"), (("dx", "x"),),
                 name="dropout_backward", group="regularization", outputs=("dx",)),
    # optimizers (in place)
    _optimizer("sgd_step"),
    _optimizer("momentum_step"),
    _optimizer("rmsprop_step"),
    _optimizer("adam_step", work=work_memory(7),  # 4 arrays read, 3 written
               speed={"python": (((10000,), 0),), "cpu": (((10000,), 0), ((1 << 20,), 0)),
                      "gpu": (((1 << 20,), 0), ((1 << 24,), 0))}),
    # initialization
    dict(name="xavier_uniform", group="init", params=("shape", "seed"), build=build_init,
         outputs=("w",), cases=INIT_CASES, dist=((256, 300), (64, 32, 3, 3), (500,))),
    dict(name="he_normal", group="init", params=("shape", "seed"), build=build_init,
         outputs=("w",), cases=INIT_CASES, dist=((256, 300), (64, 32, 3, 3), (500,))),
]

# fmt: on
OPS = {spec["name"]: Op(**spec) for spec in _OPS}

# Where a backward op's arguments come from, besides the forward's arguments and outputs:
# "dy" is a fresh random upstream gradient shaped like the forward's first output, "x_shape" the
# forward input's shape as a tuple of ints.
SOURCES = ("dy", "x_shape")


def resolve(op):
    """`op` with the fields it inherits from its forward (cases) filled in."""
    if op.forward is None or op.cases:
        return op
    return Op(**{**op.__dict__, "cases": OPS[op.forward].cases})


OPS = {name: resolve(op) for name, op in OPS.items()}


def output_names(op):
    """The top-level names of an op's result, e.g. ('y', 'saved') for batchnorm_forward."""
    return tuple(entry if isinstance(entry, str) else entry[0] for entry in op.outputs)


def is_loss(op):
    """True for a loss and its backward: the objective is the loss itself, not sum(y * dy)."""
    return OPS[op.forward].outputs == ("loss",) if op.forward else op.outputs == ("loss",)


def week_of(stage, op_name):
    """The week that teaches `op_name` in `stage`."""
    return WEEK_EXCEPTIONS.get((stage, op_name), WEEKS[stage][OPS[op_name].group])


def ops_for_week(stage, week):
    """The ops `--week week` grades in `stage`, in table order (empty if none)."""
    if stage in WHOLE_STAGE_WEEKS.get(week, ()):
        return list(OPS)
    return [name for name in OPS if week_of(stage, name) == week]


def ladder(op, tier_class, bench=False):
    """The speed sizes of `op` for a tier class, as (label or None, size) pairs."""
    sizes = (op.bench or op.speed) if bench else op.speed
    return [
        entry if isinstance(entry, Named) else Named(None, entry)
        for entry in sizes.get(tier_class, ())
    ]


def describe_args(args):
    """A short description of arguments, e.g. 'x[2, 3, 7, 6] w[4, 3, 3, 3] stride=1 padding=1'."""
    parts = []
    for name, value in args.items():
        if isinstance(value, np.ndarray):
            part = f"{name}[{', '.join(map(str, value.shape))}]"
            if value.dtype.kind == "f" and value.size and np.abs(value).max() >= 100:
                part += f" (|{name}| up to {np.abs(value).max():.3g})"
            parts.append(part)
        elif isinstance(value, tuple):
            parts.append(f"{name}=({', '.join(map(str, value))})")
        else:
            parts.append(f"{name}={value}")
    return " ".join(parts)


def size_label(op, named, args):
    """How a ladder size is printed: its name if it has one, else its arguments' shapes."""
    shapes = " ".join(
        f"{n}[{'x'.join(map(str, v.shape))}]" for n, v in args.items() if isinstance(v, np.ndarray)
    )
    if op.name == "matmul":
        shapes = "x".join(map(str, named.size))
    return f"{named.label} ({shapes})" if named.label else shapes
