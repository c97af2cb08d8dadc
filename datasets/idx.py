"""The IDX file format (MNIST's), read and written, gzipped or not.

An IDX file is a 4-byte magic number, one 4-byte size per dimension, then the values, row-major:

    0x00 0x00 <type code> <ndim>   uint32 big-endian size of each of the ndim dimensions   values

Multi-byte values are big-endian. The *payload* is the whole uncompressed file (header included);
its sha256 is what the registry checks, because copies of the same data are often re-compressed.
"""

import gzip
import zlib
from pathlib import Path

import numpy as np

from .errors import DatasetError

GZIP_MAGIC = b"\x1f\x8b"
HEADER_START = b"\x00\x00"

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


def read_payload(path):
    """The uncompressed bytes of the IDX file at `path` (gunzipped if it starts as gzip does)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise DatasetError(path, f"cannot read: {error.strerror or error}") from None
    if not raw.startswith(GZIP_MAGIC):
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as error:
        raise DatasetError(path, f"bad gzip data ({error})") from None


def decode_idx(payload, source):
    """The array an IDX `payload` (bytes) holds, in native byte order; `source` names it in errors.

    Returns an array of shape [d0, d1, ...] as the header says, with the dtype its type code gives.
    Raises DatasetError on a wrong magic number, a short header, or a payload whose length is not
    exactly header + prod(dims) * itemsize (truncated or trailing bytes).
    """
    if len(payload) < 4:
        raise DatasetError(source, f"truncated: {len(payload)} bytes, shorter than an IDX header")
    magic = payload[:4]
    type_code, ndim = magic[2], magic[3]
    if magic[:2] != HEADER_START or type_code not in TYPE_CODES:
        raise DatasetError(source, f"wrong magic number 0x{magic.hex()}: not an IDX file")
    if ndim == 0:
        raise DatasetError(source, "IDX header with no dimensions")
    header_size = 4 + 4 * ndim
    if len(payload) < header_size:
        raise DatasetError(
            source, f"truncated: the header of {ndim} dimensions needs {header_size} bytes, "
            f"got {len(payload)}")
    shape = tuple(int(size) for size in np.frombuffer(payload, ">u4", count=ndim, offset=4))
    dtype = TYPE_CODES[type_code]
    expected = header_size + int(np.prod(shape)) * dtype.itemsize
    if len(payload) < expected:
        raise DatasetError(
            source, f"truncated: expected {expected} bytes of payload, got {len(payload)}")
    if len(payload) > expected:
        raise DatasetError(
            source, f"{len(payload) - expected} trailing bytes: expected {expected} bytes of "
            f"payload for shape {shape}, got {len(payload)}")
    values = np.frombuffer(payload, dtype, offset=header_size).reshape(shape)
    return values.astype(dtype.newbyteorder("="))  # a native, writable copy


def read_idx(path):
    """The array in the IDX file at `path` (gzipped or raw); see decode_idx."""
    return decode_idx(read_payload(path), path)


def encode_idx(array):
    """The IDX payload (bytes) holding `array`, whose dtype must be one IDX can store."""
    array = np.asarray(array)
    native = array.dtype.newbyteorder("=")
    if native not in CODE_OF_DTYPE:
        allowed = ", ".join(str(dtype) for dtype in CODE_OF_DTYPE)
        raise ValueError(f"array: dtype {array.dtype} cannot be stored in IDX (allowed: {allowed})")
    if array.ndim == 0 or array.ndim > 255:
        raise ValueError(f"array: IDX needs 1 to 255 dimensions, got shape {array.shape}")
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
