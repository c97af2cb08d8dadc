"""Stage 4's numba attention (stage4_cuda/numba_impl/attention.py): every rung, and the backward,
against float64 NumPy at small odd shapes (the CUDA simulator runs a Python thread per GPU
thread), causal and not, and with a NaN or an infinity where a causal rung would skip a tile."""

import numpy as np
import pytest
from attention_reference import close, reference

import stage4_cuda.numba_impl as numba_tier
from stage4_cuda.numba_impl.attention import ATTENTION_KERNELS

pytestmark = pytest.mark.skipif(not numba_tier.available()[0], reason="no GPU nor the simulator")


def check(q, k, v, dy, causal, scale):
    """Every rung's y and lse, and the backward of the last one's, against float64."""
    b, h, n, d = q.shape
    y64, lse64, *grads64 = reference(*(a.reshape(b * h, -1, d) for a in (q, k, v, dy)), causal,
                                     scale)  # fmt: skip
    for name in ATTENTION_KERNELS:
        y, (lse,) = numba_tier.attention(*map(numba_tier.from_numpy, (q, k, v)), causal, scale,
                                         kernel=name)  # fmt: skip
        close(numba_tier.to_numpy(y).reshape(b * h, n, d), y64, f"{name} y")
        close(numba_tier.to_numpy(lse).reshape(b * h, n), lse64, f"{name} lse")
    grads = numba_tier.attention_backward(*map(numba_tier.from_numpy, (dy, q, k, v)), y, (lse,),
                                          causal, scale)  # fmt: skip
    for got, want, what in zip(grads, grads64, ("dq", "dk", "dv"), strict=True):
        close(numba_tier.to_numpy(got).reshape(want.shape), want, what)


def inputs(rng, b, h, n, m, d):
    q, dy = (rng.standard_normal((b, h, n, d), dtype=np.float32) for _ in range(2))
    k, v = (rng.standard_normal((b, h, m, d), dtype=np.float32) for _ in range(2))
    return q, k, v, dy


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", [(1, 2, 11, 19, 5), (2, 1, 20, 9, 3)], ids=str)
def test_every_rung_and_the_backward_against_float64(shape, causal):
    q, k, v, dy = inputs(np.random.default_rng(sum(shape)), *shape)
    check(q, k, v, dy, causal, 0.7)


@pytest.mark.parametrize("where", ["k", "v"])
def test_a_nan_in_a_key_every_query_masks_spreads_as_in_pytorch(where):
    q, k, v, dy = inputs(np.random.default_rng(2), 1, 1, 9, 20, 3)
    {"k": k, "v": v}[where][0, 0, 19, 1] = np.nan  # key 19, past the last query's (8)
    check(q, k, v, dy, True, 0.5)
