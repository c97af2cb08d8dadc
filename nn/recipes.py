"""Training recipes: every setting a run needs, in one place.

`make train ARGS='--model lenet5 --data mnist'` (or `python -m nn.train ...`) uses the recipe below
for that model and data; any flag of nn.train overrides one field. The recipes for the curriculum's
targets are the ones the committed results in curriculum/results/train-*.json were produced with.
"""

from dataclasses import asdict, dataclass, field, fields, replace

from nn.schedules import Schedule
from nn.setting_checks import is_int, is_number, is_positive

OPTIMIZER_NAMES = ("sgd", "momentum", "nesterov", "rmsprop", "adam")
# What each field must be: (predicate, what to say otherwise). Recipes come from this file, from
# flags and from checkpoints; all three are checked here, before anything is built.
FIELD_CHECKS = {
    "epochs": (lambda v: is_int(v, 1), "an integer >= 1"),
    "batch_size": (lambda v: is_int(v, 1), "an integer >= 1"),
    "optimizer": (lambda v: v in OPTIMIZER_NAMES, f"one of {list(OPTIMIZER_NAMES)}"),
    "lr": (is_positive, "a finite number > 0"),
    "momentum": (is_number, "a finite number"),
    "beta2": (lambda v: is_number(v, 0.0) and v < 1, "a number in [0, 1)"),
    "weight_decay": (lambda v: is_number(v, 0.0), "a finite number >= 0"),
    "schedule": (lambda v: v in Schedule.KINDS, f"one of {list(Schedule.KINDS)}"),
    "warmup_epochs": (lambda v: is_number(v, 0.0), "a finite number >= 0"),
    "gamma": (is_positive, "a finite number > 0"),
    "step_epochs": (lambda v: is_int(v, 1), "an integer >= 1"),
    "min_lr_factor": (lambda v: is_number(v, 0.0, 1.0), "a number in [0, 1]"),
    "shift": (is_int, "an integer >= 0"),
    "flip": (lambda v: isinstance(v, bool), "true or false"),
    "val_size": (is_int, "an integer >= 0"),
    "train_size": (is_int, "an integer >= 0"),
    "patience": (is_int, "an integer >= 0"),
    "seed": (is_int, "an integer >= 0"),
    "synthetic_size": (lambda v: is_int(v, 1), "an integer >= 1"),
    "model_options": (lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
                      "a dict of NAME: VALUE"),
}


@dataclass(frozen=True)
class Recipe:
    epochs: int = 10
    batch_size: int = 128
    optimizer: str = "adam"  # sgd, momentum, nesterov, rmsprop, adam
    lr: float = 1e-3
    momentum: float = 0.9  # for momentum and nesterov
    beta2: float = 0.999  # for adam: decay of the running mean of squared gradients
    weight_decay: float = 0.0  # L2, on weights only (not biases, not batchnorm)
    schedule: str = "cosine"  # constant, step, exponential, cosine
    warmup_epochs: float = 0.0
    gamma: float = 0.1  # step: factor every step_epochs; exponential: factor per epoch
    step_epochs: int = 1
    min_lr_factor: float = 0.0  # cosine ends at lr * min_lr_factor
    shift: int = 0  # augmentation: random shifts of up to this many pixels
    flip: bool = False  # augmentation: random horizontal flips
    val_size: int = 5000  # examples of the training set held out for validation
    train_size: int = 0  # train on only this many of the rest (0: all), for quick trials
    patience: int = 5  # early stopping: epochs without a better validation loss (0: never)
    seed: int = 0  # initial weights, shuffling, augmentation and dropout all derive from it
    synthetic_size: int = 1000  # points per split of blobs and spirals
    model_options: dict = field(default_factory=dict)  # keyword arguments of the model builder

    def __post_init__(self):
        """ValueError naming the first field (as its flag) that FIELD_CHECKS refuses."""
        for name, (is_valid, expected) in FIELD_CHECKS.items():
            value = getattr(self, name)
            if not is_valid(value):
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} must be {expected}, got {value!r}")

    def with_overrides(self, **overrides):
        """A copy with the given fields replaced (None values are ignored)."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def optimizer_options(self):
        """The keyword arguments of this recipe's optimizer beyond lr and weight decay."""
        if self.optimizer in ("momentum", "nesterov"):
            return {"momentum": self.momentum}
        return {"beta2": self.beta2} if self.optimizer == "adam" else {}

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, values):
        """The recipe `to_json` gave; ValueError if `values` is not one."""
        if not isinstance(values, dict):
            raise ValueError(f"a recipe is a JSON object, got {values!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown recipe fields {unknown}")
        return cls(**values)


SYNTHETIC = Recipe(batch_size=32, lr=0.05, val_size=0, patience=0, schedule="constant")

RECIPES = {
    ("perceptron", "blobs"): replace(SYNTHETIC, epochs=10, optimizer="sgd", lr=0.1),
    ("xor", "xor"): replace(SYNTHETIC, epochs=100, batch_size=4, lr=0.1),
    ("mlp", "spirals"): replace(SYNTHETIC, epochs=100, lr=0.01, schedule="cosine"),
    # Adam with cosine decay and 1-pixel shifts: 784-128-10 needs no more.
    ("mlp", "mnist"): Recipe(epochs=15, lr=1e-3, shift=1),
    # Nesterov momentum, a short warm-up, cosine decay, L2 and 1-pixel shifts.
    ("lenet5", "mnist"): Recipe(
        epochs=10, optimizer="nesterov", lr=0.05, weight_decay=5e-4, warmup_epochs=0.2, shift=1
    ),
    # Batchnorm takes a large learning rate: warm up to 0.1, then cosine ("one cycle").
    ("resnet_mini", "mnist"): Recipe(
        epochs=3, batch_size=64, optimizer="nesterov", lr=0.1, weight_decay=5e-4,
        warmup_epochs=0.3, shift=1, model_options={"width": 32},
    ),
    # Five epochs leave this network under-fitted, so no dropout and no augmentation (both
    # cost accuracy at this length); small batches (more steps), Xavier's smaller initial weights
    # and beta2 = 0.99 help it most. Most of the training set trains: 2,000 examples validate.
    ("fashion_cnn", "fashion-mnist"): Recipe(
        epochs=5, batch_size=32, lr=1e-3, beta2=0.99, val_size=2000,
        model_options={"init": "xavier"},
    ),
    # A transformer has no convolution's built-in locality: Adam after a warm-up (attention's
    # softmax saturates under a large first step), cosine decay, 1-pixel shifts. On Fashion-MNIST
    # 7x7 patches under-fit (train and validation accuracy level at 88%): 4x4 patches (49 tokens)
    # and no shifts.
    ("vit", "mnist"): Recipe(epochs=10, lr=2e-3, warmup_epochs=1, shift=1),
    ("vit", "fashion-mnist"): Recipe(epochs=10, lr=2e-3, warmup_epochs=1,
                                     model_options={"patch": 4}),
    # Natural colour photos: random flips and 4-pixel shifts (pad and crop, CIFAR's recipe at this
    # size); batchnorm takes Nesterov momentum at 0.05 after a warm-up, then cosine decay. Not yet
    # run at full size: no result of it is committed.
    ("tiny_imagenet_cnn", "tiny-imagenet"): Recipe(
        epochs=10, optimizer="nesterov", lr=0.05, weight_decay=5e-4, warmup_epochs=0.5,
        shift=4, flip=True,
    ),
}


def recipe_for(model, data):
    """The recipe for `model` on `data`: the tuned one if there is one, else the defaults
    (with the synthetic defaults for point data)."""
    if (model, data) in RECIPES:
        return RECIPES[model, data]
    return SYNTHETIC if data in ("xor", "blobs", "spirals") else Recipe()
