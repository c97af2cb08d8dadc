"""`--stage N` to the tier package that implements the op contract."""

import importlib

STAGE_MODULES = {
    1: "stage1_python",
    2: "stage2_numpy",
    3: "stage3_c",
    4: "stage4_cuda",
}


class TierError(RuntimeError):
    """A tier that cannot be used here (not written yet, or unavailable on this machine)."""


def load_tier(stage):
    """Import and return the tier module of `stage` (1-4), or raise TierError saying why not."""
    if stage not in STAGE_MODULES:
        raise ValueError(f"stage must be one of {sorted(STAGE_MODULES)}, got {stage!r}")
    module_name = STAGE_MODULES[stage]
    try:
        tier = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name):
            raise TierError(f"stage {stage} ({module_name}) is not written yet") from error
        raise
    ok, reason = tier.available()
    if not ok:
        raise TierError(f"stage {stage} ({module_name}) is unavailable: {reason}")
    return tier
