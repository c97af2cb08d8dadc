"""PyTorch's counterpart of every op of the contract: what `python -m bench.ops_vs_pytorch` times
beside ours (and the grader's speed check beside matmul, linear and conv, grader/speed.py).

Each entry of `TORCH_OPS` names what it runs (`expression`), says how it stands to our op (`how`)
and builds, from the op's arguments as PyTorch tensors, a call without arguments that does the
op's work and returns its outputs in the op's structure (grader/ops.py: outputs, then the arrays
an in-place op updates). How an entry relates to our op:

- "op": PyTorch's own op for it (`F.conv2d`, cuDNN; `torch.mm`, cuBLAS; `F.unfold`).
- "backward": the op PyTorch's autograd calls for the backward (`aten::convolution_backward`,
  `aten::_softmax_backward_data`), fed, as ours is, with the forward's saved values.
- "autograd": forward and backward through `torch.autograd.grad`, where PyTorch has no single op
  from our backward's arguments to its gradient (the losses' backwards: ours recompute the
  forward's softmax or sigmoid too, so the work compares).
- "expression": the tensor expression a PyTorch user writes where PyTorch has no op of its own
  (`a.t().contiguous()`, the multiclass hinge as `multi_margin_loss * C`).
- "step": a `torch.optim` optimizer's `step()` on one parameter whose state holds our state
  arrays (fused where PyTorch has a fused kernel on CUDA, else its default, foreach).

`same_numbers` is False for the random ops: PyTorch draws its own stream (Philox), not the
contract's shared one, so their outputs are timed, not compared; ours are checked against the
repository's stage 2 instead (bench/ops_vs_pytorch.py).
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Counterpart:
    """PyTorch doing one op's work: `call(torch, tensors, args, device)` -> a call
    returning the outputs."""

    expression: str
    how: str
    call: Callable
    same_numbers: bool = True


def tensors(torch, args, device):
    """The op's NumPy arguments as fresh PyTorch tensors on `device` (tuples item by item);
    scalars and shapes stay as they are."""
    converted = {}
    for name, value in args.items():
        if isinstance(value, np.ndarray):
            converted[name] = torch.from_numpy(value.copy()).to(device)
        elif isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
            converted[name] = tuple(torch.from_numpy(v.copy()).to(device) for v in value)
    return converted


def outputs_to_numpy(outputs):
    """{name: tensor or tuple of tensors} -> the same of NumPy arrays (a loss: 0-d float64)."""

    def convert(name, value):
        if isinstance(value, tuple):
            return tuple(convert(name, item) for item in value)
        array = value.detach().cpu().numpy()
        return array.astype(np.float64) if name == "loss" else array

    return {name: convert(name, value) for name, value in outputs.items()}


def _functional(torch):
    return torch.nn.functional


def _aten(torch):
    return torch.ops.aten


def _one(name, function):
    """A counterpart whose outputs are one tensor `name` = function(torch, t, a)."""
    return lambda torch, t, a, device: lambda: {name: function(torch, t, a)}


def _backward(aten_name, inputs, scalars=lambda torch, a: ()):
    """The op autograd calls for an activation's backward: aten.<aten_name>(the tensors named
    `inputs`, then `scalars(torch, args)`), whose result is dx."""

    def gradient(torch, t, a):
        return getattr(_aten(torch), aten_name)(*(t[n] for n in inputs), *scalars(torch, a))

    return Counterpart(f"aten.{aten_name}", "backward", _one("dx", gradient))


def _autograd_gradient(loss, first, gradient):
    """Forward and backward through autograd: the loss of `first`'s argument (`loss(torch, t, a,
    x)`), and its gradient as output `gradient`."""

    def build(torch, t, a, device):
        x = t[first].requires_grad_()

        def call():
            (dx,) = torch.autograd.grad(loss(torch, t, a, x), x)
            return {gradient: dx}

        return call

    return build


def _hinge(torch, t, a, scores):
    """The contract's hinge (a sum over the classes) from PyTorch's, which divides it by C."""
    classes = scores.shape[1]
    return _functional(torch).multi_margin_loss(scores, t["labels"], margin=a["margin"]) * classes


def _linear_backward(torch, t, a, device):
    """What autograd runs for F.linear's backward: two products and a column sum."""

    def call():
        x, w, dy = t["x"], t["w"], t["dy"]
        return {"dx": dy @ w, "dw": dy.t() @ x, "db": dy.sum(0)}

    return call


def _conv_backward(torch, t, a, device):
    def call():
        stride, padding = [a["stride"]] * 2, [a["padding"]] * 2
        dx, dw, db = _aten(torch).convolution_backward(
            t["dy"], t["x"], t["w"], [t["w"].shape[0]], stride, padding, [1, 1], False, [0, 0],
            1, [True, True, True],
        )
        return {"dx": dx, "dw": dw, "db": db}

    return call


def _maxpool(torch, t, a, device):
    def call():
        y, argmax = _functional(torch).max_pool2d(
            t["x"], a["k"], a["stride"], return_indices=True
        )
        return {"y": y, "argmax": argmax}

    return call


def _maxpool_backward(torch, t, a, device):
    x = t["dy"].new_empty(a["x_shape"])  # the kernel reads only x's shape
    window, stride = [a["k"]] * 2, [a["stride"]] * 2
    return lambda: {
        "dx": _aten(torch).max_pool2d_with_indices_backward(
            t["dy"], x, window, stride, [0, 0], [1, 1], False, t["argmax"]
        )
    }


def _avgpool_backward(torch, t, a, device):
    x = t["dy"].new_empty(a["x_shape"])
    window, stride = [a["k"]] * 2, [a["stride"]] * 2
    return lambda: {
        "dx": _aten(torch).avg_pool2d_backward(
            t["dy"], x, window, stride, [0, 0], False, True, None
        )
    }


def _batchnorm(torch, t, a, device):
    """F.batch_norm's own dispatch (cuDNN on a GPU where it applies), which also returns the
    saved mean and inverse standard deviation that F.batch_norm keeps for the backward."""

    def call():
        y, mean, invstd, _, _ = _aten(torch)._batch_norm_impl_index(
            t["x"], t["gamma"], t["beta"], t["running_mean"], t["running_var"], a["training"],
            a["momentum"], a["eps"], torch.backends.cudnn.enabled,
        )
        running = {name: t[name] for name in ("running_mean", "running_var")}
        return {"y": y, "saved": (mean, invstd), **running}

    return call


def _batchnorm_backward(torch, t, a, device):
    """The backward autograd runs for F.batch_norm (cuDNN's where the forward took cuDNN), given
    our saved statistics; the forward runs once here, untimed, for the backend and its buffer."""
    aten, x, gamma = _aten(torch), t["x"], t["gamma"]
    channels = gamma.shape[0]
    running = (x.new_zeros(channels), x.new_ones(channels))
    *_, reserve, backend = aten._batch_norm_impl_index(
        x, gamma, torch.zeros_like(gamma), *running, True, 0.1, 1e-5, torch.backends.cudnn.enabled
    )
    mean, invstd = t["saved"]

    def call():
        dx, dgamma, dbeta = aten._batch_norm_impl_index_backward(
            backend, x, t["dy"], gamma, *running, mean, invstd, True, 1e-5, [True, True, True],
            reserve,
        )
        return {"dx": dx, "dgamma": dgamma, "dbeta": dbeta}

    return call


def _dropout(torch, t, a, device):
    def call():
        y, mask = _aten(torch).native_dropout(t["x"], a["p"], True)
        return {"y": y, "mask": mask}

    return call


def _dropout_backward(torch, t, a, device):
    keep = t["mask"].bool()  # PyTorch's masks are bool
    scale = 1.0 / (1.0 - a["p"])
    return lambda: {"dx": _aten(torch).native_dropout_backward(t["dy"], keep, scale)}


def _init(fill):
    def build(torch, t, a, device):
        return lambda: {"w": fill(torch)(torch.empty(a["shape"], device=device))}

    return build


def _fused(torch, p):
    """fused=True on a GPU (PyTorch's one-kernel step); PyTorch's default on a CPU."""
    return {"fused": True} if p.is_cuda else {}


def _optimizer(make, states, counts_steps=True):
    """An optimizer's step on t["p"] with gradient t["g"], its state `states` ({PyTorch's state
    key: our array's name}) set to our arrays (and the steps taken, for those that count them:
    our `t` is the step about to be taken); returns p and the state arrays after the step."""

    def build(torch, t, a, device):
        p = t["p"]
        p.grad = t["g"]
        optimizer = make(torch, p, a)
        state = optimizer.state[p]
        state.update({key: t[name] for key, name in states.items()})
        if counts_steps:  # a fused step reads the count on the device, the others on the host
            on = p.device if optimizer.defaults.get("fused") else "cpu"
            state["step"] = torch.tensor(float(a.get("t", 1) - 1), device=on)

        def call():
            optimizer.step()
            return {"p": p} | {name: state[key] for key, name in states.items()}

        return call

    return build


def _sgd(torch, p, a):
    return torch.optim.SGD([p], lr=a["lr"], weight_decay=a["weight_decay"], **_fused(torch, p))


def _momentum(torch, p, a):
    return torch.optim.SGD(
        [p], lr=a["lr"], momentum=a["momentum"], nesterov=a["nesterov"],
        weight_decay=a["weight_decay"], **_fused(torch, p),
    )


def _rmsprop(torch, p, a):
    return torch.optim.RMSprop(
        [p], lr=a["lr"], alpha=a["alpha"], eps=a["eps"], weight_decay=a["weight_decay"]
    )


def _adam(torch, p, a):
    return torch.optim.Adam(
        [p], lr=a["lr"], betas=(a["beta1"], a["beta2"]), eps=a["eps"],
        weight_decay=a["weight_decay"], **_fused(torch, p),
    )


F = "F."  # torch.nn.functional, as the tables write it

# fmt: off
TORCH_OPS = {
    # linear algebra
    "matmul": Counterpart("torch.mm (cuBLAS)", "op",
                          _one("y", lambda torch, t, a: torch.mm(t["a"], t["b"]))),
    "transpose": Counterpart("a.t().contiguous()", "expression",
                             _one("y", lambda torch, t, a: t["a"].t().contiguous())),
    "add": Counterpart("a + b", "op", _one("y", lambda torch, t, a: t["a"] + t["b"])),
    "mul": Counterpart("a * b", "op", _one("y", lambda torch, t, a: t["a"] * t["b"])),
    "scale": Counterpart("a * s", "op", _one("y", lambda torch, t, a: t["a"] * a["s"])),
    "sum_rows": Counterpart("x.sum(0)", "op", _one("y", lambda torch, t, a: t["x"].sum(0))),
    # dense
    "linear_forward": Counterpart(
        f"{F}linear (cuBLAS)", "op",
        _one("y", lambda torch, t, a: _functional(torch).linear(t["x"], t["w"], t["b"]))),
    "linear_backward": Counterpart("dy @ w, dy.t() @ x, dy.sum(0) (F.linear's autograd)",
                                   "backward", _linear_backward),
    # activations
    "relu": Counterpart("torch.relu", "op", _one("y", lambda torch, t, a: torch.relu(t["x"]))),
    "relu_backward": _backward("threshold_backward", ("dy", "x"), lambda torch, a: (0.0,)),
    "leaky_relu": Counterpart(
        f"{F}leaky_relu", "op",
        _one("y", lambda torch, t, a: _functional(torch).leaky_relu(t["x"], a["alpha"]))),
    "leaky_relu_backward": _backward("leaky_relu_backward", ("dy", "x"),
                                     lambda torch, a: (a["alpha"], False)),
    "sigmoid": Counterpart("torch.sigmoid", "op",
                           _one("y", lambda torch, t, a: torch.sigmoid(t["x"]))),
    "sigmoid_backward": _backward("sigmoid_backward", ("dy", "y")),
    "tanh": Counterpart("torch.tanh", "op", _one("y", lambda torch, t, a: torch.tanh(t["x"]))),
    "tanh_backward": _backward("tanh_backward", ("dy", "y")),
    "softmax": Counterpart("torch.softmax(x, 1)", "op",
                           _one("y", lambda torch, t, a: torch.softmax(t["x"], 1))),
    "softmax_backward": _backward("_softmax_backward_data", ("dy", "y"),
                                  lambda torch, a: (1, torch.float32)),  # dim 1, input dtype
    "log_softmax": Counterpart("torch.log_softmax(x, 1)", "op",
                               _one("y", lambda torch, t, a: torch.log_softmax(t["x"], 1))),
    "log_softmax_backward": _backward("_log_softmax_backward_data", ("dy", "y"),
                                      lambda torch, a: (1, torch.float32)),
    # losses
    "mse_loss": Counterpart(
        f"{F}mse_loss", "op",
        _one("loss", lambda torch, t, a: _functional(torch).mse_loss(t["pred"], t["target"]))),
    "mse_loss_backward": Counterpart(
        "aten.mse_loss_backward", "backward",
        _one("dpred", lambda torch, t, a: _aten(torch).mse_loss_backward(
            t["pred"].new_ones(()), t["pred"], t["target"], 1))),  # 1: the mean
    "cross_entropy_loss": Counterpart(
        f"{F}cross_entropy", "op",
        _one("loss", lambda torch, t, a: _functional(torch).cross_entropy(
            t["logits"], t["labels"]))),
    "cross_entropy_loss_backward": Counterpart(
        f"{F}cross_entropy, forward and backward", "autograd",
        _autograd_gradient(lambda torch, t, a, x: _functional(torch).cross_entropy(
            x, t["labels"]), "logits", "dlogits")),
    "bce_with_logits_loss": Counterpart(
        f"{F}binary_cross_entropy_with_logits", "op",
        _one("loss", lambda torch, t, a: _functional(torch).binary_cross_entropy_with_logits(
            t["logits"], t["targets"]))),
    "bce_with_logits_loss_backward": Counterpart(
        f"{F}binary_cross_entropy_with_logits, forward and backward", "autograd",
        _autograd_gradient(lambda torch, t, a, x: _functional(
            torch).binary_cross_entropy_with_logits(x, t["targets"]), "logits", "dlogits")),
    "hinge_loss": Counterpart(f"{F}multi_margin_loss * C (PyTorch divides by C)", "expression",
                              _one("loss", lambda torch, t, a: _hinge(torch, t, a, t["scores"]))),
    "hinge_loss_backward": Counterpart(
        f"{F}multi_margin_loss * C, forward and backward", "autograd",
        _autograd_gradient(_hinge, "scores", "dscores")),
    # convolution
    "im2col": Counterpart(
        f"{F}unfold", "op",
        _one("cols", lambda torch, t, a: _functional(torch).unfold(
            t["x"], (a["kh"], a["kw"]), padding=a["padding"], stride=a["stride"]))),
    "col2im": Counterpart(
        f"{F}fold", "op",
        _one("dx", lambda torch, t, a: _functional(torch).fold(
            t["dy"], a["x_shape"][2:], (a["kh"], a["kw"]), padding=a["padding"],
            stride=a["stride"]))),
    "conv2d_forward": Counterpart(
        f"{F}conv2d (cuDNN)", "op",
        _one("y", lambda torch, t, a: _functional(torch).conv2d(
            t["x"], t["w"], t["b"], stride=a["stride"], padding=a["padding"]))),
    "conv2d_backward": Counterpart("aten.convolution_backward (cuDNN)", "backward",
                                   _conv_backward),
    # inference: the eager sequence a PyTorch user writes (a pool of 1 is no pooling)
    "conv2d_bias_relu_pool": Counterpart(
        f"{F}max_pool2d({F}relu({F}conv2d(x, w, b)), pool) (cuDNN conv)", "expression",
        _one("y", lambda torch, t, a: _functional(torch).max_pool2d(
            _functional(torch).relu(_functional(torch).conv2d(
                t["x"], t["w"], t["b"], stride=a["stride"], padding=a["padding"])),
            a["pool"]))),
    # pooling
    "maxpool2d_forward": Counterpart(f"{F}max_pool2d(return_indices=True)", "op", _maxpool),
    "maxpool2d_backward": Counterpart("aten.max_pool2d_with_indices_backward", "backward",
                                      _maxpool_backward),
    "avgpool2d_forward": Counterpart(
        f"{F}avg_pool2d", "op",
        _one("y", lambda torch, t, a: _functional(torch).avg_pool2d(
            t["x"], a["k"], a["stride"]))),
    "avgpool2d_backward": Counterpart("aten.avg_pool2d_backward", "backward", _avgpool_backward),
    # normalization
    "batchnorm_forward": Counterpart(f"{F}batch_norm (aten._batch_norm_impl_index: cuDNN)", "op",
                                     _batchnorm),
    "batchnorm_backward": Counterpart("aten._batch_norm_impl_index_backward (cuDNN)", "backward",
                                      _batchnorm_backward),
    # regularization
    "dropout_forward": Counterpart("aten.native_dropout (F.dropout's, with its mask)", "op",
                                   _dropout, same_numbers=False),
    "dropout_backward": Counterpart("aten.native_dropout_backward", "backward",
                                    _dropout_backward),
    # optimizers
    "sgd_step": Counterpart("torch.optim.SGD(fused=True).step()", "step",
                            _optimizer(_sgd, {}, counts_steps=False)),
    "momentum_step": Counterpart("torch.optim.SGD(momentum, fused=True).step()", "step",
                                 _optimizer(_momentum, {"momentum_buffer": "v"},
                                            counts_steps=False)),
    "rmsprop_step": Counterpart("torch.optim.RMSprop(foreach).step()", "step",
                                _optimizer(_rmsprop, {"square_avg": "s"})),
    "adam_step": Counterpart("torch.optim.Adam(fused=True).step()", "step",
                             _optimizer(_adam, {"exp_avg": "m", "exp_avg_sq": "v"})),
    # initialization
    "xavier_uniform": Counterpart("torch.nn.init.xavier_uniform_(torch.empty(shape))", "op",
                                  _init(lambda torch: torch.nn.init.xavier_uniform_),
                                  same_numbers=False),
    "he_normal": Counterpart(
        "torch.nn.init.kaiming_normal_(torch.empty(shape))", "op",
        _init(lambda torch: lambda w: torch.nn.init.kaiming_normal_(w, nonlinearity="relu")),
        same_numbers=False),
}
# fmt: on


# int8 inference: PyTorch's eager int8 matmul is CPU-only and its quantized ops use their own
# rounding, so the counterparts are the expressions of the contract's definitions; the sums in
# float64, exact for int8 products (|sum| < 2^53), as ours are in int32.
def _quantize(torch, t, a):
    ratio = torch.nan_to_num(t["x"] / a["scale"], nan=0.0).clamp(-256, 256)
    return (torch.round(ratio) + a["zero_point"]).clamp(-128, 127).to(torch.int8)


def _int8_linear(torch, t, a):
    centred = t["x"].double() - a["x_zero"]
    return (centred @ t["w"].double().t() * t["scale"] + t["b"]).float()


def _int8_conv2d(torch, t, a):
    centred = t["x"].double() - a["x_zero"]  # zero padding of x - x_zero: x_zero's of x
    sums = _functional(torch).conv2d(centred, t["w"].double(), stride=a["stride"],
                                     padding=a["padding"])  # fmt: skip
    return (sums * t["scale"].view(1, -1, 1, 1) + t["b"].view(1, -1, 1, 1)).float()


def _requantize(torch, y, a):
    """y's codes under scale 1 and zero point y_zero; none below y_zero with relu."""
    codes = torch.round(torch.nan_to_num(y, nan=0.0).clamp(-256, 256)) + a["y_zero"]
    return codes.clamp(a["y_zero"] if a["relu"] else -128, 127).to(torch.int8)


def _maxpool_int8(torch, t, a):
    pooled = _functional(torch).max_pool2d(t["x"].float(), a["k"], a["stride"])
    return pooled.to(torch.int8)  # int8 codes are exact in float32


TORCH_OPS |= {
    "quantize_int8": Counterpart("round(x / scale) + zero_point, clamped, as int8", "expression",
                                 _one("q", _quantize)),
    "int8_linear": Counterpart("(x - x_zero) @ w.t() * scale + b (float64 sums)", "expression",
                               _one("y", _int8_linear)),
    "int8_conv2d": Counterpart(f"{F}conv2d(x - x_zero, w) * scale + b (float64 sums)",
                               "expression", _one("y", _int8_conv2d)),
    "int8_linear_to_int8": Counterpart("int8_linear's y rounded + y_zero, clamped, as int8",
                                       "expression",
                                       _one("q", lambda torch, t, a: _requantize(
                                           torch, _int8_linear(torch, t, a).double(), a))),
    "int8_conv2d_to_int8": Counterpart("int8_conv2d's y rounded + y_zero, clamped, as int8",
                                       "expression",
                                       _one("q", lambda torch, t, a: _requantize(
                                           torch, _int8_conv2d(torch, t, a).double(), a))),
    "maxpool2d_int8": Counterpart(f"{F}max_pool2d(x.float(), k, stride).to(int8)", "expression",
                                  _one("q", _maxpool_int8)),
}


def _layernorm(torch, t, a, device):
    """aten.native_layer_norm, F.layer_norm's op, which also returns the mean and the inverse
    standard deviation (shaped [..., 1]) that it keeps for the backward."""
    x = t["x"]

    def call():
        y, mean, invstd = _aten(torch).native_layer_norm(x, [x.shape[-1]], t["gamma"], t["beta"],
                                                         a["eps"])  # fmt: skip
        return {"y": y, "saved": (mean.squeeze(-1), invstd.squeeze(-1))}

    return call


def _layernorm_backward(torch, t, a, device):
    """aten.native_layer_norm_backward, what autograd runs for F.layer_norm, given our saved
    statistics (as [..., 1], its layout); beta is read only for its shape."""
    x, gamma = t["x"], t["gamma"]
    mean, invstd = (statistic.unsqueeze(-1) for statistic in t["saved"])

    def call():
        dx, dgamma, dbeta = _aten(torch).native_layer_norm_backward(
            t["dy"], x, [x.shape[-1]], mean, invstd, gamma, gamma, [True, True, True])
        return {"dx": dx, "dgamma": dgamma, "dbeta": dbeta}

    return call


TORCH_OPS |= {
    "layernorm": Counterpart(f"{F}layer_norm (aten.native_layer_norm)", "op", _layernorm),
    "layernorm_backward": Counterpart("aten.native_layer_norm_backward", "backward",
                                      _layernorm_backward),
    "gelu": Counterpart(f"{F}gelu(x, approximate=)", "op",
                        _one("y", lambda torch, t, a: _functional(torch).gelu(
                            t["x"], approximate=a["approximate"]))),
    "gelu_backward": Counterpart("aten.gelu_backward", "backward",
                                 _one("dx", lambda torch, t, a: _aten(torch).gelu_backward(
                                     t["dy"], t["x"], approximate=a["approximate"]))),
}


def _attention(torch, t, a, device):
    """F.scaled_dot_product_attention's kernel, called for the log-sum-exp it keeps for the
    backward: on the CPU its flash kernel; on a GPU its memory-efficient one (the flash one takes
    no float32), whose lse rows are padded to a multiple of 32."""
    q, k, v = t["q"], t["k"], t["v"]
    causal, scale = a["causal"], a["scale"]

    def call():
        if device == "cpu":
            y, lse = _aten(torch)._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, 0.0, causal, attn_mask=None, scale=scale)
        else:
            y, lse, *_ = _aten(torch)._scaled_dot_product_efficient_attention(
                q, k, v, None, True, 0.0, causal, scale=scale)
        return {"y": y, "saved": (lse[..., : q.shape[2]],)}

    return call


def _attention_backward(torch, t, a, device):
    """On the CPU, the flash kernel's backward from our y and lse; on a GPU, autograd through
    F.scaled_dot_product_attention (its forward timed too)."""
    q, k, v, dy = t["q"], t["k"], t["v"], t["dy"]
    causal, scale = a["causal"], a["scale"]

    def call():
        if device == "cpu":
            dq, dk, dv = _aten(torch)._scaled_dot_product_flash_attention_for_cpu_backward(
                dy, q, k, v, t["y"], t["saved"][0], 0.0, causal, attn_mask=None, scale=scale)
        else:
            leaves = [x.detach().requires_grad_(True) for x in (q, k, v)]
            y = _functional(torch).scaled_dot_product_attention(*leaves, is_causal=causal,
                                                                scale=scale)
            dq, dk, dv = torch.autograd.grad(y, leaves, dy)
        return {"dq": dq, "dk": dk, "dv": dv}

    return call


TORCH_OPS |= {
    "attention": Counterpart(
        f"{F}scaled_dot_product_attention (aten._scaled_dot_product_flash_attention_for_cpu; "
        "_efficient_attention on a GPU)", "op", _attention),
    "attention_backward": Counterpart(
        "aten._scaled_dot_product_flash_attention_for_cpu_backward (autograd on a GPU)",
        "backward", _attention_backward),
}  # fmt: skip

# PyTorch's fused paths beside an op's eager counterpart, timed as a second PyTorch column by
# bench.ops_vs_pytorch: cuDNN's fused convolution + bias + ReLU (cudnnConvolutionBiasActivation-
# Forward, aten.cudnn_convolution_relu: CUDA only), then the max-pooling, which cuDNN does not fuse.
FUSED_TORCH_OPS = {
    "conv2d_bias_relu_pool": Counterpart(
        f"torch.cudnn_convolution_relu + {F}max_pool2d (cuDNN's fused conv-bias-ReLU)", "op",
        _one("y", lambda torch, t, a: _functional(torch).max_pool2d(torch.cudnn_convolution_relu(
            t["x"], t["w"], t["b"], (a["stride"],) * 2, (a["padding"],) * 2, (1, 1), 1),
            a["pool"]))),
}  # fmt: skip
