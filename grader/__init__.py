"""The grader of scratch2cuda: one set of checks for every tier (see contract/CONTRACT.md).

    python -m grader --stage N [--variant numba|nvcc] [--week K] [--ops a,b] [--impl DIR]
                     [--against M] [--against-impl DIR] [--quick] [--isolate] [--timeout S]
                     [--json PATH]
    python -m grader bench --stage N [--quick]

From Python: `grade(Options(stage=2, quick=True))` returns (exit status, JSON record).
Modules: how the contract's ops (contract/) are checked: ops (the table of checks), builders
(arguments), inputs (random values), costs, ladders (speed sizes), tolerance; records (Setup, Task,
Result), session (calling tiers), crossing (values into a tier and back, as NumPy arrays), the
checks: correctness, agreement (with the learner's own earlier tier), gradients, propagation (NaN
and Inf in, out where PyTorch has them), ownership (results that share memory), speed (with timing,
policy), poison (NaN-filled allocations), isolation and worker (the child process), crash_site
(where C crashed), report, run (a whole grading), bench; the machine a record names comes from
tiers/machine.py.
"""

from .run import Options, grade

__all__ = ["Options", "grade"]
