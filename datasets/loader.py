"""The loading API that `nn/` uses: whole splits of a data set as NumPy arrays, verified."""

import numpy as np

from .checks import read_checked
from .registry import get
from .sources import locate
from .tiny_imagenet import class_names as converted_class_names
from .tiny_imagenet import load_split


def load(name, split, data_dir=None):
    """The `split` ("train" or "test") of data set `name` as (images, labels).

    images: uint8 [N, H, W] (MNIST and Fashion-MNIST: [60000 or 10000, 28, 28]), or for
    Tiny ImageNet uint8 [100000 or 10000, 3, 64, 64] mapped from disk (read as indexed);
    labels: int64 [N], class indices into `class_names(name)`.
    Files are searched as `datasets.sources` says (never downloaded) and checked against the
    registry (IDX header, shape, sha256) or the conversion's manifest; any problem is a one-line
    DatasetError.
    """
    dataset = get(name)
    if dataset.archive:
        return load_split(locate(name, data_dir).directory, split)
    image_spec = dataset.file(split, "images")
    label_spec = dataset.file(split, "labels")
    location = locate(name, data_dir)
    images = read_checked(dataset, image_spec, location.files[image_spec])
    labels = read_checked(dataset, label_spec, location.files[label_spec])
    return images, labels.astype(np.int64)


def class_names(name, data_dir=None):
    """The class names of data set `name`, indexed by label (Tiny ImageNet's are read from its
    conversion, found as `load` finds it)."""
    if get(name).archive:
        return converted_class_names(locate(name, data_dir).directory)
    return list(get(name).class_names)
