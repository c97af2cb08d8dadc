"""Data for scratch2cuda: IDX files, MNIST and Fashion-MNIST (found, verified, fetched), toy sets.

    images, labels = datasets.load("mnist", "train")   # uint8 [60000, 28, 28], int64 [60000]
    datasets.class_names("fashion-mnist")              # ['T-shirt/top', 'Trouser', ...]
    points, labels = datasets.blobs(100, seed=0)       # float32 [100, 2], int64 [100]

This package imports nothing of the project (only the standard library and NumPy; tqdm for
downloads). The README beside this file says where data is looked for and how to fetch it.
"""

from .errors import DatasetError
from .idx import read_idx, write_idx
from .loader import class_names, load
from .registry import get, names, register, registered, unregister
from .sources import fetch, find, locate, verify
from .synthetic import blobs, spirals, xor

__all__ = [
    "DatasetError",
    "blobs",
    "class_names",
    "fetch",
    "find",
    "get",
    "load",
    "locate",
    "names",
    "read_idx",
    "register",
    "registered",
    "spirals",
    "unregister",
    "verify",
    "write_idx",
    "xor",
]
