"""The grader's NaN rule is PyTorch's: every reference tier propagates NaN and Inf as torch does.

The grader's `nan` check (grader/propagation.py) requires the graded tier's pattern of NaN, Inf
and finite outputs to be the reference tier's, given one poisoned input element; here each tier
that serves as a reference (stages 1, 2, 3) faces PyTorch itself instead, with the same poisoned
calls the grader makes (every case of every op, NaN, +Inf and -Inf in each float input). PyTorch
runs in float64 on the same values; its equivalent of each op follows CONTRACT.md.
"""

import numpy as np
import pytest

import tiers
from grader import crossing
from grader.compare import mismatch
from grader.ops import OPS
from grader.propagation import (
    float_inputs,
    has_float_inputs,
    poison,
    poisons,
    propagation_problem,
    refused_or_answer,
)
from grader.records import Setup
from grader.session import Session
from grader.tolerance import Tolerance

torch = pytest.importorskip("torch")
F = torch.nn.functional
aten = torch.ops.aten

pytestmark = pytest.mark.oracle
# draws dropout's mask (the shared random stream) for torch
STAGE2 = tiers.load(tiers.find(2)).module


def linear_backward(x, w, dy):
    return dy @ w, dy.T @ x, dy.sum(0)


def gradient(loss_function):
    """The backward of a loss: autograd of `loss_function(first, *rest)` w.r.t. `first`."""

    def backward(first, *rest):
        first = first.clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(loss_function(first, *rest), first)
        return grad

    return backward


def hinge(scores, labels, margin):
    """The contract's hinge in torch ops: the wrong classes' clamp(s_j - s_y + margin, min=0),
    summed per row, averaged over rows. (F.multi_margin_loss, which also divides by C, is not
    used: its CPU kernel adds a term only `if z > 0`, so a NaN score gives a loss of 0.)"""
    n, c = scores.shape
    wrong = ~F.one_hot(labels, c).bool()
    margins = (scores - scores.gather(1, labels[:, None]) + margin)[wrong].view(n, c - 1)
    return margins.clamp(min=0).sum(1).mean()


def conv2d_backward(x, w, dy, stride, padding, need_dx=True):
    dx, dw, db = aten.convolution_backward(dy, x, w, [w.shape[0]], [stride] * 2, [padding] * 2,
                                           [1, 1], False, [0, 0], 1, [True, True, True])
    return dx if need_dx else None, dw, db


def maxpool2d_backward(dy, argmax, x_shape, k, stride):
    return aten.max_pool2d_with_indices_backward(dy, torch.zeros(x_shape, dtype=dy.dtype), [k, k],
                                                 [stride, stride], [0, 0], [1, 1], False, argmax)


def avgpool2d_backward(dy, x_shape, k, stride):
    return aten.avg_pool2d_backward(dy, torch.zeros(x_shape, dtype=dy.dtype), [k, k],
                                    [stride, stride], [0, 0], False, True, None)


def batchnorm_forward(x, gamma, beta, running_mean, running_var, training, momentum, eps):
    """(y, (mean, invstd)); running_mean and running_var are updated in place, as in torch."""
    y, mean, invstd = aten.native_batch_norm(x, gamma, beta, running_mean, running_var, training,
                                             momentum, eps)
    if not training:  # torch saves nothing in evaluation; the contract saves what it used
        mean, invstd = running_mean.clone(), 1 / torch.sqrt(running_var + eps)
    return y, (mean, invstd)


def batchnorm_backward(dy, x, gamma, saved):
    return aten.native_batch_norm_backward(dy, x, gamma, None, None, *saved, True, 1e-5,
                                           [True, True, True])


def layernorm(x, gamma, beta, eps):
    """(y, (mean, invstd)): torch keeps the statistics as [..., 1], the contract as [...]."""
    y, mean, invstd = aten.native_layer_norm(x, [x.shape[-1]], gamma, beta, eps)
    return y, (mean.squeeze(-1), invstd.squeeze(-1))


def layernorm_backward(dy, x, gamma, saved):
    mean, invstd = (statistic.unsqueeze(-1) for statistic in saved)
    return aten.native_layer_norm_backward(dy, x, [x.shape[-1]], mean, invstd, gamma, gamma,
                                           [True, True, True])


def attention_scores(q, k, causal, scale):
    """S as the math backend of scaled_dot_product_attention makes it: scale * q @ k^T plus a
    mask of -inf above the diagonal with causal (scale None: 1/sqrt(D))."""
    scale = 1 / q.shape[-1] ** 0.5 if scale is None else scale
    s = scale * q @ k.transpose(-1, -2)
    if causal:
        s = s + torch.zeros(s.shape[-2:], dtype=s.dtype).masked_fill(
            ~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -torch.inf)
    return s


def attention(q, k, v, causal, scale):
    """(y, (lse,)): y from torch's math backend; lse, which it does not return, torch.logsumexp
    of its scores, NaN where a score is +inf (the row's softmax is NaN; logsumexp says +inf)."""
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    s = attention_scores(q, k, causal, scale)
    return y, (torch.where(s.amax(-1) == torch.inf, torch.nan, torch.logsumexp(s, -1)),)


def attention_backward(dy, q, k, v, y, saved, causal, scale):
    """The contract's backward in torch ops (autograd through the math backend takes no y or lse
    to poison): P = exp(S - lse), 0 on a row whose lse is -inf (its safe softmax)."""
    (lse,) = saved
    shift = torch.where(lse == -torch.inf, torch.inf, lse)
    p = torch.exp(attention_scores(q, k, causal, scale) - shift[..., None])
    ds = p * (dy @ v.transpose(-1, -2) - (dy * y).sum(-1, keepdim=True))
    scale = 1 / q.shape[-1] ** 0.5 if scale is None else scale
    return scale * ds @ k, scale * ds.transpose(-1, -2) @ q, p.transpose(-1, -2) @ dy


def dropout_forward(x, p, seed):
    """x * mask / (1 - p), as F.dropout computes it, with the contract's mask (stage 2 draws it)."""
    _, mask = STAGE2.dropout_forward(np.zeros(tuple(x.shape), np.float32), p, seed)
    mask = torch.from_numpy(mask.astype(np.float64))
    return x * mask / (1 - p), mask


def stepped(p, g, optimizer_class, states, **kwargs):
    """One torch.optim step on p with gradient g, its state loaded from `states` ({torch name:
    our state tensor}); p and the states are updated in place, as the contract's optimizers do."""
    param = torch.nn.Parameter(p.clone())
    param.grad = g
    optimizer = optimizer_class([param], foreach=False, **kwargs)
    optimizer.state[param] = {name: state.clone() for name, state in states.items()}
    optimizer.step()
    p.copy_(param.detach())
    for name, state in states.items():
        if name != "step":
            state.copy_(optimizer.state[param][name])


def sgd_step(p, g, lr, weight_decay):
    stepped(p, g, torch.optim.SGD, {}, lr=lr, weight_decay=weight_decay)


def momentum_step(p, g, v, lr, momentum, nesterov, weight_decay):
    stepped(p, g, torch.optim.SGD, {"momentum_buffer": v}, lr=lr, momentum=momentum,
            nesterov=nesterov, weight_decay=weight_decay)


def rmsprop_step(p, g, s, lr, alpha, eps, weight_decay):
    stepped(p, g, torch.optim.RMSprop, {"step": torch.tensor(0.0), "square_avg": s}, lr=lr,
            alpha=alpha, eps=eps, weight_decay=weight_decay)


def adam_step(p, g, m, v, t, lr, beta1, beta2, eps, weight_decay):
    states = {"step": torch.tensor(float(t - 1)), "exp_avg": m, "exp_avg_sq": v}
    stepped(p, g, torch.optim.Adam, states, lr=lr, betas=(beta1, beta2), eps=eps,
            weight_decay=weight_decay)


def requantized(y, y_zero, relu):
    """The _to_int8 forms' codes of y: a NaN is y_zero, none below it with relu."""
    codes = torch.round(torch.nan_to_num(y, nan=0.0).clamp(-256, 256)) + y_zero
    return codes.clamp(y_zero if relu else -128, 127).long()


TORCH = {  # op name: its PyTorch equivalent, on float64 tensors (in-place ops update theirs)
    "matmul": torch.matmul,
    "transpose": lambda a: a.T,
    "swap_middle_axes": lambda x: x.transpose(1, 2),
    "add": torch.add,
    "mul": torch.mul,
    "scale": lambda a, s: s * a,
    "sum_rows": lambda x: x.sum(0),
    "linear_forward": F.linear,
    "linear_backward": linear_backward,
    "relu": torch.relu,
    "relu_backward": lambda x, dy: aten.threshold_backward(dy, x, 0),
    "leaky_relu": F.leaky_relu,
    "leaky_relu_backward": lambda x, dy, alpha: aten.leaky_relu_backward(dy, x, alpha, False),
    "sigmoid": torch.sigmoid,
    "sigmoid_backward": lambda y, dy: aten.sigmoid_backward(dy, y),
    "tanh": torch.tanh,
    "tanh_backward": lambda y, dy: aten.tanh_backward(dy, y),
    "softmax": lambda x: F.softmax(x, 1),
    "softmax_backward": lambda y, dy: aten._softmax_backward_data(dy, y, 1, y.dtype),
    "log_softmax": lambda x: F.log_softmax(x, 1),
    "log_softmax_backward": lambda y, dy: aten._log_softmax_backward_data(dy, y, 1, y.dtype),
    "mse_loss": F.mse_loss,
    "mse_loss_backward": gradient(F.mse_loss),
    "cross_entropy_loss": F.cross_entropy,
    "cross_entropy_loss_backward": gradient(F.cross_entropy),
    "bce_with_logits_loss": F.binary_cross_entropy_with_logits,
    "bce_with_logits_loss_backward": gradient(F.binary_cross_entropy_with_logits),
    "hinge_loss": hinge,
    "hinge_loss_backward": gradient(hinge),
    "im2col": lambda x, kh, kw, stride, padding: F.unfold(x, (kh, kw), padding=padding,
                                                          stride=stride),
    "col2im": lambda dy, x_shape, kh, kw, stride, padding: F.fold(
        dy, x_shape[2:], (kh, kw), padding=padding, stride=stride),
    "conv2d_forward": lambda x, w, b, stride, padding: F.conv2d(x, w, b, stride, padding),
    "conv2d_backward": conv2d_backward,
    "conv2d_bias_relu_pool": lambda x, w, b, stride, padding, pool: F.max_pool2d(
        F.relu(F.conv2d(x, w, b, stride, padding)), pool),
    "maxpool2d_forward": lambda x, k, stride: F.max_pool2d(x, k, stride, return_indices=True),
    "maxpool2d_backward": maxpool2d_backward,
    "avgpool2d_forward": F.avg_pool2d,
    "avgpool2d_backward": avgpool2d_backward,
    "batchnorm_forward": batchnorm_forward,
    "batchnorm_backward": batchnorm_backward,
    "dropout_forward": dropout_forward,
    "dropout_backward": lambda dy, mask, p: dy * mask / (1 - p),
    "sgd_step": sgd_step,
    "momentum_step": momentum_step,
    "rmsprop_step": rmsprop_step,
    "adam_step": adam_step,
    # int8 inference: the contract's definitions (a NaN quantizes to the zero point)
    "quantize_int8": lambda x, scale, zero: (
        torch.round(torch.nan_to_num(x / scale, nan=0.0).clamp(-256, 256)) + zero
    ).clamp(-128, 127).long(),
    "int8_linear": lambda x, zero, w, scale, b: ((x - zero).double() @ w.double().T) * scale + b,
    "int8_conv2d": lambda x, zero, w, scale, b, stride, padding: (
        F.conv2d((x - zero).double(), w.double(), None, stride, padding) * scale.view(1, -1, 1, 1)
        + b.view(1, -1, 1, 1)),
    "int8_linear_to_int8": lambda x, zero, w, scale, b, y_zero, relu=False: requantized(
        ((x - zero).double() @ w.double().T) * scale + b, y_zero, relu),
    "int8_conv2d_to_int8": lambda x, zero, w, scale, b, y_zero, stride=1, padding=0, relu=False: (
        requantized(F.conv2d((x - zero).double(), w.double(), None, stride, padding)
                    * scale.view(1, -1, 1, 1) + b.view(1, -1, 1, 1), y_zero, relu)),
    "maxpool2d_int8": lambda x, k, stride: F.max_pool2d(x.double(), k, stride).long(),
    # attention
    "layernorm": layernorm,
    "layernorm_backward": layernorm_backward,
    "gelu": lambda x, approximate: F.gelu(x, approximate=approximate),
    "gelu_backward": lambda x, dy, approximate: aten.gelu_backward(dy, x,
                                                                   approximate=approximate),
    "attention": attention,
    "attention_backward": attention_backward,
}


def as_torch(value):
    """NumPy arrays (and tuples of them) as float64 or int64 tensors; anything else unchanged."""
    if isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
        return tuple(as_torch(item) for item in value)
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value.astype(np.int64 if value.dtype.kind in "iu" else np.float64))
    return value


def as_numpy(value):
    if value is None:  # an output skipped on request (need_dx=False)
        return None
    if isinstance(value, tuple):
        return tuple(as_numpy(item) for item in value)
    return value.detach().numpy()


def torch_outputs(op, args):
    """PyTorch's answer to `op` on `args`, as {output name: NumPy value}, like Session.call."""
    tensors = {name: as_torch(args[name]) for name in op.params}
    result = TORCH[op.name](*tensors.values())
    if not op.outputs:
        return {name: as_numpy(tensors[name]) for name in op.inplace}
    results = result if len(op.outputs) > 1 else (result,)
    outputs = {}
    for entry, value in zip(op.outputs, results, strict=True):
        outputs[entry if isinstance(entry, str) else entry[0]] = as_numpy(value)
    return outputs | {name: as_numpy(tensors[name]) for name in op.inplace}


def assert_torch_equivalent(session, op, args):
    """The torch equivalent is the op: on clean inputs it gives the tier's values."""
    structure = op.outputs + op.inplace
    received = crossing.flatten(session.call(session.graded, op, args, "graded"), structure)
    for name, want in crossing.flatten(torch_outputs(op, args), structure).items():
        if want is None:
            assert received[name] is None, f"{name}: skipped by torch, not by the tier"
            continue
        tol = None if want.dtype.kind in "iu" else Tolerance(rtol=1e-3, atol=1e-4)
        problem = mismatch(op.name, name, received[name], want, tol)
        assert problem is None, f"torch equivalent or tier wrong: {problem}"


ORACLE_TIERS = {"python": 1, "numpy": 2, "c": 3}


@pytest.mark.parametrize("op_name", [name for name, op in OPS.items() if has_float_inputs(op)])
@pytest.mark.parametrize("tier_name", list(ORACLE_TIERS))
def test_reference_tier_propagates_nan_and_inf_as_torch(tier_name, op_name, rng):
    """Every poisoned call the grader makes gives torch's pattern of NaN, Inf and finite values."""
    session = Session(Setup(stage=ORACLE_TIERS[tier_name]))
    if not session.graded.ok:
        pytest.skip(f"{session.graded.label}: {session.graded.reason}")
    op = OPS[op_name]
    problems = []
    for size in op.cases:
        args, _ = session.arguments(op, size, rng, session.graded, "graded")
        assert_torch_equivalent(session, op, args)
        for site in float_inputs(op, args):
            for what, value in poisons(op, site[1]):
                poisoned_args, poisoned = poison(args, site, value, rng)
                received = refused_or_answer(session, session.graded, op, poisoned_args, site,
                                             "graded")
                if received is None:
                    continue
                with np.errstate(all="ignore"):
                    expected = torch_outputs(op, poisoned_args)
                problem = propagation_problem(op, received, expected, poisoned, what)
                if problem:
                    problems.append(f"{problem} [{size}]")
    assert not problems, "\n".join(problems[:20])
