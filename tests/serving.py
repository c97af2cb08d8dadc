"""What the service's tests share: a small LeNet-5 checkpoint with seeded random weights, saved as
nn.train saves one (no run folder, no data set needed), and the service started on it over real
HTTP on a free loopback port (nn/serve/launch.py); images as a client sends them; a model whose
forward passes wait until a test lets them go (HeldModel)."""

import io
import threading

import numpy as np
from PIL import Image

from nn.checkpoint import save_checkpoint
from nn.models import build_model
from nn.recipes import recipe_for

CLASSES = [str(digit) for digit in range(10)]


def lenet5_checkpoint(path, seed=7):
    """A LeNet-5 checkpoint at `path` with random weights drawn from `seed`, on stage 2."""
    import stage2_numpy

    model = build_model("lenet5", (1, 28, 28), 10)
    model.build(stage2_numpy, seed=seed)
    save_checkpoint(path, model, None, {
        "data": "mnist", "class_names": CLASSES, "input_shape": [1, 28, 28], "num_classes": 10,
        "normalizer": {"mean": [0.1307], "std": [0.3081], "is_image": True},
        "model_options": {}, "recipe": recipe_for("lenet5", "mnist").to_json()})  # fmt: skip
    return path


def png(pixels):
    """PNG bytes of uint8 pixels [H, W] (or [H, W, 3])."""
    buffer = io.BytesIO()
    Image.fromarray(np.asarray(pixels, np.uint8)).save(buffer, "PNG")
    return buffer.getvalue()


def drawn_seven(size=160):
    """A "7" drawn in black on white, off centre on a `size` canvas: uint8 [size, size]."""
    canvas = np.full((size, size), 255, np.uint8)
    top, bottom, left, right, half_width = (round(size * f) for f in (0.19, 0.87, 0.37, 0.81, 0.04))
    canvas[top:top + 2 * half_width, left:right] = 0  # the top bar
    for row in range(top + 2 * half_width, bottom):  # the stroke down and to the left
        column = right - (row - top) * (right - left) // (2 * (bottom - top))
        canvas[row, column - half_width:column + half_width] = 0
    return canvas


class HeldModel:
    """A stand-in for a ServedModel whose forward passes after the warm-up wait for `release`."""

    name, checkpoint, input_shape, class_names = "held", "held.npz", (1, 28, 28), CLASSES

    def __init__(self):
        self.passes, self.entered, self.release = 0, threading.Event(), threading.Event()

    def load(self, tier):
        pass

    def probabilities(self, images):
        self.passes += 1
        if self.passes > 1:  # the first is the warm-up
            self.entered.set()
            assert self.release.wait(30)
        return np.full((len(images), 10), 0.1)
