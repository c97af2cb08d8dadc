"""The one message format of every argument check: `<op>: <argument> must <expected>, got <actual>`.

Two kinds of fault, two exception types, in every tier:
- TypeError: the argument is not the kind of thing expected (not an array of the tier, an array
  of the wrong dtype, not a number, a bool where a number is expected, not a tuple of ints);
- ValueError: the kind is right but the value is not (rank, shape, zero-size dimension, a scalar
  out of range or not finite, an index out of range, a layout an in-place array cannot have,
  an output too large to allocate).
"""


def fail(op, message):
    """Raise the ValueError of a wrong value: `<op>: <message>`."""
    raise ValueError(f"{op}: {message}")


def fail_type(op, message):
    """Raise the TypeError of a wrong kind of argument: `<op>: <message>`."""
    raise TypeError(f"{op}: {message}")


def format_shape(shape):
    """(2, 3) -> "[2, 3]": shapes are written as in the docstrings, in every tier."""
    return "[" + ", ".join(str(size) for size in shape) + "]"


def type_name(value):
    """How a message names the type of `value`: "float", "list", "numpy.ndarray"."""
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module.split('.')[0]}.{kind.__name__}"
