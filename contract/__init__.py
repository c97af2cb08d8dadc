"""The op contract (CONTRACT.md) as data: the one source the tiers, the grader and tools/ read.

- `OPS` (ops.py): every op in the contract's order, its group, the module of a tier that holds
  it, its arguments, outputs, optional arguments' defaults, in-place arguments and, for a
  backward op, its forward; `INTERFACE`, the names every tier defines besides the ops.
- `WEEKS`, `week_of`, `ops_for_week` (weeks.py): which week teaches each op in each stage.
- `export_ops` (exports.py): a tier's `__init__.py` gets its ops with it.

It imports nothing of the project (nor NumPy), so a tier can import it and nothing else.
How the grader checks each op (inputs, cases, costs, tolerances) is grader/ops.py's, keyed by
these names.
"""

from .exports import export_ops
from .ops import GROUPS, INTERFACE, OPS, Op, output_names
from .weeks import WEEK_EXCEPTIONS, WEEKS, WHOLE_STAGE_WEEKS, ops_for_week, week_of

__all__ = [
    "GROUPS",
    "INTERFACE",
    "OPS",
    "WEEKS",
    "WEEK_EXCEPTIONS",
    "WHOLE_STAGE_WEEKS",
    "Op",
    "export_ops",
    "ops_for_week",
    "output_names",
    "week_of",
]
