"""The registry of tiers: the one place in the project that lists them (ARCHITECTURE.md).

A tier is one implementation of the op contract (contract/CONTRACT.md), known everywhere by its
name: `python`, `numpy`, `c`, `numba`, `nvcc`. The grader, `nn`, the tests, the exercise tool and
`make build` read this table; a new tier joins by one line here.

    import tiers
    tiers.get("c").module              'stage3_c'
    tiers.find(4)                      the numba tier: a stage's first variant is its default
    tiers.load(tiers.get("numpy"))     a LoadedTier (tiers/loading.py): the module, or why not
    tiers.load(tier, "workspace")      a learner's copy (`--impl`, `--against-impl`)
"""

import os
from dataclasses import dataclass

from .loading import REPOSITORY, LoadedTier, describe_exception, load, missing_package


@dataclass(frozen=True)
class Tier:
    """One implementation of the op contract.

    name        how commands and tests name it (`--tier c`, the `tier` fixture's ids)
    module      its importable module: a top-level package, or a variant's subpackage
    stage       its stage, 1-4 (`--stage N`); stage 4 has two variants, each a full tier
    variant     the variant's name within its stage (`--variant numba`), or None
    bits        float precision of its results: Python floats are 64, every other tier 32
    references  the tiers it is checked against by default, the first available one
    build       the module that `python -m` runs to build it (its native code), or None
    tier_class  the rung of the speed ladders it is timed on: "python", "cpu" or "gpu"
    native      runs compiled code, which can crash the process: graded in a worker process
    sources     folders of its code outside its module (the nvcc variant's stage4_cuda/csrc), so
                that its exercises there are known as its own (tools/exercise_index.py)
    on_simulator  a GPU tier that numba's CUDA simulator runs without a GPU (the numba variant;
                the nvcc variant's compiled kernels need a real one)
    """

    name: str
    module: str
    stage: int
    variant: str | None = None
    bits: int = 32
    references: tuple[str, ...] = ()
    build: str | None = None
    tier_class: str = "cpu"
    native: bool = False
    sources: tuple[str, ...] = ()
    on_simulator: bool = False

    @property
    def package(self):
        """The top-level package, the folder a workspace holds: 'stage4_cuda' for both variants."""
        return self.module.split(".")[0]

    @property
    def gpu(self):
        """Whether it runs on a GPU (or, without one, on the CUDA simulator)."""
        return self.tier_class == "gpu"

    @property
    def simulated(self):
        """Whether it is a GPU tier running on numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1):
        the CPU imitating the GPU, right in logic, hopeless for speed."""
        return self.gpu and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

    def too_slow_simulated(self, work, instead):
        """Why `work` (e.g. "the bench") cannot run on this tier here, then `instead`; None when
        the tier is not simulated."""
        if not self.simulated:
            return None
        if self.gpu_needed:
            return (
                f"{work} on {self.label} needs an NVIDIA GPU: numba's CUDA simulator, which "
                f"stands in for one here (NUMBA_ENABLE_CUDASIM=1), cannot run compiled .cu "
                f"kernels. {instead}"
            )
        return (
            f"{work} on {self.label} would run on numba's CUDA simulator here "
            "(NUMBA_ENABLE_CUDASIM=1: no NVIDIA GPU), which imitates every GPU thread in Python, "
            f"thousands of times slower than a GPU: minutes for a handful of numbers, days for a "
            f"data set. {instead}"
        )

    @property
    def gpu_needed(self):
        """Whether it cannot run on this machine for want of a GPU: a GPU tier while the CUDA
        simulator stands in for one, which cannot run it (the nvcc variant)."""
        return self.simulated and not self.on_simulator

    @property
    def reference_stages(self):
        """The stages of its references, best first (what the grader's --against defaults to)."""
        return tuple(TIERS[name].stage for name in self.references)

    @property
    def label(self):
        """How reports name it: 'stage 2' or 'stage 4 (numba)'."""
        return f"stage {self.stage}" + (f" ({self.variant})" if self.variant else "")


TIERS = {
    tier.name: tier
    for tier in (
        Tier("python", "stage1_python", 1, bits=64, references=("numpy",), tier_class="python"),
        Tier("numpy", "stage2_numpy", 2, references=("python",)),
        Tier("c", "stage3_c", 3, references=("numpy",), build="stage3_c.build",
             native=True),
        Tier("numba", "stage4_cuda.numba_impl", 4, "numba", references=("c", "numpy"),
             tier_class="gpu", native=True, on_simulator=True),
        Tier("nvcc", "stage4_cuda.nvcc_impl", 4, "nvcc", references=("c", "numpy"),
             build="stage4_cuda.nvcc_build", tier_class="gpu", native=True,
             sources=("stage4_cuda/csrc",)),
    )
}
STAGES = tuple(sorted({tier.stage for tier in TIERS.values()}))
VARIANTS = tuple(dict.fromkeys(tier.variant for tier in TIERS.values() if tier.variant))


def get(name):
    """The tier called `name`; a ValueError lists the names otherwise."""
    if name not in TIERS:
        raise ValueError(f"unknown tier {name!r}; the tiers: {', '.join(TIERS)}")
    return TIERS[name]


def of_stage(stage):
    """The tiers of `stage`, in registry order (two for stage 4, one otherwise)."""
    found = [tier for tier in TIERS.values() if tier.stage == stage]
    if not found:
        raise ValueError(f"stage must be one of {list(STAGES)}, got {stage!r}")
    return found


def variants(stage):
    """The variant names of `stage`: ('numba', 'nvcc') for stage 4, () for a stage of one tier."""
    return tuple(tier.variant for tier in of_stage(stage) if tier.variant)


def find(stage, variant=None):
    """The tier of `stage` and `variant`; without a variant, the stage's first tier."""
    candidates = of_stage(stage)
    if variant is None:
        return candidates[0]
    for tier in candidates:
        if tier.variant == variant:
            return tier
    choices = ", ".join(variants(stage)) or "none"
    raise ValueError(f"stage {stage} has no variant {variant!r} (its variants: {choices})")


def with_references(chosen):
    """The tiers `chosen` and, in turn, every tier they are checked against (a grader run loads
    them too), in registry order: what a command on `chosen` needs built."""
    names, todo = set(), [tier.name for tier in chosen]
    while todo:
        name = todo.pop()
        if name not in names:
            names.add(name)
            todo += TIERS[name].references
    return [tier for tier in TIERS.values() if tier.name in names]


def packages():
    """The top-level tier packages, in stage order: what a workspace holds."""
    return list(dict.fromkeys(tier.package for tier in TIERS.values()))


__all__ = [
    "REPOSITORY",
    "STAGES",
    "TIERS",
    "VARIANTS",
    "LoadedTier",
    "Tier",
    "describe_exception",
    "find",
    "get",
    "load",
    "missing_package",
    "of_stage",
    "packages",
    "variants",
    "with_references",
]
