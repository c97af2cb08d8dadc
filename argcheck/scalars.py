"""Checks of scalar arguments: ints, numbers, flags, seeds and shapes passed as tuples.

Each returns the value converted to a Python type (a NumPy int16 becomes an int before any
arithmetic, so `np.int16(200) * 200` cannot wrap around), and refuses bool where a number is
expected (True is an int to Python, never a size or a rate here).
"""

import math
import numbers

from .errors import fail, fail_type
from .limits import MAX_INT, SEED_LIMIT, check_elements


def is_bool(value):
    """True for Python's and NumPy's bools (numpy.bool_, named numpy.bool in NumPy 2)."""
    kind = type(value)
    return isinstance(value, bool) or (kind.__module__ == "numpy" and kind.__name__ in NUMPY_BOOLS)


NUMPY_BOOLS = ("bool", "bool_")


def is_int(value):
    """True for ints (Python's or NumPy's), never for bool."""
    return isinstance(value, numbers.Integral) and not is_bool(value)


def integer(op, name, value, minimum, maximum=MAX_INT):
    """An int in [minimum, maximum], returned as a Python int."""
    if not is_int(value):
        fail_type(op, f"{name} must be an int, got {value!r}")
    value = int(value)
    if not minimum <= value <= maximum:
        fail(op, f"{name} must be an int in [{minimum}, {maximum}], got {value}")
    return value


def seed(op, value):
    """A seed of the shared random stream: an int in [0, 2^64)."""
    return integer(op, "seed", value, 0, SEED_LIMIT - 1)


def real(op, name, value, low=None, high=None, low_open=False, high_open=False):
    """A finite number, within [low, high] when given (`low_open`/`high_open` make a bound
    strict: `real(op, "p", p, 0, 1, high_open=True)` accepts 0 <= p < 1). Returns a Python float,
    so `array * value` keeps the array's dtype."""
    if not isinstance(value, numbers.Real) or is_bool(value):
        fail_type(op, f"{name} must be a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        number = math.inf
    ok = math.isfinite(number)
    if ok and low is not None:
        ok = number > low if low_open else number >= low
    if ok and high is not None:
        ok = number < high if high_open else number <= high
    if not ok:
        lower = "" if low is None else f"{low} {'<' if low_open else '<='} "
        upper = "" if high is None else f" {'<' if high_open else '<='} {high}"
        condition = f" with {lower}{name}{upper}" if lower or upper else ""
        fail(op, f"{name} must be a finite number{condition}, got {value!r}")
    return number


def flag(op, name, value):
    """True or False (Python's bool or NumPy's), returned as a Python bool."""
    if not is_bool(value):
        fail_type(op, f"{name} must be True or False, got {value!r}")
    return bool(value)


def choice(op, name, value, options):
    """One of `options` (names such as a kernel or an algorithm)."""
    if not isinstance(value, str) or value not in options:
        fail(op, f"{name} must be one of {', '.join(map(repr, options))}, got {value!r}")
    return value


def shape_argument(op, name, shape, dims=None):
    """A shape passed as an argument (`x_shape`, an init's `shape`): a tuple (or list) of ints in
    [1, MAX_INT] whose product is at most MAX_ELEMENTS. `dims` ("N, C, H, W") fixes the rank.
    Returns a tuple of Python ints."""
    if not isinstance(shape, tuple | list) or not all(is_int(size) for size in shape):
        fail_type(op, f"{name} must be a tuple of ints, got {shape!r}")
    rank_ok = len(shape) >= 1 if dims is None else len(shape) == len(dims.split(","))
    if not rank_ok or not all(1 <= size <= MAX_INT for size in shape):
        wanted = "a tuple of ints" if dims is None else f"a tuple [{dims}] of ints"
        fail(op, f"{name} must be {wanted} in [1, {MAX_INT}], got {shape!r}")
    shape = tuple(int(size) for size in shape)
    check_elements(op, name, shape)
    return shape
