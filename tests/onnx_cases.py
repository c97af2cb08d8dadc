"""Models, records and checkpoints for the ONNX tests: seeded, untrained, small, no data set needed.

Every model kind of nn/models.py with the data shape it takes, and a tiny network holding every
layer kind the exporter writes (a projection shortcut and an identity one, BatchNorm in both
layouts, average pooling, LeakyReLU, Tanh, Sigmoid, Dropout), small enough for numba's CUDA
simulator. BatchNorm gets random statistics and every bias random values, so that neither is an
identity or a zero a mistake could hide behind.
"""

import numpy as np

from nn.checkpoint import save_checkpoint
from nn.data import Normalizer, load_data
from nn.layers import (
    AvgPool2d,
    BatchNorm,
    Conv2d,
    Dropout,
    Flatten,
    LeakyReLU,
    Linear,
    MaxPool2d,
    ReLU,
    Residual,
    Sequential,
    Sigmoid,
    Tanh,
)
from nn.models import build_model
from nn.network import Model
from nn.recipes import Recipe, recipe_for

# model kind: (data set, input shape, classes)
MODEL_DATA = {
    "perceptron": ("blobs", (2,), 3),
    "xor": ("xor", (2,), 2),
    "mlp": ("mnist", (1, 28, 28), 10),
    "lenet5": ("mnist", (1, 28, 28), 10),
    "fashion_cnn": ("fashion-mnist", (1, 28, 28), 10),
    "resnet_mini": ("mnist", (1, 28, 28), 10),
    "tiny_imagenet_cnn": ("tiny-imagenet", (3, 64, 64), 200),
}
OPTIONS = {"fashion_cnn": {"dropout": 0.3}, "resnet_mini": {"width": 4}}


def every_layer_model():
    """A 1x8x8 -> 3 classes network with every layer kind, on 2 + 3 + ... channels."""
    body = Sequential(Conv2d(2, 3, 3, padding=1), BatchNorm(3), LeakyReLU(0.1),
                      Conv2d(3, 3, 3, padding=1))
    net = Sequential(
        Conv2d(1, 2, 3, padding=1),
        ReLU(),
        Residual(body, shortcut=Sequential(Conv2d(2, 3, 1))),
        MaxPool2d(2),
        Residual(Sequential(Conv2d(3, 3, 3, padding=1), BatchNorm(3), Tanh())),
        AvgPool2d(2),
        Flatten(),
        Linear(12, 6),
        BatchNorm(6),
        Sigmoid(),
        Dropout(0.5),
        Linear(6, 3),
    )
    return Model("every_layer", net, (1, 8, 8), 3, "cross_entropy")


def built(name, tier, seed=1):
    """(model of kind `name` built on `tier` with random BatchNorm statistics, its record)."""
    if name == "every_layer":
        model, data, shape, classes = every_layer_model(), "mnist", (1, 8, 8), 3
    else:
        data, shape, classes = MODEL_DATA[name]
        model = build_model(name, shape, classes, **OPTIONS.get(name, {}))
    model.build(tier, seed)
    randomize(model, tier, np.random.default_rng(seed))
    model.eval()
    return model, record(model, data, shape, classes, np.random.default_rng(seed + 1))


def randomize(model, tier, rng):
    def walk(layer):
        if "bias" in layer.params:
            channels = len(tier.to_numpy(layer.params["bias"].value))
            layer.params["bias"].value = tier.from_numpy(rng.normal(0, 0.1, channels)
                                                         .astype(np.float32))
        if isinstance(layer, BatchNorm):
            channels = layer.num_features
            layer.params["gamma"].value = tier.from_numpy(rng.uniform(0.5, 1.5, channels)
                                                          .astype(np.float32))
            layer.params["beta"].value = tier.from_numpy(rng.normal(0, 0.2, channels)
                                                         .astype(np.float32))
            layer.running_mean = tier.from_numpy(rng.normal(0, 0.3, channels).astype(np.float32))
            layer.running_var = tier.from_numpy(rng.uniform(0.3, 2, channels).astype(np.float32))
        for child in layer.children().values():
            walk(child)

    walk(model.net)


def record(model, data, shape, classes, rng):
    """The record nn.train writes into a checkpoint, with a random normalization."""
    channels = shape[0]
    normalizer = Normalizer(rng.uniform(0.1, 0.5, channels), rng.uniform(0.2, 0.4, channels),
                            is_image=len(shape) == 3)
    return {
        "data": data,
        "class_names": [f"class {index}" for index in range(classes)],
        "normalizer": normalizer.to_json(),
        "model_options": dict(model.options),
        "input_shape": list(shape),
        "num_classes": classes,
        "recipe": Recipe().to_json(),
    }


def random_inputs(shape, count, rng):
    """Raw inputs as a data set holds them: uint8 images, or float32 points."""
    if len(shape) == 3:
        return rng.integers(0, 256, (count, *shape), dtype=np.uint8)
    return rng.normal(0, 2, (count, *shape)).astype(np.float32)


def write_checkpoint(path, model, meta):
    save_checkpoint(path, model, None, meta)
    return path


def blobs_checkpoint(path):
    """(a float checkpoint at `path` of an MLP on the synthetic blobs, as nn.train writes one, the
    data): untrained, as quantization and export do not care how the weights were found."""
    import stage2_numpy

    recipe = recipe_for("mlp", "blobs")
    data = load_data("blobs", None, recipe.val_size, recipe.synthetic_size)
    model = build_model("mlp", data.input_shape, data.num_classes, hidden=32)
    model.build(stage2_numpy, seed=3)
    save_checkpoint(path, model, None, {
        "data": "blobs", "class_names": data.class_names,
        "normalizer": data.normalizer.to_json(), "model_options": {"hidden": 32},
        "input_shape": list(data.input_shape), "num_classes": data.num_classes,
        "recipe": recipe.to_json()})  # fmt: skip
    return path, data
