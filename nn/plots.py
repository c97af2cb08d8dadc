"""Pictures of a run: training curves, the confusion matrix, the first layer's learned filters."""

import math

import numpy as np
from matplotlib.figure import Figure  # files only: no pyplot, no backend chosen for the caller


def plot_curves(history, path, title):
    """Loss and accuracy per epoch, training and validation, side by side."""
    epochs = [m["epoch"] for m in history]
    figure = Figure(figsize=(10, 4))
    loss_axes, accuracy_axes = figure.subplots(1, 2)
    for axes, key in ((loss_axes, "loss"), (accuracy_axes, "accuracy")):
        axes.plot(epochs, [m[f"train_{key}"] for m in history], "o-", label="train")
        if history and f"val_{key}" in history[0]:
            axes.plot(epochs, [m[f"val_{key}"] for m in history], "s-", label="validation")
        axes.set_xlabel("epoch")
        axes.set_ylabel(key)
        axes.grid(alpha=0.3)
        axes.legend()
    loss_axes.set_yscale("log")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def confusion_matrix(labels, predictions, num_classes):
    """counts[true, predicted] as an int64 [num_classes, num_classes] array."""
    counts = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(counts, (labels, predictions), 1)
    return counts


def plot_confusion(counts, class_names, path, title, labelled_up_to=20):
    """The matrix as an image; with at most `labelled_up_to` classes (not Tiny ImageNet's 200),
    each class named on the axes and each count written in its cell."""
    figure = Figure(figsize=(7, 6))
    axes = figure.subplots()
    image = axes.imshow(counts, cmap="Blues")
    axes.set_xlabel("predicted")
    axes.set_ylabel("true")
    if len(class_names) <= labelled_up_to:
        ticks = range(len(class_names))
        axes.set_xticks(ticks, class_names, rotation=45, ha="right")
        axes.set_yticks(ticks, class_names)
        threshold = counts.max() / 2
        for row, col in np.ndindex(counts.shape):
            color = "white" if counts[row, col] > threshold else "black"
            axes.text(col, row, counts[row, col], ha="center", va="center", fontsize=7, color=color)
    figure.colorbar(image)
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def filter_images(weights, input_shape):
    """The first layer's weights as images [K, C, R, S]: a conv kernel as it is, a dense weight
    [O, C*H*W] on image inputs one row per template [C, H, W]; None when not image-like."""
    if weights.ndim == 2 and len(input_shape) == 3:
        weights = weights.reshape(-1, *input_shape)
    return weights if weights.ndim == 4 else None


def plot_filters(weights, input_shape, path, title):
    """The first layer's filters as a grid of small images.

    weights: a conv kernel [K, C, R, S] (each filter shown over its first channel, or as RGB when
    C == 3), or a dense weight [O, C*H*W] when the input is an image (each row shown as an H x W
    template). Returns False (drawing nothing) when the weights are not image-like.
    """
    weights = filter_images(weights, input_shape)
    if weights is None:
        return False
    count = min(len(weights), 64)
    columns = math.ceil(math.sqrt(count))
    rows = math.ceil(count / columns)
    figure = Figure(figsize=(columns * 1.2, rows * 1.2))
    grid = figure.subplots(rows, columns, squeeze=False)
    for index, axes in enumerate(grid.flat):
        axes.axis("off")
        if index >= count:
            continue
        kernel = weights[index]
        if kernel.shape[0] == 3:  # colour filters: channels last, scaled to [0, 1]
            kernel = kernel.transpose(1, 2, 0)
            kernel = (kernel - kernel.min()) / (np.ptp(kernel) or 1.0)
            axes.imshow(kernel)
        else:
            axes.imshow(kernel[0], cmap="gray")
    figure.suptitle(title)
    figure.savefig(path, dpi=100)
    return True
