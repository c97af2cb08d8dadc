"""The IDX reader and writer, on small files each test builds itself."""

import gzip
import tracemalloc

import numpy as np
import pytest

from datasets import DatasetError, read_idx, write_idx
from datasets.idx import MAX_DIMENSIONS, encode_idx

IDX_DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64]


def random_array(rng, dtype, shape=(3, 4, 5)):
    """Fresh random values of `dtype`, negative ones included for signed types."""
    if np.issubdtype(dtype, np.floating):
        return rng.normal(0.0, 100.0, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def assert_one_line_error(error, path, *words):
    """A DatasetError message: one line, naming `path` and holding each of `words`."""
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    for word in words:
        assert word in message


@pytest.mark.parametrize("dtype", IDX_DTYPES)
@pytest.mark.parametrize("compress", [False, True])
def test_round_trip(tmp_path, dtype, compress):
    array = random_array(np.random.default_rng(), dtype)
    path = tmp_path / ("a.idx.gz" if compress else "a.idx")
    write_idx(path, array)
    assert path.read_bytes().startswith(b"\x1f\x8b") == compress
    back = read_idx(path)
    assert back.dtype == np.dtype(dtype) and back.shape == array.shape
    np.testing.assert_array_equal(back, array)
    back[0] = back[1]  # a writable array of its own, not a view of the file's bytes


def test_header_layout_is_big_endian():
    payload = encode_idx(np.array([[1, -2, 3], [256, 65536, -1]], dtype=np.int32))
    header = bytes([0, 0, 0x0C, 2]) + (2).to_bytes(4, "big") + (3).to_bytes(4, "big")
    assert payload[:12] == header
    assert payload[12:16] == (1).to_bytes(4, "big")
    assert payload[16:20] == (-2).to_bytes(4, "big", signed=True)
    assert len(payload) == 12 + 6 * 4


def test_gzip_is_detected_by_magic_not_by_name(tmp_path):
    array = random_array(np.random.default_rng(), np.uint8)
    gzipped_without_suffix = tmp_path / "images"
    raw_with_suffix = tmp_path / "labels.gz"
    write_idx(gzipped_without_suffix, array, compress=True)
    write_idx(raw_with_suffix, array, compress=False)
    np.testing.assert_array_equal(read_idx(gzipped_without_suffix), array)
    np.testing.assert_array_equal(read_idx(raw_with_suffix), array)


def test_gzip_output_is_reproducible(tmp_path):
    array = random_array(np.random.default_rng(), np.uint8)
    write_idx(tmp_path / "a.gz", array)
    write_idx(tmp_path / "b.gz", array)
    assert (tmp_path / "a.gz").read_bytes() == (tmp_path / "b.gz").read_bytes()


@pytest.mark.parametrize("compress", [False, True])
def test_truncated_payload(tmp_path, compress):
    payload = encode_idx(random_array(np.random.default_rng(), np.uint8, (10, 28, 28)))
    path = tmp_path / "short.gz"
    cut = payload[:1000]
    path.write_bytes(gzip.compress(cut) if compress else cut)
    with pytest.raises(DatasetError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "truncated", f"expected {len(payload)}", "got 1000")


def test_trailing_bytes(tmp_path):
    payload = encode_idx(random_array(np.random.default_rng(), np.uint8))
    path = tmp_path / "long"
    path.write_bytes(payload + b"\x07\x07\x07")
    with pytest.raises(DatasetError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "3 trailing bytes", f"expected {len(payload)}")


@pytest.mark.parametrize("magic", [b"\x01\x00\x08\x01", b"\x00\x00\x07\x01", b"PK\x03\x04"])
def test_wrong_magic_number(tmp_path, magic):
    path = tmp_path / "bad"
    path.write_bytes(magic + encode_idx(np.arange(5, dtype=np.uint8))[4:])
    with pytest.raises(DatasetError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "wrong magic number", magic.hex())


def test_header_shorter_than_its_dimensions(tmp_path):
    path = tmp_path / "dims"
    path.write_bytes(bytes([0, 0, 8, 3]) + (60000).to_bytes(4, "big"))  # 3 dims, 1 size given
    with pytest.raises(DatasetError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "truncated", "3 dimensions needs 16 bytes", "got 8")


def test_dims_that_disagree_with_the_values(tmp_path):
    payload = bytearray(encode_idx(random_array(np.random.default_rng(), np.uint8, (4, 6))))
    payload[4:8] = (5).to_bytes(4, "big")  # the header claims 5 rows where 4 are stored
    path = tmp_path / "dims"
    path.write_bytes(payload)
    with pytest.raises(DatasetError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "truncated", "expected 42 bytes", "got 36")


@pytest.mark.parametrize("content", [b"", b"\x00\x00", bytes([0, 0, 8, 0])])
def test_no_usable_header(tmp_path, content):
    path = tmp_path / "empty"
    path.write_bytes(content)
    with pytest.raises(DatasetError) as error:
        read_idx(path)
    assert_one_line_error(error, path)


def bad_gzip_variants():
    """(name, bytes) of gzip streams that are not whole: cut short, bit-flipped, garbage."""
    good = gzip.compress(encode_idx(np.random.default_rng().integers(0, 256, 3000, np.uint8)))
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0xFF
    return [
        ("cut short", good[: len(good) // 2]),
        ("bit flipped", bytes(flipped)),
        ("garbage after magic", b"\x1f\x8b" + b"not really gzip at all"),
    ]


@pytest.mark.parametrize("name, content", bad_gzip_variants(), ids=lambda value: str(value)[:12])
def test_bad_gzip(tmp_path, name, content):
    path = tmp_path / "bad.gz"
    path.write_bytes(content)
    with pytest.raises(DatasetError) as error:
        read_idx(path)
    assert_one_line_error(error, path, "bad gzip")


def test_unreadable_path(tmp_path):
    with pytest.raises(DatasetError) as error:
        read_idx(tmp_path)  # a directory
    assert_one_line_error(error, tmp_path, "cannot read")


def test_dataset_error_is_one_line_runtime_error():
    error = DatasetError("/x/file", "two\nlines", "do\nthis")
    assert isinstance(error, RuntimeError)
    assert str(error) == "/x/file: two lines — do this"
    assert str(error.with_hint("that")) == "/x/file: two lines — that"


@pytest.mark.parametrize("array", [np.zeros(3, dtype=bool), np.array(7, dtype=np.uint8),
                                   np.zeros(3, dtype=np.int64)], ids=["bool", "0-d", "int64"])
def test_write_rejects_what_idx_cannot_hold(tmp_path, array):
    with pytest.raises(ValueError, match="array: "):
        write_idx(tmp_path / "x", array)


def header(type_code, shape):
    """An IDX header of `shape` (sizes as the file says them, up to 2**32 - 1)."""
    return bytes([0, 0, type_code, len(shape)]) + b"".join(s.to_bytes(4, "big") for s in shape)


@pytest.mark.parametrize("content, words", [
    (header(0x08, [1] * 255), ["255 dimensions", f"1 to {MAX_DIMENSIONS}"]),
    (header(0x0E, [2**32 - 1] * 4), ["claims shape (4294967295,", "bytes of payload, over the"]),
    (header(0x08, [60000, 28, 28, 28, 28]), ["claims shape (60000, 28, 28, 28, 28)"]),
])
def test_headers_beyond_the_bounds_are_one_line_errors(tmp_path, content, words):
    path = tmp_path / "huge"
    path.write_bytes(content + bytes(100))
    with pytest.raises(DatasetError) as error:
        read_idx(path)
    assert_one_line_error(error, path, *words)
    assert "-" not in str(error.value).removeprefix(str(path))  # no overflowed, negative size


def read_idx_measured(path):
    """(the DatasetError that read_idx(path) raises, the peak bytes Python allocated meanwhile)."""
    tracemalloc.start()
    try:
        with pytest.raises(DatasetError) as error:
            read_idx(path)
        return error, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_gzip_bomb_is_read_no_further_than_its_header_says(tmp_path):
    # The header claims 10 images of 28x28; the stream expands to 64 MiB of zeros (64 KiB on disk).
    path = tmp_path / "bomb.gz"
    zeros = bytes(1 << 20)
    with gzip.open(path, "wb", compresslevel=1) as stream:
        stream.write(header(0x08, [10, 28, 28]))
        for _ in range(64):
            stream.write(zeros)
    error, peak = read_idx_measured(path)
    assert_one_line_error(error, path, "trailing bytes", "expected 7856 bytes")
    assert peak < 2 << 20, f"peak {peak} bytes while reading a 7856-byte payload"


def test_a_huge_sparse_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "sparse"
    with open(path, "wb") as file:
        file.write(header(0x08, [10, 28, 28]))
        file.truncate(64 << 30)  # 64 GiB, none of it on disk
    error, peak = read_idx_measured(path)
    assert_one_line_error(error, path, "trailing bytes", "expected 7856 bytes",
                          f"got {64 << 30}")
    assert peak < 1 << 20
