"""The limits every tier enforces, so that a size a C or CUDA kernel computes never overflows and
no tier starts an allocation (or a loop) it cannot finish."""

import math

from .errors import fail, format_shape

# The most elements of any array an op allocates (an output, or an im2col matrix a tier may
# build), and the largest int argument (k, stride, padding, a size in a shape): far beyond the
# course's sizes, and small enough that no size computed from them overflows int64 in C.
MAX_ELEMENTS = 2**31 - 1
MAX_INT = 2**31 - 1
SEED_LIMIT = 2**64  # seeds of the shared random stream are unsigned 64-bit ints


def check_elements(op, what, shape):
    """Refuse `what` of `shape` when it would hold more than MAX_ELEMENTS elements (a ValueError
    at once, not an out-of-memory kill or an hour-long loop)."""
    count = math.prod(shape)
    if count > MAX_ELEMENTS:
        fail(
            op,
            f"{what} must have at most {MAX_ELEMENTS} elements, got {count} "
            f"(shape {format_shape(shape)})",
        )
