"""Tiny ImageNet (datasets.tiny_imagenet): fetched from a mirror, checked, converted, loaded.

A small zip in the real layout (write_fake_tiny_imagenet of tests/fake_datasets.py: a few JPEG
images per class) stands in for the 248 MB archive; downloads come from a file:// mirror. No test
downloads.
"""

import dataclasses
import io
import json
import zipfile

import numpy as np
import pytest

import datasets
from datasets import DatasetError
from datasets.__main__ import main
from datasets.registry import TINY_IMAGENET_SET
from datasets.tiny_imagenet import check_archive, convert
from tests.fake_datasets import write_fake_tiny_imagenet


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fake archive in tmp_path/mirror/tiny-imagenet/, registered as tiny-imagenet with that
    mirror; an empty cache. Yields (tmp_path, archive, expected arrays)."""
    monkeypatch.setenv("NN_CACHE_DIR", str(tmp_path / "cache"))
    for variable in ("NN_DATA_DIR", "NN_DATA_MIRROR"):
        monkeypatch.delenv(variable, raising=False)
    mirror = tmp_path / "mirror" / "tiny-imagenet"
    mirror.mkdir(parents=True)
    seed = int(np.random.default_rng().integers(1 << 30))
    archive, expected = write_fake_tiny_imagenet(mirror, seed=seed)
    spec = dataclasses.replace(TINY_IMAGENET_SET, archive=archive, mirrors=(mirror.as_uri(),))
    with datasets.registered(spec):
        yield tmp_path, archive, expected


def test_fetch_converts_and_load_maps_the_arrays(fake, capsys):
    root, archive, expected = fake
    assert main(["fetch", "tiny-imagenet"]) == 0
    cache = root / "cache" / "tiny-imagenet"
    assert capsys.readouterr().out == f"tiny-imagenet: sha256 verified in {cache} (cache)\n"
    assert (cache / archive.filename).read_bytes() == (
        root / "mirror" / "tiny-imagenet" / archive.filename).read_bytes()
    for split, (images, labels) in expected.items():
        loaded_images, loaded_labels = datasets.load("tiny-imagenet", split)
        assert isinstance(loaded_images, np.memmap)  # read from disk as indexed
        assert loaded_images.dtype == np.uint8 and loaded_images.shape == (len(labels), 3, 64, 64)
        assert loaded_labels.dtype == np.int64
        np.testing.assert_array_equal(loaded_images, images)
        np.testing.assert_array_equal(loaded_labels, labels)
    wnids = json.loads((cache / "classes.json").read_text())["wnids"]
    assert wnids == sorted(wnids)
    assert datasets.class_names("tiny-imagenet") == [f"thing {w[-3:]}" for w in wnids]
    assert main(["verify", "tiny-imagenet"]) == 0
    out = capsys.readouterr().out
    assert out.count("ok  sha256 ") == 4 and out.endswith(f"(4 files in {cache})\n")


def test_a_second_fetch_converts_nothing(fake, monkeypatch):
    root, _, _ = fake
    datasets.fetch("tiny-imagenet", progress=False)
    monkeypatch.setattr("datasets.sources.convert", lambda *args: pytest.fail("converted again"))
    assert datasets.fetch("tiny-imagenet", progress=False).source == "cache"


def test_a_corrupt_download_is_refused(fake, capsys):
    root, archive, _ = fake
    zip_path = root / "mirror" / "tiny-imagenet" / archive.filename
    content = bytearray(zip_path.read_bytes())
    content[len(content) // 2] ^= 0xFF  # same size, another sha256
    zip_path.write_bytes(bytes(content))
    assert main(["fetch", "tiny-imagenet"]) == 1
    err = capsys.readouterr().err
    assert f"error: {root / 'cache' / 'tiny-imagenet' / archive.filename}: download failed: " in err
    assert "sha256 mismatch: the file has " in err and f"expected {archive.sha256}" in err
    assert "check the network" in err
    assert not (root / "cache" / "tiny-imagenet" / archive.filename).exists()


def test_a_truncated_archive_and_no_network(fake, capsys):
    root, archive, _ = fake
    zip_path = root / "mirror" / "tiny-imagenet" / archive.filename
    with pytest.raises(DatasetError, match=f"wrong size: 1,000 bytes, expected {archive.size:,}"):
        zip_path.write_bytes(zip_path.read_bytes()[:1000])
        check_archive(zip_path, archive)
    unreachable = dataclasses.replace(datasets.get("tiny-imagenet"),
                                      mirrors=("http://127.0.0.1:9/",))  # the discard port
    with datasets.registered(unreachable):
        assert main(["fetch", "tiny-imagenet"]) == 1
    err = capsys.readouterr().err
    assert "download failed: http://127.0.0.1:9/tiny-imagenet-200.zip: " in err
    assert err.rstrip().endswith("or put the file there by hand")


def test_a_bad_cached_zip_is_fetched_again(fake):
    root, archive, _ = fake
    cache = root / "cache" / "tiny-imagenet"
    cache.mkdir(parents=True)
    (cache / archive.filename).write_bytes(b"not a zip")
    datasets.fetch("tiny-imagenet", progress=False)
    check_archive(cache / archive.filename, archive)


def test_a_changed_array_fails_verify_and_load(fake, capsys):
    root, _, _ = fake
    datasets.fetch("tiny-imagenet", progress=False)
    labels = root / "cache" / "tiny-imagenet" / "test-labels.npy"
    np.save(labels, np.zeros(len(np.load(labels)), dtype=np.int64) + 1)
    assert main(["verify", "tiny-imagenet"]) == 1
    err = capsys.readouterr().err
    assert f"error: {labels}: sha256 mismatch with manifest.json" in err
    with pytest.raises(DatasetError, match="sha256 mismatch"):
        datasets.load("tiny-imagenet", "test")
    datasets.load("tiny-imagenet", "train")  # the other split is intact


def test_not_found_says_how_to_fetch(fake):
    with pytest.raises(DatasetError, match="run 'python -m datasets fetch tiny-imagenet'"):
        datasets.load("tiny-imagenet", "train")


def test_a_layout_problem_is_named(fake, tmp_path):
    root, archive, _ = fake
    zip_path = root / "mirror" / "tiny-imagenet" / archive.filename
    with pytest.raises(DatasetError, match="wnids.txt lists 3 classes, expected 7"):
        convert(zip_path, tmp_path / "out", dataclasses.replace(archive, classes=7), False)
    with pytest.raises(DatasetError, match=f"{archive.train_count:,} training images, expected 1"):
        convert(zip_path, tmp_path / "out", dataclasses.replace(archive, train_count=1), False)
    not_a_zip = tmp_path / "junk.zip"
    not_a_zip.write_bytes(b"junk" * 100)
    with pytest.raises(DatasetError, match="not a readable zip"):
        convert(not_a_zip, tmp_path / "out", archive, False)
    assert not (tmp_path / "out" / "manifest.json").exists()


def with_member_replaced(zip_path, target, member, content):
    """A copy of the zip at `zip_path` at `target`, `member` holding `content` instead."""
    with zipfile.ZipFile(zip_path) as source, zipfile.ZipFile(target, "w") as copy:
        for name in source.namelist():
            copy.writestr(name, content if name == member else source.read(name))
    return target


@pytest.mark.parametrize("content, problem", [
    (b"not a JPEG at all", "cannot decode"),
    ("a 32x32 image", "32x32 pixels, expected 64x64"),
])
def test_a_bad_image_is_named(fake, tmp_path, content, problem):
    from PIL import Image

    root, archive, _ = fake
    if not isinstance(content, bytes):
        encoded = io.BytesIO()
        Image.new("RGB", (32, 32)).save(encoded, "JPEG")
        content = encoded.getvalue()
    member = f"{archive.root}/val/images/val_1.JPEG"
    broken = with_member_replaced(root / "mirror" / "tiny-imagenet" / archive.filename,
                                  tmp_path / "broken.zip", member, content)
    with pytest.raises(DatasetError, match=f"{member}: {problem}"):
        convert(broken, tmp_path / "out", archive, False)
    assert not (tmp_path / "out" / "manifest.json").exists()
