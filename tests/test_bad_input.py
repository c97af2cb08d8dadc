"""Bad input raises an error naming the op and the argument, on every tier: a TypeError for a wrong
kind of argument (a wrong dtype, a float where an int is expected), a ValueError for a wrong value.

CONTRACT.md, "Bad input". tests/test_bad_input_corpus.py checks that every tier gives the same
error for the same call, over a corpus built from the whole contract.

Each case is a common mistake: wrong rank, mismatched dimensions, wrong dtype, labels out of range
or not integers, a stride, kernel or padding that leaves no output, p = 1 in dropout, zero-size
arrays, a wrong x_shape in col2im and the pooling backwards, a wrong gamma length, an in-place
argument that is not C-contiguous. Inputs are built in NumPy and converted with the tier's
from_numpy, so one table serves every tier. Stage 1 has no dtypes: its dtype cases are skipped.
"""

import math
import re

import numpy as np
import pytest

NAN = math.nan


class Make:
    """Builds one tier's native arguments: fresh random float32 data unless stated otherwise."""

    def __init__(self, tier, rng):
        self.tier, self.rng = tier, rng

    def x(self, *shape):
        """float32 normal numbers of `shape`."""
        return self.tier.from_numpy(self.rng.standard_normal(shape).astype(np.float32))

    def positive(self, *shape):
        """float32 numbers in [0.5, 1.5) of `shape` (variances, targets)."""
        return self.tier.from_numpy(self.rng.uniform(0.5, 1.5, shape).astype(np.float32))

    def ints(self, values):
        """Integers (labels, argmax) holding `values`, a (nested) list."""
        return self.tier.from_numpy(np.array(values, dtype=np.int64))

    def empty(self, *shape):
        """A zero-size float32 array of `shape` (some dimension is 0)."""
        return self.tier.from_numpy(np.zeros(shape, dtype=np.float32))

    def float64(self, *shape):
        """float64 data of `shape` in the tier's array type, where the tier has dtypes."""
        data = self.rng.standard_normal(shape)
        sample = self.tier.from_numpy(data.astype(np.float32))
        if isinstance(sample, np.ndarray):
            return data
        if hasattr(sample, "copy_to_host"):  # a numba device array (stage 4)
            from numba import cuda

            return cuda.to_device(data)
        pytest.skip(f"no float64 {type(sample).__name__} can be built for tier {self.tier.NAME}")

    def strided(self, *shape):
        """float32 data of `shape`, not C-contiguous (every other column of a wider array)."""
        wide = self.x(*shape[:-1], 2 * shape[-1])
        if not isinstance(wide, np.ndarray):
            pytest.skip(f"tier {self.tier.NAME} has no strided native arrays")
        return wide[..., ::2]


# (op, the argument the message must name (a regex), builder: Make -> the op's arguments).
# Where two arguments disagree (dy against x_shape) the message may blame either.
CASES = {
    # linear algebra
    "matmul a 1-D": ("matmul", "a", lambda m: (m.x(3), m.x(3, 2))),
    "matmul inner dims differ": ("matmul", "b", lambda m: (m.x(2, 3), m.x(4, 5))),
    "matmul b 1-D": ("matmul", "b", lambda m: (m.x(2, 3), m.x(3))),
    "matmul a float64": ("matmul", "a", lambda m: (m.float64(2, 3), m.x(3, 2))),
    "matmul a zero-size": ("matmul", "a", lambda m: (m.empty(0, 3), m.x(3, 2))),
    "transpose 3-D": ("transpose", "a", lambda m: (m.x(2, 3, 4),)),
    "transpose 1-D": ("transpose", "a", lambda m: (m.x(5),)),
    "add b neither shape nor row": ("add", "b", lambda m: (m.x(2, 3), m.x(2))),
    "add b transposed": ("add", "b", lambda m: (m.x(2, 3), m.x(3, 2))),
    "add b float64": ("add", "b", lambda m: (m.x(2, 3), m.float64(2, 3))),
    "mul b wrong shape": ("mul", "b", lambda m: (m.x(2, 3), m.x(3, 3))),
    "scale s nan": ("scale", "s", lambda m: (m.x(2, 3), NAN)),
    "scale a float64": ("scale", "a", lambda m: (m.float64(2, 3), 2.0)),
    "sum_rows 1-D": ("sum_rows", "x", lambda m: (m.x(5),)),
    "sum_rows zero-size": ("sum_rows", "x", lambda m: (m.empty(0, 4),)),
    # dense
    "linear_forward inner dims differ": (
        "linear_forward", "w", lambda m: (m.x(4, 3), m.x(2, 5), m.x(2))),
    "linear_forward b wrong length": (
        "linear_forward", "b", lambda m: (m.x(4, 3), m.x(2, 3), m.x(3))),
    "linear_forward x 1-D": ("linear_forward", "x", lambda m: (m.x(3), m.x(2, 3), m.x(2))),
    "linear_forward w float64": (
        "linear_forward", "w", lambda m: (m.x(4, 3), m.float64(2, 3), m.x(2))),
    "linear_backward dy wrong columns": (
        "linear_backward", "dy", lambda m: (m.x(4, 3), m.x(2, 3), m.x(4, 3))),
    "linear_backward dy wrong rows": (
        "linear_backward", "dy", lambda m: (m.x(4, 3), m.x(2, 3), m.x(5, 2))),
    # activations
    "relu float64": ("relu", "x", lambda m: (m.float64(3, 4),)),
    "relu zero-size": ("relu", "x", lambda m: (m.empty(3, 0),)),
    "relu_backward dy mismatch": ("relu_backward", "dy", lambda m: (m.x(3, 4), m.x(4, 3))),
    "leaky_relu alpha inf": ("leaky_relu", "alpha", lambda m: (m.x(3), math.inf)),
    "leaky_relu_backward dy mismatch": (
        "leaky_relu_backward", "dy", lambda m: (m.x(3, 4), m.x(3, 5), 0.1)),
    "sigmoid float64": ("sigmoid", "x", lambda m: (m.float64(2, 2),)),
    "sigmoid_backward dy mismatch": ("sigmoid_backward", "dy", lambda m: (m.x(2, 3), m.x(3))),
    "tanh zero-size": ("tanh", "x", lambda m: (m.empty(0,),)),
    "tanh_backward dy mismatch": ("tanh_backward", "dy", lambda m: (m.x(2, 3), m.x(2, 4))),
    "softmax 1-D": ("softmax", "x", lambda m: (m.x(5),)),
    "softmax 3-D": ("softmax", "x", lambda m: (m.x(2, 3, 4),)),
    "softmax_backward dy mismatch": ("softmax_backward", "dy", lambda m: (m.x(2, 3), m.x(3, 2))),
    "log_softmax 1-D": ("log_softmax", "x", lambda m: (m.x(4),)),
    "log_softmax_backward dy mismatch": (
        "log_softmax_backward", "dy", lambda m: (m.x(2, 3), m.x(2, 4))),
    # losses
    "mse_loss target mismatch": ("mse_loss", "target", lambda m: (m.x(3, 4), m.x(4, 3))),
    "mse_loss_backward target mismatch": (
        "mse_loss_backward", "target", lambda m: (m.x(3, 4), m.x(3))),
    "cross_entropy label too large": (
        "cross_entropy_loss", "labels", lambda m: (m.x(3, 4), m.ints([0, 4, 1]))),
    "cross_entropy label negative": (
        "cross_entropy_loss", "labels", lambda m: (m.x(3, 4), m.ints([0, -1, 2]))),
    "cross_entropy float labels": ("cross_entropy_loss", "labels", lambda m: (m.x(3, 4), m.x(3))),
    "cross_entropy labels wrong length": (
        "cross_entropy_loss", "labels", lambda m: (m.x(3, 4), m.ints([0, 1]))),
    "cross_entropy logits 1-D": (
        "cross_entropy_loss", "logits", lambda m: (m.x(4), m.ints([0, 1, 2, 3]))),
    "cross_entropy_backward label too large": (
        "cross_entropy_loss_backward", "labels", lambda m: (m.x(2, 3), m.ints([3, 0]))),
    "bce targets mismatch": ("bce_with_logits_loss", "targets", lambda m: (m.x(3, 4), m.x(4, 3))),
    "bce_backward targets mismatch": (
        "bce_with_logits_loss_backward", "targets", lambda m: (m.x(3, 4), m.positive(3, 5))),
    "hinge label too large": ("hinge_loss", "labels", lambda m: (m.x(2, 3), m.ints([1, 3]))),
    "hinge float labels": ("hinge_loss", "labels", lambda m: (m.x(2, 3), m.x(2))),
    "hinge margin nan": ("hinge_loss", "margin", lambda m: (m.x(2, 3), m.ints([1, 2]), NAN)),
    "hinge_backward label negative": (
        "hinge_loss_backward", "labels", lambda m: (m.x(2, 3), m.ints([-1, 2]))),
    # convolution
    "im2col x 3-D": ("im2col", "x", lambda m: (m.x(2, 5, 5), 2, 2, 1, 0)),
    "im2col stride 0": ("im2col", "stride", lambda m: (m.x(1, 1, 5, 5), 3, 3, 0, 0)),
    "im2col stride negative": ("im2col", "stride", lambda m: (m.x(1, 1, 5, 5), 3, 3, -1, 0)),
    "im2col padding negative": ("im2col", "padding", lambda m: (m.x(1, 1, 5, 5), 3, 3, 1, -1)),
    "im2col kernel 0": ("im2col", "kh", lambda m: (m.x(1, 1, 5, 5), 0, 3, 1, 0)),
    "im2col kernel larger than the input": (
        "im2col", "kh|padding|stride", lambda m: (m.x(1, 1, 3, 3), 5, 2, 1, 0)),
    "im2col padding too small for the kernel": (
        "im2col", "kw|padding|stride", lambda m: (m.x(1, 2, 3, 2), 3, 5, 1, 1)),
    "im2col float64": ("im2col", "x", lambda m: (m.float64(1, 1, 4, 4), 2, 2, 1, 0)),
    "col2im cols wrong shape": (
        "col2im", "cols", lambda m: (m.x(1, 9, 5), (1, 1, 4, 4), 3, 3, 1, 0)),
    "col2im x_shape 3 entries": (
        "col2im", "x_shape", lambda m: (m.x(1, 9, 4), (1, 4, 4), 3, 3, 1, 0)),
    "col2im x_shape zero": (
        "col2im", "x_shape", lambda m: (m.x(1, 9, 4), (1, 1, 0, 4), 3, 3, 1, 0)),
    "col2im x_shape wrong channels": (
        "col2im", "x_shape|cols", lambda m: (m.x(1, 9, 4), (1, 2, 4, 4), 3, 3, 1, 0)),
    "conv2d_forward channels differ": (
        "conv2d_forward", "w", lambda m: (m.x(2, 3, 5, 5), m.x(4, 2, 3, 3), m.x(4))),
    "conv2d_forward b wrong length": (
        "conv2d_forward", "b", lambda m: (m.x(2, 3, 5, 5), m.x(4, 3, 3, 3), m.x(3))),
    "conv2d_forward x 3-D": (
        "conv2d_forward", "x", lambda m: (m.x(3, 5, 5), m.x(4, 3, 3, 3), m.x(4))),
    "conv2d_forward stride 0": (
        "conv2d_forward", "stride", lambda m: (m.x(1, 3, 5, 5), m.x(4, 3, 3, 3), m.x(4), 0, 0)),
    "conv2d_forward padding negative": (
        "conv2d_forward", "padding",
        lambda m: (m.x(1, 3, 5, 5), m.x(4, 3, 3, 3), m.x(4), 1, -1)),
    "conv2d_forward kernel larger than the input": (
        "conv2d_forward", "w|padding|stride",
        lambda m: (m.x(1, 3, 4, 4), m.x(2, 3, 7, 7), m.x(2), 1, 1)),
    "conv2d_forward b float64": (
        "conv2d_forward", "b", lambda m: (m.x(1, 3, 5, 5), m.x(4, 3, 3, 3), m.float64(4))),
    "conv2d_backward dy wrong shape": (
        "conv2d_backward", "dy", lambda m: (m.x(2, 3, 5, 5), m.x(4, 3, 3, 3), m.x(2, 4, 4, 4))),
    "conv2d_backward stride negative": (
        "conv2d_backward", "stride",
        lambda m: (m.x(2, 3, 5, 5), m.x(4, 3, 3, 3), m.x(2, 4, 3, 3), -2, 0)),
    "conv2d_backward need_dx a string": (
        "conv2d_backward", "need_dx",
        lambda m: (m.x(2, 3, 5, 5), m.x(4, 3, 3, 3), m.x(2, 4, 3, 3), 1, 0, "no")),
    # pooling
    "maxpool2d_forward k 0": ("maxpool2d_forward", "k", lambda m: (m.x(1, 1, 4, 4), 0, 1)),
    "maxpool2d_forward stride negative": (
        "maxpool2d_forward", "stride", lambda m: (m.x(1, 1, 4, 4), 2, -1)),
    "maxpool2d_forward k larger than the input": (
        "maxpool2d_forward", "k|stride", lambda m: (m.x(1, 1, 3, 3), 4, 1)),
    "maxpool2d_forward x 3-D": ("maxpool2d_forward", "x", lambda m: (m.x(3, 4, 4), 2, 2)),
    "maxpool2d_forward float64": (
        "maxpool2d_forward", "x", lambda m: (m.float64(1, 1, 4, 4), 2, 2)),
    "maxpool2d_backward x_shape inconsistent with dy": (
        "maxpool2d_backward", "x_shape|dy",
        lambda m: (m.x(1, 1, 2, 2), m.ints([[[[0, 2], [8, 10]]]]), (1, 1, 8, 8), 2, 2)),
    "maxpool2d_backward x_shape 3 entries": (
        "maxpool2d_backward", "x_shape",
        lambda m: (m.x(1, 1, 2, 2), m.ints([[[[0, 2], [8, 10]]]]), (1, 4, 4), 2, 2)),
    "maxpool2d_backward float argmax": (
        "maxpool2d_backward", "argmax",
        lambda m: (m.x(1, 1, 2, 2), m.x(1, 1, 2, 2), (1, 1, 4, 4), 2, 2)),
    "maxpool2d_backward argmax wrong shape": (
        "maxpool2d_backward", "argmax",
        lambda m: (m.x(1, 1, 2, 2), m.ints([[[[0, 2]]]]), (1, 1, 4, 4), 2, 2)),
    "avgpool2d_forward k larger than the input": (
        "avgpool2d_forward", "k|stride", lambda m: (m.x(2, 1, 3, 5), 4, 1)),
    "avgpool2d_forward stride 0": (
        "avgpool2d_forward", "stride", lambda m: (m.x(1, 1, 4, 4), 2, 0)),
    "avgpool2d_backward x_shape inconsistent with dy": (
        "avgpool2d_backward", "x_shape|dy", lambda m: (m.x(1, 1, 3, 3), (1, 1, 4, 4), 2, 2)),
    "avgpool2d_backward x_shape not ints": (
        "avgpool2d_backward", "x_shape", lambda m: (m.x(1, 1, 2, 2), (1, 1, 4.0, 4), 2, 2)),
    # normalization
    "batchnorm_forward gamma wrong length": (
        "batchnorm_forward", "gamma",
        lambda m: (m.x(4, 3), m.x(2), m.x(3), m.x(3), m.positive(3), True)),
    "batchnorm_forward beta wrong length": (
        "batchnorm_forward", "beta",
        lambda m: (m.x(2, 3, 4, 4), m.x(3), m.x(4), m.x(3), m.positive(3), True)),
    "batchnorm_forward running_mean wrong length": (
        "batchnorm_forward", "running_mean",
        lambda m: (m.x(4, 3), m.x(3), m.x(3), m.x(4), m.positive(3), False)),
    "batchnorm_forward running_var wrong length": (
        "batchnorm_forward", "running_var",
        lambda m: (m.x(4, 3), m.x(3), m.x(3), m.x(3), m.positive(2), True)),
    "batchnorm_forward x 3-D": (
        "batchnorm_forward", "x",
        lambda m: (m.x(4, 3, 5), m.x(3), m.x(3), m.x(3), m.positive(3), True)),
    "batchnorm_forward one value per channel": (
        "batchnorm_forward", "x",
        lambda m: (m.x(1, 3), m.x(3), m.x(3), m.x(3), m.positive(3), True)),
    "batchnorm_forward momentum above 1": (
        "batchnorm_forward", "momentum",
        lambda m: (m.x(4, 3), m.x(3), m.x(3), m.x(3), m.positive(3), True, 1.5)),
    "batchnorm_forward eps negative": (
        "batchnorm_forward", "eps",
        lambda m: (m.x(4, 3), m.x(3), m.x(3), m.x(3), m.positive(3), True, 0.1, -1e-5)),
    "batchnorm_forward gamma float64": (
        "batchnorm_forward", "gamma",
        lambda m: (m.x(4, 3), m.float64(3), m.x(3), m.x(3), m.positive(3), True)),
    "batchnorm_backward gamma wrong length": (
        "batchnorm_backward", "gamma",
        lambda m: (m.x(4, 3), m.x(4, 3), m.x(4), (m.x(3), m.positive(3)))),
    "batchnorm_backward dy mismatch": (
        "batchnorm_backward", "dy",
        lambda m: (m.x(4, 2), m.x(4, 3), m.x(3), (m.x(3), m.positive(3)))),
    "batchnorm_backward saved wrong length": (
        "batchnorm_backward", "saved",
        lambda m: (m.x(4, 3), m.x(4, 3), m.x(3), (m.x(2), m.positive(2)))),
    # regularization
    "dropout_forward p 1": ("dropout_forward", "p", lambda m: (m.x(3, 4), 1.0, 0)),
    "dropout_forward p negative": ("dropout_forward", "p", lambda m: (m.x(3, 4), -0.1, 0)),
    "dropout_forward p nan": ("dropout_forward", "p", lambda m: (m.x(3, 4), NAN, 0)),
    "dropout_forward seed negative": ("dropout_forward", "seed", lambda m: (m.x(3, 4), 0.5, -1)),
    "dropout_forward float64": ("dropout_forward", "x", lambda m: (m.float64(3, 4), 0.5, 0)),
    "dropout_backward mask mismatch": (
        "dropout_backward", "mask", lambda m: (m.x(3, 4), m.x(4, 3), 0.5)),
    "dropout_backward p 1": ("dropout_backward", "p", lambda m: (m.x(3, 4), m.x(3, 4), 1.0)),
    # optimizers
    "sgd_step g mismatch": ("sgd_step", "g", lambda m: (m.x(3, 4), m.x(4, 3), 0.1)),
    "sgd_step lr nan": ("sgd_step", "lr", lambda m: (m.x(3, 4), m.x(3, 4), NAN)),
    "sgd_step weight_decay negative": (
        "sgd_step", "weight_decay", lambda m: (m.x(3), m.x(3), 0.1, -0.5)),
    "sgd_step p float64": ("sgd_step", "p", lambda m: (m.float64(3, 4), m.x(3, 4), 0.1)),
    "sgd_step p not contiguous": ("sgd_step", "p", lambda m: (m.strided(3, 4), m.x(3, 4), 0.1)),
    "momentum_step v mismatch": (
        "momentum_step", "v", lambda m: (m.x(3, 4), m.x(3, 4), m.x(3, 5), 0.1, 0.9)),
    "momentum_step v not contiguous": (
        "momentum_step", "v", lambda m: (m.x(3, 4), m.x(3, 4), m.strided(3, 4), 0.1, 0.9)),
    "momentum_step momentum negative": (
        "momentum_step", "momentum", lambda m: (m.x(3), m.x(3), m.x(3), 0.1, -0.9)),
    "rmsprop_step s mismatch": ("rmsprop_step", "s", lambda m: (m.x(5), m.x(5), m.x(4), 0.01)),
    "rmsprop_step alpha above 1": (
        "rmsprop_step", "alpha", lambda m: (m.x(5), m.x(5), m.positive(5), 0.01, 1.5)),
    "adam_step m mismatch": (
        "adam_step", "m", lambda m: (m.x(2, 3), m.x(2, 3), m.x(3, 2), m.x(2, 3), 1, 0.01)),
    "adam_step v mismatch": (
        "adam_step", "v", lambda m: (m.x(2, 3), m.x(2, 3), m.x(2, 3), m.x(2, 2), 1, 0.01)),
    "adam_step t 0": (
        "adam_step", "t", lambda m: (m.x(2, 3), m.x(2, 3), m.x(2, 3), m.positive(2, 3), 0, 0.01)),
    "adam_step beta1 1": (
        "adam_step", "beta1",
        lambda m: (m.x(2, 3), m.x(2, 3), m.x(2, 3), m.positive(2, 3), 1, 0.01, 1.0)),
    # initialization
    "xavier_uniform zero in shape": ("xavier_uniform", "shape", lambda m: ((0, 3), 1)),
    "xavier_uniform empty shape": ("xavier_uniform", "shape", lambda m: ((), 1)),
    "xavier_uniform seed negative": ("xavier_uniform", "seed", lambda m: ((3, 4), -1)),
    "he_normal zero in shape": ("he_normal", "shape", lambda m: ((3, 0, 2, 2), 1)),
    "he_normal seed not an int": ("he_normal", "seed", lambda m: ((3, 4), 1.5)),
}


# The cases whose argument is of the wrong kind (TypeError); every other case is a ValueError.
WRONG_KIND = {
    name for name in CASES if "float64" in name or name.endswith(("float labels", "float argmax"))
} | {"he_normal seed not an int", "avgpool2d_backward x_shape not ints",
     "conv2d_backward need_dx a string"}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_raises_an_error_naming_the_argument(tier, case):
    op, argument, build = CASES[case]
    if tier.NAME == "python" and ("float64" in case or "contiguous" in case):
        pytest.skip("stage 1 has no float32 (its floats are float64) and no memory layout")
    args = build(Make(tier, np.random.default_rng()))
    with pytest.raises(TypeError if case in WRONG_KIND else ValueError) as error:
        getattr(tier, op)(*args)
    message = str(error.value)
    assert message.startswith(f"{op}: "), f"the message does not start with '{op}: ': {message}"
    # The argument as a word of its own ("s" must not match the "s" of "x's").
    assert re.search(rf"(?<![\w'])(?:{argument})\b", message), (
        f"the message does not name {argument}: {message}"
    )
