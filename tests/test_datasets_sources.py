"""Finding, verifying, loading and downloading data sets.

Tiny fake data sets (tests/fake_datasets.py) stand in for MNIST; downloads go to an HTTP server
of the test's own on loopback. The real MNIST (NN_DATA_DIR) and Fashion-MNIST (Debian package) are
checked when present.
"""

import dataclasses
import gzip
import hashlib
import http.server
import os
import threading
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import datasets
from datasets import DatasetError
from datasets.registry import FASHION_MNIST, MNIST
from tests.fake_datasets import fake_arrays, write_fake_dataset

FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")


@pytest.fixture
def env(tmp_path, monkeypatch):
    """An empty cache in tmp_path, no NN_DATA_DIR, no mirror override, no proxy: tmp_path."""
    monkeypatch.setenv("NN_CACHE_DIR", str(tmp_path / "cache"))
    for variable in ("NN_DATA_DIR", "NN_DATA_MIRROR", "http_proxy", "HTTP_PROXY", "all_proxy",
                     "ALL_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path


@pytest.fixture
def tiny(env):
    """A registered fake data set 'tiny' written to env/data/tiny; yields (spec, arrays)."""
    arrays = fake_arrays(seed=int(np.random.default_rng().integers(1 << 30)))
    spec = write_fake_dataset(env / "data", "tiny", arrays)
    with datasets.registered(spec):
        yield spec, arrays


def tiny_file(root, spec, split="train", kind="images"):
    return Path(root) / spec.name / spec.file(split, kind).filename


def test_load_from_data_dir(env, tiny):
    spec, arrays = tiny
    for split in ("train", "test"):
        images, labels = datasets.load("tiny", split, data_dir=env / "data")
        assert images.dtype == np.uint8 and images.shape == arrays[split, "images"].shape
        assert labels.dtype == np.int64 and labels.shape == arrays[split, "labels"].shape
        np.testing.assert_array_equal(images, arrays[split, "images"])
        np.testing.assert_array_equal(labels, arrays[split, "labels"])
    assert datasets.class_names("tiny") == [f"class {index}" for index in range(10)]


def test_search_order(env, tiny, monkeypatch):
    spec, _ = tiny
    data_dir = env / "data"
    system_dir = env / "system" / "tiny"
    for root in (env / "cache", env / "env_dir", system_dir.parent):
        write_fake_dataset(root, "tiny", fake_arrays(seed=5))
    with datasets.registered(dataclasses.replace(spec, system_dirs=(system_dir,))):
        assert datasets.find("tiny", data_dir) == data_dir / "tiny"
        assert datasets.locate("tiny", data_dir).source == "--data-dir"
        monkeypatch.setenv("NN_DATA_DIR", str(env / "env_dir"))
        assert datasets.find("tiny", data_dir) == data_dir / "tiny"  # the argument wins
        assert datasets.find("tiny") == env / "env_dir" / "tiny"
        monkeypatch.delenv("NN_DATA_DIR")
        assert datasets.locate("tiny").source == "cache"
        monkeypatch.setenv("NN_CACHE_DIR", str(env / "elsewhere"))
        assert datasets.find("tiny", env / "nothing here") == system_dir


def test_cache_defaults_to_dot_data_at_the_repo_root(env, monkeypatch):
    monkeypatch.delenv("NN_CACHE_DIR")
    root = Path(datasets.__file__).resolve().parent.parent
    assert ("cache", root / ".data" / "mnist") in datasets.sources.candidates("mnist")


def test_gunzipped_files_are_found(env, tiny):
    spec, arrays = tiny
    gz = tiny_file(env / "data", spec, "test", "labels")
    gz.with_suffix("").write_bytes(gzip.decompress(gz.read_bytes()))
    gz.unlink()
    _, labels = datasets.load("tiny", "test", env / "data")
    np.testing.assert_array_equal(labels, arrays["test", "labels"])


def test_missing_dataset_says_where_it_looked_and_what_to_do(env, tiny):
    tiny_file(env / "data", tiny[0], "test", "labels").unlink()
    with pytest.raises(DatasetError) as error:
        datasets.load("tiny", "train", env / "data")
    message = str(error.value)
    assert "\n" not in message and message.startswith("tiny: not found")
    assert f"{env / 'data' / 'tiny'} (--data-dir, lacks t10k-labels-idx1-ubyte.gz)" in message
    assert f"{env / 'cache' / 'tiny'} (cache, empty or absent)" in message
    assert "make data" in message and "NN_DATA_DIR" in message
    assert "apt-get" not in message


def test_missing_fashion_mnist_names_the_debian_package(env):
    elsewhere = dataclasses.replace(FASHION_MNIST, system_dirs=(env / "no-package",))
    with datasets.registered(elsewhere), pytest.raises(DatasetError) as error:
        datasets.find("fashion-mnist")
    assert "apt-get install dataset-fashion-mnist" in str(error.value)
    assert str(env / "no-package") in str(error.value)


def test_loading_never_downloads(env, tiny, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("load touched the network")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    with pytest.raises(DatasetError, match="not found"):
        datasets.load("tiny", "train", env / "nowhere")


def test_sha256_mismatch(env, tiny):
    spec, arrays = tiny
    path = tiny_file(env / "data", spec)
    other = arrays["train", "images"].copy()
    other[0, 0, 0] ^= 1  # one bit: same shape and size, another checksum
    datasets.write_idx(path, other)
    with pytest.raises(DatasetError) as error:
        datasets.load("tiny", "train", env / "data")
    message = str(error.value)
    assert message.startswith(f"{path}: sha256 mismatch")
    assert hashlib.sha256(datasets.idx.encode_idx(other)).hexdigest() in message
    assert message.endswith("delete it and run 'python -m datasets fetch tiny'")


def test_dims_other_than_the_registry_says(env, tiny):
    path = tiny_file(env / "data", tiny[0], "test", "images")
    datasets.write_idx(path, np.random.default_rng().integers(0, 256, (4, 27, 29), np.uint8))
    with pytest.raises(DatasetError) as error:
        datasets.load("tiny", "test", env / "data")
    assert str(error.value).startswith(f"{path}: wrong dims: holds uint8 (4, 27, 29), expected")


def test_truncated_file_says_what_to_do(env, tiny):
    path = tiny_file(env / "data", tiny[0], "train", "labels")
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes())[:-2]))
    with pytest.raises(DatasetError) as error:
        datasets.load("tiny", "train", env / "data")
    assert str(error.value) == (f"{path}: truncated: expected 14 bytes of payload, got 12 — "
                                "delete it and run 'python -m datasets fetch tiny'")


def test_a_rewritten_file_is_checked_again(env, tiny):
    spec, arrays = tiny
    datasets.load("tiny", "train", env / "data")  # verified, and remembered as verified
    path = tiny_file(env / "data", spec)
    stat = path.stat()
    other = arrays["train", "images"].copy()
    other[-1, -1, -1] ^= 0x80
    datasets.write_idx(path, other)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1000))  # even on a coarse clock
    with pytest.raises(DatasetError, match="sha256 mismatch"):
        datasets.load("tiny", "train", env / "data")


def test_bad_arguments(env, tiny):
    with pytest.raises(ValueError, match="split: "):
        datasets.load("tiny", "validation", env / "data")
    with pytest.raises(DatasetError, match="unknown data set"):
        datasets.load("no-such-set", "train")


# --- downloads, from an HTTP server of the test's own on loopback --------------------------------

class Mirror(http.server.ThreadingHTTPServer):
    """Serves `routes` {url path: (bytes, mode)}; mode 'drop' closes the connection mid-body."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), MirrorHandler)
        self.routes = {}
        self.requests = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"

    def publish(self, prefix, directory, mode="ok"):
        """Serve every file of `directory` under `prefix` (e.g. '/m1/')."""
        for path in Path(directory).iterdir():
            self.routes[prefix + path.name] = (path.read_bytes(), mode)


class MirrorHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.requests.append(self.path)
        if self.path not in self.server.routes:
            self.send_error(404)
            return
        body, mode = self.server.routes[self.path]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "drop":
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
        else:
            self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def mirror():
    server = Mirror()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def corrupted(env, tiny):
    """A copy of tiny's files where each holds other values (same shapes): every sha256 differs."""
    arrays = {key: array ^ np.uint8(1) for key, array in tiny[1].items()}
    write_fake_dataset(env / "corrupted", "tiny", arrays)
    return env / "corrupted" / "tiny"


def assert_cache_holds_tiny(env, arrays):
    cache = env / "cache" / "tiny"
    assert sorted(path.name for path in cache.iterdir()) == sorted(
        spec.filename for spec in datasets.get("tiny").files)  # no temp file left behind
    images, labels = datasets.load("tiny", "train")
    np.testing.assert_array_equal(images, arrays["train", "images"])
    np.testing.assert_array_equal(labels, arrays["train", "labels"])


def test_fetch_downloads_into_the_cache(env, tiny, mirror):
    mirror.publish("/m1/", env / "data" / "tiny")
    location = datasets.fetch("tiny", mirrors=[mirror.url + "/m1/"], progress=False)
    assert location.source == "cache" and location.directory == env / "cache" / "tiny"
    assert len(mirror.requests) == 4
    assert_cache_holds_tiny(env, tiny[1])
    datasets.fetch("tiny", mirrors=[mirror.url + "/m1/"], progress=False)
    assert len(mirror.requests) == 4  # all there and verified: nothing downloaded again


def test_mirror_from_the_environment(env, tiny, mirror, monkeypatch):
    mirror.publish("/root/tiny/", env / "data" / "tiny")
    monkeypatch.setenv("NN_DATA_MIRROR", f"{mirror.url}/absent, {mirror.url}/root")
    datasets.fetch("tiny", progress=False)
    assert_cache_holds_tiny(env, tiny[1])
    assert mirror.requests[:2] == ["/absent/tiny/train-images-idx3-ubyte.gz",
                                   "/root/tiny/train-images-idx3-ubyte.gz"]


@pytest.mark.parametrize("first", ["corrupted", "dropped", "absent"])
def test_a_bad_mirror_falls_through_to_the_next(env, tiny, mirror, corrupted, first):
    if first == "corrupted":
        mirror.publish("/m1/", corrupted)
    elif first == "dropped":
        mirror.publish("/m1/", env / "data" / "tiny", mode="drop")
    mirror.publish("/m2/", env / "data" / "tiny")
    datasets.fetch("tiny", mirrors=[mirror.url + "/m1/", mirror.url + "/m2/"], progress=False)
    assert_cache_holds_tiny(env, tiny[1])
    assert sum(path.startswith("/m1/") for path in mirror.requests) == 4


@pytest.mark.parametrize("mode, reason", [("corrupted", "sha256 mismatch"),
                                          ("dropped", "connection dropped after")])
def test_every_mirror_bad_is_one_error(env, tiny, mirror, corrupted, mode, reason):
    if mode == "corrupted":
        mirror.publish("/m1/", corrupted)
    else:
        mirror.publish("/m1/", env / "data" / "tiny", mode="drop")
    urls = [mirror.url + "/m1/", mirror.url + "/m2/"]
    with pytest.raises(DatasetError) as error:
        datasets.fetch("tiny", mirrors=urls, progress=False)
    message = str(error.value)
    target = env / "cache" / "tiny" / "train-images-idx3-ubyte.gz"
    assert "\n" not in message and message.startswith(f"{target}: download failed")
    assert f"{urls[0]}train-images-idx3-ubyte.gz: {reason}" in message
    assert f"{urls[1]}train-images-idx3-ubyte.gz: HTTP 404" in message
    assert list((env / "cache" / "tiny").iterdir()) == []  # no partial or unverified file


def test_fetch_replaces_a_bad_cached_file_only(env, tiny, mirror):
    spec, arrays = tiny
    cache = env / "cache"
    write_fake_dataset(cache, "tiny", arrays)
    bad = tiny_file(cache, spec, "test", "images")
    bad.write_bytes(bad.read_bytes()[:-10])
    mirror.publish("/m1/", env / "data" / "tiny")
    datasets.fetch("tiny", mirrors=[mirror.url + "/m1/"], progress=False)
    assert mirror.requests == ["/m1/t10k-images-idx3-ubyte.gz"]
    assert_cache_holds_tiny(env, arrays)


def test_fetch_verifies_in_place_what_it_finds_outside_the_cache(env, tiny, mirror):
    spec, _ = tiny
    location = datasets.fetch("tiny", env / "data", mirrors=[mirror.url + "/"], progress=False)
    assert location.directory == env / "data" / "tiny"
    bad = tiny_file(env / "data", spec, "train", "labels")
    bad.write_bytes(bad.read_bytes()[:-5])
    with pytest.raises(DatasetError, match="bad gzip"):
        datasets.fetch("tiny", env / "data", mirrors=[mirror.url + "/"], progress=False)
    assert mirror.requests == []  # the user's files are theirs to replace


# --- the real data, where this machine has it ---------------------------------------------------

def assert_real_dataset(dataset, directory, train_label_counts, test_label_counts):
    """Loads both splits from `directory` and checks sizes, label counts and the registry's sums."""
    for spec in dataset.files:
        payload = gzip.decompress((directory / spec.filename).read_bytes())
        assert hashlib.sha256(payload).hexdigest() == spec.sha256
    for split, counts in (("train", train_label_counts), ("test", test_label_counts)):
        images, labels = datasets.load(dataset.name, split, directory.parent)
        assert images.dtype == np.uint8 and images.shape == (sum(counts), 28, 28)
        assert labels.dtype == np.int64 and labels.shape == (sum(counts),)
        assert np.bincount(labels, minlength=10).tolist() == counts
        assert images.max() == 255 and images.min() == 0


def test_real_mnist(shared_data_dir, env):  # env after: it unsets NN_DATA_DIR
    assert datasets.find("mnist", shared_data_dir) == shared_data_dir / "mnist"
    assert_real_dataset(
        MNIST, shared_data_dir / "mnist",
        [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949],
        [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009])


@pytest.mark.skipif(not FASHION_DIR.is_dir(), reason="apt-get install dataset-fashion-mnist")
def test_real_fashion_mnist_from_the_debian_package(env):
    location = datasets.locate("fashion-mnist")
    assert (location.directory, location.source) == (
        FASHION_DIR, "Debian package dataset-fashion-mnist")
    assert_real_dataset(FASHION_MNIST, FASHION_DIR, [6000] * 10, [1000] * 10)


def test_an_unreadable_data_directory_is_one_line(env, tiny, monkeypatch):
    locked = env / "data" / "tiny"
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads through permissions: the OS's refusal is played instead
        real_stat = Path.stat

        def stat(path, **options):
            if path.parent == locked:
                raise PermissionError(13, "Permission denied", str(path))
            return real_stat(path, **options)

        monkeypatch.setattr(Path, "stat", stat)
    try:
        with pytest.raises(DatasetError) as error:
            datasets.load("tiny", "train", env / "data")
    finally:
        locked.chmod(0o755)
    assert str(error.value) == (f"{locked}: cannot look in: Permission denied — give read and "
                                "execute permission on it, or use another data directory")
