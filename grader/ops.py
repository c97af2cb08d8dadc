"""How the grader checks each op of the contract (contract/ops.py): inputs, sizes, costs.

The contract says what an op is (its arguments, outputs, defaults, and for a backward op its
forward); this table says how the grader checks it, one entry per op of the contract, keyed by
its name. A forward op (or any op with no gradient to check) has a `build` function
`(rng, size) -> {argument name: value}` (grader/builders.py) and `cases`, the sizes its
correctness is checked at. A backward op's arguments come from its forward's (see `SOURCES`);
without cases of its own it takes its forward's. The cases include batch 1, odd sizes and sizes
that are not multiples of any tile size (8, 16, 32, ...), every argument across its domain and
every optional argument both passed and left at its default (builders.DEFAULT); `tier_cases`
adds, per kind of tier, lengths past any block or warp. The speed sizes are in grader/ladders.py,
the costs in grader/costs.py. `OPS` joins the two: a grader `Op` is the contract's with its checks.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, fields

import numpy as np

import contract

from .builders import (
    DEFAULT,
    EXTREME,
    build_attention,
    build_batchnorm,
    build_bce,
    build_broadcast,
    build_conv,
    build_conv_bias_relu_pool,
    build_cross_entropy,
    build_dropout,
    build_elementwise,
    build_gelu,
    build_hinge,
    build_im2col,
    build_init,
    build_int8_conv2d,
    build_int8_conv2d_to_int8,
    build_int8_linear,
    build_int8_linear_to_int8,
    build_layernorm,
    build_linear,
    build_logits,
    build_matmul,
    build_matrix,
    build_maxpool_int8,
    build_mse,
    build_optimizer,
    build_pool,
    build_quantize,
    build_scale,
)
from .costs import (
    pooled_elements,
    work_arrays,
    work_attention,
    work_conv,
    work_conv_bias_relu_pool,
    work_im2col,
    work_init,
    work_int8_conv2d,
    work_int8_linear,
    work_int8_to_int8,
    work_linear,
    work_matmul,
    work_maxpool,
    work_maxpool_int8,
    work_memory,
    work_quantize,
    work_written,
)
from .terms import TERMS, Terms


@dataclass(frozen=True)
class Op(contract.Op):
    """One op of the contract (its name, params, outputs, ...) with how the grader checks it."""

    build: Callable | None = None  # (rng, size) -> args; None for ops derived from a forward
    cases: tuple = ()  # correctness sizes (for a derived op: sizes given to the forward's builder)
    # Correctness sizes added per kind of tier ("python", "cpu", "simulated", "gpu", see
    # `correctness_cases`): lengths past any block or warp, too slow for every tier to share.
    tier_cases: dict = field(default_factory=dict)
    grad_cases: tuple = ()  # sizes for the finite-difference check (default: the first two cases)
    accum: Callable = field(default=lambda args: 1)  # the longest sum behind one output element
    tol: float = 1.0  # extra tolerance factor for ill-conditioned ops
    # Whether the long sums behind an output add terms of one sign (exponentials, squares, the
    # terms of a loss): their rounding is then relative to the result (grader/tolerance.py).
    positive_sum: bool = False
    # For an op ending in a subtraction that may cancel: the size of its operands, which its
    # rounding is relative to (grader/terms.py); None: relative to the result.
    terms: Terms | None = None
    work: Callable = work_arrays  # args -> (flops or None, bytes moved), grader/costs.py
    dist: tuple = ()  # sizes for the distribution check (init, dropout)
    note: Callable | None = None  # size -> how a case was built, for its messages (ties), or None
    # Why repeated runs on the same inputs may differ (float atomics sum in arrival order), or
    # "" when they must agree bit for bit (grader/determinism.py).
    nondeterministic: str = ""
    # Whether `work`'s operations are int8 multiply-adds: on a GPU they are bounded by the int8
    # ceiling (grader/ceilings.py), which tensor cores put far above FP32's.
    integer_work: bool = False


def _optimizer(name, **extra):
    """The checks of an optimizer step: its builder, cases and tails."""
    return dict(build=build_optimizer(name), cases=OPTIMIZER_CASES,
                tier_cases=per_tier(TAILS, lambda shape: (shape, 1)), **extra)  # fmt: skip


ONE_VALUE = lambda args: 1  # noqa: E731 -- what a loss writes: one float (the grader's cost model)

# Shapes past any block (256, 1024) and warp (32) in length, none a multiple of either: the
# threads of a kernel that stops at a block's edge leave the NaN the grader fills outputs with.
# A real GPU also gets more rows than a grid's y dimension holds (65535). Every tier gets tails;
# rows longer than any block (4097, 6151; 50257, a vocabulary) where the reference is fast enough.
TAILS = {
    "python": ((3, 1037),),
    "cpu": ((3, 1037),),
    "simulated": ((3, 1037),),
    "gpu": ((3, 1037), (70001, 3)),
}
ROWS = {
    "python": ((1, 6151),),  # a third of the row past 4096: a sum that stops there is far off
    "cpu": ((3, 4097), (2, 50257)),
    "simulated": ((1, 6151),),
    "gpu": ((3, 4097), (2, 50257), (70001, 3)),
}
# Long sums down the rows (sum_rows, batchnorm's statistics) and along K (matmul, linear).
COLUMNS = {
    "python": ((4099, 3),),
    "cpu": ((4099, 3),),
    "simulated": ((1037, 3),),
    "gpu": ((4099, 3), (70001, 3)),
}
# (The simulator's tiled matmul takes minutes at such a K: its cases' K of 65 spans three tiles.)
INNER = {"python": (4097,), "cpu": (4097,), "simulated": (), "gpu": (4097,)}


def per_tier(shapes, size):
    """{tier kind: sizes}: `size(shape)` for each of the kind's `shapes`."""
    return {kind: tuple(size(shape) for shape in found) for kind, found in shapes.items()}


def correctness_cases(op, kind):
    """The sizes `op` is checked at on a tier of `kind`: its cases, then its tier cases."""
    return op.cases + op.tier_cases.get(kind, ())


# The last case of the smooth ops and the losses spans |x| up to 1e3 (builders.EXTREME).
ELEMENTWISE_CASES = (
    ((1, 7), 1.0),
    ((3, 5, 7), 2.0),
    ((2, 3, 4, 5), 1.0),
    ((4, 33), 100.0),
    ((5, 11), EXTREME),
)
KINKED_CASES = (((1, 7), 1.0), ((3, 5, 7), 2.0), ((2, 3, 4, 5), 1.0), ((17, 9), 10.0))
# (shape, scale, alpha): alpha across its domain, any finite number (0 and 1 its edges; above 1
# max(x, alpha * x) is no longer leaky ReLU)
LEAKY_CASES = (
    ((1, 7), 1.0, 0.1),
    ((3, 5, 7), 2.0, 2.5),
    ((2, 3, 4, 5), 1.0, 0.0),
    ((17, 9), 10.0, 1.0),
    ((4, 6), 1.0, -0.5),
)
BROADCAST_CASES = (
    ((3, 7), False),
    ((3, 7), True),
    ((1, 5), True),
    ((2, 3, 5), False),
    ((2, 3, 5), True),
)
ROWWISE_CASES = ((1, 10, 1.0, 0.0), (7, 13, 3.0, 0.0), (4, 9, 50.0, 1000.0), (5, 11, EXTREME, 0.0))
CONV_CASES = (  # (n, c, h, w, k, r, s, stride, padding)
    (1, 1, 5, 5, 1, 3, 3, 1, 0),
    (2, 3, 7, 6, 4, 3, 3, 1, 1),
    (2, 2, 10, 8, 3, 3, 2, 2, 1),  # stride 2 leaves a row over: OH = 9 // 2 + 1
    (1, 3, 6, 7, 2, 5, 5, 1, 2),
    (1, 16, 4, 3, 16, 3, 3, 1, 1),  # 16 channels and filters: stage 4's Winograd, forward, dx, dw
)
# conv2d's own: stride and padding left at their defaults, both or one; need_dx=False (the
# backward's tenth entry) on a batch of two with stride 2
CONV2D_CASES = (
    (1, 1, 5, 5, 1, 3, 3, DEFAULT, DEFAULT),
    CONV_CASES[1],
    (1, 3, 6, 7, 2, 5, 5, DEFAULT, 2),
    (*CONV_CASES[2], False),
    CONV_CASES[4],
)
# Inference's fused conv + bias + ReLU + max-pool: (n, c, h, w, k, r, s, stride, padding, pool).
# Every optional argument left at its default once; convolutions whose OH or OW leave a row or a
# column no pooling window covers (7 // 2, 7 // 3); a stride of 2 under the pool; LeNet-5's
# second layer; output channels past any multiple of 8 or 16 (a SIMD width).
CONV_BIAS_RELU_POOL_CASES = (
    (1, 1, 5, 5, 1, 3, 3, DEFAULT, DEFAULT, DEFAULT),
    (2, 3, 7, 6, 4, 3, 3, 1, 1, 2),
    (2, 2, 10, 8, 3, 3, 2, 2, 1, 2),
    (1, 3, 6, 7, 2, 5, 5, DEFAULT, 2, 3),
    (1, 16, 4, 3, 16, 3, 3, 1, 1, 1),
    (1, 6, 14, 14, 16, 5, 5, 1, 0, 2),
    (1, 5, 13, 11, 19, 3, 3, 1, 1, 2),
    # 3x3 at stride 1 pooled 2x2, from 2 images, 8 channels and 17 filters up: where stage 3
    # switches to Winograd, whose transforms mix a patch (an infinity must not spread)
    (2, 8, 9, 9, 17, 3, 3, 1, 1, 2),
)
# Past the tiles and channel chunks of a GPU's kernel (and C's SIMD rows): LeNet-5's first layer
# (several tiles down the plane, the last one partial) and the Fashion CNN's second with 130
# filters (a partial last group). Too slow for stage 1 and for numba's simulator.
CONV_BIAS_RELU_POOL_LAYERS = ((2, 1, 28, 28, 6, 5, 5, 1, 2, 2), (2, 64, 13, 13, 130, 3, 3, 1, 0, 2))
CONV_GRAD_CASES = ((2, 2, 5, 6, 3, 3, 3, 1, 1), (1, 2, 8, 6, 2, 3, 2, 2, 2))
POOL_CASES = (  # (n, c, h, w, k, stride, ties)
    (1, 1, 4, 4, 2, 2, False),
    (2, 3, 7, 6, 2, 2, False),
    (2, 2, 7, 7, 3, 2, False),
    (1, 2, 5, 5, 3, 1, False),
)
MAXPOOL_CASES = POOL_CASES + ((2, 2, 6, 7, 3, 2, True),)  # ties: the first in window order wins
# (shape, training, momentum[, eps[, spread of x]]); a batch of 1 needs H*W > 1 for a variance.
# An eps of the variances' size, and variances of the default eps's: eps outside the root fails.
BATCHNORM_CASES = (
    ((4, 5), True, 1.0),
    ((2, 3, 4, 5), True, 0.2, 0.5, 1.0),
    ((1, 3, 3, 5), True, DEFAULT),
    ((3, 2, 5, 3), False, 0.1, 1e-3, 0.1),
    ((6, 4), True, DEFAULT, DEFAULT, 0.01),
)
# (shape, eps[, spread of x]): x [N, D] or [N, T, D]; a batch of 1, a sequence of 1, D of 1 (every
# x_hat 0: y is beta), D past a warp; an eps as large as the variances, variances near the default.
LAYERNORM_CASES = (
    ((1, 7), DEFAULT),
    ((2, 3, 9), 0.5, 1.0),
    ((5, 1, 33), DEFAULT),
    ((6, 1), DEFAULT),
    ((4, 5), 1e-4, 0.01),
    ((3, 4, 2), 0.2),
)
# (shape, scale, approximate): both forms, and the default, up to |x| = 1e3 (the tanh form's
# x^3 reaches 1e9; exp(-x^2 / 2) of the exact backward underflows to 0).
GELU_CASES = (
    ((1, 7), 1.0, DEFAULT),
    ((3, 5, 7), 2.0, "tanh"),
    ((2, 3, 4, 5), 1.0, "none"),
    ((4, 33), 100.0, "tanh"),
    ((5, 11), EXTREME, "none"),
    ((5, 11), EXTREME, "tanh"),
    ((17, 9), 5.0, DEFAULT),
)
# (b, h, n, m, d, causal, scale[, spread of q and k]): one query and one key (y is v), N < M and
# N > M with the mask (a query past the last key sees them all), D off every power of two, scale
# given and left out (1/sqrt(D)), and scores in the hundreds (the last: exp(S) overflows float32
# unless shifted by the row's largest score; P is nearly one-hot).
ATTENTION_CASES = (
    (1, 1, 1, 1, 1, DEFAULT, DEFAULT),
    (2, 3, 5, 7, 3, True, DEFAULT),
    (1, 2, 9, 4, 5, True, 0.3),
    (2, 1, 13, 13, 24, False, 0.25),
    (1, 2, 17, 33, 7, DEFAULT, 1.7),
    (1, 1, 6, 11, 5, True, 2.0, 8.0),
)
# Two small cases for the finite differences: causal with N != M, and a scale given on a square.
ATTENTION_GRAD_CASES = ((2, 2, 5, 7, 3, True, DEFAULT), (1, 2, 6, 6, 5, False, 0.6))
# Sequences longer than a C kernel's block of queries and of keys (and a warp), N != M, causal
# and not: stage 1 as the reference manages 300 keys; the CPU and GPU tiers get a ViT's and a
# language model's lengths at a head dimension of 64 and one off every power of two.
ATTENTION_TAILS = {
    "python": ((1, 1, 3, 300, 5, True, DEFAULT), (1, 1, 70, 4, 3, False, DEFAULT)),
    "cpu": ((2, 3, 197, 197, 64, False, DEFAULT), (1, 2, 300, 257, 40, True, 0.2)),
    "simulated": ((1, 1, 3, 70, 5, True, DEFAULT),),
    "gpu": ((2, 3, 197, 197, 64, False, DEFAULT), (1, 2, 300, 257, 40, True, 0.2),
            (1, 1, 1037, 1029, 64, True, DEFAULT)),
}
OPTIMIZER_CASES = (((7,), 0), ((3, 5), 1), ((2, 3, 4), 0), ((1, 9), 1), ((2, 5), 2))
INIT_CASES = ((7, 5), (16, 6, 5, 5), (10,), (3, 1, 3, 3))


LONG_ROWS = per_tier(ROWS, lambda shape: (*shape, 3.0, 0.0))
# Layer norm sums along rows (its statistics, dx) and down them (dgamma, dbeta): both lengths.
# The simulator runs a block's barriers as Python threads meeting, a few per row: 1037 rows took
# two minutes a call there, so it gets 67 rows (past a warp's 32, and a prime: no block count
# divides them).
LAYERNORM_TAILS = {kind: tuple((shape, DEFAULT) for shape in ROWS[kind] + COLUMNS[kind])
                   for kind in ROWS} | {"simulated": (((1, 6151), DEFAULT), ((67, 3), DEFAULT))}
GELU_TAILS = {kind: tuple((shape, 3.0, form) for shape in shapes for form in ("none", "tanh"))
              for kind, shapes in TAILS.items()}  # fmt: skip


def tie_note(size):
    """What a failing max-pooling case built with ties must tell the learner."""
    if size[-1]:
        return "this case is built with ties: the first maximum in window order wins"
    return None


# fmt: off
CHECKS = {  # {op name: how it is checked}, one entry per op of the contract
    # linear algebra
    "matmul": dict(build=build_matmul, cases=((1, 7, 5), (5, 3, 7), (17, 33, 9), (33, 65, 17)),
                   tier_cases=per_tier(INNER, lambda k: (2, k, 3)),
                   accum=lambda a: a["a"].shape[1], work=work_matmul),
    "transpose": dict(build=build_matrix("a"), cases=((1, 7), (13, 5), (33, 17)),
                      tier_cases=per_tier(TAILS, lambda shape: shape)),
    "swap_middle_axes": dict(build=build_matrix("x"),
                             cases=((1, 1, 1, 1), (2, 3, 5, 7), (3, 17, 4, 33), (2, 65, 3, 1))),
    "add": dict(build=build_broadcast, cases=BROADCAST_CASES,
                tier_cases=per_tier(TAILS, lambda shape: (shape, True))),
    "mul": dict(build=build_broadcast, cases=BROADCAST_CASES,
                tier_cases=per_tier(TAILS, lambda shape: (shape, False))),
    "scale": dict(build=build_scale, cases=((1, 7), (13, 5), (2, 3, 5)),
                  tier_cases=per_tier(TAILS, lambda shape: shape)),
    "sum_rows": dict(build=build_matrix("x"), cases=((1, 7), (13, 5), (65, 17)),
                     tier_cases=per_tier(COLUMNS, lambda shape: shape),
                     accum=lambda a: a["x"].shape[0],
                     work=work_written(lambda a: a["x"].shape[1])),
    # dense
    "linear_forward": dict(build=build_linear, cases=((1, 7, 3), (5, 13, 9), (17, 33, 10)),
                           accum=lambda a: a["x"].shape[1],
                           tier_cases=per_tier(INNER, lambda i: (2, i, 3)),
                           work=work_linear(1)),
    "linear_backward": dict(accum=lambda a: max(a["dy"].shape), work=work_linear(2)),
    # activations
    "relu": dict(build=build_elementwise("kinked"), cases=KINKED_CASES,
                 tier_cases=per_tier(TAILS, lambda shape: (shape, 1.0)), work=work_memory(2)),
    "relu_backward": dict(),
    "leaky_relu": dict(build=build_elementwise("leaky"), cases=LEAKY_CASES,
                       tier_cases=per_tier(TAILS, lambda shape: (shape, 1.0, 1.5))),
    "leaky_relu_backward": dict(),
    "sigmoid": dict(build=build_elementwise("smooth"), cases=ELEMENTWISE_CASES,
                    tier_cases=per_tier(TAILS, lambda shape: (shape, 3.0))),
    "sigmoid_backward": dict(),
    "tanh": dict(build=build_elementwise("smooth"), cases=ELEMENTWISE_CASES,
                 tier_cases=per_tier(TAILS, lambda shape: (shape, 3.0))),
    "tanh_backward": dict(),
    "softmax": dict(build=build_logits("x"), cases=ROWWISE_CASES, tier_cases=LONG_ROWS,
                    accum=lambda a: a["x"].shape[1], positive_sum=True, work=work_memory(2)),
    "softmax_backward": dict(accum=lambda a: a["y"].shape[1], positive_sum=True),
    "log_softmax": dict(build=build_logits("x"), cases=ROWWISE_CASES, tier_cases=LONG_ROWS,
                        accum=lambda a: a["x"].shape[1], positive_sum=True),
    "log_softmax_backward": dict(accum=lambda a: a["y"].shape[1], positive_sum=True,
                                 terms=TERMS["log_softmax_backward"]),
    # losses
    "mse_loss": dict(build=build_mse, accum=lambda a: a["pred"].size,
                     work=work_written(ONE_VALUE),
                     cases=(((1, 5), 1.0), ((7, 3), 1.0), ((2, 3, 4), 1.0), ((4, 6), EXTREME)),
                     tier_cases=per_tier(TAILS, lambda shape: (shape, 1.0)), positive_sum=True),
    "mse_loss_backward": dict(),
    "cross_entropy_loss": dict(build=build_cross_entropy, cases=ROWWISE_CASES,
                               tier_cases=LONG_ROWS, accum=lambda a: a["logits"].size,
                               positive_sum=True, work=work_written(ONE_VALUE)),
    "cross_entropy_loss_backward": dict(accum=lambda a: a["logits"].shape[1], positive_sum=True,
                                        terms=TERMS["cross_entropy_loss_backward"]),
    "bce_with_logits_loss": dict(
        build=build_bce,
        cases=(((1, 5), 1.0), ((7, 3), 3.0), ((2, 3, 4), 1.0), ((4, 6), 100.0), ((3, 8), EXTREME)),
        tier_cases=per_tier(TAILS, lambda shape: (shape, 3.0)), positive_sum=True,
        accum=lambda a: a["logits"].size, work=work_written(ONE_VALUE)),
    "bce_with_logits_loss_backward": dict(),
    "hinge_loss": dict(build=build_hinge, accum=lambda a: a["scores"].size,
                       work=work_written(ONE_VALUE), positive_sum=True,
                       cases=((1, 5, 1.0), (7, 10, 3.0), (6, 4, 0.0), (5, 7, DEFAULT, EXTREME)),
                       tier_cases=per_tier(ROWS, lambda shape: (*shape, 2.0))),
    "hinge_loss_backward": dict(),
    # convolution
    "im2col": dict(build=build_im2col, cases=CONV_CASES, work=work_im2col),
    # col2im's cols is an upstream gradient of im2col's output, not that output: named by its
    # source (SOURCES), as the other backward ops' dy
    "col2im": dict(params=("dy", "x_shape", "kh", "kw", "stride", "padding"),
                   accum=lambda a: a["kh"] * a["kw"]),
    "conv2d_forward": dict(build=build_conv, cases=CONV2D_CASES,
                           accum=lambda a: int(np.prod(a["w"].shape[1:])), work=work_conv(1)),
    "conv2d_backward": dict(
        grad_cases=CONV_GRAD_CASES, work=work_conv(2),
        accum=lambda a: max(a["dy"].shape[0] * a["dy"].shape[2] * a["dy"].shape[3],
                            a["dy"].shape[1] * a["w"].shape[2] * a["w"].shape[3])),
    # inference: conv + bias + ReLU + max-pool in one op, nothing kept for a backward
    "conv2d_bias_relu_pool": dict(
        build=build_conv_bias_relu_pool, cases=CONV_BIAS_RELU_POOL_CASES,
        accum=lambda a: int(np.prod(a["w"].shape[1:])), work=work_conv_bias_relu_pool,
        tier_cases={"cpu": CONV_BIAS_RELU_POOL_LAYERS, "gpu": CONV_BIAS_RELU_POOL_LAYERS}),
    # pooling
    "maxpool2d_forward": dict(build=build_pool("max"), cases=MAXPOOL_CASES, note=tie_note,
                              work=work_maxpool),
    "maxpool2d_backward": dict(cases=POOL_CASES),
    "avgpool2d_forward": dict(build=build_pool("avg"), cases=POOL_CASES,
                              accum=lambda a: a["k"] ** 2, work=work_written(pooled_elements)),
    "avgpool2d_backward": dict(accum=lambda a: a["k"] ** 2),
    # normalization
    "batchnorm_forward": dict(
        build=build_batchnorm, cases=BATCHNORM_CASES,
        tier_cases=per_tier(COLUMNS, lambda shape: (shape, True, 0.1)),
        accum=lambda a: a["x"].size // a["x"].shape[1], tol=4.0,
        work=work_written(lambda a: a["x"].size + 4 * a["x"].shape[1])),  # y, running, saved
    "batchnorm_backward": dict(
        cases=BATCHNORM_CASES[:3], tier_cases=per_tier(COLUMNS, lambda shape: (shape, True, 0.1)),
        accum=lambda a: a["x"].size // a["x"].shape[1], tol=10.0),
    # regularization
    "dropout_forward": dict(
        build=build_dropout, work=work_memory(3),  # x read, y and mask written
        cases=(((3, 7), 0.5), ((2, 3, 4, 5), 0.2), ((1, 9), 0.0), ((13, 11), 0.9)),
        tier_cases=per_tier(TAILS, lambda shape: (shape, 0.5)),
        dist=(((300, 200), 0.3), ((50, 40), 0.0))),
    "dropout_backward": dict(),
    # optimizers (in place)
    "sgd_step": _optimizer("sgd_step"),
    "momentum_step": _optimizer("momentum_step", work=work_memory(5)),  # 3 read, 2 written
    "rmsprop_step": _optimizer("rmsprop_step", work=work_memory(5)),
    "adam_step": _optimizer("adam_step", work=work_memory(7)),  # 4 arrays read, 3 written
    # initialization
    "xavier_uniform": dict(build=build_init, cases=INIT_CASES,
                           tier_cases=per_tier(TAILS, lambda shape: shape),
                           dist=((256, 300), (64, 32, 3, 3), (500,)), work=work_init),
    "he_normal": dict(build=build_init, cases=INIT_CASES,
                      tier_cases=per_tier(TAILS, lambda shape: shape),
                      dist=((256, 300), (64, 32, 3, 3), (500,)), work=work_init),
    # int8 inference: results exact in every tier (builders.py, "int8 inference"), so tol=0; no
    # gradients (inference only)
    "quantize_int8": dict(
        build=build_quantize, tol=0.0, work=work_quantize,
        cases=(((1, 7), 0, True), ((3, 5, 7), -5, False), ((2, 3, 4, 5), 127, True),
               ((17, 9), -128, False), ((4, 33), 40, False)),
        tier_cases=per_tier(TAILS, lambda shape: (shape, 3, False))),
    "int8_linear": dict(
        build=build_int8_linear, tol=0.0, work=work_int8_linear, integer_work=True,
        cases=((1, 7, 3, 0), (5, 13, 9, -128), (17, 33, 10, 127), (33, 65, 17, 7),
               (3, 131, 21, -3)),
        tier_cases=per_tier(INNER, lambda k: (2, k, 3, -128))),
    "int8_conv2d": dict(
        build=build_int8_conv2d, tol=0.0, work=work_int8_conv2d, integer_work=True,
        cases=tuple((*case[:9], zero) for case, zero in zip(
            CONV2D_CASES[:3] + CONV_CASES[2:3] + CONV_CASES[4:], (0, -128, 50, 127, -7),
            strict=True)),
        # C*R*S = 4113: past every SIMD width and block of the int8 GEMM's K
        tier_cases={kind: ((1, 457, 3, 4, 3, 3, 3, 1, 1, -100),)
                    for kind in ("python", "cpu", "gpu")}),
    # The _to_int8 forms: the same sums, written as the next layer's int8 codes (weights' bound
    # last: 1 or 2 gives scales of 2^-1 to 2^-3, where many results are exact halves).
    "int8_linear_to_int8": dict(
        build=build_int8_linear_to_int8, tol=0.0, work=work_int8_to_int8(work_int8_linear),
        integer_work=True,
        cases=((1, 7, 3, 0, 0, DEFAULT, 1), (5, 13, 9, -128, 3, True, 2),
               (17, 33, 10, 127, -128, False, 127), (33, 65, 17, 7, 127, True, 127),
               (3, 131, 21, -3, -20, DEFAULT, 1)),
        tier_cases=per_tier(INNER, lambda k: (2, k, 3, -128, 5, True, 127))),
    "int8_conv2d_to_int8": dict(
        build=build_int8_conv2d_to_int8, tol=0.0, work=work_int8_to_int8(work_int8_conv2d),
        integer_work=True,
        cases=((1, 1, 5, 5, 1, 3, 3, DEFAULT, DEFAULT, 0, 0, DEFAULT, 1),
               (2, 3, 7, 6, 4, 3, 3, 1, 1, -128, 10, True, 2),
               (1, 3, 6, 7, 2, 5, 5, DEFAULT, 2, 50, -128, False, 127),
               (2, 2, 10, 8, 3, 3, 2, 2, 1, 127, 127, True, 127),
               (3, 1, 20, 19, 17, 5, 5, 1, 2, -7, -50, True, 3)),
        tier_cases={kind: ((1, 457, 3, 4, 3, 3, 3, 1, 1, -100, 4, True, 127),)
                    for kind in ("python", "cpu", "gpu")}),
    "maxpool2d_int8": dict(
        build=build_maxpool_int8, tol=0.0, work=work_maxpool_int8,
        cases=((1, 1, 4, 4, 2, 2), (2, 3, 7, 6, 2, 2), (2, 2, 7, 7, 3, 2), (1, 2, 9, 11, 3, 1),
               (3, 4, 26, 26, 2, 2))),
    # attention
    "layernorm": dict(
        build=build_layernorm, cases=LAYERNORM_CASES, tier_cases=LAYERNORM_TAILS,
        accum=lambda a: a["x"].shape[-1], terms=TERMS["layernorm"],
        work=work_written(lambda a: a["x"].size + 2 * a["x"].size // a["x"].shape[-1])),  # y, saved
    "layernorm_backward": dict(accum=lambda a: max(a["x"].shape[-1],
                                                   a["x"].size // a["x"].shape[-1])),
    "gelu": dict(build=build_gelu, cases=GELU_CASES, tier_cases=GELU_TAILS),
    "gelu_backward": dict(),
    "attention": dict(
        build=build_attention, cases=ATTENTION_CASES, tier_cases=ATTENTION_TAILS,
        accum=lambda a: max(a["k"].shape[2:]), terms=TERMS["attention"],
        work=work_attention(2, lambda a: a["q"].size + a["q"].size // a["q"].shape[3])),  # y, lse
    "attention_backward": dict(
        grad_cases=ATTENTION_GRAD_CASES, accum=lambda a: max(a["q"].shape[2], *a["k"].shape[2:]),
        terms=TERMS["attention_backward"],
        work=work_attention(5, lambda a: a["q"].size + 2 * a["k"].size)),  # dq, dk, dv
}
# fmt: on


def _table(checks):
    """{name: Op} in the contract's order: each op of the contract with its checks (which may name
    an argument by its source instead, as col2im's). A backward op without cases of its own takes
    its forward's (listed before it), and its tier cases too."""
    missing = [name for name in contract.OPS if name not in checks]
    if missing:
        raise ValueError(f"grader/ops.py: CHECKS has no entry for the contract's ops {missing}")
    ops = {}
    for name, spec in contract.OPS.items():
        check = checks[name]
        if spec.forward and not check.get("cases"):
            forward = ops[spec.forward]
            check = {"tier_cases": forward.tier_cases, **check, "cases": forward.cases}
        ops[name] = Op(**{f.name: getattr(spec, f.name) for f in fields(spec)} | check)
    return ops


OPS = _table(CHECKS)

# Where a backward op's arguments come from, besides the forward's arguments and outputs:
# "dy" is a fresh random upstream gradient shaped like the forward's first output, "x_shape" the
# forward input's shape as a tuple of ints.
SOURCES = ("dy", "x_shape")
