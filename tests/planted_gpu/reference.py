"""The repository's stage 4 numba variant, re-exported for the planted GPU tiers.

Each planted tier (`tests/planted_gpu/<cheat>/stage4_cuda/numba_impl/`) does
`from tests.planted_gpu.reference import *` and redefines the one op it breaks or games, so it is
the reference with a single plant and no copied code. The grader loads it with `--impl`.
"""

import stage4_cuda.numba_impl as _numba

__all__ = [name for name in dir(_numba) if not name.startswith("_")]
globals().update({name: getattr(_numba, name) for name in __all__})
