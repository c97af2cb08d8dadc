"""Planted bug: softmax's backward sums dy * y over the row's first 1024 columns only, as a
one-block reduction that never loops over the rest of a long row does."""

import numpy as np

from tests.planted.reference import *  # noqa: F403

BLOCK = 1024


def softmax_backward(y, dy):
    row_dot = np.einsum("nc,nc->n", dy[:, :BLOCK], y[:, :BLOCK])[:, None]
    return y * (dy - row_dot)
