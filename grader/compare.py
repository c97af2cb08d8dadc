"""Elementwise comparison with a tolerance, and the failure message a learner reads.

An element passes when |received - expected| <= atol + rtol * size, computed in float64, where
size is |expected| or, for an op ending in a subtraction, the size of its operands
(grader/tolerance.py, grader/terms.py).
NaN and Inf never pass: the comparison is false for NaN, and an infinite difference is never
within tolerance (even Inf against Inf, whose difference is NaN).
"""

import numpy as np


def format_index(name, index):
    """'dw[3, 1, 0, 2]', or just 'loss' for a scalar."""
    return f"{name}[{', '.join(map(str, index))}]" if index else name


def format_value(value):
    return f"{value:.6g}" if np.issubdtype(type(value), np.floating) else str(value)


def mismatch(op, name, received, expected, tol=None, how="", never_written=None):
    """None when `received` matches `expected`, else a message naming the first bad element.

    `tol` None or zero means exact equality (integer outputs such as argmax; the int8 ops' floats,
    exact by construction). `how` ends the message,
    e.g. '(central difference, h=1e-6)'. Shapes must match; float outputs of a float32 tier must
    be float32 and integer outputs integers (the caller checks dtypes, see `dtype_problem`).
    `never_written`, a boolean array, marks elements the op never wrote (grader/poison.py): the
    message then says so, as a NaN there is no result of the op's arithmetic.
    """
    received, expected = np.asarray(received), np.asarray(expected)
    if received.shape != expected.shape:
        return f"{op}: {name} has shape {list(received.shape)}, expected {list(expected.shape)}"
    exact = tol is None or tol.atol == tol.rtol == 0  # integers, or floats exact by construction
    if exact:
        bad = received != expected
        rule = "(exact match required)"
    else:
        e = expected.astype(np.float64)
        bound = tol.bound(name, e)
        difference = received.astype(np.float64)  # in place from here: outputs can be 16 M long
        with np.errstate(invalid="ignore", over="ignore"):
            difference -= e
            bad = ~(np.abs(difference, out=difference) <= bound)
    count = int(np.count_nonzero(bad))
    if count == 0:
        return None
    if never_written is not None and np.any(bad & never_written):
        unwritten = bad & never_written
        index = tuple(int(i) for i in np.argwhere(unwritten)[0]) if bad.ndim else ()
        return (
            f"{op}: {format_index(name, index)} was never written (it still holds the "
            f"{format_value(received[index])} the grader fills new outputs with), expected "
            f"{format_value(expected[index])}; {int(np.count_nonzero(unwritten))} of "
            f"{received.size} elements never written"
        )
    index = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    if not exact:
        rule = tol.describe(name, float(np.broadcast_to(bound, e.shape)[index]))
    message = (
        f"{op}: {format_index(name, index)} expected {format_value(expected[index])}, "
        f"received {format_value(received[index])}"
    )
    if received.size > 1:
        message += f"; {count} of {received.size} elements differ"
    return f"{message} {how or rule}"


def dtype_problem(op, name, array, float_bits):
    """A message when an output's dtype breaks the contract, else None.

    Integer outputs (argmax) must be int64 in every tier, as labels are, and int8 codes (q) int8
    in a float32 tier (stage 1's Python ints come back int64); float outputs float32
    from a float32 tier and float64 from stage 1. Values are compared separately.
    """
    kind = array.dtype.kind
    if name == "q":  # quantize_int8's codes: int8, or stage 1's Python ints
        wanted = np.int8 if float_bits == 32 else np.int64
        problem = f"{op}: {name} must be {wanted.__name__}, got {array.dtype}"
        return None if array.dtype == wanted else problem
    if name == "argmax":
        return None if array.dtype == np.int64 else f"{op}: {name} must be int64, got {array.dtype}"
    if kind != "f":
        return f"{op}: {name} must hold floats, got {array.dtype}"
    if float_bits == 32 and array.dtype != np.float32:
        return f"{op}: {name} must be float32, got {array.dtype}"
    return None


def describe_args(args):
    """A short description of arguments, e.g. 'x[2, 3, 7, 6] w[4, 3, 3, 3] stride=1 padding=1';
    an argument the call leaves out shows its default: 'padding=0 (default, not passed)'."""
    parts = []
    defaulted = getattr(args, "defaulted", ())
    for name, value in args.items():
        if isinstance(value, np.ndarray):
            part = f"{name}[{', '.join(map(str, value.shape))}]"
            if value.dtype.kind == "f" and value.size and np.abs(value).max() >= 100:
                part += f" (|{name}| up to {np.abs(value).max():.3g})"
            parts.append(part)
        elif isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
            shapes = ", ".join(f"[{', '.join(map(str, item.shape))}]" for item in value)
            parts.append(f"{name}=({shapes}{',' if len(value) == 1 else ''})")  # saved's arrays
        elif isinstance(value, tuple):
            parts.append(f"{name}=({', '.join(map(str, value))})")
        else:
            parts.append(
                f"{name}={value}" + (" (default, not passed)" if name in defaulted else "")
            )
    return " ".join(parts)
