"""The curriculum's models by name. `build_model(name, ...)` returns an unbuilt `Model`.

Image models declare the input they were designed for (a mismatch with the data is an error before
the first step); `perceptron` and `mlp` size their first layer from the data instead.
"""

import inspect
from math import prod

from nn.layers import (
    GELU,
    BatchNorm,
    Conv2d,
    Dropout,
    Flatten,
    LayerNorm,
    Linear,
    MaxPool2d,
    MeanOverTokens,
    MultiHeadAttention,
    PatchEmbedding,
    PositionEmbedding,
    ReLU,
    Residual,
    Sequential,
    Tanh,
    Tokenwise,
)
from nn.network import Model
from nn.setting_checks import is_int, is_number

MNIST_SHAPE = (1, 28, 28)


def perceptron(input_shape=(2,), num_classes=2):
    """One linear layer trained with the multiclass hinge loss (Rosenblatt's idea with a margin)."""
    # BEGIN SOLUTION week 9, task perceptron
    layers = [Flatten()] if len(input_shape) > 1 else []
    layers.append(Linear(prod(input_shape), num_classes, init="xavier"))
    # END SOLUTION
    return Model("perceptron", Sequential(*layers), input_shape, num_classes, "hinge")


def xor(input_shape=(2,), num_classes=2):
    """The 2-4-1 network that solves XOR: one tanh hidden layer, one logit (given: the pattern
    that perceptron, mlp and lenet5 follow)."""
    net = Sequential(Linear(2, 4, init="xavier"), Tanh(), Linear(4, 1, init="xavier"))
    return Model("xor", net, (2,), 2, "binary_cross_entropy")


def mlp(input_shape=MNIST_SHAPE, num_classes=10, hidden=128):
    """Flatten, one hidden ReLU layer: 784-128-10 on MNIST."""
    # BEGIN SOLUTION week 9, task mlp
    net = Sequential(
        Flatten(),
        Linear(prod(input_shape), hidden),
        ReLU(),
        Linear(hidden, num_classes),
    )
    # END SOLUTION
    return Model("mlp", net, input_shape, num_classes, "cross_entropy", {"hidden": hidden})


def lenet5(input_shape=MNIST_SHAPE, num_classes=10):
    """LeCun et al. (1998), modern variant: ReLU and max-pooling instead of scaled tanh and
    trainable subsampling, a fully connected C3 and a linear output instead of RBF units.

    Conv 1->6 k5 (padding 2 keeps 28x28, as the original's 32x32 input), pool, Conv 6->16 k5,
    pool, 400-120-84-10: 61,706 parameters.
    """
    # BEGIN SOLUTION week 9, task lenet5
    net = Sequential(
        Conv2d(1, 6, 5, padding=2),
        ReLU(),
        MaxPool2d(2),
        Conv2d(6, 16, 5),
        ReLU(),
        MaxPool2d(2),
        Flatten(),
        Linear(16 * 5 * 5, 120),
        ReLU(),
        Linear(120, 84),
        ReLU(),
        Linear(84, num_classes),
    )
    # END SOLUTION
    return Model("lenet5", net, MNIST_SHAPE, num_classes, "cross_entropy")


def fashion_cnn(input_shape=MNIST_SHAPE, num_classes=10, dropout=0.0, init="he"):
    """The Fashion-MNIST CNN of ARCHITECTURE.md ("The network"): 896,522 parameters.

    Conv 1->64 k3, MaxPool 2, ReLU, Conv 64->128 k3, MaxPool 2, ReLU, Linear 3200->256, ReLU,
    Linear 256->10. `dropout` > 0 adds a Dropout before the last layer (no parameters); `init`
    names the weight initializer ('he' or 'xavier').
    """
    layers = [
        Conv2d(1, 64, 3, init=init),
        MaxPool2d(2),
        ReLU(),
        Conv2d(64, 128, 3, init=init),
        MaxPool2d(2),
        ReLU(),
        Flatten(),
        Linear(128 * 5 * 5, 256, init=init),
        ReLU(),
    ]
    if dropout:
        layers.append(Dropout(dropout))
    layers.append(Linear(256, num_classes, init=init))
    return Model(
        "fashion_cnn", Sequential(*layers), MNIST_SHAPE, num_classes, "cross_entropy",
        {"dropout": dropout, "init": init},
    )


def conv_bn_relu(in_channels, out_channels):
    """Conv 3x3 (padding 1 keeps the size), BatchNorm, ReLU: the basic block of the CNNs below."""
    return [Conv2d(in_channels, out_channels, 3, padding=1), BatchNorm(out_channels), ReLU()]


def residual_block(channels):
    """Two 3x3 conv-BN layers around an identity skip, then ReLU (He et al., 2016, 'basic')."""
    body = Sequential(
        *conv_bn_relu(channels, channels),
        Conv2d(channels, channels, 3, padding=1),
        BatchNorm(channels),
    )
    return [Residual(body), ReLU()]


def resnet_mini(input_shape=MNIST_SHAPE, num_classes=10, width=16):
    """A small residual CNN with batchnorm for 28x28 digits (width=16: 43,914 parameters).

    Stem conv-BN-ReLU at 28x28, pool to 14x14, a residual block; conv-BN-ReLU doubling the
    channels, pool to 7x7, a residual block; a linear classifier on the 7x7 maps.
    """
    wide = 2 * width
    net = Sequential(
        *conv_bn_relu(1, width),
        MaxPool2d(2),
        *residual_block(width),
        *conv_bn_relu(width, wide),
        MaxPool2d(2),
        *residual_block(wide),
        Flatten(),
        Linear(wide * 7 * 7, num_classes),
    )
    return Model("resnet_mini", net, MNIST_SHAPE, num_classes, "cross_entropy", {"width": width})


def tiny_imagenet_cnn(input_shape=(3, 64, 64), num_classes=200, dropout=0.5):
    """For Tiny-ImageNet (64x64 colour, 200 classes): three conv-BN-ReLU-pool blocks
    (32, 64, 128 channels), Linear 8192->512, ReLU, Dropout, Linear 512->200."""
    net = Sequential(
        *conv_bn_relu(3, 32),
        MaxPool2d(2),
        *conv_bn_relu(32, 64),
        MaxPool2d(2),
        *conv_bn_relu(64, 128),
        MaxPool2d(2),
        Flatten(),
        Linear(128 * 8 * 8, 512),
        ReLU(),
        Dropout(dropout),
        Linear(512, num_classes),
    )
    return Model(
        "tiny_imagenet_cnn", net, (3, 64, 64), num_classes, "cross_entropy", {"dropout": dropout}
    )


def transformer_block(dim, heads, hidden):
    """A pre-norm transformer block: x + attention(norm(x)), then that + mlp(norm(that)), the MLP
    two linear maps of every token with GELU between (Vaswani et al., 2017; pre-norm as in ViT).
    GELU's tanh form, as BERT and GPT-2 use it: within 1e-3 of the exact curve, and every tier
    has a fast tanh, while NumPy has no erf (stage 2 computes it element by element)."""
    attention = Sequential(LayerNorm(dim), MultiHeadAttention(dim, heads))
    mlp = Sequential(
        LayerNorm(dim),
        Tokenwise(Linear(dim, hidden, init="xavier")),
        GELU("tanh"),
        Tokenwise(Linear(hidden, dim, init="xavier")),
    )
    return [Residual(attention), Residual(mlp)]


def vit(input_shape=MNIST_SHAPE, num_classes=10, patch=7, dim=64, depth=4, heads=4, hidden=128):
    """A small vision transformer (Dosovitskiy et al., 2021) for 28x28 images: P x P patches
    (patch=7: 16 tokens; 4: 49) embedded in `dim` features with learned positions, `depth` pre-norm
    blocks of `heads`-head attention and a GELU MLP of `hidden` units, a final layer norm, the mean
    of the tokens, and a linear classifier. The defaults: 138,890 parameters."""
    blocks = [layer for _ in range(depth) for layer in transformer_block(dim, heads, hidden)]
    net = Sequential(
        PatchEmbedding(input_shape[0], dim, patch),
        PositionEmbedding(),
        *blocks,
        LayerNorm(dim),
        MeanOverTokens(),
        Linear(dim, num_classes, init="xavier"),
    )
    options = {"patch": patch, "dim": dim, "depth": depth, "heads": heads, "hidden": hidden}
    return Model("vit", net, tuple(input_shape), num_classes, "cross_entropy", options)


MODELS = {
    builder.__name__: builder
    for builder in (perceptron, xor, mlp, lenet5, fashion_cnn, resnet_mini, tiny_imagenet_cnn, vit)
}


def check_options(name, options):
    """ValueError unless `options` ({name: value}) are arguments that model `name`'s builder
    takes, each of its default's type (an int option takes an integer >= 1)."""
    defaults = {
        option.name: option.default
        for option in list(inspect.signature(MODELS[name]).parameters.values())[2:]
    }
    for option, value in options.items():
        if option not in defaults:
            takes = f"takes the options {sorted(defaults)}" if defaults else "takes no options"
            raise ValueError(f"model {name!r} {takes}, got {option!r}")
        default = defaults[option]
        if isinstance(default, str):
            valid, expected = isinstance(value, str), "a string"
        elif isinstance(default, int):
            valid, expected = is_int(value, 1), "an integer >= 1"
        else:
            valid, expected = is_number(value), "a finite number"
        if not valid:
            raise ValueError(f"model option {option} must be {expected}, got {value!r}")


def build_model(name, input_shape, num_classes, **options):
    """The unbuilt Model `name` for data of `input_shape` with `num_classes` classes.

    Raises ValueError when the options or the data do not fit the model (checked before any
    training step).
    """
    if name not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}, got {name!r}")
    check_options(name, options)
    model = MODELS[name](tuple(input_shape), num_classes, **options)
    if model.input_shape != tuple(input_shape):
        raise ValueError(
            f"model {name!r} takes inputs of shape {model.input_shape}, but the data's examples "
            f"have shape {tuple(input_shape)}"
        )
    if model.num_classes != num_classes:
        raise ValueError(
            f"model {name!r} predicts {model.num_classes} classes, but the data has {num_classes}"
        )
    return model
