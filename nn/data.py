"""Data for training: NumPy arrays split into train / validation / test, and their normalization.

Images stay uint8 [N, C, H, W] until a batch is drawn (a quarter of the memory of float32, and
augmentation shifts pixels before normalizing). Tiny ImageNet's test split stays on disk (a memory
map, read batch by batch); its training split, minus the validation examples, is copied into memory
as uint8 (1.2 GB, where float32 would take 4.7 GB). The validation split is carved out of the
official training set with a fixed seed; the test split is the official test set (Tiny ImageNet:
its official validation set), used only for the final report, never to choose anything.
"""

from dataclasses import dataclass

import numpy as np

import datasets
from datasets import synthetic

IMAGE_SETS = ("mnist", "fashion-mnist", "tiny-imagenet")
POINT_SETS = ("xor", "blobs", "spirals")
DATA_NAMES = IMAGE_SETS + POINT_SETS
SPLIT_SEED = 20240601  # the validation split is the same for every run and every model seed
FIT_CHUNK = 4096  # images per chunk when fitting a Normalizer: float64 copies stay small


@dataclass
class Split:
    """inputs: uint8 images [N, C, H, W] or float32 points [N, F]; labels: int64 [N]."""

    inputs: np.ndarray
    labels: np.ndarray

    def __len__(self):
        return len(self.labels)


@dataclass
class Normalizer:
    """x -> (x / 255 - mean) / std for images, (x - mean) / std for points; per channel/feature.

    mean and std come from the training split only (the validation and test sets stay unseen);
    images are summed FIT_CHUNK at a time, so no float64 copy of the whole set is ever made.
    """

    mean: np.ndarray
    std: np.ndarray
    is_image: bool

    @classmethod
    def fit(cls, inputs):
        is_image = inputs.dtype == np.uint8
        axes, shape = ((0, 2, 3), (1, -1, 1, 1)) if is_image else ((0,), (1, -1))
        count = inputs.size // inputs.shape[1]  # values per channel (per feature)

        def chunks():  # float64 copies of FIT_CHUNK examples at a time, images scaled to [0, 1]
            for start in range(0, len(inputs), FIT_CHUNK):
                chunk = inputs[start:start + FIT_CHUNK].astype(np.float64)
                yield chunk / 255 if is_image else chunk

        mean = sum(chunk.sum(axis=axes) for chunk in chunks()) / count
        # a second pass sums the squared deviations from the mean: no cancellation
        deviations = sum(((chunk - mean.reshape(shape)) ** 2).sum(axis=axes) for chunk in chunks())
        std = np.sqrt(deviations / count)
        return cls(mean, np.where(std > 0, std, 1.0), is_image)

    def __call__(self, inputs):
        """float32 normalized copy of a batch of inputs."""
        values = inputs.astype(np.float32)
        if self.is_image:
            values *= np.float32(1 / 255)
            shape = (1, -1, 1, 1)
        else:
            shape = (1, -1)
        mean = self.mean.astype(np.float32).reshape(shape)
        std = self.std.astype(np.float32).reshape(shape)
        return (values - mean) / std

    def to_json(self):
        return {"mean": self.mean.tolist(), "std": self.std.tolist(), "is_image": self.is_image}

    @classmethod
    def from_json(cls, fields):
        return cls(np.asarray(fields["mean"]), np.asarray(fields["std"]), fields["is_image"])


@dataclass
class DataSet:
    name: str
    train: Split
    val: Split | None
    test: Split
    class_names: list
    normalizer: Normalizer

    @property
    def input_shape(self):
        return tuple(self.train.inputs.shape[1:])

    @property
    def num_classes(self):
        return len(self.class_names)


def load_data(name, data_dir=None, val_size=5000, synthetic_size=1000, train_size=0):
    """Load data set `name` (one of DATA_NAMES) as a DataSet.

    `val_size` examples of the training set become the validation split (0: none); `train_size`
    > 0 keeps only that many of the remaining training examples (for quick trials). Synthetic sets
    draw `synthetic_size` training and as many test points from the same distribution with
    different seeds; xor has only its four points, used for training and testing alike.
    Raises datasets.DatasetError when the files cannot be found or read.
    """
    if name not in DATA_NAMES:
        raise ValueError(f"data must be one of {list(DATA_NAMES)}, got {name!r}")
    if name in IMAGE_SETS:
        train, test = (_image_split(name, split, data_dir) for split in ("train", "test"))
        class_names = list(datasets.class_names(name, data_dir))
    else:
        train, test = _point_splits(name, synthetic_size)
        class_names = [str(label) for label in range(int(train.labels.max()) + 1)]
    train, val = _hold_out(train, val_size)
    if train_size > 0:
        train = Split(train.inputs[:train_size], train.labels[:train_size])
    return DataSet(name, train, val, test, class_names, Normalizer.fit(train.inputs))


def _image_split(name, split, data_dir):
    images, labels = datasets.load(name, split, data_dir=data_dir)
    if images.ndim == 3:  # MNIST's [N, H, W]: add the channel axis, NCHW
        images = images[:, None]
    return Split(images, labels.astype(np.int64))


def _point_splits(name, size):
    if name == "xor":
        split = Split(*synthetic.xor())
        return split, split
    if name == "blobs":
        return Split(*synthetic.blobs(size, seed=0)), Split(*synthetic.blobs(size, seed=1))
    per_class = max(1, size // 3)
    return (
        Split(*synthetic.spirals(per_class, seed=0)),
        Split(*synthetic.spirals(per_class, seed=1)),
    )


def _hold_out(train, val_size):
    """(train without the held-out examples, the held-out validation split or None)."""
    if val_size <= 0:
        return train, None
    if val_size >= len(train):
        raise ValueError(
            f"val_size must be below the {len(train)} training examples, got {val_size}"
        )
    order = np.random.default_rng(SPLIT_SEED).permutation(len(train))
    keep, held = np.sort(order[val_size:]), np.sort(order[:val_size])
    return (
        Split(train.inputs[keep], train.labels[keep]),
        Split(train.inputs[held], train.labels[held]),
    )
