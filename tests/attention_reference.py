"""A float64 reference of attention and its gradients for the stage-4 ladder's tests
(tests/test_attention_cuda.py, tests/test_attention_numba.py), and the comparison they share."""

import numpy as np


def reference(q, k, v, dy, causal, scale):
    """(y, lse, dq, dk, dv) in float64, masked as PyTorch's math backend masks (S + -inf)."""
    q, k, v, dy = (a.astype(np.float64) for a in (q, k, v, dy))
    with np.errstate(all="ignore"):
        s = scale * q @ k.swapaxes(-1, -2)
        if causal:
            s = s + np.where(np.tri(*s.shape[-2:], dtype=bool), 0.0, -np.inf)
        top = s.max(axis=-1, keepdims=True)
        top = np.where(np.isnan(s).any(axis=-1, keepdims=True), np.nan, top)
        shift = np.where(top == -np.inf, np.inf, top)  # a row of -inf: P = 0 (safe softmax)
        e = np.exp(s - shift)
        total = e.sum(axis=-1, keepdims=True)
        p = np.where(total == 0, 0.0, e / total)
        y = p @ v
        dv = p.swapaxes(-1, -2) @ dy
        dp = dy @ v.swapaxes(-1, -2)
        ds = p * (dp - (dy * y).sum(axis=-1, keepdims=True))
        dq, dk = scale * ds @ k, scale * ds.swapaxes(-1, -2) @ q
    return y, (top + np.log(total))[..., 0], dq, dk, dv  # lse: NaN where torch's is +inf


def close(got, want, what):
    """got (float32) against want (float64): the same non-finite pattern, the rest within a
    float32 tolerance relative to the largest value."""
    assert np.array_equal(np.isfinite(got), np.isfinite(want)), what
    assert np.array_equal(np.isnan(got), np.isnan(want)), what
    finite = np.isfinite(want)
    tolerance = 2e-5 * (1 + np.abs(want[finite]).max(initial=0))
    error = np.abs(got[finite] - want[finite]).max(initial=0)
    assert error <= tolerance, f"{what}: error {error:.3g} > {tolerance:.3g}"
