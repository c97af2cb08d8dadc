"""A grading session: the tiers involved, how an op is called, and running one check (a Task).

The same Session runs in the grader's process or in an isolated worker (grader/worker.py); tasks
and results are small picklable records, so the two are interchangeable.

Three tiers take part: the **graded** tier (the repository's or a learner's, `--impl`), the
**reference** tier it is compared with (`--against`, the repository's), and the **oracle**, the
repository's stage 1, whose float64 forward ops give the finite-difference gradients. With
`--against-impl DIR` a fourth, the learner's **own** copy of the reference stage from DIR, is
compared with the graded tier in the `agree` rows (grader/agreement.py).
"""

import re
import warnings
import zlib

import numpy as np

import tiers
from contract import output_names, week_of
from tiers.machine import LOW_OCCUPANCY_NOTE

from . import agreement, correctness, crossing, determinism, gradients, inputs, propagation, speed
from .builders import keep_defaulted
from .ops import OPS, SOURCES
from .ownership import Ownership, native_leaves
from .poison import holds_marker, poisoned_allocations
from .records import FAILED, Result, TierError


def not_implemented_message(stage, op_name, error):
    """'not implemented (week 7, task matmul)', from the tier's message or the contract."""
    found = re.search(r"week (\d+), task ([\w\- ]+)", str(error))
    if found:
        return f"not implemented (week {found.group(1)}, task {found.group(2).strip()})"
    return f"not implemented (week {week_of(stage, op_name)}, task {op_name})"


def as_float32(value):
    """Float arrays (stage 1 answers in float64) as float32 inputs for the next call."""
    if isinstance(value, tuple):
        return tuple(as_float32(item) for item in value)
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float32)
    return value


def split_arguments(op, args, natives, passed_apart=()):
    """(positional, keyword) native arguments of a call: those `args` leaves at their default
    (builders.Args.defaulted) and those the caller passes apart by name are left out, and every
    one after the first left out is passed by its name."""
    defaulted = getattr(args, "defaulted", frozenset()) | frozenset(passed_apart)
    positional, keywords, skipped = [], {}, False
    for name in op.params:
        if name in defaulted:
            skipped = True
        elif skipped:
            keywords[name] = natives[name]
        else:
            positional.append(natives[name])
    return positional, keywords


class Session:
    """The tiers of one grading and the checks run on them."""

    def __init__(self, setup):
        self.setup = setup
        self.graded = tiers.load(tiers.find(setup.stage, setup.variant), setup.impl)
        self.reference, reasons = None, []
        for stage in setup.against:  # the first one available
            candidate = tiers.load(tiers.find(stage))
            if candidate.ok:
                self.reference = candidate
                break
            reasons.append(f"{candidate.label}: {candidate.reason}")
        self._reference_reason = "; ".join(reasons)
        self.own = None  # the learner's earlier tier: its first reference stage, from DIR
        if setup.against_impl:
            self.own = tiers.load(tiers.find(setup.against[0]), setup.against_impl)
        self.oracle = tiers.load(tiers.get("python"))
        self.graded_bits = self.graded.tier.bits
        self.gpu = self.graded.tier.gpu
        self.ownership = Ownership()  # the graded results of the running check
        self._fast_references = {}  # stage order -> a loaded tier or None (fast_reference)

    @property
    def case_kind(self):
        """Which tier cases the correctness checks add (grader/ops.py): "simulated" on the CUDA
        simulator, "python" when stage 1 is graded or is the reference, else the graded tier's
        class ("cpu" or "gpu")."""
        graded = self.graded.tier
        if graded.simulated:
            return "simulated"
        classes = {graded.tier_class, self.reference and self.reference.tier.tier_class}
        return "python" if "python" in classes else graded.tier_class

    def fast_reference(self, op):
        """A fast repository tier to validate sizes the reference is too slow for, never the
        very code being graded (it would only agree with itself): stage 2, whose NumPy hands
        float products to BLAS, else 3; for an op of integer products (`op.integer_work`) stage 3
        first, where NumPy's integer `@` is a loop of its own (a 4096^3 int8 product: half a
        minute) and C has the CPU's integer dot products."""
        stages = (3, 2) if op.integer_work else (2, 3)
        if stages not in self._fast_references:
            self._fast_references[stages] = None
            for stage in stages:
                if stage != self.setup.stage or self.setup.impl is not None:
                    loaded = tiers.load(tiers.find(stage))
                    if loaded.ok:
                        self._fast_references[stages] = loaded
                        break
        return self._fast_references[stages]

    def describe(self):
        """What the parent needs to plan the run: who is graded against whom."""
        graded, reference = self.graded, self.reference
        return {
            "graded": {
                "label": graded.label,
                "ok": graded.ok,
                "reason": graded.reason,
                "broken": graded.broken,
                "origin": graded.origin,
            },
            "reference": reference
            and {"label": reference.label, "stage": reference.stage, "origin": reference.origin},
            "reference_reason": self._reference_reason,
            "own": self.own
            and {
                "label": self.own.label,
                "stage": self.own.stage,
                "origin": self.own.origin,
                "ok": self.own.ok,
                "reason": self.own.reason,
                "broken": self.own.broken,
            },
            "matmul_kernels": tuple(getattr(graded.module, "MATMUL_KERNELS", None) or ()),
            "softmax_kernels": tuple(getattr(graded.module, "SOFTMAX_KERNELS", None) or ()),
            "conv_kernels": tuple(getattr(graded.module, "CONV_KERNELS", None) or ()),
        }

    # --- calling tiers --------------------------------------------------------------------

    def call(self, tier, op, args, role, kernel=None):
        """Run `op` on `tier` with `args` (NumPy values); returns {output name: NumPy value}.
        `kernel` picks a rung of the tier's matmul, softmax or conv2d ladder (`matmul(a, b,
        kernel=...)`, `softmax(x, kernel=...)`, `conv2d_forward(..., kernel=...)`).

        In-place arguments come back under their own names. For the graded tier, outputs it
        allocates are NaN-poisoned (grader/poison.py), its inputs must come back unchanged, and
        its results must own their memory (grader/ownership.py).
        """
        graded = role == "graded"
        natives = {name: crossing.to_native(tier.module, args[name]) for name in op.params}
        positional, keywords = split_arguments(op, args, natives)
        try:
            with poisoned_allocations(tier.module, enabled=graded):
                extra = {"kernel": kernel} if kernel else {}
                result = getattr(tier.module, op.name)(*positional, **keywords, **extra)
            outputs = crossing.to_numpy_tree(tier.module, result, op.outputs)
            for name in op.inplace:
                outputs[name] = np.asarray(tier.module.to_numpy(natives[name]))
        except crossing.ContractError as error:
            raise TierError(role, op.name, error) from None
        except Exception as error:
            raise TierError(role, op.name, error) from error
        if graded:
            self._check_untouched(op, args, natives)
            try:
                self.ownership.check(native_leaves(result, op.outputs), natives)
            except crossing.ContractError as error:
                raise TierError(role, op.name, error) from None
        return outputs

    def unwritten(self, op, args):
        """{output name: elements the graded op never writes}: called once more with allocations
        filled with a marker (grader/poison.py); only asked for when an output holds NaN."""
        natives = {name: crossing.to_native(self.graded.module, args[name]) for name in op.params}
        positional, keywords = split_arguments(op, args, natives)
        try:
            with poisoned_allocations(self.graded.module, marker=True):
                result = getattr(self.graded.module, op.name)(*positional, **keywords)
            outputs = crossing.to_numpy_tree(self.graded.module, result, op.outputs)
        except Exception as error:
            raise TierError("graded", op.name, error) from error
        flat = crossing.flatten(outputs, op.outputs)
        return {name: holds_marker(v) for name, v in flat.items() if v is not None}

    def _check_untouched(self, op, args, natives):
        """Raise when the graded op changed an input array it must only read."""
        for name in op.params:
            if name in op.inplace:
                continue
            originals = args[name] if isinstance(args[name], tuple) else (args[name],)
            received = natives[name] if isinstance(args[name], tuple) else (natives[name],)
            for original, native in zip(originals, received, strict=True):
                if not isinstance(original, np.ndarray):
                    break  # a scalar, or a shape such as x_shape
                unchanged = np.asarray(self.graded.module.to_numpy(native))
                if not _same_values(unchanged, original):
                    problem = crossing.ContractError(
                        f"modified its input {name} (only optimizers and batchnorm's running "
                        "statistics may change their arguments)"
                    )
                    raise TierError("graded", op.name, problem)

    def arguments(self, op, size, rng, tier, role, keep_float64=False):
        """{param: NumPy value} for `op` at `size`; a derived op runs its forward on `tier`.

        Also returns the forward's arguments (the inputs gradients are taken against). The
        forward's outputs (y, saved, ...) become float32 inputs, so that both tiers compared
        receive the same values, unless `keep_float64` (only a float64 tier will read them).
        """
        if op.forward is None:
            args = op.build(rng, size)
            return keep_defaulted(args, {name: args[name] for name in op.params}), args
        forward = OPS[op.forward]
        forward_args = forward.build(rng, size)
        sources = dict(forward_args)
        if any(name not in forward_args for name in op.params):
            outputs = self.call(tier, forward, forward_args, role)
            for name, value in outputs.items():
                sources[name] = value if keep_float64 else as_float32(value)
            first = outputs[output_names(forward)[0]]
            sources["dy"] = inputs.normal(rng, first.shape)
            if "x_shape" in op.params:  # a forward without an x (attention's q, k, v) has none
                sources["x_shape"] = tuple(int(n) for n in forward_args["x"].shape)
        missing = [name for name in op.params if name not in sources]
        assert not missing, f"{op.name}: no source for {missing} (known: {SOURCES})"
        chosen = {name: sources[name] for name in op.params}
        return keep_defaulted(forward_args, chosen), forward_args

    def rng(self, task, index=0):
        """The random generator of one case of one check: reproducible for a given --seed."""
        key = [self.setup.seed, zlib.crc32(task.op.encode()), zlib.crc32(task.kind.encode()), index]
        return np.random.default_rng(key)

    # --- running a task -------------------------------------------------------------------

    def run(self, task):
        """Run one check and return its Result; every failure becomes a message."""
        checks = {
            "correct": correctness.check_correct,
            "agree": agreement.check_agree,
            "dist": correctness.check_distribution,
            "grad": gradients.check_gradients,
            "nan": propagation.check_nan,
            "determinism": determinism.check_determinism,
            "speed": speed.check_speed,
            "kernel": speed.check_kernel,
            "blas": speed.check_blas,
        }
        label = task.label
        self.ownership = Ownership()
        try:
            with warnings.catch_warnings():
                # numba's note would sit among the report's lines like a fault
                warnings.filterwarnings("ignore", LOW_OCCUPANCY_NOTE)
                return checks[task.kind](self, task)
        except TierError as error:
            message = self.explain(error)
            if error.case and "not implemented (" not in message:
                message += f" [{error.case}]"
            return Result(task.op, task.kind, FAILED, message, size=label)
        except Exception as error:  # a bug of the grader's own: fail this check, say so
            message = f"{task.op}: grader error, please report: {tiers.describe_exception(error)}"
            return Result(task.op, task.kind, FAILED, message, size=label)

    def explain(self, error):
        """A TierError as the one line a report shows, naming the tier that raised it."""
        if error.role in ("graded", "own") and isinstance(error.error, NotImplementedError):
            stage = self.setup.stage if error.role == "graded" else self.own.stage
            return f"{error.op}: {not_implemented_message(stage, error.op, error.error)}"
        if isinstance(error.error, crossing.ContractError):
            return f"{error.op}: {error.error}"
        who = {
            "graded": "",
            "reference": f"the reference tier ({self.reference.label}) ",
            "oracle": "the oracle (stage 1) ",
            "own": f"your {self.own and self.own.label} ",
        }[error.role]
        return f"{error.op}: {who}raised {tiers.describe_exception(error.error)}"


def _same_values(received, original):
    """Whether `received` holds `original`'s values, NaN where it held NaN (the nan check's inputs).
    The same bits answer at once, as they nearly always do; else NaN payloads, -0.0 against 0.0
    or a float64 tier's copy are compared by value."""
    if original.dtype.kind == "f" and received.dtype == original.dtype:
        bits = np.dtype(f"u{original.dtype.itemsize}")
        if np.array_equal(received.view(bits), original.view(bits)):
            return True
    return np.array_equal(received, original, equal_nan=True)
