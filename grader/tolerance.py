"""How close a result must be: the tolerance of a tier pair, widened for long sums."""

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    """An element passes when |received - expected| <= atol + rtol * |expected|; for an output
    of an op ending in a subtraction (grader/terms.py), |expected| is replaced by the larger of it
    and the size of the operands (`terms`), and an exponential of a rounded argument adds
    `slack`; `rule` says how both are made."""

    rtol: float
    atol: float
    terms: dict = field(default_factory=dict, compare=False)  # output -> float64 sizes
    slack: dict = field(default_factory=dict, compare=False)  # output -> float64 allowances
    rule: str = ""

    def __add__(self, other):
        return Tolerance(self.rtol + other.rtol, self.atol + other.atol, self.terms or other.terms,
                         self.slack or other.slack, self.rule or other.rule)  # fmt: skip

    def bound(self, name, expected):
        """The largest |received - expected| that passes, per element of output `name`."""
        size = np.abs(expected)
        if name in self.terms:
            size = np.maximum(size, self.terms[name])
        size *= self.rtol  # in place: a new array above
        size += self.atol + self.slack.get(name, 0.0)
        return size

    def describe(self, name, bound):
        """'(tolerance 2.0e-06 + 1.3e-04*|expected|)'; for terms, the rule and the failing
        element's `bound`."""
        if name not in self.terms:
            return f"(tolerance {self.atol:.1e} + {self.rtol:.1e}*|expected|)"
        return f"(tolerance {self.atol:.1e} + {self.rtol:.1e}*{self.rule}: {bound:.2g} here)"


# Per (graded float bits, reference float bits), for one rounding of O(1) values: a float32 tier
# against float64 sees float32 rounding (eps = 6e-8) several times over; two float32 tiers round
# differently each; stage 1 against float64 differs only by summation order.
BASE_TOLERANCE = {
    (32, 64): Tolerance(rtol=1e-5, atol=1e-6),
    (64, 32): Tolerance(rtol=1e-5, atol=1e-6),
    (32, 32): Tolerance(rtol=2e-5, atol=2e-6),
    (64, 64): Tolerance(rtol=1e-9, atol=1e-11),
}
# Central differences in float64 with step 1e-6 are exact to about 1e-9 relative to the size of
# the objective (rounding: 2e-16 * |L| / 1e-6), added to the graded tier's own rounding.
FINITE_DIFFERENCE_STEP = 1e-6
FINITE_DIFFERENCE_TOLERANCE = Tolerance(rtol=1e-6, atol=1e-7)
GPU_TOLERANCE_FACTOR = 4  # fused multiply-adds and the device's exp/log round differently
# A sum of n terms of one sign rounded in order drifts like a random walk of n roundings of the
# running sum: its error, relative to the sum, is about u * sqrt(n) (u the unit roundoff), and at
# most about u * log2(n) summed pairwise (NumPy, a GPU's tree); SUM_DRIFT standard deviations pass.
UNIT_ROUNDOFF = {32: 2.0**-24, 64: 2.0**-53}
SUM_DRIFT = 8


def tolerance(op, graded_bits, reference_bits, args, gpu=False):
    """The tolerance for `op` on `args`: the pair's base, widened for long accumulations.

    `op.accum` gives n, the length of the longest sum behind an output, for the arguments at hand;
    `op.tol` widens ill-conditioned ops further. A sum whose terms cancel (matmul's K, conv's
    C*R*S, batchnorm's N*H*W) can be far smaller than its terms: its absolute error grows like n
    and its relative error like sqrt(n) roundings of the base. A sum of terms of one sign
    (`op.positive_sum`: a softmax's exponentials, a loss's mean of n terms) has no cancellation:
    its error stays relative to its size, SUM_DRIFT * u * sqrt(n), and the absolute part is one
    rounding of the base, however long the sum (a loss of 4096 x 4096 terms must still be right to
    about 0.2%). An op ending in a subtraction (`op.terms`) measures the relative part from
    the size of its operands (grader/terms.py); with `positive_sum`, the sums behind them are
    sums of absolute values.
    """
    base = BASE_TOLERANCE[(graded_bits, reference_bits)]
    n = max(1, op.accum(args))
    factor = op.tol * (GPU_TOLERANCE_FACTOR if gpu else 1)
    unit = UNIT_ROUNDOFF[min(graded_bits, reference_bits)]
    terms = op.terms.tolerance(args, unit * factor) if op.terms else {}
    if op.positive_sum:
        drift = SUM_DRIFT * unit * math.sqrt(n)
        return Tolerance(rtol=factor * (base.rtol + drift), atol=factor * base.atol, **terms)
    return Tolerance(rtol=base.rtol * factor * math.sqrt(n), atol=base.atol * factor * n, **terms)
