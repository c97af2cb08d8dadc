"""The device-data hooks (CONTRACT.md, "Training with the data on the device") in CUDA C
(csrc/device_data.cu): what nn's trainer needs to keep the training set on the GPU and gather each
batch there. Given code, not exercises; the checks are the runtime's (the numba variant's messages).

- take(x, indices): the rows of x (float32, or int64 labels) at indices.
- shift_images(x, rows, cols, max_shift, fill): each image moved by its own offset.
- correct_count(logits, labels): how many rows predict their label, as a DeviceScalar.
"""

import numpy as np

from argcheck import arrays

from ..runtime import device
from ..runtime.device import DeviceScalar
from . import _checks
from ._library import call, int64_indices


def take(x, indices):
    """x[indices] for x [N, ...] (float32, or int64 labels) and int64 indices [B] in [0, N): a
    new array [B, ...]."""
    op = "take"
    is_int = getattr(x, "dtype", None) == np.int64
    x = _checks.integers(op, "x", x) if is_int else arrays.array(_checks.TIER, op, "x", x)[0]
    rows = x.shape[0]
    indices = arrays.indices(_checks.TIER, op, "indices", indices, "B", rows,
                             f"row indices of x in [0, N={rows})")  # fmt: skip
    indices = int64_indices(op, "indices", indices)
    y = device.empty((indices.shape[0], *x.shape[1:]), x.dtype)
    function = "s2c_cuda_take_int64" if is_int else "s2c_cuda_take"
    call(function, x, indices, y, indices.shape[0], x.size // max(rows, 1))
    return y


def shift_images(x, rows, cols, max_shift, fill):
    """Image n of x [N, C, H, W] moved down by rows[n] - max_shift and right by cols[n] -
    max_shift (int64 [N], each in [0, 2 * max_shift]); pixels shifted in take fill[c] [C]."""
    op = "shift_images"
    x, (n, c, h, w) = arrays.array(_checks.TIER, op, "x", x, "N, C, H, W")
    rows = int64_indices(op, "rows", _checks.integers(op, "rows", rows, n))
    cols = int64_indices(op, "cols", _checks.integers(op, "cols", cols, n))
    fill = arrays.array(_checks.TIER, op, "fill", fill, "C", C=c)[0]
    y = device.empty(x.shape)
    call("s2c_cuda_shift_images", x, rows, cols, fill, y, n, c, h, w, max_shift)
    return y


def correct_count(logits, labels):
    """How many rows of logits [N, C] predict their label (int64 [N]), as a DeviceScalar."""
    op = "correct_count"
    logits, (n, c) = arrays.array(_checks.TIER, op, "logits", logits, "N, C")
    labels = int64_indices(op, "labels", _checks.integers(op, "labels", labels, n))
    count = device.empty(1)
    call("s2c_cuda_correct_count", logits, labels, count, n, c)
    return DeviceScalar(count)
