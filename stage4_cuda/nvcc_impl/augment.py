"""A batch of raw images augmented and normalized on the GPU (csrc/augment.cu): what lets the host
pipeline (nn/host_pipeline.py) send uint8 pixels and the host's draws instead of the finished
float32 batch. Given code, not an exercise; the checks are the runtime's.

- augment_images(images, rows, cols, flips, max_shift, levels, out, stream): out <- images
  shifted, flipped and normalized, queued on `stream`.
"""

import numpy as np

import argcheck
from argcheck import arrays

from . import _checks
from ._library import call, int64_indices
from .streams import DEFAULT, stream_handle

PIXEL_LEVELS = 256  # the values of a uint8 pixel: levels has one float32 for each, per channel


def augment_images(images, rows, cols, flips, max_shift, levels, out, stream=DEFAULT):
    """out [N, C, H, W] (float32) <- images [N, C, H, W] (uint8): image n moved down by rows[n] -
    max_shift and right by cols[n] - max_shift (int64 [N], each in [0, 2 * max_shift]; black, 0,
    where it leaves the image), then mirrored left-right where flips[n] (uint8 [N], 0 or 1), then
    each pixel value v of channel c replaced by levels[c, v] (float32 [C, 256], the normalized
    values). Queued on `stream` (the default streams when None); returns out. The offsets' and
    flips' values are not checked (that would wait for the GPU): any value is safe, a pixel taken
    from outside the image being black."""
    op = "augment_images"
    info = arrays.describe(_checks.TIER, op, "images", images)
    if info.dtype != "uint8":
        argcheck.fail_type(op, f"images must be uint8 (raw pixels), got {info.dtype}")
    if len(info.shape) != 4:
        argcheck.fail(op, "images must have shape [N, C, H, W], got "
                          f"{argcheck.format_shape(info.shape)}")  # fmt: skip
    n, c, h, w = info.shape
    if not argcheck.is_int(max_shift):
        argcheck.fail_type(op, f"max_shift must be an int, got {max_shift!r}")
    if not 0 <= max_shift < min(h, w):
        argcheck.fail(op, f"max_shift must be an int in [0, {min(h, w) - 1}] (smaller than the "
                          f"images' height {h} and width {w}), got {max_shift!r}")  # fmt: skip
    rows = int64_indices(op, "rows", _checks.integers(op, "rows", rows, n))
    cols = int64_indices(op, "cols", _checks.integers(op, "cols", cols, n))
    flips = _checks.integers(op, "flips", flips, n)
    if flips.dtype != np.uint8:
        argcheck.fail_type(op, f"flips must hold uint8 values (0 or 1), got {flips.dtype}")
    levels = arrays.array(_checks.TIER, op, "levels", levels, "C, V", C=c, V=PIXEL_LEVELS)[0]
    out = arrays.in_place(_checks.TIER, op, "out", out, dims="N, C, H, W", N=n, C=c, H=h, W=w)
    call("s2c_cuda_augment_images", _checks.TIER.readable(images), rows, cols, flips, levels,
         out, n, c, h, w, int(max_shift), stream_handle(stream))  # fmt: skip
    return out
