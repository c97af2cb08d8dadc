"""Data augmentation for image batches: random shifts (a pad-and-crop) and horizontal flips.

Applied to the raw uint8 batch before normalization, so padding adds black (0) pixels, the
background of MNIST and Fashion-MNIST. A batch's draws come from one generator, seeded by (seed,
epoch, batch), in one order (`batch_draws`): the host applies them here (`batch_augmented`), and
a GPU tier that augments on the device (nn/device_data.py, nn/host_pipeline.py) applies the very
same draws there.
"""

import numpy as np


def shift_offsets(count, max_shift, rng):
    """(rows, cols), int64 [count]: where each image's H x W window starts in the image padded by
    max_shift, each in [0, 2 * max_shift] (the image moves by max_shift - offset)."""
    rows = rng.integers(0, 2 * max_shift + 1, count)
    cols = rng.integers(0, 2 * max_shift + 1, count)
    return rows, cols


def flip_choices(count, rng):
    """bool [count]: which images are mirrored left-right, each with probability 1/2."""
    return rng.random(count) < 0.5


def batch_draws(recipe, epoch, batch, count):
    """(rows, cols, flips) of batch `batch` of epoch `epoch` ([count] each: int64, int64, bool),
    drawn from (seed, epoch, batch): the shifts first, then the flips; zeros for what `recipe`
    leaves off (no shift: the window at offset 0 of an unpadded image)."""
    rng = np.random.default_rng([recipe.seed, epoch, batch, 1])
    rows = cols = np.zeros(count, np.int64)
    if recipe.shift:
        rows, cols = shift_offsets(count, recipe.shift, rng)
    flips = flip_choices(count, rng) if recipe.flip else np.zeros(count, bool)
    return rows, cols, flips


def check_shift(max_shift, height, width):
    """ValueError unless a shift of up to max_shift pixels leaves part of an H x W image in view."""
    if not 0 <= max_shift < min(height, width):
        largest = min(height, width) - 1
        raise ValueError(f"shift must be in [0, {largest}] (smaller than the images' height "
                         f"{height} and width {width}), got {max_shift}")  # fmt: skip


def shifted(images, rows, cols, max_shift):
    """Each image of [N, C, H, W] padded by max_shift (black) and cropped to H x W at (rows[n],
    cols[n]): moved by its own offset."""
    if max_shift == 0:
        return images
    count, _, height, width = images.shape
    check_shift(max_shift, height, width)
    pad = ((0, 0), (0, 0), (max_shift, max_shift), (max_shift, max_shift))
    padded = np.pad(images, pad)
    result = np.empty_like(images)
    for index in range(count):
        top, left = rows[index], cols[index]
        result[index] = padded[index, :, top : top + height, left : left + width]
    return result


def flipped(images, flips):
    """A copy of [N, C, H, W] with the images where flips[n] mirrored left-right."""
    result = images.copy()
    result[flips] = images[flips, :, :, ::-1]
    return result


def batch_augmented(images, recipe, epoch, batch):
    """Batch `batch` of epoch `epoch` ([N, C, H, W] uint8) as `recipe` augments it, its draws
    from (seed, epoch, batch): the same on every tier, in every step that makes it, on resume.
    Shifted first, then flipped."""
    if images.ndim != 4 or not (recipe.shift or recipe.flip):
        return images
    rows, cols, flips = batch_draws(recipe, epoch, batch, len(images))
    images = shifted(images, rows, cols, recipe.shift)
    return flipped(images, flips) if recipe.flip else images
