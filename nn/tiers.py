"""`--stage N [--impl DIR]` to the tier that implements the op contract.

The repository's tier, or a learner's from a workspace folder (`make exercises`), found and
imported exactly as `python -m grader --impl DIR` finds it.
"""

from grader.tiers import PACKAGES, load

STAGES = sorted(PACKAGES)


class TierError(RuntimeError):
    """A tier that cannot be used here (not written yet, unavailable, or failing to import)."""


def load_tier(stage, impl=None):
    """The tier module of `stage` (1-4), the repository's or the one under `impl`.

    Stage 4 is its nvcc variant, which the `stage4_cuda` package re-exports (DESIGN.md).
    Raises TierError saying why there is none.
    """
    if stage not in PACKAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
    tier = load(stage, variant="nvcc" if stage == 4 else None, impl=impl)
    if not tier.ok:
        where = f" in {impl}" if impl else ""
        raise TierError(f"stage {stage} ({PACKAGES[stage]}{where}): {tier.reason}")
    return tier.module
