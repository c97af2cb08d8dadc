"""An image of any size to the input a model takes: the one preprocessing of nn.predict, the
service (nn/serve/) and its page.

A digit drawn on a canvas is not an MNIST digit: it may sit in a corner, fill the canvas or a tenth
of it, and be dark on light. MNIST's digits were made by scaling each one into a 20x20 box,
keeping its aspect ratio, and placing that box in a 28x28 field so that the digit's centre of mass
is at the centre. `METHODS["mnist"]` does the same:

    crop to the bounding box of the ink -> scale the longer side to 20 -> centre of mass at (14, 14)

`METHODS["resize"]` is the plain resize of the whole image to the model's size, kept to show what
the crop and centring are worth (python -m bench.preprocess measures both).

Brightness: MNIST digits are white ink on black. An image whose border is brighter than its middle
grey is taken as dark ink on a light background and inverted (`invert=None`); `invert=True` or
`False` decides instead. Values are floats in [0, 1] throughout; `to_model_input` returns what the
network receives before its Normalizer: float32 [C, H, W] in [0, 1].
"""

import numpy as np

BOX = 20  # MNIST: the digit scaled into 20x20, in a 28x28 field
INK = 0.1  # a pixel brighter than this share of the brightest one is ink (the bounding box)


def as_gray_or_rgb(image, channels):
    """A PIL image as float32 [H, W, channels] in [0, 1]: grayscale for 1 channel, else RGB."""
    converted = image.convert("L" if channels == 1 else "RGB")
    values = np.asarray(converted, dtype=np.float32) * np.float32(1 / 255)
    return values.reshape(values.shape[0], values.shape[1], channels)


def white_on_black(pixels, invert=None):
    """float [H, W, C] in [0, 1] as light ink on a dark background: inverted when `invert`, or,
    when `invert` is None, when the image's border is on average brighter than 0.5."""
    if invert is None:
        border = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
        invert = bool(border.mean() > 0.5)
    return 1 - pixels if invert else pixels


def resized(pixels, height, width):
    """float [H, W, C] resized to [height, width, C] (Pillow's antialiased bilinear filter)."""
    from PIL import Image  # Pillow comes with matplotlib

    channels = [
        np.asarray(Image.fromarray(pixels[:, :, c]).resize((width, height), Image.BILINEAR))
        for c in range(pixels.shape[2])
    ]
    return np.clip(np.stack(channels, axis=2), 0, 1).astype(np.float32)


def plain_resize(pixels, height, width):
    """The whole image [H, W, C] resized to [height, width, C]: no crop, no centring."""
    return resized(pixels, height, width)


def mnist_centred(pixels, height, width):
    """[H, W, C] as MNIST was made, into [height, width, C]: cropped to the bounding box of its ink,
    scaled so that its longer side is 20/28 of the field (keeping its aspect ratio), placed with
    its centre of mass at the field's centre. A blank image gives a blank field."""
    ink = pixels.max(axis=2)
    brightest = ink.max()
    if brightest <= 0:
        return np.zeros((height, width, pixels.shape[2]), np.float32)
    rows = np.flatnonzero((ink > INK * brightest).any(axis=1))
    cols = np.flatnonzero((ink > INK * brightest).any(axis=0))
    crop = pixels[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    box_h, box_w = round(BOX * height / 28), round(BOX * width / 28)
    scale = min(box_h / crop.shape[0], box_w / crop.shape[1])
    digit = resized(crop, max(1, round(crop.shape[0] * scale)),
                    max(1, round(crop.shape[1] * scale)))
    mass = digit.max(axis=2)
    total = mass.sum()
    if total <= 0:
        return np.zeros((height, width, pixels.shape[2]), np.float32)
    centre_y = (mass.sum(axis=1) * np.arange(mass.shape[0])).sum() / total
    centre_x = (mass.sum(axis=0) * np.arange(mass.shape[1])).sum() / total
    top = int(round((height - 1) / 2 - centre_y))
    left = int(round((width - 1) / 2 - centre_x))
    return _placed(digit, height, width, top, left)


def _placed(digit, height, width, top, left):
    """A [height, width, C] field of zeros with `digit` pasted at (top, left), clipped to it."""
    field = np.zeros((height, width, digit.shape[2]), np.float32)
    y0, x0 = max(top, 0), max(left, 0)
    y1, x1 = min(top + digit.shape[0], height), min(left + digit.shape[1], width)
    if y1 > y0 and x1 > x0:
        field[y0:y1, x0:x1] = digit[y0 - top:y1 - top, x0 - left:x1 - left]
    return field


METHODS = {"mnist": mnist_centred, "resize": plain_resize}


def to_model_input(pixels, input_shape, method="mnist", invert=None):
    """float32 [C, H, W] in [0, 1], the network's input (before its Normalizer), from `pixels`:
    float [h, w] or [h, w, c] in [0, 1] of any size.

    An image of exactly the model's size is taken as already preprocessed (an MNIST digit, the
    page's own 28x28 preview): only its brightness is checked. Any other is brought to size by
    METHODS[method]. A one-channel (digit) image is made white on black (`invert`, see
    white_on_black); a colour model's input is inverted only when `invert` is True and plainly
    resized, as the crop and centring are MNIST's."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    channels, height, width = input_shape
    pixels = np.asarray(pixels, np.float32)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.shape[2] != channels:  # gray to colour, or colour to gray (its mean)
        pixels = (np.repeat(pixels[:, :, :1], channels, axis=2) if pixels.shape[2] == 1
                  else pixels.mean(axis=2, keepdims=True))  # fmt: skip
    if channels == 1:
        pixels = white_on_black(pixels, invert)
    elif invert:
        pixels = 1 - pixels
    if pixels.shape[:2] != (height, width):
        bring_to_size = METHODS[method] if channels == 1 else plain_resize
        pixels = bring_to_size(pixels, height, width)
    return np.ascontiguousarray(pixels.transpose(2, 0, 1), dtype=np.float32)
