"""The size of what an op subtracts, per output element: where its rounding is measured from.

An element is compared relative to its own size, |expected|, which is right when the last step of
the op adds or multiplies. Some ops end in a subtraction whose result can be far smaller than the
operands: log-softmax's backward `dy - exp(y) * sum(dy)`, cross-entropy's `(softmax - one_hot) / N`,
layer norm's `gamma * (x - mean) * invstd + beta`.
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
ARGUMENT_ROUNDINGS of it are allowed on top.
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


TERMS = {
    "layernorm": Terms("|gamma| * (|x| + |mean|) * invstd + |beta|", _layernorm),
    "log_softmax_backward": Terms("|dy| + exp(y) * sum|dy|", _log_softmax_backward),
    "cross_entropy_loss_backward": Terms(
        "(softmax + one_hot) / N", _cross_entropy_backward,
        "softmax * (|logits| + |lse|) / N", _cross_entropy_exponent),  # fmt: skip
}
