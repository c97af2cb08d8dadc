"""Small synthetic 2-D data sets for the first weeks: points float32 [N, 2], labels int64 [N].

Each is deterministic given its seed (NumPy's default_rng), so a test or a notebook sees the same
points every run.
"""

import numpy as np

# blobs: the two classes lie on either side of the line NORMAL . (x - CENTER) = 0.
BLOBS_NORMAL = np.array([0.6, 0.8])
BLOBS_TANGENT = np.array([-0.8, 0.6])
BLOBS_CENTER = np.array([0.5, -0.5])


def blobs(n, seed=0, margin=1.0):
    """Two linearly separable classes of `n` points in all, half of each, in random order.

    Every point lies at least `margin / 2` from the separating line NORMAL . (x - CENTER) = 0, on
    the side of its label (1 on the NORMAL side), so a linear classifier can reach 100% accuracy.
    Returns points float32 [n, 2] and labels int64 [n].
    """
    _check_count("n", n, minimum=2)
    if not margin > 0:
        raise ValueError(f"margin: expected a positive distance, got {margin!r}")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % 2)
    side = 2.0 * labels - 1.0  # -1 or +1
    distance = margin / 2 + np.abs(rng.normal(0.0, 1.0, n))
    along = rng.normal(0.0, 2.0, n)
    points = BLOBS_CENTER + np.outer(side * distance, BLOBS_NORMAL) + np.outer(along, BLOBS_TANGENT)
    return points.astype(np.float32), labels.astype(np.int64)


def xor():
    """The four corners of the unit square, labelled by XOR of their coordinates.

    Returns points float32 [4, 2] ((0,0), (0,1), (1,0), (1,1)) and labels int64 [4] (0, 1, 1, 0):
    the smallest problem no linear classifier solves.
    """
    points = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float32)
    labels = np.array([0, 1, 1, 0], dtype=np.int64)
    return points, labels


def spirals(n_per_class, classes=3, noise=0.2, seed=0):
    """`classes` interleaved spiral arms of `n_per_class` points each (the CS231n toy problem).

    Arm k sweeps 4 radians from the origin outwards (radius 0 to 1), rotated by 2*pi*k/classes;
    `noise` is the standard deviation of the angle's jitter. Returns points float32
    [classes * n_per_class, 2] (arm by arm) and labels int64 [classes * n_per_class].
    """
    _check_count("n_per_class", n_per_class, minimum=1)
    _check_count("classes", classes, minimum=2)
    if not noise >= 0:
        raise ValueError(f"noise: expected a standard deviation >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    radius = np.tile(np.linspace(0.0, 1.0, n_per_class), classes)
    labels = np.repeat(np.arange(classes), n_per_class)
    angle = (np.tile(np.linspace(0.0, 4.0, n_per_class), classes)
             + 2 * np.pi * labels / classes
             + rng.normal(0.0, noise, classes * n_per_class))
    points = np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1)
    return points.astype(np.float32), labels.astype(np.int64)


def _check_count(argument, value, minimum):
    """ValueError unless `value` is an int >= `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{argument}: expected an integer >= {minimum}, got {value!r}")
