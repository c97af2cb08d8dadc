"""The synthetic 2-D sets: shapes, dtypes, determinism, and the property each one promises."""

import numpy as np
import pytest

from datasets import blobs, spirals, xor
from datasets.synthetic import BLOBS_CENTER, BLOBS_NORMAL


def perceptron_epochs_to_separate(points, labels, max_epochs=1000):
    """Epochs the perceptron needs to classify every point right (None if it never does).

    It converges exactly when the classes are linearly separable: an independent check of blobs.
    """
    features = np.hstack([points.astype(np.float64), np.ones((len(points), 1))])
    targets = 2.0 * labels - 1.0
    weights = np.zeros(3)
    for epoch in range(1, max_epochs + 1):
        mistakes = 0
        for feature, target in zip(features, targets, strict=True):
            if target * (feature @ weights) <= 0:
                weights += target * feature
                mistakes += 1
        if mistakes == 0:
            return epoch
    return None


@pytest.mark.parametrize("n", [2, 7, 200])
def test_blobs(n):
    seed = int(np.random.default_rng().integers(1 << 30))
    points, labels = blobs(n, seed)
    assert points.dtype == np.float32 and points.shape == (n, 2)
    assert labels.dtype == np.int64 and labels.shape == (n,)
    assert np.bincount(labels, minlength=2).tolist() == [(n + 1) // 2, n // 2]
    assert perceptron_epochs_to_separate(points, labels) is not None
    again_points, again_labels = blobs(n, seed)
    np.testing.assert_array_equal(again_points, points)
    np.testing.assert_array_equal(again_labels, labels)


@pytest.mark.parametrize("margin", [0.1, 1.0, 3.0])
def test_blobs_margin(margin):
    points, labels = blobs(500, seed=3, margin=margin)
    signed_distance = (points - BLOBS_CENTER) @ BLOBS_NORMAL * (2 * labels - 1)
    assert signed_distance.min() >= margin / 2 - 1e-5
    assert signed_distance.min() < margin / 2 + 0.05  # the margin is tight, not much wider


def test_blobs_seeds_differ():
    assert not np.array_equal(blobs(50, seed=1)[0], blobs(50, seed=2)[0])


def test_xor():
    points, labels = xor()
    assert points.dtype == np.float32 and labels.dtype == np.int64
    assert points.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert labels.tolist() == [0, 1, 1, 0]
    assert perceptron_epochs_to_separate(points, labels, max_epochs=100) is None


@pytest.mark.parametrize("classes", [2, 3, 5])
def test_spirals(classes):
    seed = int(np.random.default_rng().integers(1 << 30))
    points, labels = spirals(40, classes=classes, noise=0.3, seed=seed)
    assert points.dtype == np.float32 and points.shape == (40 * classes, 2)
    assert labels.dtype == np.int64 and labels.tolist() == np.repeat(range(classes), 40).tolist()
    radius = np.linalg.norm(points, axis=1).reshape(classes, 40)
    np.testing.assert_allclose(radius, np.tile(np.linspace(0, 1, 40), (classes, 1)), atol=1e-6)
    again, _ = spirals(40, classes=classes, noise=0.3, seed=seed)
    np.testing.assert_array_equal(again, points)
    assert not np.array_equal(spirals(40, classes, 0.3, seed + 1)[0], points)


def test_spiral_arms_are_rotations_of_each_other():
    classes = 3
    arms = spirals(25, classes=classes, noise=0.0)[0].reshape(classes, 25, 2).astype(np.float64)
    for arm in range(1, classes):
        # Points are (r sin t, r cos t): adding angle a to t turns them clockwise by a.
        angle = 2 * np.pi * arm / classes
        clockwise = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
        np.testing.assert_allclose(arms[arm], arms[0] @ clockwise, atol=1e-6)


@pytest.mark.parametrize("call, argument", [
    (lambda: blobs(1), "n"),
    (lambda: blobs(10.0), "n"),
    (lambda: blobs(10, margin=0), "margin"),
    (lambda: spirals(0), "n_per_class"),
    (lambda: spirals(10, classes=1), "classes"),
    (lambda: spirals(10, noise=-0.1), "noise"),
    (lambda: spirals(10, noise=float("nan")), "noise"),
])
def test_bad_arguments(call, argument):
    with pytest.raises(ValueError, match=f"^{argument}: "):
        call()
