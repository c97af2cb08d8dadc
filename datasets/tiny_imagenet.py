"""Tiny ImageNet: CS231n's 64x64 colour images of 200 classes, from one zip into cached arrays.

The official archive, `tiny-imagenet-200.zip` (248,100,043 bytes), holds JPEG files:

    tiny-imagenet-200/wnids.txt                         the 200 class ids (WordNet ids), one a line
    tiny-imagenet-200/words.txt                         WordNet id <TAB> names, for every id
    tiny-imagenet-200/train/<wnid>/images/*.JPEG        500 per class: 100,000 training images
    tiny-imagenet-200/val/images/*.JPEG                 10,000 images, labelled by
    tiny-imagenet-200/val/val_annotations.txt           file <TAB> wnid <TAB> bounding box
    tiny-imagenet-200/test/images/*.JPEG                unlabelled: not used

`datasets.fetch("tiny-imagenet")` (sources.py) gets the archive with `fetch_archive` (its size,
sha256 and md5 checked), then `convert` decodes every image once, straight out of the zip (no
120,000 small files on disk), into cached arrays beside it in `<cache>/tiny-imagenet/`:

    train-images.npy  uint8 [100000, 3, 64, 64] (NCHW)    train-labels.npy  int64 [100000]
    test-images.npy   uint8 [10000, 3, 64, 64]            test-labels.npy   int64 [10000]
    classes.json      the wnids (label order: sorted) and a short name for each
    manifest.json     each array's shape, dtype and sha256, written last

The "test" split is the official validation set (the official test set has no labels).
`load_split` checks a split's sha256 against the manifest, then maps its arrays from disk
(np.load with mmap_mode): a batch reads only its own images, and nothing here makes a float32 copy
of the 1.2 GB training set.
"""

import hashlib
import json
import os
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .download import download
from .errors import DatasetError

NAME = "tiny-imagenet"
IMAGE_SHAPE = (3, 64, 64)
SPLITS = ("train", "test")
ARRAY_FILES = tuple(f"{split}-{kind}.npy" for split in SPLITS for kind in ("images", "labels"))
CLASSES_FILE = "classes.json"
MANIFEST_FILE = "manifest.json"
HASH_CHUNK_BYTES = 1 << 24


@dataclass(frozen=True)
class Archive:
    """A zip in Tiny ImageNet's layout: how to check it and what it must hold.

    `size`, `sha256` and `md5` are those of the zip file; `classes`, `train_count` and `val_count`
    are checked while converting. Where to download it is the registry's (its `mirrors`).
    """

    filename: str
    size: int
    sha256: str
    md5: str
    classes: int
    train_count: int
    val_count: int
    root: str = "tiny-imagenet-200"


# No checksum is published by Stanford. The md5 is the one torchvision-style loaders check (e.g.
# github.com/lvyilin/pytorch-fgvc-dataset, tiny_imagenet.py); the sha256 and the size are those of
# the same file mirrored on Hugging Face (cnak47/cv-datasets, commit 6931f665, Git LFS pointer).
# Logs of downloads from cs231n.stanford.edu in public repositories record the same values:
# 248,100,043 bytes with this md5, and with this sha256 after every member's ZIP CRC passed.
TINY_IMAGENET = Archive(
    filename="tiny-imagenet-200.zip",
    size=248_100_043,
    sha256="6198c8ae015e2b3e007c7841da39ec069199b9aa3bfa943a462022fe5e43c821",
    md5="90528d7ca1a48142e341f4ef8d21d0de",
    classes=200,
    train_count=100_000,
    val_count=10_000,
)


def fetch_hint():
    return f"delete it and run 'python -m datasets fetch {NAME}'"


def check_archive(path, archive=TINY_IMAGENET):
    """DatasetError unless the file at `path` has the archive's size, sha256 and md5."""
    path = Path(path)
    size = path.stat().st_size
    if size != archive.size:
        raise DatasetError(path, f"wrong size: {size:,} bytes, expected {archive.size:,}",
                           fetch_hint())
    sha256, md5 = file_digests(path, ("sha256", "md5"))
    for name, digest, expected in (("sha256", sha256, archive.sha256), ("md5", md5, archive.md5)):
        if digest != expected:
            raise DatasetError(path, f"{name} mismatch: the file has {digest}, expected {expected}",
                               fetch_hint())


def convert(zip_path, directory, archive=TINY_IMAGENET, progress=True):
    """Decode every labelled image of the zip at `zip_path` into the cached arrays in `directory`.

    Written into a temporary folder inside `directory`, then moved into place, the manifest last
    (and removed first): without it the folder holds no conversion, never half of one. Raises
    DatasetError on a corrupt zip, a missing part of the layout, an image that is not 64x64, or
    counts other than the archive's.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST_FILE).unlink(missing_ok=True)
    building = directory / ".converting"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir()
    try:
        with zipfile.ZipFile(zip_path) as bundle:
            wnids, names = read_classes(bundle, archive)
            label_of = {wnid: label for label, wnid in enumerate(wnids)}
            members = {
                "train": train_members(bundle, archive, label_of),
                "test": val_members(bundle, archive, label_of),
            }
            manifest = {}
            for split, labelled in members.items():
                manifest.update(write_split(bundle, labelled, building, split, progress))
        write_json(building / CLASSES_FILE, {"wnids": wnids, "names": names})
        write_json(building / MANIFEST_FILE, manifest)
        for filename in (*ARRAY_FILES, CLASSES_FILE, MANIFEST_FILE):
            os.replace(building / filename, directory / filename)
    except zipfile.BadZipFile as error:
        raise DatasetError(zip_path, f"not a readable zip: {error}", fetch_hint()) from None
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return directory


def read_text(bundle, archive, name):
    """The text of `<root>/<name>` in the zip `bundle`; DatasetError naming it when absent."""
    try:
        return bundle.read(f"{archive.root}/{name}").decode()
    except KeyError:
        raise DatasetError(bundle.filename, f"no {archive.root}/{name} in the archive",
                           fetch_hint()) from None


def read_classes(bundle, archive):
    """(wnids sorted: label i is wnids[i], a short name per wnid: the first of words.txt's)."""
    wnids = sorted(read_text(bundle, archive, "wnids.txt").split())
    if len(wnids) != archive.classes:
        raise DatasetError(bundle.filename, f"wnids.txt lists {len(wnids)} classes, expected "
                           f"{archive.classes}", fetch_hint())
    words = dict(line.split("\t", 1) for line in
                 read_text(bundle, archive, "words.txt").splitlines() if "\t" in line)
    names = [words.get(wnid, wnid).split(",")[0].strip() for wnid in wnids]
    return wnids, names


def train_members(bundle, archive, label_of):
    """[(member name, label)] of the training images, sorted by name."""
    prefix = f"{archive.root}/train/"
    found = []
    for member in sorted(bundle.namelist()):
        parts = member[len(prefix):].split("/")
        if member.startswith(prefix) and len(parts) == 3 and parts[1] == "images" and parts[2]:
            if parts[0] not in label_of:
                raise DatasetError(bundle.filename, f"{member}: class {parts[0]} is not in "
                                   "wnids.txt", fetch_hint())
            found.append((member, label_of[parts[0]]))
    return counted(bundle, found, archive.train_count, "training")


def val_members(bundle, archive, label_of):
    """[(member name, label)] of the validation images, in val_annotations.txt's order."""
    found = []
    for line in read_text(bundle, archive, "val/val_annotations.txt").splitlines():
        if not line.strip():
            continue
        filename, wnid = line.split("\t")[:2]
        if wnid not in label_of:
            raise DatasetError(bundle.filename, f"val_annotations.txt: {filename}: class {wnid} "
                               "is not in wnids.txt", fetch_hint())
        found.append((f"{archive.root}/val/images/{filename}", label_of[wnid]))
    return counted(bundle, found, archive.val_count, "validation")


def counted(bundle, found, expected, what):
    if len(found) != expected:
        raise DatasetError(bundle.filename, f"{len(found):,} {what} images, expected "
                           f"{expected:,}", fetch_hint())
    return found


def write_split(bundle, labelled, directory, split, progress):
    """Decode `labelled` ([(member, label)]) into `<split>-images.npy` and `<split>-labels.npy`;
    return their manifest entries."""
    from PIL import Image  # only converting needs it (Pillow comes with matplotlib)
    from tqdm import tqdm

    images_path = directory / f"{split}-images.npy"
    images = np.lib.format.open_memmap(
        images_path, mode="w+", dtype=np.uint8, shape=(len(labelled), *IMAGE_SHAPE))
    for index, (member, _) in enumerate(tqdm(labelled, desc=f"{NAME} {split}",
                                              disable=not progress, leave=False)):
        try:
            with bundle.open(member) as stream, Image.open(stream) as image:
                pixels = np.asarray(image.convert("RGB"))  # a few are greyscale
        except KeyError:
            raise DatasetError(bundle.filename, f"no {member} in the archive",
                               fetch_hint()) from None
        except OSError as error:  # Pillow's error for data it cannot decode
            raise DatasetError(bundle.filename, f"{member}: cannot decode: {error}",
                               fetch_hint()) from None
        if pixels.shape != (*IMAGE_SHAPE[1:], 3):
            raise DatasetError(bundle.filename, f"{member}: {pixels.shape[1]}x{pixels.shape[0]} "
                               f"pixels, expected {IMAGE_SHAPE[2]}x{IMAGE_SHAPE[1]}", fetch_hint())
        images[index] = pixels.transpose(2, 0, 1)  # HWC -> CHW
    images.flush()
    del images
    labels_path = directory / f"{split}-labels.npy"
    np.save(labels_path, np.array([label for _, label in labelled], dtype=np.int64))
    return {path.name: array_entry(path) for path in (images_path, labels_path)}


def array_entry(path):
    """{shape, dtype, sha256} of the .npy file at `path` (the sha256 of the whole file)."""
    array = np.load(path, mmap_mode="r")
    return {"shape": list(array.shape), "dtype": str(array.dtype),
            "sha256": file_digests(path)[0]}


def file_digests(path, algorithms=("sha256",)):
    """The hex digests of the file at `path`, one per hashlib algorithm name, in one read."""
    digests = [hashlib.new(name, usedforsecurity=False) for name in algorithms]
    with open(path, "rb") as stream:
        while chunk := stream.read(HASH_CHUNK_BYTES):
            for digest in digests:
                digest.update(chunk)
    return [digest.hexdigest() for digest in digests]


def write_json(path, value):
    path.write_text(json.dumps(value, indent=1) + "\n")


def is_converted(directory):
    """Whether `directory` holds a complete conversion (its manifest is written last)."""
    return (Path(directory) / MANIFEST_FILE).is_file()


def read_manifest(directory):
    """{array file name: {shape, dtype, sha256}} as the conversion in `directory` recorded it."""
    try:
        return json.loads((Path(directory) / MANIFEST_FILE).read_text())
    except (OSError, ValueError) as error:
        raise DatasetError(directory, f"unreadable {MANIFEST_FILE}: {error}",
                           fetch_hint()) from None


def check_converted(directory, files=ARRAY_FILES):
    """DatasetError unless the arrays `files` in `directory` match the manifest (sha256) and
    classes.json lists one name per class."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    try:
        classes = json.loads((directory / CLASSES_FILE).read_text())
    except (OSError, ValueError) as error:
        raise DatasetError(directory, f"unreadable {CLASSES_FILE}: {error}", fetch_hint()) from None
    for filename in files:
        path, expected = directory / filename, manifest.get(filename)
        if expected is None or not path.is_file():
            raise DatasetError(path, "missing from the conversion", fetch_hint())
        if file_digests(path)[0] != expected["sha256"]:
            raise DatasetError(path, f"sha256 mismatch with {MANIFEST_FILE}: changed since it "
                               "was converted", fetch_hint())
    if len(classes["wnids"]) != len(classes["names"]):
        raise DatasetError(directory / CLASSES_FILE, "one name per wnid expected", fetch_hint())
    return manifest


def load_split(directory, split):
    """(images uint8 [N, 3, 64, 64] mapped from disk, labels int64 [N]) of `split`, after their
    sha256 is checked against the manifest."""
    if split not in SPLITS:
        raise ValueError(f"split: expected one of {SPLITS}, got {split!r}")
    directory = Path(directory)
    check_converted(directory, (f"{split}-images.npy", f"{split}-labels.npy"))
    images = np.load(directory / f"{split}-images.npy", mmap_mode="r")
    labels = np.load(directory / f"{split}-labels.npy")
    if images.shape[1:] != IMAGE_SHAPE or images.dtype != np.uint8 or len(images) != len(labels):
        raise DatasetError(directory, f"{split}: uint8 [N, 3, 64, 64] images and N labels "
                           f"expected, got {images.dtype} {images.shape} and {labels.shape}",
                           fetch_hint())
    return images, labels


def class_names(directory):
    """The short class names, indexed by label."""
    return json.loads((Path(directory) / CLASSES_FILE).read_text())["names"]


def fetch_archive(directory, urls, archive=TINY_IMAGENET, progress=True):
    """The checked zip in `directory`, downloaded from the first of `urls` that gives a good one
    unless a good one is there already. Raises DatasetError when every download failed or failed
    its check."""
    path = Path(directory) / archive.filename
    if path.is_file():
        try:
            check_archive(path, archive)
            return path
        except DatasetError:
            pass  # a partial or damaged copy: downloaded again
    return download(urls, path,
                    lambda part: check_archive(part, archive), progress)
