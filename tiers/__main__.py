"""`python -m tiers`: the registry as a table; `python -m tiers build`: every tier's build step.

    python -m tiers            name, module, stage, variant, precision, references, build, class
    python -m tiers build      runs `python -m BUILD` for each tier that has one (`make build`)

Run from the repository root (or a workspace root: the packages built are the ones found there).
"""

import subprocess
import sys

from . import TIERS


def print_table():
    print("name    module                   stage  variant  bits  references  build           class")
    for tier in TIERS.values():
        print(
            f"{tier.name:<7} {tier.module:<24} {tier.stage:<6} {tier.variant or '-':<8} "
            f"{tier.bits:<5} {','.join(tier.references):<11} {tier.build or '-':<15} "
            f"{tier.tier_class}"
        )


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
