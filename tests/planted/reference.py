"""The repository's stage 2, re-exported for the planted tiers.

Each planted tier (`tests/planted/<bug>/stage2_numpy/`) does `from tests.planted.reference import *`
and then redefines the one op it breaks, so it is the reference stage 2 with a single planted bug
and no copied code. The grader loads it with `--impl tests/planted/<bug>`.
"""

import stage2_numpy as _stage2

__all__ = [name for name in dir(_stage2) if not name.startswith("_")]
globals().update({name: getattr(_stage2, name) for name in __all__})
