"""What the package knows about each data set: files, shapes, checksums, mirrors, classes, licence.

A data set is a DatasetSpec of four files (train/test x images/labels). The registry is a plain dict
so that a test can `register` a tiny data set of its own (as tests/fake_datasets.py does) and drop
it afterwards.
"""

import contextlib
from dataclasses import dataclass
from pathlib import Path

from .errors import DatasetError
from .tiny_imagenet import TINY_IMAGENET

SPLITS = ("train", "test")
KINDS = ("images", "labels")


@dataclass(frozen=True)
class FileSpec:
    """One IDX file of a data set.

    `filename` is the canonical (gzipped) name; `shape` and `dtype` are those of the array it holds;
    `sha256` is the hex digest of the *decompressed* payload (header included).
    """

    split: str
    kind: str
    filename: str
    shape: tuple
    sha256: str
    dtype: str = "uint8"


@dataclass(frozen=True)
class DatasetSpec:
    """A data set: its four files, where to download them and how to cite it.

    `mirrors` are base URLs tried in order (a file's URL is base + filename); `system_dirs` are
    directories a system package installs the files into, with `apt_package` naming that package.
    A data set with an `archive` (datasets.tiny_imagenet.Archive) has no IDX files: it is
    downloaded as that one zip and converted into cached arrays, with its class names.
    """

    name: str
    title: str
    files: tuple
    mirrors: tuple
    class_names: tuple
    licence: str
    citation: str
    system_dirs: tuple = ()
    apt_package: str = ""
    archive: object = None

    def file(self, split, kind):
        """The FileSpec of `split` ("train" or "test") and `kind` ("images" or "labels")."""
        if split not in SPLITS:
            raise ValueError(f"split: expected one of {SPLITS}, got {split!r}")
        if kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {kind!r}")
        return next(spec for spec in self.files if (spec.split, spec.kind) == (split, kind))


def idx_files(train_images, train_labels, test_images, test_labels, image_shape=(28, 28)):
    """The four FileSpecs of an MNIST-like data set, given the sha256 of each decompressed file.

    `train_images` etc. are (count, sha256) pairs; names are MNIST's canonical ones.
    """
    layout = [
        ("train", "images", "train-images-idx3-ubyte.gz", train_images, image_shape),
        ("train", "labels", "train-labels-idx1-ubyte.gz", train_labels, ()),
        ("test", "images", "t10k-images-idx3-ubyte.gz", test_images, image_shape),
        ("test", "labels", "t10k-labels-idx1-ubyte.gz", test_labels, ()),
    ]
    return tuple(
        FileSpec(split, kind, filename, (count, *item_shape), sha256)
        for split, kind, filename, (count, sha256), item_shape in layout
    )


MNIST = DatasetSpec(
    name="mnist",
    title="MNIST handwritten digits",
    files=idx_files(
        train_images=(60000, "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"),
        train_labels=(60000, "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
        test_images=(10000, "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
        test_labels=(10000, "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
    ),
    mirrors=(
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "https://yann.lecun.com/exdb/mnist/",
    ),
    class_names=tuple(str(digit) for digit in range(10)),
    licence="CC BY-SA 3.0",
    citation="Y. LeCun, C. Cortes and C. J. C. Burges, The MNIST database of handwritten digits",
)

FASHION_MNIST = DatasetSpec(
    name="fashion-mnist",
    title="Fashion-MNIST (Zalando article images)",
    files=idx_files(
        train_images=(60000, "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888"),
        train_labels=(60000, "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9"),
        test_images=(10000, "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b"),
        test_labels=(10000, "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"),
    ),
    mirrors=("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",),
    class_names=(
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
        "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
    ),
    licence="MIT",
    citation="H. Xiao, K. Rasul and R. Vollgraf, Fashion-MNIST: a Novel Image Dataset for "
    "Benchmarking Machine Learning Algorithms, arXiv:1708.07747 (2017)",
    system_dirs=(Path("/usr/share/datasets/fashion-mnist"),),
    apt_package="dataset-fashion-mnist",
)

TINY_IMAGENET_SET = DatasetSpec(
    name="tiny-imagenet",
    title="Tiny ImageNet (200 classes, 64x64 colour)",
    files=(),
    mirrors=("http://cs231n.stanford.edu/",),
    class_names=(),  # read from the archive's words.txt when it is converted
    licence="ImageNet terms of access (non-commercial research and education)",
    citation="Y. Le and X. Yang, Tiny ImageNet visual recognition challenge, CS231n (2015); "
    "images from ImageNet, J. Deng et al., CVPR 2009",
    archive=TINY_IMAGENET,
)

REGISTRY = {spec.name: spec for spec in (MNIST, FASHION_MNIST, TINY_IMAGENET_SET)}


def names():
    """The registered data sets' names, in registration order."""
    return list(REGISTRY)


def get(name):
    """The DatasetSpec registered as `name`; DatasetError naming the known ones otherwise."""
    if name not in REGISTRY:
        raise DatasetError(name, "unknown data set", f"known: {', '.join(REGISTRY)}")
    return REGISTRY[name]


def register(spec):
    """Add (or replace) the data set `spec` under its name."""
    REGISTRY[spec.name] = spec


def unregister(name):
    """Remove the data set `name` (nothing happens if it is not registered)."""
    REGISTRY.pop(name, None)


@contextlib.contextmanager
def registered(spec):
    """`with registered(spec):` — the data set `spec` is known inside the block only."""
    previous = REGISTRY.get(spec.name)
    register(spec)
    try:
        yield spec
    finally:
        if previous is None:
            unregister(spec.name)
        else:
            register(previous)
