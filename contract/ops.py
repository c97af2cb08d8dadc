"""The ops of the contract (CONTRACT.md) in its order: how each is called, where a tier keeps it.

One `Op` per op: its name, its group (the unit of the table of weeks, weeks.py), the module of a
tier that holds it (`stage2_numpy/linalg.py`: every tier has the same files), its arguments in
call order, its outputs, the defaults of its optional arguments, the arguments it updates in
place, and for a backward op the forward it differentiates. How the grader checks an op (its
inputs, cases, costs, tolerances) is the grader's (grader/ops.py), keyed by these names.

Adding an op: a row here (its group's module is where every tier defines it), then its checks in
grader/ops.py, its argument check in argcheck/signatures.py and its function in each tier.
"""

from dataclasses import dataclass, field

# Each group of ops and the module of a tier that holds them, in the order of the table of weeks.
GROUPS = {
    "linear algebra": "linalg",
    "dense": "dense",
    "activations": "activations",
    "softmax": "activations",
    "losses": "losses",
    "optimizers": "optim",
    "init": "init",
    "conv": "conv",
    "pooling": "pooling",
    "normalization": "norm",
    "regularization": "regularization",
    "inference": "inference",
    "quantization": "quantized",
    "attention": "attention",
}

# What every tier defines besides the ops (CONTRACT.md, "A tier's interface").
INTERFACE = ("NAME", "from_numpy", "to_numpy", "synchronize", "available", "empty")


@dataclass(frozen=True)
class Op:
    """One op of the contract: how it is called and what it returns."""

    name: str
    group: str
    params: tuple  # argument names in call order
    outputs: tuple = ("y",)  # the result's structure: a name, or (name, (subnames...)) for a tuple
    defaults: dict = field(default_factory=dict)  # the optional arguments and their defaults
    inplace: tuple = ()  # arguments the op updates in place
    forward: str | None = None  # for a backward op: the forward op it differentiates
    grads: tuple = ()  # (returned gradient, forward input it differentiates)

    @property
    def module(self):
        """The module of a tier that defines this op, e.g. "linalg" (stage1_python/linalg.py)."""
        return GROUPS[self.group]


def backward(name, group, forward, params, grads, **extra):
    """A backward op of `forward`: it returns one gradient per entry of `grads`, each a pair
    (gradient, the forward input it differentiates)."""
    outputs = tuple(grad for grad, _ in grads)
    return Op(name, group, params, outputs, forward=forward, grads=grads, **extra)


def optimizer(name, states, scalars, defaults):
    """An optimizer step: p, g, its state arrays, then its scalars; p and the states are
    updated in place, and it returns nothing."""
    params = ("p", "g", *states, *scalars)
    return Op(name, "optimizers", params, (), defaults, inplace=("p", *states))


DX = (("dx", "x"),)
CONV = {"stride": 1, "padding": 0}
DECAY = {"weight_decay": 0.0}

# fmt: off
_OPS = (
    # linear algebra
    Op("matmul", "linear algebra", ("a", "b")),
    Op("transpose", "linear algebra", ("a",)),
    Op("add", "linear algebra", ("a", "b")),
    Op("mul", "linear algebra", ("a", "b")),
    Op("scale", "linear algebra", ("a", "s")),
    Op("sum_rows", "linear algebra", ("x",)),
    # dense
    Op("linear_forward", "dense", ("x", "w", "b")),
    backward("linear_backward", "dense", "linear_forward", ("x", "w", "dy"),
             (("dx", "x"), ("dw", "w"), ("db", "b"))),
    # activations
    Op("relu", "activations", ("x",)),
    backward("relu_backward", "activations", "relu", ("x", "dy"), DX),
    Op("leaky_relu", "activations", ("x", "alpha")),
    backward("leaky_relu_backward", "activations", "leaky_relu", ("x", "dy", "alpha"), DX),
    Op("sigmoid", "activations", ("x",)),
    backward("sigmoid_backward", "activations", "sigmoid", ("y", "dy"), DX),
    Op("tanh", "activations", ("x",)),
    backward("tanh_backward", "activations", "tanh", ("y", "dy"), DX),
    Op("softmax", "softmax", ("x",)),
    backward("softmax_backward", "softmax", "softmax", ("y", "dy"), DX),
    Op("log_softmax", "softmax", ("x",)),
    backward("log_softmax_backward", "softmax", "log_softmax", ("y", "dy"), DX),
    # losses: a float; each backward takes the forward's arguments
    Op("mse_loss", "losses", ("pred", "target"), ("loss",)),
    backward("mse_loss_backward", "losses", "mse_loss", ("pred", "target"),
             (("dpred", "pred"),)),
    Op("cross_entropy_loss", "losses", ("logits", "labels"), ("loss",)),
    backward("cross_entropy_loss_backward", "losses", "cross_entropy_loss", ("logits", "labels"),
             (("dlogits", "logits"),)),
    Op("bce_with_logits_loss", "losses", ("logits", "targets"), ("loss",)),
    backward("bce_with_logits_loss_backward", "losses", "bce_with_logits_loss",
             ("logits", "targets"), (("dlogits", "logits"),)),
    Op("hinge_loss", "losses", ("scores", "labels", "margin"), ("loss",), {"margin": 1.0}),
    backward("hinge_loss_backward", "losses", "hinge_loss", ("scores", "labels", "margin"),
             (("dscores", "scores"),), defaults={"margin": 1.0}),
    # convolution
    Op("im2col", "conv", ("x", "kh", "kw", "stride", "padding"), ("cols",)),
    backward("col2im", "conv", "im2col", ("cols", "x_shape", "kh", "kw", "stride", "padding"),
             DX),  # im2col's adjoint
    Op("conv2d_forward", "conv", ("x", "w", "b", "stride", "padding"), defaults=CONV),
    backward("conv2d_backward", "conv", "conv2d_forward",
             ("x", "w", "dy", "stride", "padding", "need_dx"),
             (("dx", "x"), ("dw", "w"), ("db", "b")), defaults={**CONV, "need_dx": True}),
    # inference: conv + bias + ReLU + max-pool in one op, nothing kept for a backward
    Op("conv2d_bias_relu_pool", "inference", ("x", "w", "b", "stride", "padding", "pool"),
       defaults={**CONV, "pool": 1}),
    # pooling
    Op("maxpool2d_forward", "pooling", ("x", "k", "stride"), ("y", "argmax")),
    backward("maxpool2d_backward", "pooling", "maxpool2d_forward",
             ("dy", "argmax", "x_shape", "k", "stride"), DX),
    Op("avgpool2d_forward", "pooling", ("x", "k", "stride")),
    backward("avgpool2d_backward", "pooling", "avgpool2d_forward",
             ("dy", "x_shape", "k", "stride"), DX),
    # normalization
    Op("batchnorm_forward", "normalization",
       ("x", "gamma", "beta", "running_mean", "running_var", "training", "momentum", "eps"),
       ("y", ("saved", ("mean", "invstd"))), {"momentum": 0.1, "eps": 1e-5},
       inplace=("running_mean", "running_var")),
    backward("batchnorm_backward", "normalization", "batchnorm_forward",
             ("dy", "x", "gamma", "saved"),
             (("dx", "x"), ("dgamma", "gamma"), ("dbeta", "beta"))),
    # regularization
    Op("dropout_forward", "regularization", ("x", "p", "seed"), ("y", "mask")),
    backward("dropout_backward", "regularization", "dropout_forward", ("dy", "mask", "p"), DX),
    # optimizers
    optimizer("sgd_step", (), ("lr", "weight_decay"), DECAY),
    optimizer("momentum_step", ("v",), ("lr", "momentum", "nesterov", "weight_decay"),
              {"nesterov": False, **DECAY}),
    optimizer("rmsprop_step", ("s",), ("lr", "alpha", "eps", "weight_decay"),
              {"alpha": 0.99, "eps": 1e-8, **DECAY}),
    optimizer("adam_step", ("m", "v"), ("t", "lr", "beta1", "beta2", "eps", "weight_decay"),
              {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, **DECAY}),
    # initialization
    Op("xavier_uniform", "init", ("shape", "seed"), ("w",)),
    Op("he_normal", "init", ("shape", "seed"), ("w",)),
    # int8 inference: int8 x int8 products summed in int32, rescaled per output channel
    Op("quantize_int8", "quantization", ("x", "scale", "zero_point"), ("q",)),
    Op("int8_linear", "quantization", ("x", "x_zero", "w", "scale", "b")),
    Op("int8_conv2d", "quantization", ("x", "x_zero", "w", "scale", "b", "stride", "padding"),
       defaults=CONV),
    # the same sums written as the next layer's int8 codes (with the ReLU as a clamp), and max
    # pooling on the codes: activations stay int8 between layers
    Op("int8_linear_to_int8", "quantization", ("x", "x_zero", "w", "scale", "b", "y_zero", "relu"),
       ("q",), {"relu": False}),
    Op("int8_conv2d_to_int8", "quantization",
       ("x", "x_zero", "w", "scale", "b", "y_zero", "stride", "padding", "relu"), ("q",),
       {**CONV, "relu": False}),
    Op("maxpool2d_int8", "quantization", ("x", "k", "stride"), ("q",)),
    # attention: what a transformer block needs besides matmul and softmax
    Op("layernorm", "attention", ("x", "gamma", "beta", "eps"),
       ("y", ("saved", ("mean", "invstd"))), {"eps": 1e-5}),
    backward("layernorm_backward", "attention", "layernorm", ("dy", "x", "gamma", "saved"),
             (("dx", "x"), ("dgamma", "gamma"), ("dbeta", "beta"))),
    Op("gelu", "attention", ("x", "approximate"), defaults={"approximate": "none"}),
    backward("gelu_backward", "attention", "gelu", ("x", "dy", "approximate"), DX,
             defaults={"approximate": "none"}),
    Op("attention", "attention", ("q", "k", "v", "causal", "scale"),
       ("y", ("saved", ("lse",))), {"causal": False, "scale": None}),
    backward("attention_backward", "attention", "attention",
             ("dy", "q", "k", "v", "y", "saved", "causal", "scale"),
             (("dq", "q"), ("dk", "k"), ("dv", "v")), defaults={"causal": False, "scale": None}),
)
# fmt: on

OPS = {op.name: op for op in _OPS}  # {name: Op}, in the contract's order


def output_names(op):
    """The top-level names of an op's result, e.g. ('y', 'saved') for batchnorm_forward."""
    return tuple(entry if isinstance(entry, str) else entry[0] for entry in op.outputs)
