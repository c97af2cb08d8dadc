"""Grad-CAM (Selvaraju et al., 2017): the pixels a class score depends on, seen through one layer.

The map comes from the layers' own forward and backward on the model's tier.

    python -m nn.explain --checkpoint runs/lenet5-mnist-stage2/best.npz --index 7
    python -m nn.explain --checkpoint runs/lenet5-mnist-stage2/best.npz digit.png --class 3

For a chosen layer with feature maps A [N, K, h, w] and the score y_c of class c (its logit):

1. forward the images through the model, keeping A;
2. backward from the score alone (d y_c / d logits is 1 at class c, 0 elsewhere) through the
   layers after the chosen one, which gives d y_c / d A [N, K, h, w];
3. weight each channel k by the spatial mean of its gradient, alpha_k = mean over (h, w);
4. the map is ReLU(sum_k alpha_k A_k) [N, h, w]: where the features that raise the score are;
5. upsampled bilinearly to the input's size and scaled to [0, 1] per image.

Steps 1 and 2 are the network's own Sequential forward and backward (every op on the tier), split
at the chosen layer; steps 3-5 are a few sums over small maps, done in NumPy. The layer is one of
the model's top-level layers (its name in the summary's order: '0', '1', ...); by default the last
one that is or holds a convolution. The model runs in evaluation mode; a BatchNorm after the
chosen layer cannot be differentiated there (its backward is the training-mode one), so such a
layer is refused with the names that can be chosen. The command saves the input with its map laid
over it as a PNG; any failure is one line on stderr and an exit status of its kind (nn/exits.py).
"""

import argparse
import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # files only: no pyplot, no backend chosen for the caller

from nn.backend import load_tier
from nn.data import Normalizer
from nn.exits import EPILOG, reporting
from nn.layers import BatchNorm, Conv2d, Sequential
from nn.predict import add_input_arguments, load_model, read_input


def grad_cam(model, images, class_indices, layer=None):
    """Grad-CAM heatmaps [N, H, W] float32 in [0, 1] of `images` for the classes `class_indices`.

    model: an nn Model built on its tier (put in evaluation mode; its parameters' .grad are
        overwritten by the backward).
    images: float32 [N, C, H, W] as the model takes them, i.e. already normalized by the data
        set's Normalizer (nn/data.py), as a NumPy array.
    class_indices: N ints in [0, num_classes): the class whose score each map explains.
    layer: the name of a top-level layer with feature maps (see `layer_choices`); None takes the
        last one that is or holds a Conv2d.

    A map whose weighted sum is nowhere positive is all zeros. Raises ValueError for a layer that
    cannot be chosen, images of another shape, or a class out of range.
    """
    choices = layer_choices(model)
    name = default_layer(model) if layer is None else str(layer)
    if name not in choices:
        raise ValueError(f"layer must be one of {_listed(choices)}, got {layer!r}")
    images = np.asarray(images)
    if images.dtype != np.float32 or images.shape[1:] != model.input_shape or not len(images):
        raise ValueError(
            f"images must be float32 [N, {', '.join(map(str, model.input_shape))}] "
            f"with N >= 1, got {images.dtype} {list(images.shape)}"
        )
    classes = np.asarray(class_indices)
    if (
        classes.shape != (len(images),)
        or not np.issubdtype(classes.dtype, np.integer)
        or classes.min() < 0
        or classes.max() >= model.num_classes
    ):
        raise ValueError(
            f"class_indices must be {len(images)} integers in [0, "
            f"{model.num_classes}), got {classes.tolist()}"
        )
    head, tail = split_at(model, name)
    tier = model.tier
    model.eval()
    activations = head.forward(tier.from_numpy(images))
    tail.forward(activations)  # the logits: the backward below starts from them
    score_grad = np.zeros((len(images), model.num_classes), np.float32)
    score_grad[np.arange(len(images)), classes] = 1.0  # d y_c / d logits
    gradients = tail.backward(tier.from_numpy(score_grad))
    maps = class_activation_maps(tier.to_numpy(activations), tier.to_numpy(gradients))
    return normalized(upsampled(maps, *images.shape[2:]))


def layer_choices(model):
    """{name: layer} of the top-level layers Grad-CAM can look through: those whose output is a
    feature map [K, h, w], with no BatchNorm after them (evaluation mode has no backward)."""
    children = model.net.children()
    names = list(children)
    return {
        name: layer
        for index, (name, layer) in enumerate(children.items())
        if len(layer.output_shape) == 3
        and not any(_holds(children[later], BatchNorm) for later in names[index + 1 :])
    }


def default_layer(model):
    """The name of the last choosable layer that is or holds a Conv2d; ValueError if none."""
    convolutional = [name for name, layer in layer_choices(model).items() if _holds(layer, Conv2d)]
    if not convolutional:
        raise ValueError(
            f"model {model.name} has no convolutional layer Grad-CAM can look "
            f"through (choosable layers: {_listed(layer_choices(model)) or 'none'})"
        )
    return convolutional[-1]


def split_at(model, name):
    """(head, tail): two Sequentials over the model's own layers, the head ending with layer
    `name`, so head.forward gives its activations and tail.backward their gradient."""
    names = list(model.net.children())
    cut = names.index(name) + 1
    return Sequential(*model.net.layers[:cut]), Sequential(*model.net.layers[cut:])


def class_activation_maps(activations, gradients):
    """ReLU(sum_k alpha_k A_k) [N, h, w] from A and dy/dA [N, K, h, w], alpha_k the spatial mean
    of channel k's gradient."""
    # BEGIN SOLUTION week 20, task class_activation_maps
    weights = gradients.astype(np.float64).mean(axis=(2, 3))
    return np.maximum(np.einsum("nk,nkhw->nhw", weights, activations.astype(np.float64)), 0.0)
    # END SOLUTION


def upsampled(maps, height, width):
    """maps [N, h, w] resized to [N, height, width] by bilinear interpolation (pixel centres
    aligned, edges repeated: the convention of OpenCV's and PyTorch's bilinear resize)."""
    rows = _interpolation(maps.shape[1], height)
    columns = _interpolation(maps.shape[2], width)
    return np.einsum("yh,nhw,xw->nyx", rows, maps, columns)


def _interpolation(size, new_size):
    """[new_size, size] matrix: row i holds the two weights that interpolate output pixel i."""
    centres = np.clip((np.arange(new_size) + 0.5) * size / new_size - 0.5, 0, size - 1)
    below = np.floor(centres).astype(int)
    above = np.minimum(below + 1, size - 1)
    matrix = np.zeros((new_size, size))
    matrix[np.arange(new_size), below] += 1 - (centres - below)
    matrix[np.arange(new_size), above] += centres - below
    return matrix


def normalized(maps):
    """Each map [N, H, W] scaled to [0, 1] by its minimum and maximum (a flat map: all zeros), as
    float32."""
    low = maps.min(axis=(1, 2), keepdims=True)
    spread = maps.max(axis=(1, 2), keepdims=True) - low
    scaled = np.divide(maps - low, spread, out=np.zeros_like(maps), where=spread > 0)
    return scaled.astype(np.float32)


def save_overlays(images, heatmaps, titles, path, columns=5):
    """A grid of images [N, C, H, W] (uint8, or floats in any range) with heatmaps [N, H, W] laid
    over them in colour, one title each, as a PNG at `path`."""
    count = len(images)
    columns = min(columns, count)
    rows = -(-count // columns)
    figure = Figure(figsize=(columns * 2.2, rows * 2.4))
    grid = figure.subplots(rows, columns, squeeze=False)
    for axes in grid.flat:
        axes.axis("off")
    for axes, image, heatmap, title in zip(grid.flat, images, heatmaps, titles, strict=False):
        picture = image.transpose(1, 2, 0).astype(np.float64)
        picture = (picture - picture.min()) / (np.ptp(picture) or 1.0)
        axes.imshow(picture[..., 0] if picture.shape[2] == 1 else picture, cmap="gray")
        axes.imshow(heatmap, cmap="jet", alpha=0.45, vmin=0.0, vmax=1.0)
        axes.set_title(title, fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def _holds(layer, kind):
    """Whether `layer` is a `kind` or holds one."""
    return isinstance(layer, kind) or any(
        _holds(child, kind) for child in layer.children().values()
    )


def _listed(choices):
    return ", ".join(f"{name} ({layer.describe()})" for name, layer in choices.items())


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m nn.explain", description=__doc__.split("\n")[0], epilog=EPILOG
    )
    add_input_arguments(parser)
    parser.add_argument(
        "--layer", metavar="NAME", help="the layer to look through (default: the last conv)"
    )
    parser.add_argument(
        "--class",
        dest="class_index",
        type=int,
        metavar="C",
        help="the class to explain (default: the predicted one)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("gradcam.png"),
        metavar="PNG",
        help="the overlay PNG to write (default: gradcam.png)",
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    return reporting(lambda: explain(args))


def explain(args):
    """Load the model and the image, compute its map, save the overlay; exit status 0."""
    tier = load_tier(args.stage, args.impl)
    model, meta = load_model(args.checkpoint, tier)
    pixels = read_input(args, meta)
    images = Normalizer.from_json(meta["normalizer"])(pixels)
    probabilities = model.loss.probabilities(tier, model.forward(tier.from_numpy(images)))[0]
    chosen = int(np.argmax(probabilities)) if args.class_index is None else args.class_index
    if not 0 <= chosen < model.num_classes:
        raise ValueError(f"--class must be in [0, {model.num_classes}), got {chosen}")
    layer = default_layer(model) if args.layer is None else args.layer
    heatmap = grad_cam(model, images, [chosen], layer)
    described = model.net.children()[layer].describe()
    name = meta["class_names"][chosen]
    title = f"{name} (p={probabilities[chosen]:.3f})\nlayer {layer}: {described}"
    save_overlays(pixels, heatmap, [title], args.out)
    print(
        f"Grad-CAM of class {name} (probability {probabilities[chosen]:.4f}) through layer "
        f"{layer}, {described}: {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
