"""Downloading one file from a list of mirrors: streamed to a temp file, checked, moved into place.

The temp file sits next to the destination so that the final `os.replace` is atomic: a reader sees
either no file or a whole, checked one, never a half-written download.
"""

import http.client
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from .errors import DatasetError

CHUNK_BYTES = 1 << 16
TIMEOUT_S = 30


def download(urls, destination, check, progress=True):
    """Fetch the first of `urls` whose content passes `check`, into `destination`; return it.

    `check(path)` raises DatasetError when the downloaded file at `path` is not the expected one;
    the next URL is tried then, as it is after a network error or a dropped connection. When every
    URL failed, raises one DatasetError naming `destination` and each URL's reason.
    """
    destination = Path(destination)
    failures = []
    for url in urls:
        try:
            part = _stream(url, destination, progress)
        except (OSError, ValueError, http.client.HTTPException) as error:
            failures.append(f"{url}: {_describe(error)}")
            continue
        try:
            check(part)
        except DatasetError as error:
            part.unlink()
            failures.append(f"{url}: {error.problem}")
            continue
        os.replace(part, destination)
        return destination
    raise DatasetError(
        destination, f"download failed: {'; '.join(failures) or 'no mirror to try'}",
        "check the network, or set NN_DATA_MIRROR to another mirror, or put the file there by hand")


def _stream(url, destination, progress):
    """Download `url` to a new temp file beside `destination`; return the temp file's path."""
    from tqdm import tqdm  # only downloads need it: loading data works without it

    request = urllib.request.Request(url, headers={"User-Agent": "scratch2cuda-datasets"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
        length = response.headers.get("Content-Length")
        expected = int(length) if length else None
        handle, name = tempfile.mkstemp(
            dir=destination.parent, prefix=f".{destination.name}.", suffix=".part")
        part = Path(name)
        try:
            received = 0
            with os.fdopen(handle, "wb") as out, tqdm(
                total=expected, unit="B", unit_scale=True, desc=destination.name,
                disable=not progress, leave=False,
            ) as bar:
                while chunk := response.read(CHUNK_BYTES):
                    out.write(chunk)
                    received += len(chunk)
                    bar.update(len(chunk))
            if expected is not None and received != expected:
                raise ConnectionError(f"connection dropped after {received} of {expected} bytes")
        except BaseException:
            part.unlink()
            raise
    return part


def _describe(error):
    """A short reason for a failed download."""
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code} {error.reason}"
    if isinstance(error, urllib.error.URLError):
        return str(error.reason)
    if isinstance(error, http.client.IncompleteRead):
        return f"connection dropped after {len(error.partial)} bytes"
    return str(error) or type(error).__name__
