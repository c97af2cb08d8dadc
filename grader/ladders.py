"""The speed ladders: the sizes each op is timed at, per tier class ("python", "cpu", "gpu").

`SPEED` holds the sizes `python -m grader` times (and re-validates) an op at, `BENCH` those of
`python -m grader bench` (the speed sizes when an op has none of its own). Sizes are read by the
op's builder (grader/builders.py); a `Named` size carries a label, e.g. "LeNet-5 conv1, batch 64".
"""

from collections import namedtuple

import numpy as np

Named = namedtuple("Named", "label size")  # a ladder size with a name, e.g. "LeNet-5 conv1"

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


CONV = {
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
# Inference's fused conv + bias + ReLU + max-pool of 2 (every conv of LeNet-5 and the Fashion
# CNN is followed by one), at a batch of 1 (latency) and of 256 (throughput).
def fused_layers(batch, names):
    """conv_layers' sizes, each with the pooling window of 2 that follows the layer."""
    return tuple(Named(f"{label} + ReLU + pool 2", (*size, 2))
                 for label, size in conv_layers(batch, names))  # fmt: skip


CONV_BIAS_RELU_POOL = {
    "python": fused_layers(1, ["LeNet-5 conv1"]),
    "cpu": fused_layers(1, ["LeNet-5 conv1"]) + fused_layers(256, ["LeNet-5 conv2"])
    + fused_layers(64, ["Fashion-CNN conv2"]),
    "gpu": fused_layers(1, ["Fashion-CNN conv2"]) + fused_layers(256, list(CONV_LAYERS)),
}


def _cube(*sizes):
    return tuple((n, n, n) for n in sizes)


def _ladder(python, larger, gpu):
    """A ladder whose "cpu" sizes start with the "python" ones: a stage 2 or 3 op is then timed
    next to stage 1 (grader/policy.py asks a speedup of it there), then at `larger` sizes."""
    return {"python": python, "cpu": python + larger, "gpu": gpu}


# The largest "cpu" size of every op holds well over 1024 elements, and matmul's K = 1024 > 256,
# so that a bug that shows only at large sizes is seen: every ladder size is also checked for
# correctness (grader/speed.py).
# fmt: off
ELEMENTWISE = _ladder((((256, 256), 1.0),), (((1024, 1024), 1.0),), (((4096, 4096), 1.0),))
ROWWISE = _ladder(((64, 100, 1.0, 0.0),), ((1024, 1000, 1.0, 0.0),), ((8192, 1000, 1.0, 0.0),))
BROADCAST = _ladder((((256, 256), False),), (((1024, 1024), False), ((1024, 1024), True)),
                    (((4096, 4096), False), ((4096, 4096), True)))
POOL = _ladder(((1, 6, 28, 28, 2, 2, False),), ((64, 64, 26, 26, 2, 2, False),),
               ((256, 128, 64, 64, 2, 2, False),))
BATCHNORM = _ladder((((16, 32, 8, 8), True, 0.1),), (((64, 64, 16, 16), True, 0.1),),
                    (((256, 128, 32, 32), True, 0.1),))
OPTIMIZER = _ladder((((10000,), 0),), (((1 << 20,), 0),), (((1 << 24,), 0),))
DROPOUT = _ladder((((256, 256), 0.5),), (((1024, 1024), 0.5),), (((4096, 4096), 0.5),))
INIT = _ladder(((64, 100),), ((1024, 1024),), ((4096, 4096),))
CROSS_ENTROPY = _ladder(((64, 10, 1.0, 0.0),), ((4096, 1000, 1.0, 0.0),),
                        ((16384, 1000, 1.0, 0.0),))
HINGE = _ladder(((64, 10, 1.0),), ((4096, 100, 1.0),), ((16384, 100, 1.0),))
# Layer norm: rows of a transformer's width, [N, T, D] as a ViT's tokens (197 of 768 features)
LAYERNORM = _ladder((((64, 256), 1e-5),), (((64, 65, 128), 1e-5), ((4096, 1024), 1e-5)),
                    (((256, 197, 768), 1e-5), ((8192, 4096), 1e-5)))
GELU = _ladder((((256, 256), 1.0, "none"),),
               (((1024, 1024), 1.0, "none"), ((1024, 1024), 1.0, "tanh")),
               (((4096, 4096), 1.0, "none"), ((4096, 4096), 1.0, "tanh")))
# Attention: a small ViT's heads (65 tokens: 64 patches and a class token, D = 32), a language
# model's causal context of 256 (D = 64), then 1024 tokens; the GPU at FlashAttention's lengths.
# scale None: 1/sqrt(D) (a ladder size is sent to worker processes: DEFAULT does not cross).
ATTENTION = _ladder(((1, 2, 32, 32, 16, False, None),),
                    ((64, 4, 65, 65, 32, False, None), (4, 8, 256, 256, 64, True, None),
                     (1, 4, 1024, 1024, 64, False, None)),
                    ((8, 8, 1024, 1024, 64, True, None), (1, 8, 4096, 4096, 64, False, None)))
LINEAR = _ladder(((8, 784, 128),), ((64, 784, 128), (256, 3200, 256)), ((4096, 4096, 4096),))

# A backward op is timed at its forward's sizes: its arguments are built from the forward's.
SPEED = {
    "matmul": {"python": _cube(16, 64), "cpu": _cube(64, 256, 1024), "gpu": _cube(256, 1024, 4096)},
    "transpose": _ladder(((200, 300),), ((2000, 3000),), ((8000, 6000),)),
    "add": BROADCAST, "mul": BROADCAST,
    "scale": _ladder(((256, 256),), ((1024, 1024),), ((4096, 4096),)),
    "sum_rows": _ladder(((256, 256),), ((4096, 1024),), ((16384, 4096),)),
    "linear_forward": LINEAR, "linear_backward": LINEAR,
    "relu": ELEMENTWISE, "relu_backward": ELEMENTWISE,
    "leaky_relu": ELEMENTWISE, "leaky_relu_backward": ELEMENTWISE,
    "sigmoid": ELEMENTWISE, "sigmoid_backward": ELEMENTWISE,
    "tanh": ELEMENTWISE, "tanh_backward": ELEMENTWISE,
    "softmax": ROWWISE, "softmax_backward": ROWWISE,
    "log_softmax": ROWWISE, "log_softmax_backward": ROWWISE,
    "mse_loss": ELEMENTWISE, "mse_loss_backward": ELEMENTWISE,
    "cross_entropy_loss": CROSS_ENTROPY, "cross_entropy_loss_backward": CROSS_ENTROPY,
    "bce_with_logits_loss": ELEMENTWISE, "bce_with_logits_loss_backward": ELEMENTWISE,
    "hinge_loss": HINGE, "hinge_loss_backward": HINGE,
    "im2col": CONV, "col2im": CONV, "conv2d_forward": CONV, "conv2d_backward": CONV,
    "maxpool2d_forward": POOL, "maxpool2d_backward": POOL,
    "avgpool2d_forward": POOL, "avgpool2d_backward": POOL,
    "batchnorm_forward": BATCHNORM, "batchnorm_backward": BATCHNORM,
    "dropout_forward": DROPOUT, "dropout_backward": DROPOUT,
    "sgd_step": OPTIMIZER, "momentum_step": OPTIMIZER, "rmsprop_step": OPTIMIZER,
    "adam_step": OPTIMIZER,
    "xavier_uniform": INIT, "he_normal": INIT,
    "conv2d_bias_relu_pool": CONV_BIAS_RELU_POOL,
    "layernorm": LAYERNORM, "layernorm_backward": LAYERNORM,
    "gelu": GELU, "gelu_backward": GELU,
    "attention": ATTENTION, "attention_backward": ATTENTION,
}
BENCH = {
    "matmul": {"python": _cube(64, 128), "cpu": _cube(64, 256, 512, 1024, 2048),
               "gpu": _cube(1024, 2048, 4096, 8192)},
    "linear_forward": {"python": ((8, 784, 128),),
                       "cpu": ((8, 784, 128), (64, 784, 128), (256, 3200, 256),
                               (1024, 4096, 1024)),
                       "gpu": ((256, 3200, 256), (4096, 4096, 4096))},
    "conv2d_forward": CONV_BENCH,
    "conv2d_backward": CONV_BENCH,
}
# fmt: on


def ladder(op, tier_class, bench=False):
    """The speed sizes of `op` for a tier class, as Named (label or None, size) pairs."""
    sizes = (BENCH.get(op.name) or SPEED.get(op.name, {})) if bench else SPEED.get(op.name, {})
    return [
        entry if isinstance(entry, Named) else Named(None, entry)
        for entry in sizes.get(tier_class, ())
    ]


def size_label(op, named, args):
    """How a ladder size is printed: its name if it has one, else its arguments' shapes."""
    shapes = " ".join(
        f"{n}[{'x'.join(map(str, v.shape))}]" for n, v in args.items() if isinstance(v, np.ndarray)
    )
    if op.name == "matmul":
        shapes = "x".join(map(str, named.size))
    return f"{named.label} ({shapes})" if named.label else shapes


def timed_class(tier):
    """The ladder a registry tier is timed on: its own class, except that a GPU tier under the
    CUDA simulator (no GPU) only manages the tiny one."""
    if tier.simulated:
        return "python"
    return tier.tier_class


# --- int8 inference: the float32 ops' sizes (linear_forward's, the conv layers), int8 codes ---
# fmt: off
SPEED |= {
    "quantize_int8": _ladder((((256, 256), 3, False),), (((1024, 1024), 3, False),),
                             (((4096, 4096), 3, False),)),
    "int8_linear": _ladder(((8, 784, 128, -128),), ((64, 784, 128, -128), (256, 3200, 256, 5)),
                           ((4096, 4096, 4096, 0),)),
    "int8_conv2d": CONV,
}
BENCH |= {
    "int8_linear": {"python": ((8, 784, 128, -128),),
                    "cpu": ((8, 784, 128, -128), (64, 784, 128, -128), (256, 3200, 256, -128),
                            (1024, 4096, 1024, 0)),
                    "gpu": ((256, 3200, 256, -128), (4096, 4096, 4096, 0))},
    "int8_conv2d": CONV_BENCH,
}
# fmt: on


# --- the _to_int8 forms and int8 pooling: the same layers, codes out ------------------------
def requantizing(ladder):
    """A conv ladder's sizes for int8_conv2d_to_int8: x_zero -128, y_zero 0, ReLU, any weight."""
    return {kind: tuple(Named(named.label, (*named.size, -128, 0, True, 127)) for named in sizes)
            for kind, sizes in ladder.items()}  # fmt: skip


# fmt: off
SPEED |= {
    "int8_linear_to_int8": _ladder(((8, 784, 128, -128, 0, True, 127),),
                                   ((64, 784, 128, -128, 0, True, 127),
                                    (256, 3200, 256, 5, 0, True, 127)),
                                   ((4096, 4096, 4096, 0, 0, True, 127),)),
    "int8_conv2d_to_int8": requantizing(CONV),
    "maxpool2d_int8": _ladder(((1, 6, 28, 28, 2, 2),), ((256, 64, 26, 26, 2, 2),),
                              ((256, 128, 64, 64, 2, 2),)),
}
BENCH |= {"int8_conv2d_to_int8": requantizing(CONV_BENCH)}
# fmt: on
