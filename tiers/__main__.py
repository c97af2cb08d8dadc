"""`python -m tiers`: the registry as a table; `python -m tiers build`: every tier's build step.

    python -m tiers            name, module, stage, variant, precision, references, build, class
    python -m tiers build      runs `python -m BUILD` for each tier that has one (`make build`)

Run from the repository root (or a workspace root: the packages built are the ones found there).
"""

import subprocess
import sys

from . import TIERS

ROW = "{:<7} {:<24} {:<6} {:<8} {:<5} {:<11} {:<15} {}"


def print_table():
    print(ROW.format("name", "module", "stage", "variant", "bits", "references", "build", "class"))
    for tier in TIERS.values():
        references = ",".join(tier.references)
        print(ROW.format(tier.name, tier.module, tier.stage, tier.variant or "-", tier.bits,
                         references, tier.build or "-", tier.tier_class))


def build_all():
    """Run each build step in turn; the exit status of the first that fails, else 0."""
    for tier in TIERS.values():
        if tier.build:
            print(f"{tier.name}: python -m {tier.build}", flush=True)
            status = subprocess.call([sys.executable, "-m", tier.build])
            if status:
                return status
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["build"]:
        return build_all()
    if argv:
        print("usage: python -m tiers [build]", file=sys.stderr)
        return 2
    print_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
