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


def tolerance(op, graded_bits, reference_bits, args, gpu=False):
    """The tolerance for `op` on `args`: the pair's base, widened for long accumulations.

    A sum of n rounded terms drifts like sqrt(n) relative to its size, and its absolute error can
    grow like n when terms cancel (matmul's K, conv's C*R*S, batchnorm's N*H*W); `op.accum`
    gives n for the arguments at hand, `op.tol` widens ill-conditioned ops further.
    """
    base = BASE_TOLERANCE[(graded_bits, reference_bits)]
    n = max(1, op.accum(args))
    factor = op.tol * (GPU_TOLERANCE_FACTOR if gpu else 1)
    return Tolerance(rtol=base.rtol * factor * math.sqrt(n), atol=base.atol * factor * n)
