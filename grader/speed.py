"""Speed: an op timed on the graded tier at one ladder size, next to the earlier tier and the
best library on the machine; outputs re-validated after timing. Also the bench's matmul kernels.

A ladder size is timed on the reference tier too when that tier's own ladder holds it (stage 1
only runs the tiny sizes), which gives the speedup. A CPU tier that sets its thread count (stage 3's
`set_num_threads`) is then timed again next to the reference, the two in turn on one thread each:
the speedup its speed policy judges (grader/policy.py). The output of the last timed call is then
compared with, in this order: the reference tier's output, the repository's stage 2 or 3 (fast;
never the graded code itself), or a float64 NumPy evaluation; `validated_against` records
which, or "none" when no independent answer exists at that size.
"""

import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from . import inputs, values
from .ceilings import measure_ceilings
from .correctness import compare_outputs
from .gpu_timing import l2_flush, measure_gpu
from .ladders import ladder, size_label, timed_class
from .ops import OPS
from .ownership import Ownership, native_leaves
from .policy import speed_problem
from .records import FAILED, PASSED, SKIPPED, Result, TierError
from .roofline import floor_problem, roofline
from .timing import measure, measure_in_turn
from .tolerance import tolerance
from .torch_ops import TORCH_OPS, tensors


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
    GPU: PyTorch on CUDA (cuBLAS, cuDNN) when installed with CUDA. (PyTorch beside every op:
    `python -m grader.library_bench`.)
    """
    torch = None
    if bench or tier_class == "gpu":
        try:
            import torch
        except ImportError:
            torch = None
    if tier_class == "gpu":
        if torch is None or not torch.cuda.is_available() or op_name not in LIBRARY_OPS:
            return None
        torch.backends.cuda.matmul.allow_tf32 = False  # FP32 against FP32: no tensor cores
        torch.backends.cudnn.allow_tf32 = False
        call = TORCH_OPS[op_name].call(torch, tensors(torch, args, "cuda"), args, "cuda")
        return Baseline("PyTorch CUDA", call, torch.cuda.synchronize)
    if op_name in ("matmul", "linear_forward"):
        return Baseline("NumPy/OpenBLAS", lambda: numpy_evaluation(op_name, args, np.float32))
    if torch is not None and op_name in LIBRARY_OPS:
        call = TORCH_OPS[op_name].call(torch, tensors(torch, args, "cpu"), args, "cpu")
        return Baseline("PyTorch CPU", call)
    return None


LIBRARY_OPS = ("matmul", "linear_forward", "conv2d_forward")  # a library beside their speed check


def time_op(session, tier, op, args, role):
    """(Timing, outputs) of `op` on `tier`: the outputs of the last timed call (in-place ops:
    of one more call on fresh arguments, since timing updated them over and over).

    The graded tier's last result must not share memory with its first (an op that returns a
    cached result for the same input objects looks fast and is wrong for changed data).
    """
    call, natives = bound_call(tier, op, args)
    try:
        first = call()
        timing, result = timer(tier)(call, session.setup.quick)
        if op.inplace:
            return timing, session.call(tier, op, args, role)
        outputs = values.to_numpy_tree(tier.module, result, op.outputs)
        if role == "graded":
            owner = Ownership()
            for call in (first, result):
                owner.check(native_leaves(call, op.outputs), natives)
        return timing, outputs
    except TierError:
        raise
    except values.ContractError as error:
        raise TierError(role, op.name, error) from None
    except Exception as error:
        raise TierError(role, op.name, error) from error


def bound_call(tier, op, args):
    """(a call of `op` on `tier` without arguments, the native arguments it passes): timing
    measures the op, not the conversion of its inputs."""
    natives = {name: values.to_native(tier.module, args[name]) for name in op.params}
    function = getattr(tier.module, op.name)
    return lambda: function(*natives.values()), natives


@contextmanager
def one_thread(sides):
    """Every tier of `sides` that sets its own thread count (the C tier's `set_num_threads`) on
    one thread, and NumPy's BLAS on one (threadpoolctl); their defaults come back after."""
    from threadpoolctl import threadpool_limits

    threaded = [tier.module for tier in sides if hasattr(tier.module, "set_num_threads")]
    with threadpool_limits(limits=1, user_api="blas"):
        try:
            for module in threaded:
                module.set_num_threads(1)
            yield
        finally:
            for module in threaded:
                module.set_num_threads(0)  # 0: the default (CONTRACT.md)


def time_on_one_thread(session, op, args):
    """The graded tier and the reference (and NumPy/OpenBLAS where it does the op) timed in turn,
    on one thread each: the figures stage 3's speed policy judges (grader/policy.py). With more
    threads than free cores, as on a shared machine, OpenMP's timings collapse; one thread each,
    timed in turn by the CPU time of the calling thread, is what a busy machine still measures
    fairly. Work an op hands to other threads regardless (OpenMP without `num_threads`) is not
    counted: it gains at most the core count, far inside the policy's margin."""
    sides = [session.graded, session.reference]
    calls = [(bound_call(tier, op, args)[0], tier.module.synchronize) for tier in sides]
    library = library_baseline(op.name, args, "cpu", bench=False)
    if library is not None:
        calls.append((library.call, library.synchronize))
    try:
        with one_thread(sides):
            timings, _ = measure_in_turn(calls, session.setup.quick, clock=time.thread_time)
    except Exception as error:
        raise TierError("graded", op.name, error) from error
    graded, reference = timings[:2]
    record = {
        "graded": graded.as_dict(),
        "reference": {"tier": session.reference.label, **reference.as_dict()},
        "speedup": reference.median / graded.median,
    }
    if library is not None:
        record.update(
            library={"name": library.name, **timings[2].as_dict()},
            library_fraction=timings[2].median / graded.median,
        )
    return record


def timer(tier):
    """How to time a call on `tier` (a tiers.LoadedTier): CUDA events with a cold L2 on a GPU,
    the host clock around `synchronize()` elsewhere (the CUDA simulator included)."""
    if tier.tier.gpu and not tier.tier.simulated:
        return lambda call, quick: measure_gpu(call, quick, l2_flush())
    return lambda call, quick: measure(call, tier.module.synchronize, quick)


def _in_ladder(named, tier_class, op, bench):
    return any(entry.size == named.size for entry in ladder(op, tier_class, bench))


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
    label = size_label(op, named, args)
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
    too_fast = None
    on_gpu = session.graded.tier.gpu and not session.graded.tier.simulated
    if on_gpu:
        ceilings = measure_ceilings()
        line = roofline(flops, moved, timing.median, ceilings)
        record.update(line.as_dict(), ceilings=ceilings.as_dict())
        too_fast = floor_problem(line)

    expected, expected_bits, validated = None, None, "none"
    reference = session.reference
    if reference and _in_ladder(named, timed_class(reference.tier), op, bench):
        ref_timing, expected = time_op(session, reference, op, args, "reference")
        expected_bits, validated = reference.tier.bits, reference.label
        record.update(
            reference={"tier": reference.label, "stage": reference.stage, **ref_timing.as_dict()},
            speedup=ref_timing.median / timing.median,
        )
        if not session.gpu and hasattr(session.graded.module, "set_num_threads"):
            record["one_thread"] = time_on_one_thread(session, op, args)
    elif session.fast_reference is not None:
        fast = session.fast_reference
        expected = session.call(fast, op, args, "reference")
        expected_bits, validated = fast.tier.bits, fast.label
    elif numpy_evaluation(op.name, args, np.float64) is not None:
        expected, expected_bits = numpy_evaluation(op.name, args, np.float64), 64
        validated = "NumPy float64"
    record["validated_against"] = validated

    baseline = library_baseline(op.name, args, timed_class(session.graded.tier), bench)
    if baseline is not None:
        if session.graded.tier.gpu:
            library, _ = measure_gpu(baseline.call, session.setup.quick, l2_flush())
        else:
            library, _ = measure(baseline.call, baseline.synchronize, session.setup.quick)
        record.update(
            library={"name": baseline.name, **library.as_dict()},
            library_fraction=library.median / timing.median,
        )

    status, message = PASSED, ""
    if expected is None:
        message = "output not re-validated: no independent reference at this size"
    else:
        tol = tolerance(op, session.graded_bits, expected_bits, args, session.gpu)
        problem = compare_outputs(session, op, received, expected, tol)
        if problem:
            status, message = FAILED, f"after timing: {problem}"
    if too_fast:
        status, message = FAILED, f"{op.name}: {too_fast}"
    elif status == PASSED and on_gpu:  # what timing left behind must not answer new data
        problem = _fresh_inputs_problem(session, op, named, task)
        if problem:
            status, message = FAILED, f"on fresh inputs after timing: {problem}"
    largest = named == ladder(op, timed_class(session.graded.tier), bench)[-1]
    slow = speed_problem(op.name, session.setup.stage, record, largest)
    if slow and status == PASSED:
        status, message = FAILED, slow
    return Result(
        op.name,
        "speed",
        status,
        message,
        size=label,
        seconds=time.perf_counter() - started,
        timing=record,
    )


def _fresh_inputs_problem(session, op, named, task):
    """The graded op on new random inputs of the timed size (outputs poisoned), checked against
    the fast reference: a result cached by address, or left by a launch that never ran, shows
    here. None when it is right, or when no reference can run this size."""
    fast = session.fast_reference
    if fast is None:
        return None
    args, _ = session.arguments(op, named.size, session.rng(task, 1), session.graded, "graded")
    received = session.call(session.graded, op, args, "graded")
    expected = session.call(fast, op, args, "reference")
    tol = tolerance(op, session.graded_bits, fast.tier.bits, args, session.gpu)
    return compare_outputs(session, op, received, expected, tol, args=args)


def _square_inputs(session, task):
    """Random float32 a [n, k] and b [k, m] for the matmul ladder."""
    n, k, m = task.size.size
    rng = session.rng(task)
    return inputs.normal(rng, (n, k)), inputs.normal(rng, (k, m))


def _threads(count):
    return f"{count} thread" + ("s" if count > 1 else "")


def check_kernel(session, task):
    """One of the tier's MATMUL_KERNELS (at `task.threads` threads on a CPU), validated against
    float64."""
    module = session.graded.module
    a, b = _square_inputs(session, task)
    n, k, m = task.size.size
    native_a, native_b = module.from_numpy(a), module.from_numpy(b)
    try:
        if task.threads:
            module.set_num_threads(task.threads)
        timing, result = timer(session.graded)(
            lambda: module.matmul(native_a, native_b, kernel=task.kernel), session.setup.quick
        )
        received = {"y": np.asarray(module.to_numpy(result))}
    except Exception as error:
        raise TierError("graded", f"matmul kernel {task.kernel}", error) from error
    gflops = 2 * n * k * m / timing.median / 1e9
    record = timing.as_dict() | {"kernel": task.kernel, "threads": task.threads, "gflops": gflops}
    op = OPS["matmul"]
    tol = tolerance(op, session.graded_bits, 64, {"a": a, "b": b}, session.gpu)
    problem = compare_outputs(session, op, received, {"y": a.astype(np.float64) @ b}, tol)
    where = f"{_threads(task.threads)}, " if task.threads else ""
    size = f"{task.kernel}, {where}{n}x{k}x{m}"
    return Result(
        "matmul", "kernel", FAILED if problem else PASSED, problem or "", size=size, timing=record
    )


def check_blas(session, task):
    """The machine's library on the same matmul: NumPy's BLAS at `task.threads` threads
    (threadpoolctl sets them), or on a GPU cuBLAS through PyTorch (TF32 off)."""
    a, b = _square_inputs(session, task)
    n, k, m = task.size.size
    if session.graded.tier.gpu:
        baseline = library_baseline("matmul", {"a": a, "b": b}, "gpu", bench=True)
        if baseline is None:
            return Result("matmul", "library", SKIPPED, "no GPU library (PyTorch with CUDA)")
        timing, _ = measure_gpu(baseline.call, session.setup.quick, l2_flush())
        gflops = 2 * n * k * m / timing.median / 1e9
        record = timing.as_dict() | {"threads": None, "gflops": gflops}
        size = f"{baseline.name}, {n}x{k}x{m}"
        return Result("matmul", "library", PASSED, size=size, timing=record)
    return _check_cpu_blas(session, task, a, b)


def _check_cpu_blas(session, task, a, b):
    from threadpoolctl import threadpool_limits

    n, k, m = task.size.size
    with threadpool_limits(limits=task.threads, user_api="blas"):
        timing, _ = measure(lambda: a @ b, lambda: None, session.setup.quick)
    gflops = 2 * n * k * m / timing.median / 1e9
    record = timing.as_dict() | {"threads": task.threads, "gflops": gflops}
    size = f"NumPy/OpenBLAS, {_threads(task.threads)}, {n}x{k}x{m}"
    return Result("matmul", "library", PASSED, size=size, timing=record)
