"""`python -m datasets`: list, info, verify, fetch, and its one-line errors."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import datasets
from datasets.__main__ import main
from tests.fake_datasets import fake_arrays, write_fake_dataset

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A registered fake data set 'tiny' in tmp_path/data, an empty cache; yields tmp_path."""
    monkeypatch.setenv("NN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NN_DATA_DIR", raising=False)
    monkeypatch.delenv("NN_DATA_MIRROR", raising=False)
    arrays = fake_arrays(seed=int(np.random.default_rng().integers(1 << 30)))
    with datasets.registered(write_fake_dataset(tmp_path / "data", "tiny", arrays)):
        yield tmp_path


def run_main(capsys, *argv):
    """(exit status, stdout, stderr) of the CLI run in this process."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_info(tiny, capsys):
    status, out, err = run_main(capsys, "info", "tiny", "--data-dir", str(tiny / "data"))
    assert (status, err) == (0, "")
    directory = tiny / "data" / "tiny"
    assert f"found in {directory} (--data-dir)" in out
    rows = [line.split() for line in out.splitlines()]
    assert ["train", "images", "6", "x", "28", "x", "28",
            str(directory / "train-images-idx3-ubyte.gz")] in rows
    assert ["test", "labels", "4", str(directory / "t10k-labels-idx1-ubyte.gz")] in rows
    assert out.rstrip().endswith("6 train / 4 test images, sha256 verified")


def test_verify_and_list(tiny, capsys, monkeypatch):
    status, out, _ = run_main(capsys, "verify", "tiny", "--data-dir", str(tiny / "data"))
    assert status == 0
    assert sum(line.startswith("ok  sha256 ") for line in out.splitlines()) == 4
    assert "tiny: sha256 verified (4 files in" in out
    monkeypatch.setenv("NN_DATA_DIR", str(tiny / "data"))
    status, out, _ = run_main(capsys, "list")
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert status == 0 and {"mnist", "fashion-mnist", "tiny"} <= set(lines)
    assert lines["tiny"].endswith(f"{tiny / 'data' / 'tiny'} (NN_DATA_DIR)")


def test_fetch_from_a_mirror(tiny, capsys, monkeypatch):
    # A file:// root laid out like a data directory is a mirror as good as an HTTP one.
    monkeypatch.setenv("NN_DATA_MIRROR", (tiny / "data").as_uri())
    status, out, _ = run_main(capsys, "fetch", "tiny")
    assert status == 0
    assert out == f"tiny: sha256 verified in {tiny / 'cache' / 'tiny'} (cache)\n"
    assert len(list((tiny / "cache" / "tiny").iterdir())) == 4


def test_fetch_failure(tiny, capsys, monkeypatch):
    monkeypatch.setenv("NN_DATA_MIRROR", (tiny / "empty").as_uri())
    status, out, err = run_main(capsys, "fetch", "tiny")
    assert status == 1 and err.startswith("error: ") and err.count("\n") == 1
    assert "download failed" in err


def test_truncated_file(tiny, capsys):
    path = tiny / "data" / "tiny" / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:100])
    status, out, err = run_main(capsys, "verify", "tiny", "--data-dir", str(tiny / "data"))
    assert status == 1 and out == ""
    assert err.startswith(f"error: {path}: bad gzip data (") and err.count("\n") == 1
    assert err.endswith(" — delete it and run 'python -m datasets fetch tiny'\n")


def run_module(*argv, **env):
    """`python -m datasets ARGV` in a fresh process from the repository root."""
    return subprocess.run([sys.executable, "-m", "datasets", *argv], cwd=REPO_ROOT, text=True,
                          capture_output=True, env={**os.environ, **env}, timeout=60)


def test_missing_dataset_as_a_process(tmp_path):
    result = run_module("info", "mnist", "--data-dir", str(tmp_path),
                        NN_CACHE_DIR=str(tmp_path / "cache"))
    assert result.returncode == 1
    assert result.stderr.startswith("error: mnist: not found; looked in ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "make data" in result.stderr and "NN_DATA_DIR" in result.stderr


def test_unknown_dataset_as_a_process():
    result = run_module("verify", "imagenet-22k")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == ("error: imagenet-22k: unknown data set — known: mnist, "
                             "fashion-mnist, tiny-imagenet\n")
