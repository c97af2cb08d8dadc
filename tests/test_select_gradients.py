"""relu_backward selects dy, it does not multiply by a 0/1 mask.

Where x <= 0 the gradient is 0 even when dy is inf or NaN (a multiply would give inf * 0 = NaN),
as in PyTorch's threshold_backward; where x > 0 dy passes through unchanged, NaN included.
A tier may take a faster path for finite dy, so both kinds of dy are checked.
"""

import numpy as np
import pytest


@pytest.mark.parametrize("special", ["finite", "inf", "nan"])
def test_relu_backward_is_a_select(tier, rng, special):
    x = rng.standard_normal(257).astype(np.float32)
    dy = rng.standard_normal(257).astype(np.float32)
    if special != "finite":
        dy[::3] = {"inf": np.inf, "nan": np.nan}[special]
    expected = np.where(x > 0, dy, np.float32(0))
    dx = np.asarray(tier.to_numpy(tier.relu_backward(tier.from_numpy(x), tier.from_numpy(dy))))
    np.testing.assert_array_equal(dx, expected)  # NaN matches NaN only in the same places
