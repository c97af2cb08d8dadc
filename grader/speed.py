"""Speed: an op timed on the graded tier at one ladder size, next to the earlier tier and the
best library on the machine; outputs re-validated after timing. Also the bench's matmul kernels.

A ladder size is timed on the reference tier too when that tier's own ladder holds it (stage 1
only runs the tiny sizes), which gives the speedup. A CPU tier is timed on one thread by the CPU
time of the process, in turn with the reference (and NumPy/OpenBLAS where it does the op), so that
a shared machine's load moves neither (grader/policy.py); a tier that sets its thread count
(stage 3's `set_num_threads`) is timed with its own threads first, for the record, and the speed
policy judges the one-thread figures.

Before every timed call of the graded tier its inputs get new contents, in place
(grader/input_changes.py): an answer remembered from an earlier call is wrong. After timing, the
graded op answers once more on the same argument objects with new contents and NaN-filled outputs
(an element never written shows, instead of the previous call's answer that the allocator's
recycled block still holds), and that answer is compared with, in this order: the reference
tier's on the same contents, the repository's stage 2 or 3 (fast; never the graded code itself),
or a float64 NumPy evaluation; `validated_against` records which, or "none" when no independent
answer exists at that size. On a GPU the call's host time and any work on a stream the timer does
not see are judged as well (grader/unseen_work.py).
"""

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import tiers

from . import crossing, inputs
from .ceilings import measure_ceilings
from .correctness import compare_outputs
from .gpu_timing import host_seconds, l2_flush, measure_gpu
from .input_changes import roll_in_place
from .ladders import ladder, size_label, timed_class
from .ops import OPS
from .ownership import Ownership, native_leaves
from .poison import poisoned_allocations
from .policy import speed_problem
from .records import FAILED, PASSED, SKIPPED, Result, TierError
from .roofline import floor_problem, roofline
from .timing import measure, measure_in_turn
from .tolerance import tolerance
from .torch_ops import TORCH_OPS, tensors
from .unseen_work import host_problem, other_stream_problem


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
    `python -m bench.ops_vs_pytorch`.)
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


class BoundCall:
    """`op` on `tier` with its arguments converted once (timing measures the op, not the
    conversion of its inputs): `call()` runs it; `change()` gives its floating-point array
    arguments new contents in place (grader/input_changes.py); `contents()` reads them back."""

    def __init__(self, tier, op, args):
        self.tier, self.op, self.args = tier, op, args
        self.natives = {name: crossing.to_native(tier.module, args[name]) for name in op.params}
        self._function = getattr(tier.module, op.name)

    def __call__(self):
        return self._function(*self.natives.values())

    def change(self):
        for native in self.natives.values():
            roll_in_place(native)

    def contents(self):
        """{param: NumPy value}: the arguments as they are now."""
        return {
            name: _read_back(self.tier.module, native, self.args[name])
            for name, native in self.natives.items()
        }


def _read_back(module, native, given):
    """A native argument as a NumPy value of `given`'s dtype (scalars and shapes as given)."""
    if isinstance(given, tuple) and given and isinstance(given[0], np.ndarray):
        return tuple(_read_back(module, n, g) for n, g in zip(native, given, strict=True))
    if isinstance(given, np.ndarray):
        return np.asarray(module.to_numpy(native)).astype(given.dtype, copy=False)
    return given


def time_graded(session, bound):
    """(Timing, the last result) of the graded op `bound` (a BoundCall), its inputs given new
    contents before every call."""
    try:
        return timer(session.graded)(bound, session.setup.quick, bound.change)
    except Exception as error:
        raise TierError("graded", bound.op.name, error) from error


def answer_on_new_contents(session, bound, last):
    """(outputs, arguments) of the graded op called once more, after timing, on the same argument
    objects with new contents and its outputs NaN-filled: an answer remembered from earlier
    contents is wrong here, and an element never written shows (a timed call's output sits in
    the block the allocator recycled from the call before, which held its full answer). Neither
    this result nor `last` (the last timed one) may share memory with the other or an input."""
    graded, op = session.graded, bound.op
    try:
        bound.change()
        contents = bound.contents()
        with poisoned_allocations(graded.module):
            final = bound()
        outputs = crossing.to_numpy_tree(graded.module, final, op.outputs)
        for name in op.inplace:
            outputs[name] = np.asarray(graded.module.to_numpy(bound.natives[name]))
        owner = Ownership()
        for result in (last, final):
            owner.check(native_leaves(result, op.outputs), bound.natives)
    except crossing.ContractError as error:
        raise TierError("graded", op.name, error) from None
    except Exception as error:
        raise TierError("graded", op.name, error) from error
    return outputs, contents


def time_reference(session, tier, op, args):
    """The Timing of a trusted tier's op (the reference's): its inputs are left as they are."""
    try:
        return timer(tier)(BoundCall(tier, op, args), session.setup.quick)[0]
    except Exception as error:
        raise TierError("reference", op.name, error) from error


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


def time_on_one_thread(session, bound, reference):
    """The graded op `bound` (a BoundCall; new input contents before every call), `reference`
    (a tier, or None where it does not run this size) and the machine's library where it does
    the op (library_baseline), timed in turn on one thread each: the figures the CPU speed
    policies judge (grader/policy.py). With more threads than free cores, as on a shared
    machine, multi-threaded timings collapse (two BLAS or OpenMP threads on two busy cores: 10x,
    and at worst 500x); one thread each, timed in turn by the CPU time of the process, is what a
    busy machine still measures fairly: waiting for a core is not counted, while work handed to
    another thread of the process is.

    Returns {"graded": Timing, "reference": Timing or None, "library": (Baseline, Timing) or
    None, "last": the graded op's last result}."""
    op, args = bound.op, bound.args
    calls = [(bound, session.graded.module.synchronize, bound.change)]
    if reference is not None:
        calls.append((BoundCall(reference, op, args), reference.module.synchronize))
    library = library_baseline(op.name, args, "cpu", session.setup.bench)
    if library is not None:
        calls.append((library.call, library.synchronize))
    sides = [session.graded] + ([reference] if reference is not None else [])
    try:
        with one_thread(sides):
            timings, results = measure_in_turn(calls, session.setup.quick, clock=time.process_time)
    except Exception as error:
        raise TierError("graded", op.name, error) from error
    return {
        "graded": timings[0],
        "reference": timings[1] if reference is not None else None,
        "library": (library, timings[-1]) if library is not None else None,
        "last": results[0],
    }


def one_thread_record(session, measured):
    """The JSON record of time_on_one_thread's figures: each side's timing and the ratios."""
    graded, reference, library = measured["graded"], measured["reference"], measured["library"]
    record = {"graded": graded.as_dict()}
    if reference is not None:
        described = {"tier": session.reference.label, "stage": session.reference.stage}
        record.update(
            reference=described | reference.as_dict(), speedup=reference.median / graded.median
        )
    if library is not None:
        baseline, timing = library
        record.update(
            library={"name": baseline.name, **timing.as_dict()},
            library_fraction=timing.median / graded.median,
        )
    return record


def timer(tier):
    """How to time a call on `tier` (a tiers.LoadedTier), as `timer(tier)(call, quick, change)`:
    CUDA events with a cold L2 on a GPU, the host clock around `synchronize()` elsewhere (the
    CUDA simulator included)."""
    if tier.tier.gpu and not tier.tier.simulated:
        return lambda call, quick, change=None: measure_gpu(call, quick, l2_flush(), change)
    return lambda call, quick, change=None: measure(call, tier.module.synchronize, quick, change)


def _in_ladder(named, tier_class, op, bench):
    return any(entry.size == named.size for entry in ladder(op, tier_class, bench))


def _time_sides(session, bound, reference):
    """(Timing, last result, record) of the graded op `bound`, with the reference's timing
    (`reference`: None where it does not run this size) and the library's in the record. A CPU
    tier without threads of its own is timed only on one thread, in turn with the others; a tier
    that sets its thread count is timed with them first, and on one thread in turn after; a GPU
    tier, the reference and the library each on their own."""
    op, args, graded = bound.op, bound.args, session.graded
    if not (session.gpu or hasattr(graded.module, "set_num_threads")):
        measured = time_on_one_thread(session, bound, reference)
        record = measured["graded"].as_dict() | one_thread_record(session, measured)
        del record["graded"]
        return measured["graded"], measured["last"], record
    timing, last = time_graded(session, bound)
    record = timing.as_dict()
    if reference is not None:
        ref_timing = time_reference(session, reference, op, args)
        described = {"tier": reference.label, "stage": reference.stage}
        record.update(
            reference=described | ref_timing.as_dict(), speedup=ref_timing.median / timing.median
        )
        if not session.gpu:
            record["one_thread"] = one_thread_record(
                session, time_on_one_thread(session, bound, reference)
            )
    baseline = library_baseline(op.name, args, timed_class(graded.tier), session.setup.bench)
    if baseline is not None:
        if graded.tier.gpu:
            library, _ = measure_gpu(baseline.call, session.setup.quick, l2_flush())
        else:
            library, _ = measure(baseline.call, baseline.synchronize, session.setup.quick)
        record.update(
            library={"name": baseline.name, **library.as_dict()},
            library_fraction=library.median / timing.median,
        )
    return timing, last, record


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
    reference = session.reference
    if not (reference and _in_ladder(named, timed_class(reference.tier), op, bench)):
        reference = None
    bound = BoundCall(session.graded, op, args)
    timing, last, record = _time_sides(session, bound, reference)
    received, contents = answer_on_new_contents(session, bound, last)
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
    profiled = on_gpu and under_profiler()
    if on_gpu:
        ceilings = measure_ceilings()
        line = roofline(flops, moved, timing.median, ceilings, op.integer_work)
        record.update(line.as_dict(), ceilings=ceilings.as_dict())
        too_fast = floor_problem(line, ceilings.launch)
        twin_host = repository_host_time(session, op, args)
        record["repository_host"] = twin_host
        too_fast = too_fast or other_stream_problem(timing) or host_problem(timing, twin_host)

    expected, expected_bits, validated = None, None, "none"
    fast = session.fast_reference(op)
    if reference is not None:
        expected = session.call(reference, op, contents, "reference")
        expected_bits, validated = reference.tier.bits, reference.label
    elif fast is not None:
        expected = session.call(fast, op, contents, "reference")
        expected_bits, validated = fast.tier.bits, fast.label
    elif numpy_evaluation(op.name, contents, np.float64) is not None:
        expected, expected_bits = numpy_evaluation(op.name, contents, np.float64), 64
        validated = "NumPy float64"
    record["validated_against"] = validated

    status, message = PASSED, ""
    if expected is None:
        message = "output not re-validated: no independent reference at this size"
    else:
        tol = tolerance(op, session.graded_bits, expected_bits, contents, session.gpu)
        problem = compare_outputs(session, op, received, expected, tol, args=contents)
        if problem:
            status, message = FAILED, f"after timing: {problem}"
    if too_fast and not profiled:
        status, message = FAILED, f"{op.name}: {too_fast}"
    elif status == PASSED and on_gpu:  # what timing left behind must not answer new data
        problem = _fresh_inputs_problem(session, op, named, task)
        if problem:
            status, message = FAILED, f"on fresh inputs after timing: {problem}"
    largest = named == ladder(op, timed_class(session.graded.tier), bench)[-1]
    slow = speed_problem(op.name, session.setup.stage, record, largest)
    if slow and status == PASSED and not profiled:
        status, message = FAILED, slow
    if profiled and status == PASSED:
        status, message = SKIPPED, PROFILED
    return Result(
        op.name,
        "speed",
        status,
        message,
        size=label,
        seconds=time.perf_counter() - started,
        timing=record,
    )


# A profiler (Nsight Compute, Nsight Systems, compute-sanitizer) loads into the process, and
# replays or instruments every kernel it watches: the op still runs and is still checked, but its
# time is the profiler's, not the kernel's. It is seen by CUDA's injection variable, or by its
# libraries mapped into the process (ncu's are there without the variable).
PROFILER_VARIABLE = "CUDA_INJECTION64_PATH"
PROFILER_FOLDERS = ("/nsight-compute", "/nsight-systems", "/compute-sanitizer")
PROFILED = (
    "no speed verdict under a profiler (an NVIDIA profiler or sanitizer is loaded in this process: "
    "it replays or instruments each kernel, so the time is its own); the profiler's report has "
    "the kernel's figures"
)


def under_profiler(maps=Path("/proc/self/maps")):
    """Whether an NVIDIA profiler or sanitizer runs this process: its injection variable is set,
    or a library from one of PROFILER_FOLDERS is among the process's mappings (`maps`, Linux's)."""
    if os.environ.get(PROFILER_VARIABLE):
        return True
    try:
        mapped = maps.read_text()
    except OSError:  # no /proc: not Linux
        return False
    return any(folder in mapped for folder in PROFILER_FOLDERS)


def repository_host_time(session, op, args):
    """The host's seconds per call of the repository's own op (the graded tier's stage and
    variant) on `args`: what a learner's op is judged against (grader/unseen_work.py). None when
    the repository's op is the one graded, or cannot run here."""
    if session.setup.impl is None:
        return None
    repository = tiers.load(session.graded.tier)
    if not repository.ok:
        return None
    try:
        return host_seconds(BoundCall(repository, op, args))
    except Exception as error:
        raise TierError("reference", op.name, error) from error


def _fresh_inputs_problem(session, op, named, task):
    """The graded op on new random inputs of the timed size (outputs poisoned), checked against
    the fast reference: a result cached by address, or left by a launch that never ran, shows
    here. None when it is right, or when no reference can run this size."""
    fast = session.fast_reference(op)
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
        record = timing.as_dict() | {"threads": None, "gflops": gflops, "library": baseline.name}
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
