"""Values crossing into a tier and back: the checks themselves only ever see NumPy arrays.

Arguments go into a tier through its `from_numpy` (`to_native`), results come back through its
`to_numpy` (`to_numpy_tree`); a result of the wrong kind is a ContractError. Tiers are found and
imported by the registry (tiers/).
"""

import numpy as np


def to_native(tier, value):
    """A value for `tier`: arrays through from_numpy (always a fresh copy), tuples item by item."""
    if isinstance(value, np.ndarray):
        return tier.from_numpy(value.copy())
    if isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
        return tuple(to_native(tier, item) for item in value)
    return value


def to_numpy_tree(tier, value, structure, nested=False):
    """A tier's result as {output name: NumPy array}, walking the op's output structure.

    `structure` is a tuple of names, or (name, (subnames...)) for a result that is a tuple itself
    (batchnorm's `saved`; `nested`: walking one, which is a tuple even of one item, as attention's
    `(lse,)`). Scalars (losses) become 0-d float64 arrays; they must be Python floats.
    """
    if not structure:  # an in-place op: its results are its updated arguments
        if value is not None:
            raise ContractError(f"returned {type(value).__name__}, expected None (works in place)")
        return {}
    if len(structure) == 1 and isinstance(structure[0], str) and not nested:
        return {structure[0]: _leaf_to_numpy(tier, value, structure[0])}
    if not isinstance(value, tuple | list) or len(value) != len(structure):
        raise ContractError(
            f"returned {type(value).__name__}, expected a tuple of {len(structure)} "
            f"({', '.join(entry if isinstance(entry, str) else entry[0] for entry in structure)})"
        )
    result = {}
    for item, entry in zip(value, structure, strict=True):
        if isinstance(entry, str):
            result[entry] = _leaf_to_numpy(tier, item, entry)
        else:
            name, subnames = entry
            result[name] = tuple(to_numpy_tree(tier, item, subnames, nested=True).values())
    return result


def _leaf_to_numpy(tier, value, name):
    if value is None:  # an output the call asked the op to skip (conv2d_backward's need_dx)
        return None
    if name == "loss":
        # A Python float, or on a GPU a device value that float() reads (CONTRACT.md: losses may
        # stay on the GPU)
        on_device = hasattr(value, "__cuda_array_interface__") and hasattr(value, "__float__")
        if not (isinstance(value, float) or on_device):
            raise ContractError(
                f"returned {type(value).__name__}, expected a Python float (or, on a GPU, a "
                "device value that float() reads)"
            )
        return np.asarray(float(value), dtype=np.float64)
    return np.asarray(tier.to_numpy(value))


def flatten(outputs, structure):
    """{name: array or tuple of arrays} -> {'name' or 'name.sub': array}, for comparing."""
    flat = {}
    for entry in structure:
        if isinstance(entry, str):
            flat[entry] = outputs[entry]
        else:
            name, subnames = entry
            items = zip(subnames, outputs[name], strict=True)
            flat.update({f"{name}.{sub}": item for sub, item in items})
    return flat


class ContractError(Exception):
    """A tier returned something the contract does not allow (wrong type, count or dtype)."""
