"""Planted bug: attention's default scale 1/D instead of 1/sqrt(D); a scale passed in is right."""

from tests.planted.reference import *  # noqa: F403
from tests.planted.reference import _stage2


def attention(q, k, v, causal=False, scale=None):
    if scale is None:
        scale = 1 / q.shape[-1]  # the bug: 1/D
    return _stage2.attention(q, k, v, causal, scale)
