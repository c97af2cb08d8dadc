"""How close a result must be: the tolerance of a tier pair, widened for long sums."""

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerance:
    """An element passes when |received - expected| <= atol + rtol * |expected|."""

    rtol: float
    atol: float

    def __add__(self, other):
        return Tolerance(self.rtol + other.rtol, self.atol + other.atol)


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
    about 0.2%).
    """
    base = BASE_TOLERANCE[(graded_bits, reference_bits)]
    n = max(1, op.accum(args))
    factor = op.tol * (GPU_TOLERANCE_FACTOR if gpu else 1)
    if op.positive_sum:
        drift = SUM_DRIFT * UNIT_ROUNDOFF[min(graded_bits, reference_bits)] * math.sqrt(n)
        return Tolerance(rtol=factor * (base.rtol + drift), atol=factor * base.atol)
    return Tolerance(rtol=base.rtol * factor * math.sqrt(n), atol=base.atol * factor * n)
