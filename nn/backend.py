"""The tier `nn` computes on, its backend: `--stage N [--variant V] [--impl DIR]` to the tier module
that implements the op contract.

The tier comes from the registry (tiers/): the repository's, or a learner's copy from a workspace
folder (`make exercises`), found and imported exactly as `python -m grader --impl DIR` finds it.
"""

import tiers

STAGES = tiers.STAGES
VARIANTS = tiers.VARIANTS


class TierError(RuntimeError):
    """A tier that cannot be used here (not written yet, unavailable, or failing to import)."""


def load_tier(stage, impl=None, variant=None):
    """The tier module of `stage` (and `variant`: stage 4's default is its first, numba), the
    repository's or the one under `impl`.

    Raises ValueError for a stage or variant the registry does not know, TierError saying why
    there is no module.
    """
    tier = tiers.find(stage, variant)
    loaded = tiers.load(tier, impl)
    if not loaded.ok:
        where = f" in {impl}" if impl else ""
        raise TierError(f"stage {stage} ({tier.module}{where}): {loaded.reason}")
    return loaded.module


def runs_on_gpu(stage, variant=None):
    """Whether the tier of `stage` (`variant`) runs on a GPU (or its simulator)."""
    return tiers.find(stage, variant).gpu


def refuse_simulated(stage, variant, work, instead):
    """Raise TierError at once when the tier of `stage` (`variant`) would run on numba's CUDA
    simulator, where `work` (e.g. "training") would take hours; the message ends with `instead`."""
    refusal = tiers.find(stage, variant).too_slow_simulated(work, instead)
    if refusal:
        raise TierError(refusal)


def nvcc_tier(purpose):
    """Stage 4's nvcc variant, for `purpose` (e.g. "the race", which needs a GPU); TierError
    saying so when it cannot run here."""
    try:
        return load_tier(4, None, "nvcc")
    except TierError as error:
        raise TierError(f"{purpose} runs on a GPU with the nvcc variant built: {error}") from None
