"""Checking one data file against its registry entry: IDX header, shape, dtype and sha256."""

import hashlib
from pathlib import Path

import numpy as np

from .errors import DatasetError
from .idx import decode_idx, read_payload

# Files whose sha256 already matched in this process, keyed by (path, size, mtime, sha256): a file
# rewritten since has another size or mtime and is hashed again.
_verified = set()


def fetch_hint(dataset):
    """What to do about a bad file of `dataset` (a DatasetSpec)."""
    return f"delete it and run 'python -m datasets fetch {dataset.name}'"


def read_checked(dataset, file_spec, path):
    """The array in `path`, checked against `file_spec` (a FileSpec of the DatasetSpec `dataset`).

    Returns the array with shape `file_spec.shape` and dtype `file_spec.dtype`. Raises DatasetError
    (naming `path` and what to do) on bad gzip data, a bad IDX header or length, another shape or
    dtype (seen in the header, before the values are read), or a sha256 of the decompressed payload
    other than `file_spec.sha256`.
    """
    path = Path(path)

    def check_header(dtype, shape):  # before the values are read
        if shape != file_spec.shape or dtype != np.dtype(file_spec.dtype):
            raise DatasetError(
                path, f"wrong dims: holds {dtype} {shape}, expected {file_spec.dtype} "
                f"{file_spec.shape} for {dataset.name} {file_spec.split} {file_spec.kind}")

    try:
        payload = read_payload(path, check_header)
        array = decode_idx(payload, path)
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, file_spec.sha256)
        if key not in _verified:
            digest = hashlib.sha256(payload).hexdigest()
            if digest != file_spec.sha256:
                raise DatasetError(
                    path, f"sha256 mismatch: the decompressed payload has {digest}, "
                    f"expected {file_spec.sha256}")
            _verified.add(key)
    except DatasetError as error:
        raise error.with_hint(fetch_hint(dataset)) from None
    return array
