"""The IDX file format (MNIST's), read and written, gzipped or not.

An IDX file is a 4-byte magic number, one 4-byte size per dimension, then the values, row-major:

    0x00 0x00 <type code> <ndim>   uint32 big-endian size of each of the ndim dimensions   values

Multi-byte values are big-endian. The *payload* is the whole uncompressed file (header included);
its sha256 is what the registry checks, because copies of the same data are often re-compressed.
"""

import gzip
import io
import math
import os
import zlib
from pathlib import Path

import numpy as np

from .errors import DatasetError

GZIP_MAGIC = b"\x1f\x8b"
HEADER_START = b"\x00\x00"
# Bounds on what a header may claim, checked before anything is read or allocated: IDX data sets
# hold labels (1 dimension) and images (3 or 4); MNIST's largest file is 47 MB.
MAX_DIMENSIONS = 8
MAX_PAYLOAD_BYTES = 1 << 30

# IDX type code -> the on-disk (big-endian) NumPy dtype.
TYPE_CODES = {
    0x08: np.dtype("u1"),
    0x09: np.dtype("i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
# The inverse, keyed by the native-endian dtype an array in memory has.
CODE_OF_DTYPE = {dtype.newbyteorder("="): code for code, dtype in TYPE_CODES.items()}


def read_payload(path, check_header=None):
    """The uncompressed bytes of the IDX file at `path` (gunzipped if it starts as gzip does).

    The header is read and checked first (see `parse_header`), then no more than it announces plus
    one byte (to see trailing bytes): a gzip bomb or a huge sparse file costs no more memory than a
    file of the size its header claims, at most MAX_PAYLOAD_BYTES. `check_header(dtype, shape)`, if
    given, may raise DatasetError before the values are read (a shape other than expected).
    """
    path = Path(path)
    try:
        file = open(path, "rb")  # noqa: SIM115 (closed below, after the choice of reader)
    except OSError as error:
        raise DatasetError(path, f"cannot read: {error.strerror or error}") from None
    with file:
        try:
            if file.read(2) == GZIP_MAGIC:
                file.seek(0)
                with gzip.GzipFile(fileobj=file) as stream:
                    return _read_bounded(stream.read, None, path, check_header)
            file.seek(0)
            return _read_bounded(file.read, os.fstat(file.fileno()).st_size, path, check_header)
        except (OSError, EOFError, zlib.error) as error:
            if isinstance(error, gzip.BadGzipFile) or not isinstance(error, OSError):
                raise DatasetError(path, f"bad gzip data ({error})") from None
            raise DatasetError(path, f"cannot read: {error.strerror or error}") from None


def _read_bounded(read, file_size, source, check_header):
    """The payload read with `read(n)`: the header, then exactly what it announces (see
    read_payload). `file_size`: the file's size if it is not compressed (checked before reading)."""
    dtype, shape, header, expected = parse_header(read, source)
    if check_header is not None:
        check_header(dtype.newbyteorder("="), shape)
    if file_size is not None:
        _check_length(file_size, expected, shape, source)
    payload = header + read(expected - len(header) + 1)  # one more: trailing bytes show up
    if len(payload) > expected and file_size is None:
        raise DatasetError(
            source, f"trailing bytes: expected {expected} bytes of payload for shape {shape}, "
            "got more")
    _check_length(len(payload), expected, shape, source)
    return payload


def parse_header(read, source):
    """(big-endian dtype, shape, header bytes, expected payload size) of an IDX header read with
    `read(n)` (a file's read, or a BytesIO's).

    Raises DatasetError on a wrong magic number, a short header, no or more than MAX_DIMENSIONS
    dimensions, or a shape whose payload would exceed MAX_PAYLOAD_BYTES.
    """
    magic = read(4)
    if len(magic) < 4:
        raise DatasetError(source, f"truncated: {len(magic)} bytes, shorter than an IDX header")
    type_code, ndim = magic[2], magic[3]
    if magic[:2] != HEADER_START or type_code not in TYPE_CODES:
        raise DatasetError(source, f"wrong magic number 0x{magic.hex()}: not an IDX file")
    if not 1 <= ndim <= MAX_DIMENSIONS:
        raise DatasetError(
            source, f"IDX header with {ndim} dimensions: this reader takes 1 to {MAX_DIMENSIONS}")
    header = magic + read(4 * ndim)
    if len(header) < 4 + 4 * ndim:
        raise DatasetError(
            source, f"truncated: the header of {ndim} dimensions needs {4 + 4 * ndim} bytes, "
            f"got {len(header)}")
    shape = tuple(int.from_bytes(header[at:at + 4], "big") for at in range(4, len(header), 4))
    dtype = TYPE_CODES[type_code]
    expected = len(header) + math.prod(shape) * dtype.itemsize  # Python ints: no overflow
    if expected > MAX_PAYLOAD_BYTES:
        raise DatasetError(
            source, f"the header claims shape {shape}: {expected} bytes of payload, over the "
            f"{MAX_PAYLOAD_BYTES} this reader accepts (a corrupt header)")
    return dtype, shape, header, expected


def _check_length(length, expected, shape, source):
    """DatasetError unless a payload of `length` bytes is the `expected` size for `shape`."""
    if length < expected:
        raise DatasetError(
            source, f"truncated: expected {expected} bytes of payload, got {length}")
    if length > expected:
        raise DatasetError(
            source, f"{length - expected} trailing bytes: expected {expected} bytes of "
            f"payload for shape {shape}, got {length}")


def decode_idx(payload, source):
    """The array an IDX `payload` (bytes) holds, in native byte order; `source` names it in errors.

    Returns an array of shape [d0, d1, ...] as the header says, with the dtype its type code gives.
    Raises DatasetError on a bad header (see `parse_header`) or a payload whose length is not
    exactly header + prod(dims) * itemsize (truncated or trailing bytes).
    """
    dtype, shape, header, expected = parse_header(io.BytesIO(payload).read, source)
    _check_length(len(payload), expected, shape, source)
    values = np.frombuffer(payload, dtype, offset=len(header)).reshape(shape)
    return values.astype(dtype.newbyteorder("="))  # a native, writable copy


def read_idx(path):
    """The array in the IDX file at `path` (gzipped or raw); see read_payload and decode_idx."""
    return decode_idx(read_payload(path), path)


def encode_idx(array):
    """The IDX payload (bytes) holding `array`, whose dtype must be one IDX can store."""
    array = np.asarray(array)
    native = array.dtype.newbyteorder("=")
    if native not in CODE_OF_DTYPE:
        allowed = ", ".join(str(dtype) for dtype in CODE_OF_DTYPE)
        raise ValueError(f"array: dtype {array.dtype} cannot be stored in IDX (allowed: {allowed})")
    if not 1 <= array.ndim <= MAX_DIMENSIONS:
        raise ValueError(
            f"array: IDX takes 1 to {MAX_DIMENSIONS} dimensions here, got shape {array.shape}")
    big_endian = TYPE_CODES[CODE_OF_DTYPE[native]]
    header = HEADER_START + bytes([CODE_OF_DTYPE[native], array.ndim])
    header += np.asarray(array.shape, ">u4").tobytes()
    return header + np.ascontiguousarray(array, big_endian).tobytes()


def write_idx(path, array, compress=None):
    """Write `array` to `path` as IDX, gzipped if `compress` is true (default: path ends in .gz)."""
    path = Path(path)
    payload = encode_idx(array)
    if compress is None:
        compress = path.suffix == ".gz"
    if compress:
        payload = gzip.compress(payload, mtime=0)  # mtime 0: the same array gives the same file
    path.write_bytes(payload)
