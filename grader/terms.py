"""The size of what an op subtracts, per output element: where its rounding is measured from.

An element is compared relative to its own size, |expected|, which is right when the last step of
the op adds or multiplies. Some ops end in a subtraction whose result can be far smaller than the
operands: log-softmax's backward `dy - exp(y) * sum(dy)`, cross-entropy's `(softmax - one_hot) / N`,
layer norm's `gamma * (x - mean) * invstd + beta`, attention's `P @ v` (v of either sign) and its
backward's `P * (dP - Dsum)`.
A float32 tier rounds the operands (a sum of 50,257 terms, an exponential), so the difference
carries an error relative to the operands, not to itself: at a label whose probability is 0.997,
`(p - 1) / N` keeps only the last three digits of p. For these ops, `Terms.sizes` gives, per
element, the size of the operands (computed in float64 from the call's arguments, each with its
absolute value), and the tolerance's relative part applies to the larger of that and |expected|.

The sizes follow the op's formula, not one implementation's: every correct order of the same terms
is accepted, and a wrong term (a missing row sum, a wrong axis) still shows, as it changes the
result by a whole term.

Cross-entropy's backward also takes the exponential of an argument a tier may round at the size
of the logits: `exp(x - lse)`, with lse = max + log(sum) rounded near 1000 when the logits are,
carries a relative error of a few roundings of |x| + |lse| (6e-5 at 1000), however the sum is
taken. `Terms.exponent` gives each element's value times that argument's size, and
ARGUMENT_ROUNDINGS of it are allowed on top. Attention's P = exp(S - lse) is such an exponential:
its argument rounds at the size of the scores' terms, scale * |q| . |k|, and of lse.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

ARGUMENT_ROUNDINGS = 2  # lse = max + log(sum), then x - lse: each rounds at the logits' size


@dataclass(frozen=True)
class Terms:
    """`sizes(args) -> {output: float64 array shaped like it}` and `rule`, how they are made;
    `exponent(args)`, where an output is an exponential of a rounded argument, the same for its
    value times the argument's size, and `exponent_rule`."""

    rule: str
    sizes: Callable
    exponent_rule: str = ""
    exponent: Callable | None = None

    def tolerance(self, args, unit):
        """Tolerance's fields for one call (grader/tolerance.py): `unit`, the unit roundoff of the
        tier pair (times any factor the tolerance has)."""
        fields = dict(terms=self.sizes(args), rule=f"max(|expected|, {self.rule})")
        if self.exponent:
            allowance = ARGUMENT_ROUNDINGS * unit
            fields["slack"] = {name: allowance * size for name, size in self.exponent(args).items()}
            fields["rule"] += f" + {allowance:.1e}*{self.exponent_rule}"
        return fields


def _f64(array):
    return np.asarray(array, dtype=np.float64)


def _softmax(logits):
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def _one_hot(labels, classes):
    hot = np.zeros((len(labels), classes))
    hot[np.arange(len(labels)), np.asarray(labels, dtype=np.int64)] = 1.0
    return hot


def _log_softmax_backward(args):
    y, dy = _f64(args["y"]), _f64(args["dy"])
    return {"dx": np.abs(dy) + np.exp(y) * np.abs(dy).sum(axis=1, keepdims=True)}


def _cross_entropy_backward(args):
    logits = _f64(args["logits"])
    n, classes = logits.shape
    return {"dlogits": (_softmax(logits) + _one_hot(args["labels"], classes)) / n}


def _cross_entropy_exponent(args):
    logits = _f64(args["logits"])
    lse = np.logaddexp.reduce(logits, axis=1, keepdims=True)
    return {"dlogits": _softmax(logits) * (np.abs(logits) + np.abs(lse)) / len(logits)}


def _layernorm(args):
    x = _f64(args["x"])
    mean = x.mean(axis=-1, keepdims=True)
    invstd = 1 / np.sqrt(np.square(x - mean).mean(axis=-1, keepdims=True) + args["eps"])
    return {"y": np.abs(_f64(args["gamma"])) * (np.abs(x) + np.abs(mean)) * invstd
            + np.abs(_f64(args["beta"]))}


def _attention_parts(args):
    """Float64 parts of attention on `args` (the forward's or the backward's): P [B, H, N, M], the
    sizes of the scores' terms A = scale * |q| @ |k|^T, lse [B, H, N, 1] and scale."""
    q, k = _f64(args["q"]), _f64(args["k"])
    scale = 1 / np.sqrt(q.shape[-1]) if args["scale"] is None else args["scale"]
    s = scale * q @ k.swapaxes(-1, -2)
    if args["causal"]:
        s[..., np.triu(np.ones(s.shape[-2:], bool), 1)] = -np.inf
    lse = np.logaddexp.reduce(s, axis=-1, keepdims=True)
    return np.exp(s - lse), scale * np.abs(q) @ np.abs(k).swapaxes(-1, -2), lse, scale


def _attention(args):
    p, sizes, lse, _ = _attention_parts(args)
    y = p @ np.abs(_f64(args["v"]))
    return {"y": y, "saved.lse": (p * sizes).sum(axis=-1) + np.abs(lse[..., 0])}


def _attention_exponent(args):
    p, sizes, lse, _ = _attention_parts(args)
    return {"y": (p * (sizes + np.abs(lse))) @ np.abs(_f64(args["v"]))}


def _attention_backward_sums(args, exponent):
    """The backward's sums of |terms|: dv = P^T @ |dy|, and dq, dk from dS's operands
    W = P * (|dy| @ |v|^T + sum_d |dy| * (P @ |v|)); with `exponent`, each P weighed by the size of
    its exponent, A + |lse|."""
    p, sizes, lse, scale = _attention_parts(args)
    q, k, v, dy = (np.abs(_f64(args[name])) for name in ("q", "k", "v", "dy"))
    w = p * (dy @ v.swapaxes(-1, -2) + (dy * (p @ v)).sum(axis=-1, keepdims=True))
    if exponent:
        p, w = p * (sizes + np.abs(lse)), w * (sizes + np.abs(lse))
    return {"dq": scale * w @ k, "dk": scale * w.swapaxes(-1, -2) @ q,
            "dv": p.swapaxes(-1, -2) @ dy}  # fmt: skip


TERMS = {
    "layernorm": Terms("|gamma| * (|x| + |mean|) * invstd + |beta|", _layernorm),
    "attention": Terms(
        "the size of its terms (y: P @ |v|; lse: sum P * scale|q|.|k| + |lse|)", _attention,
        "(P * (scale|q|.|k| + |lse|)) @ |v|", _attention_exponent),  # fmt: skip
    "attention_backward": Terms(
        "the size of its terms (dv: P^T @ |dy|; dq, dk: scale * W @ |k|, scale * W^T @ |q|, "
        "W = P * (|dP| + |Dsum|))",
        lambda args: _attention_backward_sums(args, exponent=False),
        "each P weighed by scale|q|.|k| + |lse|",
        lambda args: _attention_backward_sums(args, exponent=True)),  # fmt: skip
    "log_softmax_backward": Terms("|dy| + exp(y) * sum|dy|", _log_softmax_backward),
    "cross_entropy_loss_backward": Terms(
        "(softmax + one_hot) / N", _cross_entropy_backward,
        "softmax * (|logits| + |lse|) / N", _cross_entropy_exponent),  # fmt: skip
}
