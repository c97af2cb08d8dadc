"""Weight initializers by name, drawn by the tier from a seed (so every tier draws the same)."""

INITIALIZERS = {
    # He (Kaiming) normal keeps the variance of activations steady through ReLU layers.
    "he": "he_normal",
    # Xavier (Glorot) uniform suits tanh and sigmoid, symmetric around zero.
    "xavier": "xavier_uniform",
}


def initial_weights(tier, init, shape, seed):
    """A new native array of `shape` drawn by initializer `init` ('he' or 'xavier')."""
    if init not in INITIALIZERS:
        raise ValueError(f"init must be one of {sorted(INITIALIZERS)}, got {init!r}")
    return getattr(tier, INITIALIZERS[init])(tuple(shape), seed)
