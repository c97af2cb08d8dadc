"""The grader of scratch2cuda: one set of checks for every tier (see grader/CONTRACT.md).

    python -m grader --stage N [--variant numba|nvcc] [--week K] [--ops a,b] [--impl DIR]
                     [--against M] [--quick] [--isolate] [--timeout S] [--json PATH]
    python -m grader bench --stage N [--quick]

From Python: `grade(Options(stage=2, quick=True))` returns (exit status, JSON record).
Modules: contract (the ops as data), inputs (random arguments), session (calling tiers, one
check), correctness, gradients, propagation (NaN and Inf in, out where PyTorch has them), speed,
timing, poison (NaN-filled allocations), isolation and worker (the child process), report,
machine, run (a whole grading), bench.
"""

from .run import Options, grade

__all__ = ["Options", "grade"]
