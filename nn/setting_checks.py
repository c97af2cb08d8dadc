"""Checks of plain values from flags, recipes and checkpoints' JSON: predicates, one per kind.

JSON and argparse give Python ints, floats, bools, strings, lists and dicts; a bool is an int to
Python but never a count or a number here, and NaN or Inf is never a setting.
"""

import math


def is_int(value, minimum=0):
    """An int (not a bool) >= `minimum`."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def is_number(value, minimum=-math.inf, maximum=math.inf):
    """A finite int or float (not a bool) in [minimum, maximum]."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and minimum <= value <= maximum)


def is_positive(value):
    """A finite number > 0."""
    return is_number(value) and value > 0
