"""NumPy arrays with another array's values laid out otherwise in memory, or slightly changed:
the malformed-call tests (test_stage3_fuzz.py, test_bad_input_corpus.py) build inputs with them."""

import numpy as np


def unaligned(array):
    """A copy of `array` whose data starts 1 byte past an aligned address (still C-contiguous)."""
    raw = np.empty(array.nbytes + 1, np.uint8)[1:]
    copy = raw.view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def negative_strides(array):
    """A view with array's values whose last axis runs backwards in memory."""
    return np.ascontiguousarray(array[..., ::-1])[..., ::-1]


def non_contiguous(array):
    """A view with array's values, every other element of a larger buffer."""
    wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
    wide[..., ::2] = array
    return wide[..., ::2]


def read_only(array):
    """A read-only copy of `array`."""
    copy = array.copy()
    copy.flags.writeable = False
    return copy


def with_first(array, value):
    """A copy of `array` whose first element is `value`."""
    copy = array.copy()
    copy.flat[0] = value
    return copy
