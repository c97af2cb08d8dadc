"""What the grader needs to know of each stage: its float precision and its speed-ladder class."""

import os

FLOAT_BITS = {1: 64, 2: 32, 3: 32, 4: 32}  # stage 1 computes in Python floats
TIER_CLASS = {1: "python", 2: "cpu", 3: "cpu", 4: "gpu"}  # which rung of the speed ladders


def tier_class(stage):
    """The ladder a stage is timed on; the CUDA simulator (no GPU) only manages the tiny one."""
    if stage == 4 and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "python"
    return TIER_CLASS[stage]
