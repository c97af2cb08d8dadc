"""The device-data hooks (CONTRACT.md, "Training with the data on the device"): what nn's trainer
needs to keep the whole training set on the GPU and gather each batch there (nn/device_data.py).

Given code, not an exercise: none of these is an op of the contract, and none has a gradient.
- take(x, indices): the rows of x at indices, a gather: one read and one write of each row.
- shift_images(x, rows, cols, max_shift, fill): each image moved by its own offset, as
  nn/augment.shifted does on the host (pad by max_shift, crop at (rows[n], cols[n])).
- correct_count(logits, labels): how many rows are predicted right, as a 0-d device value, so
  that a training step reports its accuracy without a copy to the host.
"""

import numpy as np
from numba import cuda

from argcheck import arrays

from ..runtime import device
from ..runtime.checks import TIER, integers
from ..runtime.device import SIMULATOR, DeviceScalar, flat
from ..runtime.launch import launch, launch_elementwise


@cuda.jit
def _take_rows(x, indices, row_size, y):
    i = cuda.grid(1)
    if i < y.size:
        row, column = i // row_size, i % row_size
        y[i] = x[indices[row] * row_size + column]


def take(x, indices):
    """x[indices] for x [N, ...] (float32, or int64 labels) and int64 indices [B] in [0, N): a
    new array [B, ...]."""
    op = "take"
    is_int = getattr(x, "dtype", None) == np.int64
    x = integers(op, "x", x) if is_int else arrays.array(TIER, op, "x", x)[0]
    rows = x.shape[0]
    indices = arrays.indices(TIER, op, "indices", indices, "B", rows,
                             f"row indices of x in [0, N={rows})")  # fmt: skip
    row_size = x.size // x.shape[0]
    y = device.empty((indices.shape[0], *x.shape[1:]), x.dtype)
    launch_elementwise(_take_rows, y.size, flat(x), indices, np.int64(row_size), flat(y))
    return y


@cuda.jit
def _shift(x, rows, cols, max_shift, fill, y):
    index = cuda.grid(1)
    if index < y.size:
        _, channels, height, width = y.shape
        j = index % width
        index //= width
        i = index % height
        index //= height
        c = index % channels
        image = index // channels
        source_i = i + rows[image] - max_shift
        source_j = j + cols[image] - max_shift
        inside = 0 <= source_i < height and 0 <= source_j < width
        y[image, c, i, j] = x[image, c, source_i, source_j] if inside else fill[c]


def shift_images(x, rows, cols, max_shift, fill):
    """Image n of x [N, C, H, W] moved down by rows[n] - max_shift and right by cols[n] -
    max_shift (int64 [N], each in [0, 2 * max_shift]); pixels shifted in take fill[c] [C]."""
    op = "shift_images"
    x, (n, c, _, _) = arrays.array(TIER, op, "x", x, "N, C, H, W")
    rows = integers(op, "rows", rows, n)
    cols = integers(op, "cols", cols, n)
    fill = arrays.array(TIER, op, "fill", fill, "C", C=c)[0]
    y = device.empty(x.shape)
    launch_elementwise(_shift, y.size, x, rows, cols, np.int64(max_shift), fill, y)
    return y


COUNT_THREADS = 32 if SIMULATOR else 256


@cuda.jit
def _count_correct(logits, labels, count):
    """One block: each thread counts its rows, the block adds the counts up in shared memory."""
    total = cuda.shared.array(1, np.int64)
    t = cuda.threadIdx.x
    if t == 0:
        total[0] = 0
    cuda.syncthreads()
    mine = 0
    for row in range(t, logits.shape[0], cuda.blockDim.x):
        if logits.shape[1] == 1:  # one logit: class 1 when it is positive
            predicted = 1 if logits[row, 0] > 0 else 0
        else:  # the first highest logit, as NumPy's argmax
            predicted = 0
            for j in range(1, logits.shape[1]):
                if logits[row, j] > logits[row, predicted]:
                    predicted = j
        mine += 1 if predicted == labels[row] else 0
    cuda.atomic.add(total, 0, mine)
    cuda.syncthreads()
    if t == 0:
        count[0] = total[0]


def correct_count(logits, labels):
    """How many rows of logits [N, C] predict their label (int64 [N]), as a DeviceScalar."""
    op = "correct_count"
    logits, (n, _) = arrays.array(TIER, op, "logits", logits, "N, C")
    labels = integers(op, "labels", labels, n)
    count = device.empty(1)
    launch(_count_correct, 1, COUNT_THREADS, logits, labels, count)
    return DeviceScalar(count)
