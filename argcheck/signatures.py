"""What every op of the contract accepts (contract/CONTRACT.md), written once for every tier.

Each function below checks one op's arguments and returns them converted, in the op's argument
order (arrays as the tier's adapter converts them, scalars as Python ints, floats and bools),
followed by the sizes the op computes from them where there are any (a window's OH and OW).
A tier binds them to its adapter once (`checks = bind(adapter)`) and calls, e.g.,
`a, b = checks.matmul(a, b)` before the op's body.

The adapter says what the tier's arrays are:
- `native`: how messages name them ("nested lists", "NumPy arrays", "device arrays");
- `float_dtype`: the dtype of its float data ("float64" in stage 1, "float32" elsewhere);
- `describe(op, name, x)`: x's ArrayInfo (metadata.py), or None when x is not such an array;
- `readable(x)`: x as the op body reads it (e.g. a C-contiguous, aligned copy where it is not);
- `copy_indices(x)`: an index array (labels, argmax) as it will be validated and then used: a
  private copy where native code trusts it and runs without the GIL (another thread could change
  the caller's array between the check and the use);
- `index_range(x)`: (lowest, highest) value of that copy, as Python ints;
- `index_array(x)`: the validated copy as the op reads it (e.g. int64 for C).
"""

import functools
import math
import numbers
import types

from . import arrays, quantized
from .errors import fail, fail_type, type_name
from .limits import check_elements
from .metadata import interface_of
from .scalars import choice, flag, integer, real, seed, shape_argument
from .windows import columns_fit, conv_window, pool_window

NCHW = "N, C, H, W"
MAX_STEP = 2**63 - 1  # Adam's t: a C int64

# --- linear algebra ---------------------------------------------------------------------------


def matmul(t, a, b):
    """a [N, K], b [K, M]."""
    op = "matmul"
    a, (n, k) = arrays.array(t, op, "a", a, "N, K")
    b, (_, m) = arrays.array(t, op, "b", b, "K, M", hint=" (K: a's columns)", K=k)
    check_elements(op, "the output [N, M]", (n, m))
    return a, b


def transpose(t, a):
    """a [N, M]."""
    return arrays.array(t, "transpose", "a", a, "N, M")[0]


def _broadcast(t, a, b, op):
    """a any shape; b a's shape, or [a's last dimension] (one row added to every row)."""
    a, a_shape = arrays.array(t, op, "a", a)
    b, b_shape = arrays.array(t, op, "b", b)
    if b_shape != a_shape and b_shape != a_shape[-1:]:
        fail(op, f"b must have a's shape {list(a_shape)} or be one row of length {a_shape[-1]} "
                 f"(a's last dimension), got {list(b_shape)}")  # fmt: skip
    return a, b


add = functools.partial(_broadcast, op="add")
mul = functools.partial(_broadcast, op="mul")


def scale(t, a, s):
    """a any shape, s a finite number."""
    return arrays.array(t, "scale", "a", a)[0], real("scale", "s", s)


def sum_rows(t, x):
    """x [N, M]."""
    return arrays.array(t, "sum_rows", "x", x, "N, M")[0]


# --- dense --------------------------------------------------------------------------------------


def linear_forward(t, x, w, b):
    """x [N, I], w [O, I], b [O]."""
    op = "linear_forward"
    x, (n, i) = arrays.array(t, op, "x", x, "N, I")
    w, (o, _) = arrays.array(t, op, "w", w, "O, I", hint=" (I: x's columns)", I=i)
    b = arrays.array(t, op, "b", b, "O", hint=" (O: w's rows)", O=o)[0]
    check_elements(op, "the output [N, O]", (n, o))
    return x, w, b


def linear_backward(t, x, w, dy):
    """x [N, I], w [O, I], dy [N, O]."""
    op = "linear_backward"
    x, (n, i) = arrays.array(t, op, "x", x, "N, I")
    w, (o, _) = arrays.array(t, op, "w", w, "O, I", hint=" (I: x's columns)", I=i)
    dy = arrays.array(t, op, "dy", dy, "N, O", hint=" (the forward's output)", N=n, O=o)[0]
    return x, w, dy


# --- activations --------------------------------------------------------------------------------


def _elementwise(t, x, op):
    """x any shape."""
    return arrays.array(t, op, "x", x)[0]


def _elementwise_backward(t, first, dy, op, first_name):
    """`first` (x or the forward's output y) any shape, dy of its shape."""
    first, shape = arrays.array(t, op, first_name, first)
    return first, arrays.like(t, op, "dy", dy, first_name, shape)


def leaky_relu(t, x, alpha):
    """x any shape, alpha a finite number."""
    return arrays.array(t, "leaky_relu", "x", x)[0], real("leaky_relu", "alpha", alpha)


def leaky_relu_backward(t, x, dy, alpha):
    """x any shape, dy of its shape, alpha a finite number."""
    op = "leaky_relu_backward"
    return (*_elementwise_backward(t, x, dy, op, "x"), real(op, "alpha", alpha))


def _rows(t, x, op):
    """x [N, C], row-wise (softmax, log_softmax)."""
    return arrays.array(t, op, "x", x, "N, C")[0]


def _rows_backward(t, y, dy, op):
    """y [N, C] (the forward's output), dy of its shape."""
    y, shape = arrays.array(t, op, "y", y, "N, C")
    return y, arrays.like(t, op, "dy", dy, "y", shape)


# --- losses -------------------------------------------------------------------------------------


def _pair(t, first, second, op, names):
    """Two float arrays of one shape (any): pred and target, logits and targets."""
    first, shape = arrays.array(t, op, names[0], first)
    return first, arrays.like(t, op, names[1], second, names[0], shape)


def _scores_and_labels(t, scores, labels, op, name):
    """scores [N, C] and integer labels [N], each in [0, C)."""
    scores, (n, c) = arrays.array(t, op, name, scores, "N, C")
    labels = arrays.indices(t, op, "labels", labels, "N", c, f"class indices in [0, C={c})", N=n)
    return scores, labels


def _hinge(t, scores, labels, margin, op):
    """scores [N, C], labels [N] in [0, C), margin a finite number."""
    return (*_scores_and_labels(t, scores, labels, op, "scores"), real(op, "margin", margin))


# --- convolution ------------------------------------------------------------------------------


def im2col(t, x, kh, kw, stride, padding):
    """x [N, C, H, W] and the window; returns (x, kh, kw, stride, padding, oh, ow)."""
    op = "im2col"
    x, (n, c, h, w) = arrays.array(t, op, "x", x, NCHW)
    kh, kw, stride, padding, oh, ow = conv_window(op, h, w, kh, kw, stride, padding)
    columns_fit(op, n, c, kh, kw, oh, ow)
    return x, kh, kw, stride, padding, oh, ow


def col2im(t, cols, x_shape, kh, kw, stride, padding):
    """cols [N, C*kh*kw, OH*OW] for x_shape (N, C, H, W); returns
    (cols, x_shape, kh, kw, stride, padding, oh, ow)."""
    op = "col2im"
    n, c, h, w = x_shape = shape_argument(op, "x_shape", x_shape, NCHW)
    kh, kw, stride, padding, oh, ow = conv_window(op, h, w, kh, kw, stride, padding)
    columns_fit(op, n, c, kh, kw, oh, ow)
    known = {"N": n, "C*kh*kw": c * kh * kw, "OH*OW": oh * ow}
    cols = arrays.array(t, op, "cols", cols, "N, C*kh*kw, OH*OW", **known)[0]
    return cols, x_shape, kh, kw, stride, padding, oh, ow


def _conv(t, op, x, w, stride, padding):
    """x [N, C, H, W], w [K, C, R, S] and the window; returns (x, w, stride, padding, oh, ow),
    then N and K."""
    x, (n, c, h, width) = arrays.array(t, op, "x", x, NCHW)
    w, (k, _, r, s) = arrays.array(t, op, "w", w, "K, C, R, S", hint=" (C: x's channels)", C=c)
    _, _, stride, padding, oh, ow = conv_window(op, h, width, r, s, stride, padding, ("R", "S"))
    columns_fit(op, n, c, r, s, oh, ow)
    return (x, w, stride, padding, oh, ow), n, k


def conv2d_forward(t, x, w, b, stride, padding):
    """x [N, C, H, W], w [K, C, R, S], b [K]; returns (x, w, b, stride, padding, oh, ow)."""
    op = "conv2d_forward"
    (x, w, stride, padding, oh, ow), n, k = _conv(t, op, x, w, stride, padding)
    b = arrays.array(t, op, "b", b, "K", hint=" (K: w's output channels)", K=k)[0]
    check_elements(op, "the output [N, K, OH, OW]", (n, k, oh, ow))
    return x, w, b, stride, padding, oh, ow


def conv2d_backward(t, x, w, dy, stride, padding, need_dx):
    """x [N, C, H, W], w [K, C, R, S], dy [N, K, OH, OW]; returns
    (x, w, dy, stride, padding, need_dx, oh, ow)."""
    op = "conv2d_backward"
    (x, w, stride, padding, oh, ow), n, k = _conv(t, op, x, w, stride, padding)
    dy = arrays.array(t, op, "dy", dy, "N, K, OH, OW", hint=" (the forward's output)",
                      N=n, K=k, OH=oh, OW=ow)[0]  # fmt: skip
    return x, w, dy, stride, padding, flag(op, "need_dx", need_dx), oh, ow


def conv2d_bias_relu_pool(t, x, w, b, stride, padding, pool):
    """x [N, C, H, W], w [K, C, R, S], b [K], and a max-pooling window `pool` >= 1 over the
    convolution's [OH, OW] (stride `pool`, no padding; 1: no pooling); returns
    (x, w, b, stride, padding, pool, oh, ow): the output is [N, K, OH // pool, OW // pool]."""
    op = "conv2d_bias_relu_pool"
    (x, w, stride, padding, oh, ow), n, k = _conv(t, op, x, w, stride, padding)
    b = arrays.array(t, op, "b", b, "K", hint=" (K: w's output channels)", K=k)[0]
    pool = integer(op, "pool", pool, 1)
    for axis, size in (("height", oh), ("width", ow)):
        if size // pool < 1:
            fail(op, f"the pooled output {axis} must be >= 1, got the convolution's {size} "
                     f"// pool {pool} = 0")  # fmt: skip
    check_elements(op, "the output [N, K, PH, PW]", (n, k, oh // pool, ow // pool))
    return x, w, b, stride, padding, pool, oh, ow


# --- pooling ------------------------------------------------------------------------------------


def _pool(t, x, k, stride, op):
    """x [N, C, H, W], square window k, stride; returns (x, k, stride, oh, ow)."""
    x, (_, _, h, w) = arrays.array(t, op, "x", x, NCHW)
    return (x, *pool_window(op, h, w, k, stride))


def _pool_gradient(t, op, dy, x_shape, k, stride):
    """x_shape (N, C, H, W), the window, and dy [N, C, OH, OW]; returns
    (dy, x_shape, k, stride, oh, ow)."""
    n, c, h, w = x_shape = shape_argument(op, "x_shape", x_shape, NCHW)
    k, stride, oh, ow = pool_window(op, h, w, k, stride)
    dy = arrays.array(t, op, "dy", dy, "N, C, OH, OW", hint=" (the forward's output)",
                      N=n, C=c, OH=oh, OW=ow)[0]  # fmt: skip
    return dy, x_shape, k, stride, oh, ow


def maxpool2d_backward(t, dy, argmax, x_shape, k, stride):
    """dy and argmax [N, C, OH, OW] (argmax in [0, H*W)) for x_shape; returns
    (dy, argmax, x_shape, k, stride, oh, ow)."""
    op = "maxpool2d_backward"
    dy, x_shape, k, stride, oh, ow = _pool_gradient(t, op, dy, x_shape, k, stride)
    n, c, h, w = x_shape
    plane = h * w
    argmax = arrays.indices(t, op, "argmax", argmax, "N, C, OH, OW", plane,
                            f"flat indices h*W + w in [0, H*W={plane})",
                            N=n, C=c, OH=oh, OW=ow)  # fmt: skip
    return dy, argmax, x_shape, k, stride, oh, ow


def avgpool2d_backward(t, dy, x_shape, k, stride):
    """dy [N, C, OH, OW] for x_shape; returns (dy, x_shape, k, stride, oh, ow)."""
    return _pool_gradient(t, "avgpool2d_backward", dy, x_shape, k, stride)


# --- normalization ----------------------------------------------------------------------------


def _channels(t, op, x):
    """x [N, C] or [N, C, H, W]; returns (x, shape)."""
    return arrays.array(t, op, "x", x, ("N, C", NCHW))


def batchnorm_forward(t, x, gamma, beta, running_mean, running_var, training, momentum, eps):
    """x [N, C] or [N, C, H, W]; gamma, beta [C]; running_mean, running_var [C], updated in place
    in training; 0 <= momentum <= 1; eps > 0. Training needs N*H*W >= 2 (the unbiased variance
    divides by N*H*W - 1). Running variances are data, not checked: a negative one gives NaN in
    its channel, as in PyTorch."""
    op = "batchnorm_forward"
    x, shape = _channels(t, op, x)
    c = shape[1]
    gamma = arrays.array(t, op, "gamma", gamma, "C", hint=" (C: x's channels)", C=c)[0]
    beta = arrays.array(t, op, "beta", beta, "C", hint=" (C: x's channels)", C=c)[0]
    running_mean = arrays.in_place(t, op, "running_mean", running_mean, dims="C", C=c)
    running_var = arrays.in_place(t, op, "running_var", running_var, dims="C", C=c)
    training = flag(op, "training", training)
    momentum = real(op, "momentum", momentum, 0, 1)
    eps = real(op, "eps", eps, 0, low_open=True)
    values = (shape[0] * shape[2] * shape[3]) if len(shape) == 4 else shape[0]
    if training and values < 2:
        fail(op, "x must have more than one value per channel in training (the unbiased "
                 f"variance divides by N*H*W - 1), got N*H*W = {values}")  # fmt: skip
    return x, gamma, beta, running_mean, running_var, training, momentum, eps


def batchnorm_backward(t, dy, x, gamma, saved):
    """x [N, C] or [N, C, H, W], dy of its shape, gamma [C], saved = (mean [C], invstd [C])."""
    op = "batchnorm_backward"
    x, shape = _channels(t, op, x)
    c = shape[1]
    dy = arrays.like(t, op, "dy", dy, "x", shape)
    gamma = arrays.array(t, op, "gamma", gamma, "C", hint=" (C: x's channels)", C=c)[0]
    saved = _statistics(t, op, saved, "C", " (C: x's channels)", C=c)
    return dy, x, gamma, saved


def _nesting(x):
    """How deep a nested list goes down its first items: 1 for [1.0, 2.0], 2 for [[1.0], [2.0]]."""
    depth = 0
    while isinstance(x, list) and x:
        x, depth = x[0], depth + 1
    return depth if isinstance(x, numbers.Number) else -1


def _statistics(t, op, saved, dims, hint, names=("mean", "invstd"), **known):
    """A forward's saved tuple (by default the pair (mean, invstd)), each array of shape `dims`
    with the `known` sizes."""
    what = f"pair ({', '.join(names)})" if len(names) == 2 else f"tuple ({', '.join(names)},)"
    # one array instead of the tuple: a NumPy (or device) array, or stage 1's nested list of
    # numbers as deep as one statistic (a list of statistics is one level deeper)
    one_array = interface_of(saved) is not None or (
        isinstance(saved, list) and _nesting(saved) == len(dims.split(","))
    )
    if one_array or not isinstance(saved, tuple | list):
        got = "one array" if one_array else type_name(saved)
        fail_type(op, f"saved must be the forward's {what}, got {got}")
    if len(saved) != len(names):
        fail(op, f"saved must be the forward's {what}, got {len(saved)} items")
    return tuple(
        arrays.array(t, op, f"saved[{i}] ({name})", item, dims, hint=hint, **known)[0]
        for i, (name, item) in enumerate(zip(names, saved, strict=True))
    )


# --- regularization -----------------------------------------------------------------------------


def dropout_forward(t, x, p, seed_):
    """x any shape, 0 <= p < 1, seed an int in [0, 2^64)."""
    op = "dropout_forward"
    x = arrays.array(t, op, "x", x)[0]
    return x, real(op, "p", p, 0, 1, high_open=True), seed(op, seed_)


def dropout_backward(t, dy, mask, p):
    """dy any shape, mask of its shape, 0 <= p < 1."""
    op = "dropout_backward"
    dy, mask = _pair(t, dy, mask, op, ("dy", "mask"))
    return dy, mask, real(op, "p", p, 0, 1, high_open=True)


# --- optimizers (in place) --------------------------------------------------------------------


def _parameters(t, op, p, g, states):
    """p (updated in place, any shape), g of p's shape, and the state arrays (in place, of p's
    shape), given as (name, array) pairs; returns [p, g, *states]."""
    p = arrays.in_place(t, op, "p", p)
    shape = t.describe(op, "p", p).shape
    g = arrays.like(t, op, "g", g, "p", shape)
    return [p, g] + [arrays.in_place(t, op, name, s, reference=("p", shape)) for name, s in states]


def _non_negative(op, name, value):
    return real(op, name, value, 0)


def sgd_step(t, p, g, lr, weight_decay):
    """lr >= 0, weight_decay >= 0."""
    op = "sgd_step"
    return (*_parameters(t, op, p, g, ()), _non_negative(op, "lr", lr),
            _non_negative(op, "weight_decay", weight_decay))  # fmt: skip


def momentum_step(t, p, g, v, lr, momentum, nesterov, weight_decay):
    """lr, momentum, weight_decay >= 0; nesterov True or False."""
    op = "momentum_step"
    return (*_parameters(t, op, p, g, (("v", v),)), _non_negative(op, "lr", lr),
            _non_negative(op, "momentum", momentum), flag(op, "nesterov", nesterov),
            _non_negative(op, "weight_decay", weight_decay))  # fmt: skip


def rmsprop_step(t, p, g, s, lr, alpha, eps, weight_decay):
    """lr, weight_decay >= 0; 0 <= alpha <= 1; eps > 0."""
    op = "rmsprop_step"
    return (*_parameters(t, op, p, g, (("s", s),)), _non_negative(op, "lr", lr),
            real(op, "alpha", alpha, 0, 1), real(op, "eps", eps, 0, low_open=True),
            _non_negative(op, "weight_decay", weight_decay))  # fmt: skip


def adam_step(t, p, g, m, v, step, lr, beta1, beta2, eps, weight_decay):
    """t an int >= 1; lr, weight_decay >= 0; 0 <= beta1, beta2 < 1; eps > 0."""
    op = "adam_step"
    return (*_parameters(t, op, p, g, (("m", m), ("v", v))), integer(op, "t", step, 1, MAX_STEP),
            _non_negative(op, "lr", lr), real(op, "beta1", beta1, 0, 1, high_open=True),
            real(op, "beta2", beta2, 0, 1, high_open=True), real(op, "eps", eps, 0, low_open=True),
            _non_negative(op, "weight_decay", weight_decay))  # fmt: skip


# --- initialization -----------------------------------------------------------------------------


def _init(t, shape, seed_, op):
    """shape a tuple of ints >= 1, seed an int in [0, 2^64)."""
    return shape_argument(op, "shape", shape), seed(op, seed_)


# --- attention ----------------------------------------------------------------------------------

ROWS_OF_D = ("N, D", "N, T, D")  # layer norm's x: rows of D features (tokens of a sequence)
GELU_FORMS = ("none", "tanh")  # gelu's `approximate`: the exact erf form, or the tanh form


def _features(t, op, x, gamma):
    """x [N, D] or [N, T, D], gamma [D]; returns (x, gamma, x's shape)."""
    x, shape = arrays.array(t, op, "x", x, ROWS_OF_D)
    hint = " (D: x's last dimension)"
    gamma = arrays.array(t, op, "gamma", gamma, "D", hint=hint, D=shape[-1])[0]
    return x, gamma, shape


def layernorm(t, x, gamma, beta, eps):
    """x [N, D] or [N, T, D]; gamma, beta [D]; eps > 0."""
    op = "layernorm"
    x, gamma, shape = _features(t, op, x, gamma)
    beta = arrays.array(t, op, "beta", beta, "D", hint=" (D: x's last dimension)", D=shape[-1])[0]
    return x, gamma, beta, real(op, "eps", eps, 0, low_open=True)


def layernorm_backward(t, dy, x, gamma, saved):
    """x [N, D] or [N, T, D], dy of its shape, gamma [D], saved = (mean, invstd), each of x's
    shape without its last dimension ([N] or [N, T])."""
    op = "layernorm_backward"
    x, gamma, shape = _features(t, op, x, gamma)
    dy = arrays.like(t, op, "dy", dy, "x", shape)
    rows = ROWS_OF_D[len(shape) - 2].rsplit(",", 1)[0]  # "N" or "N, T"
    known = dict(zip(("N", "T"), shape[:-1], strict=False))
    saved = _statistics(t, op, saved, rows, " (x's shape without D)", **known)
    return dy, x, gamma, saved


def gelu(t, x, approximate):
    """x any shape; approximate "none" or "tanh"."""
    op = "gelu"
    return arrays.array(t, op, "x", x)[0], choice(op, "approximate", approximate, GELU_FORMS)


def gelu_backward(t, x, dy, approximate):
    """x any shape, dy of its shape; approximate "none" or "tanh"."""
    op = "gelu_backward"
    x, dy = _elementwise_backward(t, x, dy, op, "x")
    return x, dy, choice(op, "approximate", approximate, GELU_FORMS)


QKV = "B, H, N, D"  # attention's queries: batch, heads, sequence, head dimension
KEYS = "B, H, M, D"  # its keys and values: M positions, which may differ from N


def _attention_inputs(t, op, q, k, v):
    """q [B, H, N, D], k and v [B, H, M, D]; returns (q, k, v, q's shape, M)."""
    q, shape = arrays.array(t, op, "q", q, QKV)
    b, h, _, d = shape
    k, k_shape = arrays.array(t, op, "k", k, KEYS, hint=" (B, H, D: q's)", B=b, H=h, D=d)
    v = arrays.like(t, op, "v", v, "k", k_shape)
    return q, k, v, shape, k_shape[2]


def _attention_options(op, causal, scale, d):
    """causal True or False; scale None (1/sqrt(D)) or a finite number > 0 (PyTorch's math
    backend multiplies q and k by its square root). Returns (causal, scale), scale as the float
    every tier multiplies by."""
    causal = flag(op, "causal", causal)
    if scale is None:
        return causal, 1.0 / math.sqrt(d)
    return causal, real(op, "scale", scale, 0, low_open=True)


def attention(t, q, k, v, causal, scale):
    """q [B, H, N, D], k and v [B, H, M, D]; causal True or False; scale None or a number > 0.
    Returns (q, k, v, causal, scale) with scale resolved (None becomes 1/sqrt(D))."""
    op = "attention"
    q, k, v, shape, _ = _attention_inputs(t, op, q, k, v)
    return (q, k, v, *_attention_options(op, causal, scale, shape[3]))


def attention_backward(t, dy, q, k, v, y, saved, causal, scale):
    """dy and y of q's shape [B, H, N, D], k and v [B, H, M, D], saved = (lse,) with lse
    [B, H, N]. Returns (dy, q, k, v, y, saved, causal, scale), scale resolved as attention's."""
    op = "attention_backward"
    q, k, v, shape, _ = _attention_inputs(t, op, q, k, v)
    dy = arrays.like(t, op, "dy", dy, "q", shape)
    y = arrays.like(t, op, "y", y, "q", shape)
    b, h, n, d = shape
    saved = _statistics(t, op, saved, "B, H, N", " (q's shape without D)", names=("lse",),
                        B=b, H=h, N=n)  # fmt: skip
    return (dy, q, k, v, y, saved, *_attention_options(op, causal, scale, d))


# --- binding --------------------------------------------------------------------------------------

SIGNATURES = {
    "matmul": matmul,
    "transpose": transpose,
    "add": add,
    "mul": mul,
    "scale": scale,
    "sum_rows": sum_rows,
    "linear_forward": linear_forward,
    "linear_backward": linear_backward,
    "relu": functools.partial(_elementwise, op="relu"),
    "relu_backward": functools.partial(_elementwise_backward, op="relu_backward", first_name="x"),
    "leaky_relu": leaky_relu,
    "leaky_relu_backward": leaky_relu_backward,
    "sigmoid": functools.partial(_elementwise, op="sigmoid"),
    "sigmoid_backward": functools.partial(
        _elementwise_backward, op="sigmoid_backward", first_name="y"),
    "tanh": functools.partial(_elementwise, op="tanh"),
    "tanh_backward": functools.partial(_elementwise_backward, op="tanh_backward", first_name="y"),
    "softmax": functools.partial(_rows, op="softmax"),
    "softmax_backward": functools.partial(_rows_backward, op="softmax_backward"),
    "log_softmax": functools.partial(_rows, op="log_softmax"),
    "log_softmax_backward": functools.partial(_rows_backward, op="log_softmax_backward"),
    "mse_loss": functools.partial(_pair, op="mse_loss", names=("pred", "target")),
    "mse_loss_backward": functools.partial(
        _pair, op="mse_loss_backward", names=("pred", "target")),
    "cross_entropy_loss": functools.partial(
        _scores_and_labels, op="cross_entropy_loss", name="logits"),
    "cross_entropy_loss_backward": functools.partial(
        _scores_and_labels, op="cross_entropy_loss_backward", name="logits"),
    "bce_with_logits_loss": functools.partial(
        _pair, op="bce_with_logits_loss", names=("logits", "targets")),
    "bce_with_logits_loss_backward": functools.partial(
        _pair, op="bce_with_logits_loss_backward", names=("logits", "targets")),
    "hinge_loss": functools.partial(_hinge, op="hinge_loss"),
    "hinge_loss_backward": functools.partial(_hinge, op="hinge_loss_backward"),
    "im2col": im2col,
    "col2im": col2im,
    "conv2d_forward": conv2d_forward,
    "conv2d_backward": conv2d_backward,
    "conv2d_bias_relu_pool": conv2d_bias_relu_pool,
    "maxpool2d_forward": functools.partial(_pool, op="maxpool2d_forward"),
    "maxpool2d_backward": maxpool2d_backward,
    "avgpool2d_forward": functools.partial(_pool, op="avgpool2d_forward"),
    "avgpool2d_backward": avgpool2d_backward,
    "batchnorm_forward": batchnorm_forward,
    "batchnorm_backward": batchnorm_backward,
    "dropout_forward": dropout_forward,
    "dropout_backward": dropout_backward,
    "sgd_step": sgd_step,
    "momentum_step": momentum_step,
    "rmsprop_step": rmsprop_step,
    "adam_step": adam_step,
    "xavier_uniform": functools.partial(_init, op="xavier_uniform"),
    "he_normal": functools.partial(_init, op="he_normal"),
    "layernorm": layernorm,
    "layernorm_backward": layernorm_backward,
    "gelu": gelu,
    "gelu_backward": gelu_backward,
    "attention": attention,
    "attention_backward": attention_backward,
}  # fmt: skip
SIGNATURES.update(quantized.SIGNATURES)  # the int8 inference ops


def bind(tier):
    """Every op's check bound to `tier`'s adapter: `bind(adapter).matmul(a, b)`."""
    return types.SimpleNamespace(
        **{name: functools.partial(check, tier) for name, check in SIGNATURES.items()}
    )
