"""`python -m tiers`: the registry as a table; `python -m tiers build`: the tiers' build steps.

    python -m tiers                               name, module, stage, variant, precision,
                                                  references, build, class
    python -m tiers build [--if-stale]            `python -m BUILD` for each tier that has one
                      [--impl DIR]                of workspace DIR's copies (`make build IMPL=DIR`)
    python -m tiers build --if-stale --stage 3    only what a command on stage 3 needs: its tiers
                      [--variant nvcc]            (or one variant's) and those they are checked
                                                  against, each rebuilt only when a source changed
                      [--no-references]           only the tier the stage trains on (make train)

`make build` builds every tier that is stale; `make grade`, `bench` and `train` build what their
STAGE needs, `make test` and `make progress` every tier, all with --if-stale (a fresh build costs
a check of file times). Run from the repository root (or a workspace root: the packages built are
the ones found there).
"""

import argparse
import subprocess
import sys
from pathlib import Path

from . import STAGES, TIERS, VARIANTS, find, of_stage, with_references

ROW = "{:<7} {:<24} {:<6} {:<8} {:<5} {:<11} {:<15} {}"


def print_table():
    print(ROW.format("name", "module", "stage", "variant", "bits", "references", "build", "class"))
    for tier in TIERS.values():
        references = ",".join(tier.references)
        print(ROW.format(tier.name, tier.module, tier.stage, tier.variant or "-", tier.bits,
                         references, tier.build or "-", tier.tier_class))


def chosen_tiers(stages, variant, references=True):
    """The tiers a command on `stages` (all when empty) needs built: each stage's tiers (only
    `variant` where given) and those they are checked against; without `references`, only the
    tier a stage trains on (`variant`, else the stage's first: what nn.train loads). A command
    does not need a tier that cannot run here (the nvcc variant without a GPU); `make build`
    (no stage) builds every tier."""
    if not stages:
        return list(TIERS.values())
    if not references:
        chosen = [find(stage, variant) for stage in stages]
    elif variant:
        chosen = with_references([find(stage, variant) for stage in stages])
    else:
        chosen = with_references([tier for stage in stages for tier in of_stage(stage)])
    return [tier for tier in chosen if not tier.gpu_needed]


def build(chosen, if_stale=False, impl=None):
    """Run the build step of each tier of `chosen` in turn; the exit status of the first that
    fails, else 0. With `if_stale`, a step compiles only when a source changed since its build.
    With `impl` (a workspace), the steps build the workspace's copies, of the tiers it holds."""
    for tier in chosen:
        if tier.build and (impl is None or (Path(impl) / tier.package).is_dir()):
            line = [sys.executable, "-m", tier.build] + ["--if-stale"] * if_stale
            if not if_stale:  # a stale build says itself what it builds and why
                print(f"{tier.name}: python -m {tier.build}", flush=True)
            status = subprocess.call(line, cwd=impl)  # run in impl, the step builds impl's copy
            if status:
                return status
    return 0


def parse_build_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tiers build",
                                     description="run the tiers' build steps")
    parser.add_argument("--if-stale", action="store_true",
                        help="compile a tier only when a source changed since its last build")
    parser.add_argument("--stage", type=int, action="append", default=[], choices=STAGES,
                        help="only what a command on this stage needs (repeatable; default: all)")
    parser.add_argument("--variant", choices=VARIANTS, help="with --stage: only this variant")
    parser.add_argument("--no-references", action="store_true",
                        help="with --stage: only the tier it trains on (`make train`), not the "
                        "tiers it is checked against")
    parser.add_argument("--impl", metavar="DIR",
                        help="build the copies of the tiers in workspace DIR (every tier it holds, "
                        "the nvcc variant too: nvcc shows its errors without a GPU)")
    args = parser.parse_args(argv)
    if args.impl and args.stage:
        parser.error("--impl builds every tier DIR holds: no --stage")
    if (args.variant or args.no_references) and not args.stage:
        parser.error("--variant and --no-references go with --stage")
    try:
        args.tiers = chosen_tiers(args.stage, args.variant, not args.no_references)
    except ValueError as error:
        parser.error(str(error))
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["build"]:
        args = parse_build_args(argv[1:])
        return build(args.tiers, args.if_stale, args.impl)
    if argv:
        print("usage: python -m tiers [build [--if-stale] [--stage N] [--variant V]]",
              file=sys.stderr)
        return 2
    print_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
