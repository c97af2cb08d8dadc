"""What a request carries, to float pixels in [0, 1], within limits: an uploaded PNG or JPEG, or
JSON `{"pixels": [[...]]}`. Everything else is a BadInput, which the service answers with a 4xx and
its one-line message: nothing a client sends reaches the model unchecked.

The limits hold before any work that grows with them: an image's declared width and height are
read from its header and refused before a pixel is decoded (a decompression bomb: a small PNG that
declares 100000x100000 pixels), and Pillow's own bomb limit is set to the same size.
"""

import io
import json
import warnings

import numpy as np
from PIL import Image

MAX_BODY_BYTES = 2 * 1024 * 1024  # the request body (nn/serve/body.py answers 413 above it)
MAX_SIDE = 4096  # pixels along either side of an image
MAX_PIXELS = 4096 * 4096 // 4  # width * height
MIN_SIDE = 8  # a 1x1 image holds no digit
MAX_ASPECT = 16  # longer side / shorter side: a 100000x1 strip is no drawing
FORMATS = ("PNG", "JPEG")

Image.MAX_IMAGE_PIXELS = MAX_PIXELS  # Pillow warns above it and refuses above twice it


class BadInput(ValueError):
    """A request the service cannot classify; `status` is the HTTP status to answer with."""

    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


def check_size(height, width):
    """BadInput unless an image of height x width is within the limits."""
    if min(height, width) < MIN_SIDE:
        raise BadInput(f"image is {width}x{height} pixels: each side must be at least {MIN_SIDE}")
    if max(height, width) > MAX_SIDE or height * width > MAX_PIXELS:
        raise BadInput(f"image is {width}x{height} pixels: at most {MAX_SIDE} a side and "
                       f"{MAX_PIXELS} in all", 413)  # fmt: skip
    if max(height, width) > MAX_ASPECT * min(height, width):
        raise BadInput(f"image is {width}x{height} pixels: one side is more than {MAX_ASPECT} "
                       "times the other")


def decode_image(data, convert):
    """`convert(PIL image)` (e.g. nn.preprocess.as_gray_or_rgb) of the PNG or JPEG in `data`."""
    if not data:
        raise BadInput("the image is empty")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=FORMATS) as image:
                check_size(image.height, image.width)  # from the header: nothing decoded yet
                image.load()
                return convert(image)
    except BadInput:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        raise BadInput(f"image refused: {error}", 413) from None
    except Image.UnidentifiedImageError:
        raise BadInput(f"not a {' or '.join(FORMATS)} image") from None
    except (OSError, SyntaxError, ValueError, EOFError) as error:  # truncated or corrupt data
        raise BadInput(f"the image cannot be decoded: {error}".splitlines()[0]) from None


def declared_pixels(data):
    """width * height as the header of the PNG or JPEG in `data` declares it, decoding nothing;
    0 when it is no such image (decode_image then says why)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=FORMATS) as image:
                return image.width * image.height
    except Exception:  # anything unreadable: decode_image refuses it with its message
        return 0


def decode_json_pixels(data):
    """float32 [H, W] in [0, 1] from a JSON body {"pixels": [[...], ...]}: H rows of W numbers."""
    try:
        body = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput(f"the body is not JSON: {error}") from None
    except RecursionError:
        raise BadInput("the JSON body is nested too deeply") from None
    rows = body.get("pixels") if isinstance(body, dict) else None
    if not (isinstance(rows, list) and rows and all(isinstance(row, list) for row in rows)):
        raise BadInput('the JSON body must be {"pixels": [[...], ...]}: a list of rows of numbers')
    width = len(rows[0])
    if any(len(row) != width for row in rows):
        raise BadInput("pixels: every row must hold as many numbers as the first")
    check_size(len(rows), width)
    if not all(type(v) in (int, float) for row in rows for v in row):  # bool is not a number here
        raise BadInput("pixels: every value must be a number")
    pixels = np.array(rows, dtype=np.float64)
    if not np.isfinite(pixels).all():
        raise BadInput("pixels: NaN or Inf found, every value must be finite, in [0, 1]")
    if pixels.min() < 0 or pixels.max() > 1:
        raise BadInput(f"pixels: values must be in [0, 1], found {pixels.min():g} to "
                       f"{pixels.max():g}")  # fmt: skip
    return pixels.astype(np.float32)

