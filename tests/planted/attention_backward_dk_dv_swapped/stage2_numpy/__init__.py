"""Planted bug: attention_backward returns (dq, dv, dk), its last two gradients swapped: of one
shape (k's and v's), so only their values can tell."""

from tests.planted.reference import *  # noqa: F403
from tests.planted.reference import _stage2


def attention_backward(dy, q, k, v, y, saved, causal=False, scale=None):
    dq, dk, dv = _stage2.attention_backward(dy, q, k, v, y, saved, causal, scale)
    return dq, dv, dk  # the bug: dk and dv swapped
