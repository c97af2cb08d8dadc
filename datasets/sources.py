"""Where a data set's files are found, and fetching them when they are not.

Sources, in order:
  1. the directory the user names: the `data_dir` argument (`--data-dir`), else env NN_DATA_DIR;
  2. the local cache: env NN_CACHE_DIR, else `.data/` at the repository root (git-ignored);
  3. system packages: Debian's `dataset-fashion-mnist` installs into /usr/share/datasets/;
  4. the mirrors, into the cache -- only `fetch` downloads; loading never touches the network.
Each directory of 1 and 2 holds one folder per data set, named as the registry names it
(`mnist/`, `fashion-mnist/`), with the canonical file names, gzipped or not. A data set with an
`archive` (Tiny ImageNet) is found where a folder holds its conversion (datasets.tiny_imagenet);
`fetch` downloads and converts it into the cache.
"""

import os
from dataclasses import dataclass
from pathlib import Path

from .checks import read_checked
from .download import download
from .errors import DatasetError
from .registry import get
from .tiny_imagenet import ARRAY_FILES, check_converted, convert, fetch_archive, is_converted

DATA_DIR_ENV = "NN_DATA_DIR"
CACHE_DIR_ENV = "NN_CACHE_DIR"
MIRROR_ENV = "NN_DATA_MIRROR"
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Location:
    """Where a whole data set was found: which `source`, which `directory`, and each file's path.

    `files` maps each FileSpec of the data set to the path holding it (for a data set with an
    archive: each converted array's file name to its path).
    """

    source: str
    directory: Path
    files: dict


def cache_root():
    """The cache directory: env NN_CACHE_DIR, else `.data` at the repository root."""
    return Path(os.environ.get(CACHE_DIR_ENV) or REPO_ROOT / ".data")


def candidates(name, data_dir=None):
    """The (source, directory) pairs where data set `name` may be, in the order of the search."""
    dataset = get(name)
    found = []
    if data_dir is not None:
        found.append(("--data-dir", Path(data_dir) / name))
    elif os.environ.get(DATA_DIR_ENV):
        found.append((DATA_DIR_ENV, Path(os.environ[DATA_DIR_ENV]) / name))
    found.append(("cache", cache_root() / name))
    package = f"Debian package {dataset.apt_package}" if dataset.apt_package else "system"
    found.extend((package, Path(directory)) for directory in dataset.system_dirs)
    return found


def file_in(directory, file_spec):
    """The path of `file_spec`'s file in `directory` (canonical .gz name or gunzipped), or None.

    Raises DatasetError if `directory` cannot be looked into (permissions).
    """
    for filename in (file_spec.filename, file_spec.filename.removesuffix(".gz")):
        try:
            if (directory / filename).is_file():
                return directory / filename
        except OSError as error:  # is_file is False for a missing file, raises for a locked one
            raise DatasetError(
                directory, f"cannot look in: {error.strerror or error}",
                "give read and execute permission on it, or use another data directory"
            ) from None
    return None


def locate(name, data_dir=None):
    """The first Location holding every file of data set `name`; else DatasetError saying where."""
    dataset = get(name)
    looked = []
    for source, directory in candidates(name, data_dir):
        if dataset.archive:
            if is_converted(directory):
                return Location(source, directory, {f: directory / f for f in ARRAY_FILES})
            looked.append(f"{directory} ({source}, no conversion)")
            continue
        files = {spec: file_in(directory, spec) for spec in dataset.files}
        missing = [spec.filename for spec, path in files.items() if path is None]
        if not missing:
            return Location(source, directory, files)
        if len(missing) == len(files):
            looked.append(f"{directory} ({source}, empty or absent)")
        else:
            looked.append(f"{directory} ({source}, lacks {', '.join(missing)})")
    fetch = f"'python -m datasets fetch {name}'"
    hint = (f"run {fetch}" if dataset.archive else f"run 'make data' (or {fetch})") + (
        f", or set {DATA_DIR_ENV} to a directory holding {name}/")
    if dataset.apt_package:
        hint += f", or 'apt-get install {dataset.apt_package}'"
    raise DatasetError(name, f"not found; looked in {'; '.join(looked)}", hint)


def find(name, data_dir=None):
    """The directory where data set `name` was found (see `locate` for the search order)."""
    return locate(name, data_dir).directory


def verify(name, data_dir=None):
    """Check every file of data set `name` where it is found; return that Location."""
    dataset = get(name)
    location = locate(name, data_dir)
    if dataset.archive:
        check_converted(location.directory)
        return location
    for spec, path in location.files.items():
        read_checked(dataset, spec, path)
    return location


def mirror_urls(name, mirrors=None):
    """The base URLs to download data set `name` from, in order.

    `mirrors` (base URLs of this data set's files) wins; else env NN_DATA_MIRROR, a space- or
    comma-separated list of roots laid out like a data directory (`<root>/<name>/<file>`); else
    the registry's official mirrors.
    """
    if mirrors:
        return [str(mirror) for mirror in mirrors]
    roots = os.environ.get(MIRROR_ENV, "").replace(",", " ").split()
    if roots:
        return [f"{root.rstrip('/')}/{name}/" for root in roots]
    return list(get(name).mirrors)


def fetch(name, data_dir=None, mirrors=None, progress=True):
    """Make data set `name` available and verified; return its Location.

    If it is found outside the cache, its files are verified there (a bad one is an error: it is the
    user's to replace). Otherwise every file missing from the cache, or failing its check there, is
    downloaded into the cache from the mirrors (see `mirror_urls`); a data set with an archive has
    its zip downloaded (unless a good one is in the cache) and converted there.
    """
    dataset = get(name)
    cache = cache_root() / name
    try:
        location = locate(name, data_dir)
    except DatasetError:
        location = None
    if location is not None and location.directory.resolve() != cache.resolve():
        return verify(name, data_dir)
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DatasetError(cache, f"cannot create the cache: {error.strerror or error}",
                           f"set {CACHE_DIR_ENV} to a writable directory") from None
    bases = mirror_urls(name, mirrors)
    if dataset.archive:
        return _fetch_archive_set(name, dataset, cache, bases, data_dir, progress)
    for spec in dataset.files:
        if _is_good(dataset, spec, file_in(cache, spec)):
            continue
        urls = [base.rstrip("/") + "/" + spec.filename for base in bases]
        download(urls, cache / spec.filename,
                 lambda path, spec=spec: read_checked(dataset, spec, path), progress)
    return locate(name, data_dir)


def _fetch_archive_set(name, dataset, cache, bases, data_dir, progress):
    """Verify the conversion in the cache, else download the zip (kept beside it) and convert."""
    if is_converted(cache):
        try:
            check_converted(cache)
            return locate(name, data_dir)
        except DatasetError:
            pass  # a damaged conversion is simply made again
    filename = dataset.archive.filename
    urls = [base.rstrip("/") + "/" + filename for base in bases]
    zip_path = fetch_archive(cache, urls, dataset.archive, progress)
    convert(zip_path, cache, dataset.archive, progress)
    return locate(name, data_dir)


def _is_good(dataset, file_spec, path):
    """Whether `path` exists and passes its check (a bad cached file is simply fetched again)."""
    if path is None:
        return False
    try:
        read_checked(dataset, file_spec, path)
    except DatasetError:
        return False
    return True
