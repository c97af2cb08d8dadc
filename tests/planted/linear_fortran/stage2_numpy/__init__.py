"""Planted bug: linear_forward computes (w @ x.T).T, the right values in a Fortran-ordered
(not C-contiguous) array."""

import stage2_numpy as _stage2
from tests.planted.reference import *  # noqa: F403


def linear_forward(x, w, b):
    return (_stage2.matmul(w, _stage2.transpose(x)) + b[:, None]).T
