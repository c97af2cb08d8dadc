"""Train a model on a tier: `python -m nn.train --stage 2 --model lenet5 --data mnist`.

Settings come from the recipe for the model and data (nn/recipes.py); flags override them. The
last line printed is `test_accuracy=0.XXXX` so that scripts can read the result. Any failure is
one line on stderr and an exit status of its kind (nn/exits.py, listed by --help).
"""

import argparse
import contextlib
import json
import re
import sys
import time
import warnings
from pathlib import Path

from threadpoolctl import threadpool_info, threadpool_limits

import nn
from nn.backend import STAGES, VARIANTS, TierError, load_tier, refuse_simulated
from nn.checkpoint import CheckpointError, read_checkpoint
from nn.data import DATA_NAMES, load_data
from nn.distributed.launch import TIMEOUT, launch, this_rank
from nn.distributed.step import ranks_agreeing
from nn.exits import DIVERGED, EPILOG, INTERRUPTED, REPORTED, exit_status
from nn.interrupts import Interrupted
from nn.models import MODELS, build_model, check_options
from nn.recipes import Recipe, recipe_for
from nn.report import command_line, machine, save_pictures, write_results
from nn.schedules import Schedule
from nn.trainer import Trainer, TrainingDiverged
from tiers.machine import LOW_OCCUPANCY_NOTE


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m nn.train", description=__doc__.split("\n")[0], epilog=EPILOG
    )
    parser.add_argument("--stage", type=int, default=2, choices=STAGES)
    parser.add_argument("--variant", choices=VARIANTS,
                        help="stage 4's variant (default: numba, the first)")
    parser.add_argument("--impl", metavar="DIR",
                        help="train on the tier in DIR, e.g. your workspace "
                        "(default: the reference)")
    parser.add_argument("--model", required=True, choices=sorted(MODELS))
    parser.add_argument("--data", choices=DATA_NAMES, help="required unless --summary")
    parser.add_argument("--data-dir", help="folder holding mnist/, fashion-mnist/, tiny-imagenet/ "
                        "(default: NN_DATA_DIR, the cache, the system's data sets)")
    recipe = parser.add_argument_group("recipe overrides (defaults: nn/recipes.py)")
    recipe.add_argument("--epochs", type=int)
    recipe.add_argument("--batch-size", type=int)
    recipe.add_argument("--optimizer", choices=["sgd", "momentum", "nesterov", "rmsprop", "adam"])
    recipe.add_argument("--lr", type=float)
    recipe.add_argument("--momentum", type=float)
    recipe.add_argument("--beta2", type=float, help="Adam's second-moment decay")
    recipe.add_argument("--weight-decay", type=float)
    recipe.add_argument("--schedule", choices=Schedule.KINDS)
    recipe.add_argument("--warmup-epochs", type=float)
    recipe.add_argument("--shift", type=int, help="augmentation: random shifts of up to N pixels")
    recipe.add_argument("--flip", action=argparse.BooleanOptionalAction,
                        help="augmentation: random horizontal flips")
    recipe.add_argument("--val-size", type=int, help="training examples held out for validation")
    recipe.add_argument("--train-size", type=int, help="train on only N examples (0: all)")
    recipe.add_argument("--patience", type=int, help="early stopping patience in epochs (0: off)")
    recipe.add_argument("--seed", type=int)
    recipe.add_argument("--model-option", action="append", default=[], metavar="NAME=VALUE",
                        help="a model builder argument, e.g. dropout=0.3 or width=32")
    parser.add_argument("--run-dir", type=Path,
                        help="checkpoints, logs and pictures (default: runs/MODEL-DATA-stageN)")
    parser.add_argument("--resume", nargs="?", const="last", metavar="CHECKPOINT",
                        help="continue from the run's last.npz (or the checkpoint given)")
    parser.add_argument("--results", type=Path, metavar="DIR",
                        help="also write DIR/train-MODEL-DATA-stageN.{json,md,png}")
    parser.add_argument("--tensorboard", nargs="?", const=True, metavar="DIR",
                        help="write a live TensorBoard dashboard (nn/dashboard.py) into DIR "
                        "(default: RUN_DIR/tensorboard); `tensorboard --logdir runs/` shows it")
    parser.add_argument("--summary", action="store_true",
                        help="print the model's layers and parameters, then exit")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--threads", type=int,
                        help="BLAS threads (default: the library's, usually one per core)")
    parser.add_argument("--gpus", type=int, metavar="N",
                        help="stage 4, nvcc: data-parallel training, one process per GPU, each "
                        "on its shard of every batch, gradients summed by NCCL (nn/distributed/)")
    parser.add_argument("--rank-timeout", type=float, default=TIMEOUT, metavar="SECONDS",
                        help="with --gpus: stop the run, naming the rank, when one makes no step "
                        "for this long (default: %(default)g)")
    steps = parser.add_mutually_exclusive_group()
    steps.add_argument("--graph", action="store_true",
                       help="stage 4, nvcc: launch each training step as one CUDA graph")
    steps.add_argument("--op-by-op", action="store_true",
                       help="stage 4, nvcc: run every step through the layers (by default the "
                       "first step is recorded and later steps launch its recording)")
    return parser.parse_args(argv)


def model_options(pairs):
    """{'dropout': 0.3} from ['dropout=0.3']: values parsed as JSON numbers/booleans if they can."""
    options = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name:
            raise ValueError(f"--model-option must look like NAME=VALUE, got {pair!r}")
        try:
            options[name] = json.loads(value)
        except json.JSONDecodeError:
            options[name] = value
    return options


SIMULATED_INSTEAD = (
    "Train on stage 3 instead (`make train STAGE=3 ARGS='...'`: the same nn/ code on your C "
    "tier), check your stage 4 kernels with `make grade STAGE=4 VARIANT=numba`, and train on "
    "stage 4 on a machine with an NVIDIA GPU."
)
RECIPE_FLAGS = (
    "epochs", "batch_size", "optimizer", "lr", "momentum", "beta2", "weight_decay", "schedule",
    "warmup_epochs", "shift", "flip", "val_size", "train_size", "patience", "seed",
)


def main(argv=None):
    args = parse_args(argv)
    warnings.filterwarnings("ignore", LOW_OCCUPANCY_NOTE)  # numba's, at every small batch's grid
    try:
        refuse_simulated(args.stage, args.variant, "training", SIMULATED_INSTEAD)
        tier = load_tier(args.stage, args.impl, args.variant)
        if args.summary:
            print(MODELS[args.model]().build(tier, seed=0).summary())
            return 0
        if args.data is None:
            raise ValueError("--data is required (one of " + ", ".join(DATA_NAMES) + ")")
        if args.gpus is not None:
            if tier.NAME != "nvcc":
                raise ValueError(f"--gpus trains on stage 4's nvcc variant (--stage 4 --variant "
                                 f"nvcc), not on the {tier.NAME} tier")  # fmt: skip
            if this_rank() is None:  # the command as run: start the ranks, each this command
                return launch(sys.argv[1:] if argv is None else list(argv), args.gpus,
                              args.rank_timeout)
        if args.threads is not None:
            if args.threads < 1:
                raise ValueError(f"--threads must be an integer >= 1, got {args.threads}")
            # NumPy's BLAS (and any other native thread pool) uses this many threads from here on
            threadpool_limits(args.threads)
        return train(args, tier)
    except REPORTED as error:
        hint = ""
        network = re.match(r"week (\d+), task .*\(nn/", str(error))
        if network:  # an exercise of the learner's nn/ (S2C_NN) to write
            hint = (
                f"; `make test ARGS='-m week{int(network[1]):02d}'` grades the network's "
                "exercises (`make train IMPL=` trains the reference)"
            )
        elif isinstance(error, NotImplementedError):  # an exercise of the --impl tier to write
            hint = (
                f"; `make grade STAGE={args.stage}` lists what is left "
                "(`make train IMPL=` trains on the reference)"
            )
        print(f"error: {error}{hint}", file=sys.stderr)
        return exit_status(error)
    except KeyboardInterrupt:  # outside training (which says what it saved): nothing to save
        print("\ninterrupted", file=sys.stderr)
        return INTERRUPTED


def train(args, tier):
    """Build everything from the arguments, train, evaluate on the test split, report."""
    run_dir = args.run_dir or Path("runs") / f"{args.model}-{args.data}-stage{args.stage}"
    overrides = {name: getattr(args, name) for name in RECIPE_FLAGS}
    checkpoint = None
    if args.resume:
        checkpoint = run_dir / "last.npz" if args.resume == "last" else Path(args.resume)
        meta, _ = read_checkpoint(checkpoint)
        if (meta["model"], meta.get("data")) != (args.model, args.data):
            raise CheckpointError(
                f"checkpoint {checkpoint} is of {meta['model']} on {meta.get('data')}, "
                f"not {args.model} on {args.data}"
            )
        try:
            recipe = Recipe.from_json(meta.get("recipe"))
            check_options(args.model, recipe.model_options)
        except (ValueError, TypeError) as error:
            raise CheckpointError(f"checkpoint {checkpoint}: bad recipe: {error}") from None
        recipe = recipe.with_overrides(**overrides)
    else:
        recipe = recipe_for(args.model, args.data).with_overrides(**overrides)
    if args.model_option:
        options = {**recipe.model_options, **model_options(args.model_option)}
        recipe = recipe.with_overrides(model_options=options)

    data = load_data(
        args.data, args.data_dir, recipe.val_size, recipe.synthetic_size, recipe.train_size
    )
    model = build_model(args.model, data.input_shape, data.num_classes, **recipe.model_options)
    model.build(tier, recipe.seed)
    print(model.summary())
    implementation = f"from {args.impl}" if args.impl else "the reference"
    print(f"stage {args.stage} ({tier.NAME}, {implementation}); data {args.data}: "
          f"{len(data.train)} train, {len(data.val) if data.val else 0} validation, "
          f"{len(data.test)} test")
    print(f"network: nn/ of {nn.SOURCE}")
    print(f"recipe: {recipe.to_json()}")
    record = {
        "data": args.data,
        "class_names": data.class_names,
        "normalizer": data.normalizer.to_json(),
        "model_options": recipe.model_options,
        "input_shape": list(data.input_shape),
        "num_classes": data.num_classes,
    }
    dashboard = None
    if args.tensorboard:
        from nn.dashboard import Dashboard  # tensorboardX is imported only when asked for

        log_dir = run_dir / "tensorboard" if args.tensorboard is True else Path(args.tensorboard)
        dashboard = Dashboard(log_dir, model, recipe, tier.NAME)
        print(f"dashboard: tensorboard --logdir {log_dir}")
    communicator = None
    if args.gpus is not None:  # this process is one rank of a data-parallel run
        from nn.distributed.communicator import NcclCommunicator

        rank, size, identity = this_rank()
        if size != args.gpus:
            raise ValueError(f"--gpus {args.gpus}, but the launcher started {size} ranks")
        communicator = NcclCommunicator(tier, rank, size, identity)
        print(f"rank {rank} of {size}: its shard of every batch of {recipe.batch_size}")
    trainer = Trainer(model, data, recipe, run_dir, record, progress_bar=not args.no_progress,
                      recorded=not args.op_by_op, graph=args.graph, dashboard=dashboard,
                      communicator=communicator)
    if checkpoint:
        trainer.resume(checkpoint)
        print(f"resumed from {checkpoint}: {trainer.progress.epoch} epochs and "
              f"{trainer.progress.batch} batches done")
    try:
        with communicator or contextlib.nullcontext():  # freed on every rank before exit
            return fit_and_report(args, tier, trainer, recipe, run_dir)
    finally:
        if dashboard:
            dashboard.close()


def fit_and_report(args, tier, trainer, recipe, run_dir):
    """Train, evaluate on the test split, save the pictures and results; the exit status."""
    model, data = trainer.model, trainer.data

    started = time.perf_counter()
    try:
        history = trainer.fit()
    except TrainingDiverged as error:
        print(f"error: {error}", file=sys.stderr)
        return DIVERGED
    except Interrupted as interrupted:  # the message says whether a checkpoint was saved
        print(f"\n{interrupted}", file=sys.stderr)
        return INTERRUPTED
    wall_seconds = time.perf_counter() - started
    communicator = trainer.communicator
    if communicator is not None:
        agreeing = ranks_agreeing(model, communicator)
        if agreeing != communicator.size:
            raise TierError(f"data parallel: only {agreeing} of {communicator.size} ranks hold "
                            "rank 0's weights after training: the steps were not identical")
        print(f"data parallel: the weights are bit-identical on all {agreeing} ranks")
        communicator.close()  # every rank at once: rank 0's evaluation below needs no other
        if not trainer.writes:
            return 0  # rank 0 evaluates, draws and writes the results

    test_loss, test_accuracy, predictions = trainer.evaluate(data.test)
    if trainer.dashboard:
        trainer.dashboard.final(test_accuracy=test_accuracy, test_loss=test_loss,
                                best_val_loss=trainer.progress.best_val_loss)
    title = f"{args.model} on {args.data}, stage {args.stage}"
    save_pictures(run_dir, model, data, history, data.test.labels, predictions, title)
    print(f"pictures and checkpoints in {run_dir}/ (best.npz: the best validation loss); "
          f"test loss {test_loss:.4f}")
    if args.results:
        stem = f"train-{args.model}-{args.data}-stage{args.stage}"
        if args.stage == 4:  # two variants: each its own record
            stem += f"-{tier.NAME}"
        results = {
            "stem": stem,
            "model": args.model,
            "data": args.data,
            "stage": args.stage,
            "tier": tier.NAME,
            "impl": args.impl,
            "command": command_line(),
            "recipe": recipe.to_json(),
            "parameters": model.parameter_count(),
            "epochs_run": len(history),
            "best_val_epoch": trainer.progress.best_epoch,
            "test_accuracy": test_accuracy,
            "test_loss": test_loss,
            "test_examples": len(data.test),
            "seconds_per_epoch": [m["seconds"] for m in history],
            "wall_seconds": wall_seconds,
            "history": history,
            "machine": machine(),
            "blas_threads": [pool["num_threads"] for pool in threadpool_info()],
        }
        write_results(args.results, stem, results, run_dir)
        print(f"results written to {args.results}/{stem}.json")
    print(f"test_accuracy={test_accuracy:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
