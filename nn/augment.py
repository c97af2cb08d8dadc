"""Data augmentation for image batches: random shifts (a pad-and-crop) and horizontal flips.

Applied to the raw uint8 batch before normalization, so padding adds black (0) pixels, the
background of MNIST and Fashion-MNIST.
"""

import numpy as np


def random_shift(images, max_shift, rng):
    """Move each image of [N, C, H, W] by its own random offset in [-max_shift, max_shift]^2.

    Same as padding by max_shift and cropping an H x W window at a random position.
    """
    if max_shift == 0:
        return images
    count, _, height, width = images.shape
    pad = ((0, 0), (0, 0), (max_shift, max_shift), (max_shift, max_shift))
    padded = np.pad(images, pad)
    rows = rng.integers(0, 2 * max_shift + 1, count)
    cols = rng.integers(0, 2 * max_shift + 1, count)
    shifted = np.empty_like(images)
    for index in range(count):
        top, left = rows[index], cols[index]
        shifted[index] = padded[index, :, top:top + height, left:left + width]
    return shifted


def random_flip(images, rng):
    """Mirror each image left-right with probability 1/2 (clothes look the same mirrored)."""
    flipped = images.copy()
    chosen = rng.random(len(images)) < 0.5
    flipped[chosen] = images[chosen, :, :, ::-1]
    return flipped


def augment(images, rng, max_shift=0, flip=False):
    """The augmented copy of a uint8 batch [N, C, H, W] (unchanged when both are off)."""
    images = random_shift(images, max_shift, rng)
    return random_flip(images, rng) if flip else images


def batch_augmented(images, recipe, epoch, batch):
    """Batch `batch` of epoch `epoch` ([N, C, H, W] uint8) as `recipe` augments it, its draws
    from (seed, epoch, batch): the same on every tier, in every step that makes it, on resume."""
    if images.ndim != 4 or not (recipe.shift or recipe.flip):
        return images
    rng = np.random.default_rng([recipe.seed, epoch, batch, 1])
    return augment(images, rng, recipe.shift, recipe.flip)
