"""The contract as data (contract/) and how the grader checks it (grader/ops.py and its
neighbours): one table of ops, which every tier follows, and the grader's inputs are what the
checks need."""

import inspect
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import contract
import stage1_python
import stage2_numpy
import tiers
from contract import GROUPS, WEEKS, ops_for_week, week_of
from grader.costs import conv_flops, work_matmul
from grader.ops import CHECKS, OPS, correctness_cases
from grader.tolerance import tolerance

# Ops whose cost counts FLOPs (a GEMM, a convolution): their roofline is set by arithmetic.
FLOP_OPS = {"matmul", "linear_forward", "linear_backward", "conv2d_forward", "conv2d_backward",
            "conv2d_bias_relu_pool", "int8_linear", "int8_conv2d", "int8_linear_to_int8",
            "int8_conv2d_to_int8", "attention"}

CONTRACT_MD = Path(__file__).parent.parent / "contract" / "CONTRACT.md"


def all_cases(op):
    """(size, built forward arguments) for every correctness case of `op`."""
    forward = OPS[op.forward] if op.forward else op
    rng = np.random.default_rng(0)
    return [(size, forward.build(rng, size)) for size in op.cases]


def test_the_table_holds_exactly_the_ops_of_contract_md():
    text = CONTRACT_MD.read_text()
    named = set(re.findall(r"`(\w+)\(", text))  # every `name(` written in CONTRACT.md
    interface = {"from_numpy", "to_numpy", "synchronize", "available", "empty", "set_num_threads",
                 "take", "shift_images", "correct_count", "float",
                 "record_step", "step", "launch", "copy_into", "capture_graph",
                 "record_call"}  # recordings
    not_ops = interface | {"uniform", "normal", "max"}
    assert named - not_ops <= set(OPS)
    for name in OPS:  # losses' backwards are described once, as "each `*_backward`"
        assert name in named or name.removesuffix("_backward") in named, name


def test_the_grader_checks_exactly_the_ops_of_the_contract_in_its_order():
    assert set(CHECKS) == set(contract.OPS), "grader/ops.py CHECKS against contract/ops.py"
    assert list(OPS) == list(contract.OPS)
    for name, op in OPS.items():
        assert isinstance(op, contract.Op) and op.group == contract.OPS[name].group, name


def test_each_tier_exports_every_op(tier):
    missing = [name for name in OPS if not callable(getattr(tier, name, None))]
    assert not missing, f"{tier.NAME} lacks {missing}"
    assert tier.__all__[: len(contract.INTERFACE)] == list(contract.INTERFACE)
    assert set(contract.OPS) <= set(tier.__all__), f"{tier.NAME} does not export every op"


def test_each_tier_defines_each_op_in_its_module_with_the_contracts_arguments(tier):
    """A tier's op takes the contract's arguments, in order, with its defaults (a tier may add
    optional ones of its own: `kernel=`), and lives in the module the contract names."""
    for name, op in contract.OPS.items():
        function = getattr(tier, name)
        assert function.__module__.rsplit(".", 1)[-1] == op.module, (name, function.__module__)
        parameters = list(inspect.signature(function).parameters.values())
        ours = parameters[: len(op.params)]
        assert tuple(p.name for p in ours) == op.params, f"{tier.NAME}.{name}"
        defaults = {p.name: p.default for p in ours if p.default is not p.empty}
        assert defaults == op.defaults, f"{tier.NAME}.{name}: defaults"
        extra = [p.name for p in parameters[len(op.params) :] if p.default is p.empty]
        assert not extra, f"{tier.NAME}.{name}: arguments beyond the contract's must be optional"


def copied_numpy_tier(tmp_path):
    """A copy of stage 2 in `tmp_path` (a workspace of one tier), to break."""
    shutil.copytree(Path(stage2_numpy.__file__).parent, tmp_path / "stage2_numpy",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    return tmp_path / "stage2_numpy"


def test_an_op_missing_from_its_module_names_the_file_and_the_op(tmp_path):
    folder = copied_numpy_tier(tmp_path)
    with (folder / "activations.py").open("a") as file:
        file.write("\ndel leaky_relu_backward\n")
    loaded = tiers.load(tiers.get("numpy"), impl=tmp_path)
    assert loaded.broken, loaded.reason
    assert f"{folder / 'activations.py'} defines no leaky_relu_backward" in loaded.reason


def test_an_interface_name_missing_from_a_tier_is_named(tmp_path):
    init = copied_numpy_tier(tmp_path) / "__init__.py"
    init.write_text(init.read_text().replace("def synchronize():", "def wait():"))
    loaded = tiers.load(tiers.get("numpy"), impl=tmp_path)
    assert loaded.broken and f"{init} defines no synchronize" in loaded.reason, loaded.reason


def test_a_module_missing_from_a_tier_names_it(tmp_path):
    folder = copied_numpy_tier(tmp_path)
    (folder / "regularization.py").unlink()
    loaded = tiers.load(tiers.get("numpy"), impl=tmp_path)
    assert loaded.broken, loaded.reason
    assert f"{folder / 'regularization.py'} is missing" in loaded.reason
    assert "dropout_forward" in loaded.reason


def test_weeks_cover_every_group_of_every_stage():
    for stage, weeks in WEEKS.items():
        assert set(weeks) == set(GROUPS), stage
    deployment = ops_for_week(2, 19)  # int8 inference
    assert deployment and all(OPS[name].group == "quantization" for name in deployment)
    attention = ops_for_week(2, 21)  # attention, layer norm, GELU, after the capstone
    assert "swap_middle_axes" in attention  # a linear algebra op, taught with the heads it splits
    assert attention and all(OPS[name].group == "attention" for name in attention
                             if name != "swap_middle_axes")  # fmt: skip
    assert sorted(ops_for_week(2, 7) + ops_for_week(2, 8) + deployment + attention) == sorted(OPS)
    # the capstone grades every op taught before it, not the later weeks'
    assert sorted(ops_for_week(2, 18)) == sorted(set(OPS) - set(deployment) - set(attention))
    assert ops_for_week(1, 1) == ["matmul", "transpose", "add", "mul", "scale", "sum_rows"]
    assert week_of(4, "matmul") == 15 and week_of(4, "add") == 14
    assert ops_for_week(2, 9) == []


@pytest.mark.parametrize("name", list(OPS))
def test_inputs_are_fresh_float32_random_numbers(name):
    for _, args in all_cases(OPS[name]):
        for value in args.values():
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                assert value.dtype == np.float32
                assert np.all(np.isfinite(value))
                if value.size > 1:
                    assert np.unique(value).size > 1, f"{name}: constant input"


def test_correctness_cases_include_batch_1_and_sizes_off_every_tile():
    for name in ("matmul", "linear_forward", "conv2d_forward", "softmax", "cross_entropy_loss"):
        sizes = [size for size, _ in all_cases(OPS[name])]
        assert any(size[0] == 1 for size in sizes), name
        dims = {d for size in sizes for d in size[:4] if isinstance(d, int) and d > 1}
        assert any(d % 2 for d in dims), name  # odd sizes fit no tile of 8, 16, 32, ...


def test_inputs_stay_away_from_kinks():
    for _, args in all_cases(OPS["relu"]) + all_cases(OPS["leaky_relu"]):
        assert np.abs(args["x"]).min() >= 0.05
    for size, args in all_cases(OPS["maxpool2d_forward"]):
        ties = size[-1]
        assert (np.unique(args["x"]).size < args["x"].size) == ties
    for _, args in all_cases(OPS["hinge_loss"]):
        scores, labels, margin = args["scores"], args["labels"], args["margin"]
        margins = scores - scores[np.arange(len(labels)), labels][:, None] + margin
        margins[np.arange(len(labels)), labels] = 1.0
        assert np.abs(margins).min() >= 0.01


def test_statistics_and_labels_are_valid():
    for _, args in all_cases(OPS["batchnorm_forward"]):
        assert args["running_var"].min() > 0
        x = args["x"]
        assert x.size // x.shape[1] > 1  # a batch variance needs more than one value
    for _, args in all_cases(OPS["cross_entropy_loss"]):
        assert 0 <= args["labels"].min() and args["labels"].max() < args["logits"].shape[1]
        assert args["labels"].dtype == np.int64


def test_stability_cases_have_large_inputs():
    for name in ("softmax", "log_softmax", "cross_entropy_loss", "bce_with_logits_loss", "sigmoid"):
        largest = max(np.abs(args[next(iter(args))]).max() for _, args in all_cases(OPS[name]))
        assert largest > 89, name  # exp(89) overflows float32


def test_tolerance_widens_with_accumulation_length():
    op = OPS["matmul"]
    short = tolerance(op, 32, 64, {"a": np.zeros((2, 4)), "b": np.zeros((4, 2))})
    long = tolerance(op, 32, 64, {"a": np.zeros((2, 400)), "b": np.zeros((400, 2))})
    assert long.rtol == pytest.approx(10 * short.rtol)
    assert long.atol == pytest.approx(100 * short.atol)
    gpu = tolerance(op, 32, 32, {"a": np.zeros((2, 4)), "b": np.zeros((4, 2))}, gpu=True)
    assert gpu.rtol > short.rtol


def test_work_counts_flops_and_bytes():
    matmul = {"a": np.zeros((2, 3)), "b": np.zeros((3, 5))}
    assert work_matmul(matmul) == (2 * 2 * 3 * 5, 4 * (6 + 15 + 10))
    conv = {"x": np.zeros((2, 3, 8, 8)), "w": np.zeros((4, 3, 3, 3)), "stride": 1, "padding": 1}
    assert conv_flops(conv) == 2 * 2 * 4 * 8 * 8 * 3 * 3 * 3


@pytest.mark.parametrize(
    "name", [name for name, op in OPS.items() if name not in FLOP_OPS and not op.forward]
)
def test_a_memory_bound_op_counts_every_float_array_it_reads_and_writes(name):
    """The roofline of a memory-bound op is its bytes over the copy bandwidth: bytes left out
    (an in-place state written back, a second output) would make a kernel at full bandwidth
    look slower than it is, and set the speed policy too low. (Backward ops, whose arguments
    come from a forward, are not covered here.)"""
    import stage2_numpy

    op = OPS[name]
    _, args = all_cases(op)[-1]
    received = getattr(stage2_numpy, name)(*(args[p] for p in op.params))
    outputs = received if isinstance(received, tuple) else (received,)
    floats = [v for v in args.values() if isinstance(v, np.ndarray) and v.dtype == np.float32]
    floats += [args[p] for p in op.inplace]  # read, then written back
    saved = [v for output in outputs if isinstance(output, tuple) for v in output]  # (mean, invstd)
    floats += [v for v in (*outputs, *saved)
               if isinstance(v, np.ndarray) and v.dtype == np.float32]  # fmt: skip
    scalars = [v for v in outputs if isinstance(v, float)]  # a loss: one float32 on a GPU
    least = 4 * (sum(v.size for v in floats) + len(scalars))
    flops, moved = op.work(args)
    assert flops is None
    assert moved >= least, f"{name}: {moved} bytes counted, at least {least} moved"
    integers = [v for v in (*args.values(), *outputs) if isinstance(v, np.ndarray)
                and v.dtype.kind in "iu"]  # fmt: skip
    if not integers:  # (labels and argmax may be counted at 4 or 8 bytes)
        assert moved == least, f"{name}: {moved} bytes counted, {least} must move"


def contract_defaults(module, name):
    """{argument: default} of the op `name` as a reference tier declares it (the contract's)."""
    parameters = inspect.signature(getattr(module, name)).parameters.values()
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


@pytest.mark.parametrize("name", list(OPS))
def test_every_optional_argument_is_passed_and_left_at_its_default(name):
    """Each optional argument of the contract: some correctness case passes it away from its
    default, and some case leaves it out, so that a wrong path (conv2d_backward's need_dx=False)
    or a wrong default fails."""
    op = OPS[name]
    declared = contract_defaults(stage2_numpy, name)
    assert declared == contract_defaults(stage1_python, name)
    assert op.defaults == declared, f"{name}: contract/ops.py's defaults"
    assert set(declared) <= set(op.params), f"{name}: optional arguments the grader never passes"
    cases = all_cases(op)
    for argument, default in declared.items():
        left = [args for _, args in cases if argument in args.defaulted]
        passed = [args for _, args in cases
                  if argument not in args.defaulted and args[argument] != default]  # fmt: skip
        assert left, f"{name}: no case leaves {argument} at its default"
        assert passed, f"{name}: no case passes {argument} other than {default}"


def test_scalar_arguments_reach_the_edges_of_their_domains():
    alphas = {args["alpha"] for _, args in all_cases(OPS["leaky_relu"])}
    assert {0.0, 1.0} <= alphas and max(alphas) > 1 and min(alphas) < 0
    ratios = []  # eps against the variance it is added to, in training and in evaluation
    for (_, training, *_), args in all_cases(OPS["batchnorm_forward"]):
        x = args["x"]
        var = x.reshape(x.shape[0], x.shape[1], -1).var(axis=(0, 2)) if training else (
            args["running_var"])
        ratios.append((training, args["eps"] / var.mean()))
    for mode in (True, False):
        assert max(r for t, r in ratios if t == mode) > 0.1, f"training={mode}: eps never weighs"
    for name in ("sgd_step", "momentum_step", "rmsprop_step", "adam_step"):
        values = [args for _, args in all_cases(OPS[name])]
        assert any(args["weight_decay"] > 1 for args in values), name
    assert any(args["margin"] == 0 for _, args in all_cases(OPS["hinge_loss"]))


ELEMENTWISE_GROUPS = ("activations", "regularization", "optimizers", "init")
ROWWISE = ("softmax", "softmax_backward", "log_softmax", "log_softmax_backward",
           "cross_entropy_loss", "cross_entropy_loss_backward", "hinge_loss", "hinge_loss_backward")


def case_elements(op, size):
    """The element count of the first argument of `op` built at `size`, and its shape."""
    forward = OPS[op.forward] if op.forward else op
    args = forward.build(np.random.default_rng(0), size)
    first = next(v for v in args.values() if isinstance(v, np.ndarray) or isinstance(v, tuple))
    shape = first if isinstance(first, tuple) else first.shape
    return math.prod(shape), shape


@pytest.mark.parametrize("kind", ["python", "cpu", "simulated", "gpu"])
def test_every_tier_gets_tails_past_a_block_and_rows_past_any_block(kind):
    """Elementwise ops: a case of more than several blocks of 256 whose count is no multiple of
    32; row-wise ops: rows past 4096 (past 50257 on a real GPU and the CPU tiers), and a real GPU
    more rows than a grid's y dimension holds."""
    for name, op in OPS.items():
        counts = [case_elements(op, size) for size in correctness_cases(op, kind)]
        if op.group in ELEMENTWISE_GROUPS or name in ("add", "mul", "scale", "transpose"):
            assert any(n > 3 * 256 and n % 32 for n, _ in counts), (name, kind)
            if kind == "gpu":
                assert any(shape[0] > 65535 for _, shape in counts), name
        if name in ROWWISE:
            longest = max(shape[1] for _, shape in counts)
            assert longest > 4096, (name, kind)
            if kind in ("cpu", "gpu"):
                assert longest >= 50257, (name, kind)
                assert kind == "cpu" or any(shape[0] > 65535 for _, shape in counts), name


def test_a_loss_and_a_softmax_are_judged_relative_to_their_size():
    """A mean of n terms has no cancellation: its tolerance stays relative, so a loss 16 times
    too small fails at any n (the old absolute tolerance grew like n: 134 at 4096 x 4096 for a
    mean near 2), and a softmax of 50257 classes (values near 2e-5) cannot pass as zeros."""
    big = {"pred": np.zeros((4096, 4096)), "target": np.zeros((4096, 4096))}
    for bits in ((32, 32), (32, 64)):
        tol = tolerance(OPS["mse_loss"], *bits, big, gpu=True)
        assert tol.atol + tol.rtol * 2.0 < 0.01 * 2.0
    wide = {"x": np.zeros((2, 50257))}
    tol = tolerance(OPS["softmax"], 32, 32, wide, gpu=True)
    assert tol.atol + tol.rtol / 50257 < 0.5 / 50257
