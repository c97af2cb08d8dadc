"""Speed: an op timed on the graded tier at one ladder size, next to the earlier tier and the
best library on the machine; outputs re-validated after timing. Also the bench's matmul kernels.

A ladder size is timed on the reference tier too when that tier's own ladder holds it (stage 1
only runs the tiny sizes), which gives the speedup. The output of the last timed call is then
compared with, in this order: the reference tier's output, the repository's stage 2 or 3 (fast;
never the graded code itself), or a float64 NumPy evaluation; `validated_against` records
which, or "none" when no independent answer exists at that size.
"""

import time
from dataclasses import dataclass

import numpy as np

from . import contract, inputs, values
from .contract import OPS
from .correctness import compare_outputs
from .session import FAILED, PASSED, Result, TierError
from .timing import measure


@dataclass
class Baseline:
    """A library doing the same work: its name, a call, and how to wait for it."""

    name: str
    call: object
    synchronize: object = lambda: None


def numpy_evaluation(op_name, args, dtype):
    """The op computed by NumPy (OpenBLAS) in `dtype`, for the ops that are one library call."""
    cast = {
        name: value.astype(dtype) for name, value in args.items() if isinstance(value, np.ndarray)
    }
    if op_name == "matmul":
        return {"y": cast["a"] @ cast["b"]}
    if op_name == "linear_forward":
        return {"y": cast["x"] @ cast["w"].T + cast["b"]}
    return None


def library_baseline(op_name, args, tier_class, bench):
    """The best library for this op on this machine, or None.

    CPU: NumPy's OpenBLAS for matmul and linear; PyTorch for conv2d in `bench` when installed.
    GPU: PyTorch on CUDA (cuBLAS, cuDNN) when installed with CUDA.
    """
    torch = None
    if bench or tier_class == "gpu":
        try:
            import torch
        except ImportError:
            torch = None
    if tier_class == "gpu":
        if torch is None or not torch.cuda.is_available() or op_name not in TORCH_OPS:
            return None
        tensors = {
            n: torch.from_numpy(v).cuda() for n, v in args.items() if isinstance(v, np.ndarray)
        }
        return Baseline(
            "PyTorch CUDA", TORCH_OPS[op_name](torch, tensors, args), torch.cuda.synchronize
        )
    if op_name in ("matmul", "linear_forward"):
        return Baseline("NumPy/OpenBLAS", lambda: numpy_evaluation(op_name, args, np.float32))
    if torch is not None and op_name in TORCH_OPS:
        tensors = {n: torch.from_numpy(v) for n, v in args.items() if isinstance(v, np.ndarray)}
        return Baseline("PyTorch CPU", TORCH_OPS[op_name](torch, tensors, args))
    return None


TORCH_OPS = {  # (torch, tensors, args) -> a call doing the op's work
    "matmul": lambda torch, t, a: lambda: t["a"] @ t["b"],
    "linear_forward": lambda torch, t, a: (
        lambda: torch.nn.functional.linear(t["x"], t["w"], t["b"])
    ),
    "conv2d_forward": lambda torch, t, a: (
        lambda: torch.nn.functional.conv2d(
            t["x"], t["w"], t["b"], stride=a["stride"], padding=a["padding"]
        )
    ),
}


def time_op(session, tier, op, args, role):
    """(Timing, outputs) of `op` on `tier`: the outputs of the last timed call (in-place ops:
    of one more call on fresh arguments, since timing updated them over and over)."""
    natives = [values.to_native(tier.module, args[name]) for name in op.params]
    function = getattr(tier.module, op.name)
    try:
        timing, result = measure(
            lambda: function(*natives), tier.module.synchronize, session.setup.quick
        )
        if op.inplace:
            return timing, session.call(tier, op, args, role)
        return timing, values.to_numpy_tree(tier.module, result, op.outputs)
    except TierError:
        raise
    except Exception as error:
        raise TierError(role, op.name, error) from error


def _in_ladder(named, tier_class, op, bench):
    return any(entry.size == named.size for entry in contract.ladder(op, tier_class, bench))


def check_speed(session, task):
    """Time `task.op` at `task.size` on the graded tier (and the reference, and a library)."""
    op, named, bench = OPS[task.op], task.size, session.setup.bench
    started = time.perf_counter()
    rng = session.rng(task)
    try:  # a backward op's arguments come from a forward: the graded one is fast, if it works
        args, _ = session.arguments(op, named.size, rng, session.graded, "graded")
    except TierError:
        args, _ = session.arguments(
            op, named.size, session.rng(task), session.reference, "reference"
        )
    label = contract.size_label(op, named, args)
    timing, received = time_op(session, session.graded, op, args, "graded")
    record = timing.as_dict()
    record["shapes"] = {n: list(v.shape) for n, v in args.items() if isinstance(v, np.ndarray)}
    flops, moved = op.work(args)
    record.update(
        flops=flops,
        bytes=moved,
        gflops=flops / timing.median / 1e9 if flops else None,
        gbps=moved / timing.median / 1e9,
    )

    expected, expected_bits, validated = None, None, "none"
    reference = session.reference
    if reference and _in_ladder(named, contract.tier_class(reference.stage), op, bench):
        ref_timing, expected = time_op(session, reference, op, args, "reference")
        expected_bits, validated = contract.FLOAT_BITS[reference.stage], reference.label
        record.update(
            reference={"tier": reference.label, **ref_timing.as_dict()},
            speedup=ref_timing.median / timing.median,
        )
    elif session.fast_reference is not None:
        fast = session.fast_reference
        expected = session.call(fast, op, args, "reference")
        expected_bits, validated = contract.FLOAT_BITS[fast.stage], fast.label
    elif numpy_evaluation(op.name, args, np.float64) is not None:
        expected, expected_bits = numpy_evaluation(op.name, args, np.float64), 64
        validated = "NumPy float64"
    record["validated_against"] = validated

    baseline = library_baseline(op.name, args, contract.tier_class(session.setup.stage), bench)
    if baseline is not None:
        library, _ = measure(baseline.call, baseline.synchronize, session.setup.quick)
        record.update(
            library={"name": baseline.name, **library.as_dict()},
            library_fraction=library.median / timing.median,
        )

    status, message = PASSED, ""
    if expected is None:
        message = "output not re-validated: no independent reference at this size"
    else:
        tol = contract.tolerance(op, session.graded_bits, expected_bits, args, session.gpu)
        problem = compare_outputs(session, op, received, expected, tol)
        if problem:
            status, message = FAILED, f"after timing: {problem}"
    return Result(
        op.name,
        "speed",
        status,
        message,
        size=label,
        seconds=time.perf_counter() - started,
        timing=record,
    )


def _square_inputs(session, task):
    """Random float32 a [n, k] and b [k, m] for the matmul ladder."""
    n, k, m = task.size.size
    rng = session.rng(task)
    return inputs.normal(rng, (n, k)), inputs.normal(rng, (k, m))


def _threads(count):
    return f"{count} thread" + ("s" if count > 1 else "")


def check_kernel(session, task):
    """One of the tier's MATMUL_KERNELS at `task.threads` threads, validated against float64."""
    module = session.graded.module
    a, b = _square_inputs(session, task)
    n, k, m = task.size.size
    native_a, native_b = module.from_numpy(a), module.from_numpy(b)
    try:
        module.set_num_threads(task.threads)
        timing, result = measure(
            lambda: module.matmul(native_a, native_b, kernel=task.kernel),
            module.synchronize,
            session.setup.quick,
        )
        received = {"y": np.asarray(module.to_numpy(result))}
    except Exception as error:
        raise TierError("graded", f"matmul kernel {task.kernel}", error) from error
    gflops = 2 * n * k * m / timing.median / 1e9
    record = timing.as_dict() | {"kernel": task.kernel, "threads": task.threads, "gflops": gflops}
    op = OPS["matmul"]
    tol = contract.tolerance(op, session.graded_bits, 64, {"a": a, "b": b}, session.gpu)
    problem = compare_outputs(session, op, received, {"y": a.astype(np.float64) @ b}, tol)
    size = f"{task.kernel}, {_threads(task.threads)}, {n}x{k}x{m}"
    return Result(
        "matmul", "kernel", FAILED if problem else PASSED, problem or "", size=size, timing=record
    )


def check_blas(session, task):
    """NumPy's BLAS on the same matmul at `task.threads` threads (threadpoolctl sets them)."""
    from threadpoolctl import threadpool_limits

    a, b = _square_inputs(session, task)
    n, k, m = task.size.size
    with threadpool_limits(limits=task.threads, user_api="blas"):
        timing, _ = measure(lambda: a @ b, lambda: None, session.setup.quick)
    gflops = 2 * n * k * m / timing.median / 1e9
    record = timing.as_dict() | {"threads": task.threads, "gflops": gflops}
    size = f"NumPy/OpenBLAS, {_threads(task.threads)}, {n}x{k}x{m}"
    return Result("matmul", "library", PASSED, size=size, timing=record)
