"""The models a service holds: each a trained checkpoint of the course, float or int8, loaded as
nn.predict loads it and run as nn.predict runs it (inference mode, or an int8 model's own layers).

Checkpoints are read and checked when the service starts (`read_served`, before it listens: a bad
one is a one-line error and the exit status of nn.predict's), and built on the tier by the worker
that owns the tier (`ServedModel.load`, nn/serve/batcher.py).
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nn.checkpoint import read_checkpoint
from nn.data import Normalizer
from nn.predict import check_record, inference_runner, load_model


@dataclass
class ServedModel:
    """A checkpoint the service answers for under `name`; `model` and `runner` once loaded."""

    name: str
    checkpoint: Path
    meta: dict
    model: object = None  # the evaluation-mode Model (Grad-CAM runs its backward)
    runner: object = None  # what predicts: inference mode, or the int8 model itself
    normalizer: Normalizer = field(init=False)

    def __post_init__(self):
        self.normalizer = Normalizer.from_json(self.meta["normalizer"])

    @property
    def input_shape(self):
        return tuple(self.meta["input_shape"])

    @property
    def class_names(self):
        return self.meta["class_names"]

    @property
    def quantized(self):
        return "quantization" in self.meta

    def load(self, tier):
        """Build the model on `tier` with the checkpoint's weights."""
        self.model, _ = load_model(self.checkpoint, tier)
        self.runner = inference_runner(self.model)

    def probabilities(self, images):
        """float64 [N, classes] for float32 `images` [N, C, H, W] in [0, 1] (the model's size)."""
        tier = self.model.tier
        normalized = self.normalizer(images * np.float32(255))
        logits = self.runner.forward(tier.from_numpy(normalized))
        return np.asarray(self.model.loss.probabilities(tier, logits), np.float64)

    def describe(self):
        """What GET /models says of it."""
        return {"name": self.name, "checkpoint": str(self.checkpoint), "model": self.meta["model"],
                "data": self.meta["data"], "classes": self.class_names,
                "input_shape": list(self.input_shape), "int8": self.quantized}  # fmt: skip


def read_served(paths):
    """A ServedModel per checkpoint path, named MODEL-DATA (-int8 for an int8 checkpoint; -2, -3,
    ... after a name already taken); CheckpointError or ValueError for one that cannot be served."""
    served = []
    for path in map(Path, paths):
        meta, _ = read_checkpoint(path)
        check_record(path, meta)
        if len(meta["input_shape"]) != 3:
            raise ValueError(f"checkpoint {path}: the service classifies images, and model "
                             f"{meta['model']} takes points of shape {tuple(meta['input_shape'])}")
        name = f"{meta['model']}-{meta['data']}" + ("-int8" if "quantization" in meta else "")
        taken, unique, n = {model.name for model in served}, name, 1
        while unique in taken:
            n += 1
            unique = f"{name}-{n}"
        served.append(ServedModel(unique, path, meta))
    return served
